//! A person's consent (`authorization_code` with PKCE S256): a client registered when the
//! blueprint gives none (RFC 7591), the authorization URL printed on stderr, and the code
//! received at a loopback callback on 127.0.0.1 (`/callback`) — or pasted on stdin as the
//! address the browser was sent to, for a browser on another machine. The `state` is checked
//! (a mismatch or an `error` parameter gets a 400 and is not taken), and the wait ends after
//! ten minutes.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::IntoResponse;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::discovery::Endpoints;
use super::http::{Http, read_json};
use super::token::{self, Client, Token};

/// How long a person has to consent.
pub(crate) const CONSENT_WAIT: Duration = Duration::from_secs(600);

/// What consent gave.
#[derive(Debug)]
pub(crate) struct Consented {
    pub(crate) client: Client,
    pub(crate) token: Token,
}

fn random_b64(bytes: usize) -> String {
    let v: Vec<u8> = (0..bytes).map(|_| rand::random::<u8>()).collect();
    URL_SAFE_NO_PAD.encode(v)
}

/// The S256 challenge of a PKCE verifier (RFC 7636 §4.2).
pub(crate) fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[derive(Deserialize)]
struct Registered {
    client_id: Option<String>,
    client_secret: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// Registers ofc as a public client (RFC 7591) for `redirect`.
async fn register(http: &Http, endpoint: &str, redirect: &str) -> Result<Client, String> {
    let body = serde_json::json!({
        "client_name": "ofc",
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let resp = http
        .client
        .post(endpoint)
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("registering a client at {endpoint}: {}", e.without_url()))?;
    let status = resp.status();
    let r: Registered = read_json(resp)
        .await
        .map_err(|e| format!("registering a client at {endpoint} (HTTP {status}): {e}"))?;
    if let Some(error) = r.error {
        return Err(format!(
            "registering a client at {endpoint} was refused: {error}{}",
            r.error_description
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        ));
    }
    match r.client_id.filter(|c| !c.is_empty()) {
        Some(id) if status.is_success() => Ok(Client {
            id,
            secret: r.client_secret.filter(|s| !s.is_empty()),
        }),
        _ => Err(format!(
            "registering a client at {endpoint} gave no client_id (HTTP {status})"
        )),
    }
}

/// A callback's parameters, from the listener or pasted.
type Params = HashMap<String, String>;

struct Waiting {
    state: String,
    tx: mpsc::Sender<Result<String, String>>,
}

/// What the browser is shown, and what the waiting flow gets.
fn judge(w: &Waiting, p: &Params) -> (axum::http::StatusCode, String) {
    use axum::http::StatusCode;
    if let Some(err) = p.get("error") {
        let d = p.get("error_description").cloned().unwrap_or_default();
        let m = format!("the authorization server refused: {err} {d}")
            .trim()
            .to_owned();
        let _ = w.tx.try_send(Err(m.clone()));
        return (StatusCode::BAD_REQUEST, format!("ofc: {m}\n"));
    }
    if p.get("state") != Some(&w.state) {
        return (
            StatusCode::BAD_REQUEST,
            "ofc: this callback does not belong to the authorization ofc is waiting for (its \
             state differs); start again from the URL ofc printed\n"
                .to_owned(),
        );
    }
    match p.get("code").filter(|c| !c.is_empty()) {
        Some(code) => {
            let _ = w.tx.try_send(Ok(code.clone()));
            (
                StatusCode::OK,
                "ofc: authorized. You can close this tab.\n".to_owned(),
            )
        }
        None => (
            StatusCode::BAD_REQUEST,
            "ofc: the callback has no code\n".to_owned(),
        ),
    }
}

async fn callback(
    State(w): State<std::sync::Arc<Waiting>>,
    Query(p): Query<Params>,
) -> impl IntoResponse {
    judge(&w, &p)
}

/// Runs the consent for `name`: `client` as the blueprint gives it (none: registered here),
/// `paste`: stdin lines are read as pasted callback addresses too.
pub(crate) async fn consent(
    http: &Http,
    name: &str,
    endpoints: &Endpoints,
    client: Option<Client>,
    scopes: &[String],
    resource: &str,
    paste: bool,
) -> Result<Consented, String> {
    let Some(authorize) = &endpoints.authorization_endpoint else {
        return Err(format!(
            "the authorization server {} has no authorization_endpoint",
            endpoints.issuer
        ));
    };
    if !endpoints.code_challenge_methods.is_empty()
        && !endpoints.code_challenge_methods.iter().any(|m| m == "S256")
    {
        return Err(format!(
            "the authorization server {} does not offer PKCE with S256, which ofc requires",
            endpoints.issuer
        ));
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot listen for the callback on 127.0.0.1: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("the callback listener: {e}"))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let client = match client {
        Some(c) => c,
        None => {
            let Some(reg) = &endpoints.registration_endpoint else {
                return Err(format!(
                    "the blueprint gives no `oauth.client_id` and the authorization server {} \
                     offers no client registration",
                    endpoints.issuer
                ));
            };
            register(http, reg, &redirect).await?
        }
    };
    let verifier = random_b64(48);
    let state = random_b64(24);
    let (tx, mut rx) = mpsc::channel(4);
    let waiting = std::sync::Arc::new(Waiting {
        state: state.clone(),
        tx,
    });
    let app = axum::Router::new()
        .route("/callback", axum::routing::get(callback))
        .with_state(waiting.clone());
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let mut url = url::Url::parse(authorize).map_err(|e| format!("{authorize}: {e}"))?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", &client.id)
            .append_pair("redirect_uri", &redirect)
            .append_pair("state", &state)
            .append_pair("code_challenge", &challenge(&verifier))
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", resource);
        if !scopes.is_empty() {
            q.append_pair("scope", &scopes.join(" "));
        }
    }
    {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "Open this URL to authorize {name}:\n  {url}");
        if paste {
            let _ = writeln!(
                err,
                "Waiting for the browser; from a browser on another machine, paste the \
                 address it was sent to (http://127.0.0.1:{port}/callback?code=…) here:"
            );
        }
    }
    if paste {
        let w = waiting.clone();
        // Stays blocked on stdin if the browser answers first: `ofc auth` exits then.
        std::thread::spawn(move || {
            let mut line = String::new();
            while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Ok(u) = url::Url::parse(line.trim()) {
                    let p: Params = u.query_pairs().into_owned().collect();
                    let (status, text) = judge(&w, &p);
                    if !status.is_success() {
                        let _ = write!(std::io::stderr(), "{text}");
                    }
                }
                line.clear();
            }
        });
    }
    let got = tokio::time::timeout(CONSENT_WAIT, rx.recv()).await;
    server.abort();
    let code = match got {
        Ok(Some(r)) => r?,
        Ok(None) => return Err("the callback listener stopped".to_owned()),
        Err(_) => {
            return Err(format!(
                "nobody authorized {name} within {} minutes",
                CONSENT_WAIT.as_secs() / 60
            ));
        }
    };
    let token = token::request(
        http,
        &endpoints.token_endpoint,
        &client,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", &redirect),
            ("code_verifier", &verifier),
            ("resource", resource),
        ],
        None,
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(Consented { client, token })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_s256_challenge_is_rfc_7636s() {
        // RFC 7636 appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let v = random_b64(48);
        assert_eq!(v.len(), 64);
        assert_ne!(v, random_b64(48));
    }

    #[test]
    fn a_callback_is_taken_only_with_the_state_and_a_code() {
        let (tx, mut rx) = mpsc::channel(4);
        let w = Waiting {
            state: "s1".into(),
            tx,
        };
        let p = |pairs: &[(&str, &str)]| -> Params {
            pairs
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect()
        };
        let (s, _) = judge(&w, &p(&[("code", "c"), ("state", "other")]));
        assert_eq!(s, 400);
        assert!(rx.try_recv().is_err(), "a wrong state is not taken");
        let (s, t) = judge(&w, &p(&[("error", "access_denied"), ("state", "s1")]));
        assert_eq!(s, 400);
        assert!(t.contains("access_denied"));
        assert!(rx.try_recv().unwrap().is_err());
        let (s, _) = judge(&w, &p(&[("code", "c9"), ("state", "s1")]));
        assert_eq!(s, 200);
        assert_eq!(rx.try_recv().unwrap().unwrap(), "c9");
    }
}
