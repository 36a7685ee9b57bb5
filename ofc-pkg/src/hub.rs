//! The hub's JSON API as the client sees it: one [`Hub`] per command, errors turned into
//! messages with hints (unreachable hub, missing or refused token, not found).
//!
//! Verbs are synchronous; they run the async client on [`runtime()`].

use std::time::Duration;

use anyhow::{Result, anyhow};
use index_schema::hub_api::{
    AddKeyRequest, AddTrustedPublisherRequest, AgentInfo, DeprecateRequest, ErrorBody, ErrorCode,
    ExchangeRequest, ExchangeResponse, Key, KeyList, LoginRequest, Me, NewToken, PublishRequest,
    PublishResponse, SearchPage, SearchParams, TrustedPublisher, TrustedPublisherList, VersionInfo,
    YankRequest, path,
};
use index_schema::name::AgentName;
use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret as _, SecretString};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config::{self, Paths};
use crate::credentials::{self, TokenSource};
use crate::hub_url::HubUrl;
use crate::output::UserError;

/// How long to wait for the hub to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The whole of a JSON request (not uploads or downloads, which only have [`READ_TIMEOUT`]).
const JSON_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a read may stall (no byte arriving) before the request fails.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Largest JSON document accepted from a hub (a version list of thousands of versions is well
/// under it); a hostile hub cannot make the client buffer more.
pub const MAX_JSON_BYTES: usize = 16 * 1024 * 1024;

/// Largest error body read from a hub.
const MAX_ERROR_BYTES: usize = 64 * 1024;

/// Reads at most `max` bytes of `resp`'s body; more is an error (checked against the
/// announced length first, then while reading).
pub async fn read_capped(resp: reqwest::Response, max: usize, what: &str) -> Result<Vec<u8>> {
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Err(anyhow!(
            "{what} is {} bytes, more than the {max} accepted",
            resp.content_length().unwrap_or(0)
        ));
    }
    let mut resp = resp;
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if out.len() + chunk.len() > max {
            return Err(anyhow!("{what} is more than the {max} bytes accepted"));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// A runtime for one command: two workers, enough for parallel downloads plus hashing.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| anyhow!(e).context("cannot start the async runtime"))
}

/// A client of one hub.
#[derive(Clone)]
pub struct Hub {
    /// The hub's base URL, in its normal form.
    pub url: HubUrl,
    token: Option<(SecretString, TokenSource)>,
    client: reqwest::Client,
}

impl std::fmt::Debug for Hub {
    /// Never the token: a stray `{:?}` must not leak it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("url", &self.url)
            .field(
                "token",
                &self.token.as_ref().map(|(_, src)| (("<redacted>"), src)),
            )
            .finish()
    }
}

/// A refusal from the hub: status, its stable error code and message.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the hub answered {status}: {message}")]
pub struct HubError {
    /// HTTP status.
    pub status: StatusCode,
    /// The hub's machine-readable code, if it gave one: an [`ErrorCode`] of the JSON API, or
    /// the OCI code of `/v2/` (`DENIED`, `SIZE_INVALID`, …) as [`ErrorCode::Other`].
    pub code: Option<ErrorCode>,
    /// The hub's message, or the start of the body.
    pub message: String,
}

impl Hub {
    /// The hub of `OFC_HUB` with the token of `OFC_TOKEN` or the credentials file.
    pub fn from_env(paths: &Paths) -> Result<Self> {
        Self::with_stored_token(paths, &crate::hub_url::configured())
    }

    /// The hub at `url` with the token of `OFC_TOKEN` or the one stored for `url`.
    pub fn with_stored_token(paths: &Paths, url: &str) -> Result<Self> {
        let url = HubUrl::parse(url)?;
        let token = credentials::token(paths, &url)?;
        Self::with_url(url, token)
    }

    /// A client of `url` with an optional token. Refuses a URL that is not `http(s)://…`.
    pub fn new(url: String, token: Option<(SecretString, TokenSource)>) -> Result<Self> {
        Self::with_url(HubUrl::parse(&url)?, token)
    }

    /// A client of the checked `url` with an optional token.
    pub fn with_url(url: HubUrl, token: Option<(SecretString, TokenSource)>) -> Result<Self> {
        if token.is_some() && !url.is_loopback_or_tls() {
            eprintln!(
                "warning: sending an API token to {url} over plain HTTP; anyone on the path can read it (use https://)"
            );
        }
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .user_agent(concat!("ofc/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| anyhow!(e).context("cannot build the HTTP client"))?;
        Ok(Self { url, token, client })
    }

    /// The underlying HTTP client (for streaming downloads and probes).
    pub fn http(&self) -> &reqwest::Client {
        &self.client
    }

    /// Whether a token is configured.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// Where the token came from, if any.
    pub fn token_source(&self) -> Option<TokenSource> {
        self.token.as_ref().map(|(_, s)| *s)
    }

    /// `{hub}{path}`; `path` starts with `/`.
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// A request with the token attached when there is one.
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let rb = self.client.request(method, self.endpoint(path));
        match &self.token {
            Some((t, _)) => rb.bearer_auth(t.expose_secret()),
            None => rb,
        }
    }

    /// Fails with a login hint when no token is configured.
    pub fn require_token(&self, what: &str) -> Result<()> {
        if self.token.is_none() {
            return Err(
                UserError::new(format!("{what} needs an API token for {}", self.url))
                    .hint("run `ofc login` (or set OFC_TOKEN)")
                    .into(),
            );
        }
        Ok(())
    }

    /// Sends `rb` and maps transport failures and non-2xx answers to errors with hints.
    pub async fn send(&self, rb: reqwest::RequestBuilder) -> Result<reqwest::Response> {
        let resp = rb.send().await.map_err(|e| self.unreachable(e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        // Only the start of an error body matters, and a hostile hub may send gigabytes.
        let mut resp = resp;
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            body.extend_from_slice(&chunk[..chunk.len().min(MAX_ERROR_BYTES - body.len())]);
            if body.len() >= MAX_ERROR_BYTES {
                break;
            }
        }
        Err(self.refusal(status, &String::from_utf8_lossy(&body)))
    }

    /// GET `path` as JSON.
    pub async fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        let resp = self
            .send(self.request(Method::GET, path).timeout(JSON_TIMEOUT))
            .await?;
        self.decode(resp, path).await
    }

    /// `method path` with an optional JSON body; the answer as JSON (`null` when empty).
    pub async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value> {
        let mut rb = self.request(method, path);
        if let Some(b) = body {
            rb = rb.json(b);
        }
        let resp = self.send(rb).await?;
        let bytes = self.read_json_bytes(resp, path).await?;
        if bytes.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            anyhow!(e).context(format!(
                "the hub at {} sent invalid JSON for {path}",
                self.url
            ))
        })
    }

    async fn read_json_bytes(&self, resp: reqwest::Response, path: &str) -> Result<Vec<u8>> {
        read_capped(
            resp,
            MAX_JSON_BYTES,
            &format!("the hub's answer for {path}"),
        )
        .await
        .map_err(|e| match e.downcast::<reqwest::Error>() {
            Ok(re) => self.unreachable(re),
            Err(e) => e,
        })
    }

    /// A response body as JSON of type `T`, capped at [`MAX_JSON_BYTES`]; an answer that does
    /// not parse says so (it is not an unreachable hub).
    pub async fn decode<T: DeserializeOwned>(
        &self,
        resp: reqwest::Response,
        path: &str,
    ) -> Result<T> {
        let bytes = self.read_json_bytes(resp, path).await?;
        serde_json::from_slice(&bytes).map_err(|e| {
            anyhow!(e).context(format!(
                "the hub at {} sent an answer ofc does not understand for {path}",
                self.url
            ))
        })
    }

    /// The error for a request that never got an answer.
    pub fn unreachable(&self, e: reqwest::Error) -> anyhow::Error {
        let what = if e.is_timeout() {
            "timed out talking to the hub at"
        } else {
            "cannot reach the hub at"
        };
        // reqwest errors include the URL, never the token.
        anyhow!(e).context(UserError::new(format!("{what} {}", self.url)).hint(format!(
            "is the hub running? set {} to choose another hub",
            config::HUB_ENV
        )))
    }

    /// The error for a non-2xx answer, with hints by status.
    pub fn refusal(&self, status: StatusCode, body: &str) -> anyhow::Error {
        // The JSON API answers an `ErrorBody`; the registry API (`/v2/`) answers
        // `{"errors": [{"code", "message", …}]}`.
        let (code, message) = match serde_json::from_str::<ErrorBody>(body) {
            Ok(b) => (Some(b.code), Some(b.message)),
            Err(_) => {
                let first = serde_json::from_str::<Value>(body)
                    .ok()
                    .and_then(|v| v.get("errors").and_then(|e| e.get(0)).cloned());
                let text = |k: &str| {
                    first
                        .as_ref()
                        .and_then(|v| v.get(k))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                };
                (text("code").map(ErrorCode::from), text("message"))
            }
        };
        let message = message.unwrap_or_else(|| {
            let t: String = body.chars().take(300).collect();
            if t.trim().is_empty() {
                status.canonical_reason().unwrap_or("no reason").to_string()
            } else {
                t
            }
        });
        // The hub's words reach a terminal: no control characters (escape sequences, fake
        // `hint:` lines), and not too many of them.
        let err = HubError {
            status,
            code: code.map(|c| match c {
                ErrorCode::Other(o) => ErrorCode::Other(crate::output::truncate(&o, 64)),
                known => known,
            }),
            message: crate::output::truncate(&message, 500),
        };
        let mut hint = UserError::new(format!("request to {} failed", self.url));
        // A 403 about rights (not, say, an untrusted signing key, which is also 403).
        let about_rights = err
            .code
            .as_ref()
            .is_none_or(|c| c.is_about_rights() || c.as_str() == "DENIED");
        hint = match (status.as_u16(), self.token_source()) {
            (401, None) => hint.hint("log in with `ofc login` (or set OFC_TOKEN)"),
            (401, Some(TokenSource::Env)) => {
                hint.hint("OFC_TOKEN is missing, expired or revoked; unset it or set a valid one")
            }
            (401, Some(TokenSource::File)) => {
                hint.hint("the stored token is expired or revoked; run `ofc login` again")
            }
            (401, Some(TokenSource::Exchanged)) => hint.hint(
                "the token trusted publishing gave lives 15 minutes and dies when its trusted \
                 publisher is removed; run `ofc publish --oidc` again",
            ),
            (403, _) if about_rights => {
                hint.hint("the token lacks the rights for this; ask a namespace owner")
            }
            (429, _) => hint.hint("the hub is rate-limiting; wait a little and retry"),
            (s, _) if s >= 500 => hint.hint("the hub failed; try again, or tell its operator"),
            _ => hint,
        };
        if hint.hints.is_empty() {
            anyhow!(err)
        } else {
            anyhow!(err).context(hint)
        }
    }
}

/// The hub error inside `e`, if the hub answered with one.
pub fn hub_error(e: &anyhow::Error) -> Option<&HubError> {
    e.chain().find_map(|c| c.downcast_ref::<HubError>())
}

/// Says what was refused: a refusal in `e` becomes `what` caused by the hub's answer, with the
/// refusal's hints (token, rate limit, …) followed by `extra(refusal)`. Errors without an answer
/// (unreachable hub) pass through unchanged: their message already says what happened.
pub fn refused(
    e: anyhow::Error,
    what: impl Into<String>,
    extra: impl FnOnce(&HubError) -> Vec<String>,
) -> anyhow::Error {
    let Some(he) = hub_error(&e).cloned() else {
        return e;
    };
    let mut user = UserError::new(what);
    user.hints = crate::output::hints_of(&e);
    user.hints.extend(extra(&he));
    anyhow!(he).context(user)
}

/// The hub's API, typed: one method per endpoint the client uses, with the request and
/// response types of [`index_schema::hub_api`] and its paths ([`path`]).
impl Hub {
    /// `method path`, sending `body` as JSON when given, the answer decoded as `T`.
    async fn exchange<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<T> {
        let mut rb = self.request(method, path).timeout(JSON_TIMEOUT);
        if let Some(b) = body {
            rb = rb.json(b);
        }
        let resp = self.send(rb).await?;
        self.decode(resp, path).await
    }

    /// `method path` (with an optional JSON body) whose answer carries nothing the client needs.
    async fn act<B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<()> {
        let mut rb = self.request(method, path).timeout(JSON_TIMEOUT);
        if let Some(b) = body {
            rb = rb.json(b);
        }
        self.send(rb).await.map(drop)
    }

    /// Who the token belongs to (`GET /api/v1/me`); needs a token.
    pub async fn me(&self) -> Result<Me> {
        self.require_token("asking the hub who you are")?;
        self.get_json(&path::me()).await
    }

    /// Exchanges a user name and password for a new token (`POST /api/v1/login`).
    pub async fn login(&self, req: &LoginRequest) -> Result<NewToken> {
        self.exchange(Method::POST, &path::login(), Some(req)).await
    }

    /// Revokes a token (`DELETE /api/v1/tokens/{id}`).
    pub async fn revoke_token(&self, id: i64) -> Result<()> {
        self.act::<()>(Method::DELETE, &path::token(id), None).await
    }

    /// An agent and its versions (`GET /api/v1/agents/{p}/{a}`).
    pub async fn agent(&self, name: &AgentName) -> Result<AgentInfo> {
        self.get_json(&path::agent(name)).await
    }

    /// One version with its signed envelope (`GET …/versions/{v}`).
    pub async fn version(&self, name: &AgentName, version: &str) -> Result<VersionInfo> {
        self.get_json(&path::version(name, version)).await
    }

    /// [`Hub::version`], asking for the log's consistency proof from a tree of `log_size`.
    pub async fn version_since(
        &self,
        name: &AgentName,
        version: &str,
        log_size: Option<u64>,
    ) -> Result<VersionInfo> {
        let mut p = path::version(name, version);
        if let Some(n) = log_size {
            p.push_str(&format!("?log_size={n}"));
        }
        self.get_json(&p).await
    }

    /// The transparency log's key and head (`GET /api/v1/log`), with the consistency proof
    /// from a tree of `log_size`.
    pub async fn log_info(&self, log_size: Option<u64>) -> Result<index_schema::hub_api::LogInfo> {
        let mut p = path::log();
        if let Some(n) = log_size {
            p.push_str(&format!("?log_size={n}"));
        }
        self.get_json(&p).await
    }

    /// A page of the log entries of `publisher` (of one of its agents, with `agent`) after
    /// index `after`, with proofs (`GET /api/v1/log/publishers/{p}`); the next page starts
    /// after the answer's `next_after`.
    pub async fn log_entries(
        &self,
        publisher: &str,
        agent: Option<&str>,
        log_size: Option<u64>,
        after: Option<u64>,
    ) -> Result<index_schema::hub_api::LogEntries> {
        let mut p = path::log_publisher(publisher);
        let mut q = Vec::new();
        if let Some(a) = agent {
            q.push(format!("agent={a}"));
        }
        if let Some(n) = log_size {
            q.push(format!("log_size={n}"));
        }
        if let Some(n) = after {
            q.push(format!("after={n}"));
        }
        if !q.is_empty() {
            p.push('?');
            p.push_str(&q.join("&"));
        }
        self.get_json(&p).await
    }

    /// Publishes a signed version (`PUT …/versions/{v}`).
    pub async fn publish(
        &self,
        name: &AgentName,
        version: &str,
        req: &PublishRequest,
    ) -> Result<PublishResponse> {
        self.exchange(Method::PUT, &path::version(name, version), Some(req))
            .await
    }

    /// Yanks a version (`PUT …/yank`).
    pub async fn yank(&self, name: &AgentName, version: &str, req: &YankRequest) -> Result<()> {
        self.act(Method::PUT, &path::yank(name, version), Some(req))
            .await
    }

    /// Unyanks a version (`DELETE …/yank`).
    pub async fn unyank(&self, name: &AgentName, version: &str) -> Result<()> {
        self.act::<()>(Method::DELETE, &path::yank(name, version), None)
            .await
    }

    /// Deprecates a version (`PUT …/deprecation`).
    pub async fn deprecate(
        &self,
        name: &AgentName,
        version: &str,
        req: &DeprecateRequest,
    ) -> Result<()> {
        self.act(Method::PUT, &path::deprecation(name, version), Some(req))
            .await
    }

    /// Clears a deprecation (`DELETE …/deprecation`).
    pub async fn undeprecate(&self, name: &AgentName, version: &str) -> Result<()> {
        self.act::<()>(Method::DELETE, &path::deprecation(name, version), None)
            .await
    }

    /// Unpublishes a version (`POST …/unpublish`).
    pub async fn unpublish(&self, name: &AgentName, version: &str) -> Result<()> {
        self.act::<()>(Method::POST, &path::unpublish(name, version), None)
            .await
    }

    /// A namespace's publisher keys (`GET /api/v1/namespaces/{ns}/keys`).
    pub async fn keys(&self, namespace: &str) -> Result<KeyList> {
        self.get_json(&path::keys(namespace)).await
    }

    /// Registers a publisher key (`POST /api/v1/namespaces/{ns}/keys`).
    pub async fn add_key(&self, namespace: &str, req: &AddKeyRequest) -> Result<Key> {
        self.exchange(Method::POST, &path::keys(namespace), Some(req))
            .await
    }

    /// Revokes a publisher key (`DELETE /api/v1/namespaces/{ns}/keys/{id}`).
    pub async fn revoke_key(&self, namespace: &str, key_id: &str) -> Result<()> {
        self.act::<()>(Method::DELETE, &path::key(namespace, key_id), None)
            .await
    }

    /// A namespace's trusted publishers (`GET /api/v1/namespaces/{ns}/trusted-publishers`).
    pub async fn trusted_publishers(&self, namespace: &str) -> Result<TrustedPublisherList> {
        self.get_json(&path::trusted_publishers(namespace)).await
    }

    /// Trusts an OIDC issuer and subject pattern to publish to a namespace.
    pub async fn add_trusted_publisher(
        &self,
        namespace: &str,
        req: &AddTrustedPublisherRequest,
    ) -> Result<TrustedPublisher> {
        self.exchange(
            Method::POST,
            &path::trusted_publishers(namespace),
            Some(req),
        )
        .await
    }

    /// Removes a trusted publisher (its minted tokens are revoked).
    pub async fn remove_trusted_publisher(&self, namespace: &str, id: i64) -> Result<()> {
        self.act::<()>(
            Method::DELETE,
            &path::trusted_publisher(namespace, id),
            None,
        )
        .await
    }

    /// Exchanges a CI's OIDC ID token for a publish-only token of `namespace`
    /// (`POST /api/v1/trusted-publishing/exchange`, no hub token sent).
    pub async fn exchange_oidc(&self, req: &ExchangeRequest) -> Result<ExchangeResponse> {
        let p = path::trusted_exchange();
        let rb = self
            .client
            .post(self.endpoint(&p))
            .timeout(JSON_TIMEOUT)
            .json(req);
        let resp = self.send(rb).await?;
        self.decode(resp, &p).await
    }

    /// Searches (`GET /api/v1/search`).
    pub async fn search(&self, params: &SearchParams) -> Result<SearchPage> {
        let p = path::search();
        let rb = self
            .request(Method::GET, &p)
            .query(params)
            .timeout(JSON_TIMEOUT);
        let resp = self.send(rb).await?;
        self.decode(resp, &p).await
    }
}

/// The namespace a user acts in when none is named: the one called like the user (what
/// `ofc-hub admin create-user` makes), else their only namespace.
pub fn default_namespace(me: &Me) -> Result<String> {
    if let Some(ns) = me.namespaces.iter().find(|n| n.name == me.user) {
        return Ok(ns.name.clone());
    }
    match me.namespaces.as_slice() {
        [only] => Ok(only.name.clone()),
        [] => Err(
            UserError::new(format!("`{}` is not a member of any namespace", me.user))
                .hint("ask a namespace owner to add you, or pass --namespace")
                .into(),
        ),
        many => Err(UserError::new(format!(
            "`{}` belongs to {} namespaces ({}); which one?",
            me.user,
            many.len(),
            many.iter()
                .map(|n| n.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .hint("pass --namespace NS")
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use index_schema::hub_api::{MyNamespace, TokenInfo};

    use super::*;

    #[test]
    fn refusals_keep_the_hub_message_and_add_hints() {
        let hub = Hub::new("http://h:1/".into(), None).unwrap();
        assert_eq!(hub.url, "http://h:1");
        let e = hub.refusal(
            StatusCode::UNAUTHORIZED,
            r#"{"code":"unauthenticated","message":"a token is needed"}"#,
        );
        let he = hub_error(&e).unwrap();
        assert_eq!(he.code, Some(ErrorCode::Unauthenticated));
        assert_eq!(he.message, "a token is needed");
        let hints = crate::output::hints_of(&e);
        assert!(hints[0].contains("ofc login"), "{hints:?}");

        let e = hub.refusal(StatusCode::NOT_FOUND, "");
        assert_eq!(hub_error(&e).unwrap().message, "Not Found");
    }

    #[test]
    fn refused_names_the_operation_and_keeps_every_hint() {
        let hub = Hub::new("http://h:1".into(), None).unwrap();
        let e = hub.refusal(
            StatusCode::UNAUTHORIZED,
            r#"{"code":"unauthenticated","message":"a token is needed"}"#,
        );
        let e = refused(e, "cannot yank a/b@1.0.0", |he| {
            vec![format!(
                "code was {}",
                he.code.as_ref().map_or("-", ErrorCode::as_str)
            )]
        });
        assert_eq!(e.to_string(), "cannot yank a/b@1.0.0");
        let u = e.downcast_ref::<UserError>().unwrap();
        assert!(u.hints[0].contains("ofc login"), "{:?}", u.hints);
        assert_eq!(u.hints[1], "code was unauthenticated");
        assert_eq!(hub_error(&e).unwrap().status, StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn the_default_namespace_is_the_users_own_or_the_only_one() {
        let me = |user: &str, ns: &[&str]| Me {
            user: user.into(),
            is_admin: false,
            namespaces: ns
                .iter()
                .map(|n| MyNamespace {
                    name: (*n).into(),
                    role: "owner".into(),
                })
                .collect(),
            token: TokenInfo {
                id: 1,
                name: "t".into(),
                scopes: vec![],
                namespaces: vec![],
                created_at: 0,
                expires_at: None,
                revoked_at: None,
                last_used_at: None,
            },
        };
        assert_eq!(default_namespace(&me("al", &["x", "al"])).unwrap(), "al");
        assert_eq!(default_namespace(&me("al", &["x"])).unwrap(), "x");
        assert!(default_namespace(&me("al", &[])).is_err());
        let e = default_namespace(&me("al", &["x", "y"])).unwrap_err();
        assert!(e.to_string().contains("x, y"), "{e}");
    }
}
