//! Tokens and the token endpoint (RFC 6749): the `client_credentials`, `authorization_code`
//! and `refresh_token` grants. A token's text is never shown: its `Debug` is redacted and no
//! error message carries it.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::http::{Http, read_json};

/// An access token, with what refreshes it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Token {
    pub(crate) access_token: String,
    #[serde(default = "bearer")]
    pub(crate) token_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<String>,
    /// When ofc stops using it: a little before the server says it expires (none: the server
    /// gave no lifetime; it is used until refused).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub(crate) expiry: Option<OffsetDateTime>,
}

fn bearer() -> String {
    "Bearer".to_owned()
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("expiry", &self.expiry)
            .field("refreshable", &self.refresh_token.is_some())
            .finish_non_exhaustive()
    }
}

impl Token {
    /// Whether it is past the time ofc stops using it.
    pub(crate) fn expired(&self) -> bool {
        self.expiry.is_some_and(|e| OffsetDateTime::now_utc() >= e)
    }
}

/// How the client proves who it is at the token endpoint.
#[derive(Clone)]
pub(crate) struct Client {
    pub(crate) id: String,
    pub(crate) secret: Option<String>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// What a token endpoint answers.
#[derive(Deserialize)]
struct Answer {
    access_token: Option<String>,
    token_type: Option<String>,
    expires_in: Option<f64>,
    refresh_token: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// Why a token request failed: the server said no (an OAuth error: the grant is no good), or
/// it could not be asked.
#[derive(Debug)]
pub(crate) enum Refused {
    /// An OAuth error response (`invalid_grant`, `invalid_client`, …).
    OAuth(String),
    /// Anything else (unreachable, not JSON, …).
    Other(String),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::OAuth(m) | Refused::Other(m) => f.write_str(m),
        }
    }
}

/// Asks `endpoint` for a token with `form` (the grant's parameters); the client authenticates
/// with HTTP Basic when it has a secret, else sends its id in the form (a public client).
pub(crate) async fn request(
    http: &Http,
    endpoint: &str,
    client: &Client,
    form: &[(&str, &str)],
    keep_refresh: Option<&str>,
) -> Result<Token, Refused> {
    let mut pairs: Vec<(&str, &str)> = form.to_vec();
    let mut req = http
        .client
        .post(endpoint)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json");
    match &client.secret {
        Some(secret) => {
            // RFC 6749 §2.3.1: both form-encoded before Basic.
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            req = req.basic_auth(enc(&client.id), Some(enc(secret)));
        }
        None => pairs.push(("client_id", &client.id)),
    }
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    let resp = req.body(body).send().await.map_err(|e| {
        Refused::Other(format!(
            "the token endpoint {endpoint}: {}",
            e.without_url()
        ))
    })?;
    let status = resp.status();
    let answer: Answer = read_json(resp).await.map_err(|e| {
        Refused::Other(format!(
            "the token endpoint {endpoint} (HTTP {status}): {e}"
        ))
    })?;
    if let Some(error) = answer.error {
        let mut m = format!("the token endpoint {endpoint} refused: {error}");
        if let Some(d) = answer.error_description {
            m.push_str(&format!(" ({})", d.chars().take(300).collect::<String>()));
        }
        return Err(Refused::OAuth(m));
    }
    if !status.is_success() {
        return Err(Refused::Other(format!(
            "the token endpoint {endpoint} answered HTTP {status}"
        )));
    }
    let Some(access_token) = answer.access_token.filter(|t| !t.is_empty()) else {
        return Err(Refused::Other(format!(
            "the token endpoint {endpoint} answered without an access_token"
        )));
    };
    let token_type = answer.token_type.unwrap_or_else(bearer);
    if !token_type.eq_ignore_ascii_case("bearer") {
        return Err(Refused::Other(format!(
            "the token endpoint {endpoint} gave a `{token_type}` token; ofc sends bearer tokens"
        )));
    }
    let expiry = answer
        .expires_in
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| {
            // Stop using it a little early (a tenth of its life, at most 30 s): a request sent
            // just before the end must not arrive just after.
            let life = Duration::from_secs_f64(s.min(1e9));
            let early = (life / 10).min(Duration::from_secs(30));
            OffsetDateTime::now_utc() + (life - early)
        });
    Ok(Token {
        access_token,
        token_type: "Bearer".to_owned(),
        // A server that does not rotate refresh tokens answers a refresh without one.
        refresh_token: answer
            .refresh_token
            .filter(|t| !t.is_empty())
            .or_else(|| keep_refresh.map(str::to_owned)),
        expiry,
    })
}

/// The `client_credentials` grant.
pub(crate) async fn client_credentials(
    http: &Http,
    endpoint: &str,
    client: &Client,
    scopes: &[String],
    resource: &str,
) -> Result<Token, Refused> {
    let scope = scopes.join(" ");
    let mut form = vec![("grant_type", "client_credentials"), ("resource", resource)];
    if !scope.is_empty() {
        form.push(("scope", &scope));
    }
    request(http, endpoint, client, &form, None).await
}

/// The `refresh_token` grant.
pub(crate) async fn refresh(
    http: &Http,
    endpoint: &str,
    client: &Client,
    refresh_token: &str,
    resource: &str,
) -> Result<Token, Refused> {
    request(
        http,
        endpoint,
        client,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("resource", resource),
        ],
        Some(refresh_token),
    )
    .await
}
