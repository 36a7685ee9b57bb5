//! Furniture `oauth:` end to end: the real `ofc` binary against an OAuth authorization server
//! and a streamable-HTTP MCP server written here (axum on 127.0.0.1), which wants a bearer
//! token the authorization server issued and has not expired, and answers anything else with
//! `401` and a `WWW-Authenticate` challenge naming its protected-resource metadata. Tokens live
//! one second, so a run crosses expiries. The agents are LLM agents on a scripted model.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::{Value, json};

use crate::common::run::blueprint;
use crate::common::{Ofc, bin};
use crate::run_e2e::{ModelServer, pieces};

/// How long the servers here take a token: one second.
const LIFE: Duration = Duration::from_secs(1);
/// What the token endpoint says the lifetime is (more than the server takes, so that a
/// refused token, not only an expired one, is seen by ofc).
const SAID_LIFE: u64 = 2;

#[derive(Default)]
struct Auth {
    /// Access token → when it was issued.
    issued: HashMap<String, Instant>,
    /// Refresh token → client.
    refresh: HashMap<String, String>,
    /// Code → (client, redirect, challenge).
    codes: HashMap<String, (String, String, String)>,
    clients: Vec<String>,
    /// grant_type of each token issued.
    grants: Vec<String>,
    /// Each refused token request: (grant_type, error).
    token_errors: Vec<(String, String)>,
    /// Each 401 the MCP server gave: the token sent, if any.
    refused: Vec<Option<String>>,
    /// Each tool call: the token it came with and the text.
    calls: Vec<(String, String)>,
    seq: u32,
}

type Shared = (Arc<Mutex<Auth>>, String);

/// The authorization server (under `/as`) and the MCP server (at `/mcp`) on one port.
struct OAuthServers {
    base: String,
    auth: Arc<Mutex<Auth>>,
    _rt: tokio::runtime::Runtime,
}

impl OAuthServers {
    fn start() -> OAuthServers {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let auth = Arc::new(Mutex::new(Auth::default()));
        let state: Shared = (auth.clone(), base.clone());
        let app = axum::Router::new()
            .route(
                "/mcp",
                axum::routing::post(mcp).get(no_stream).delete(no_stream),
            )
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                axum::routing::get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-authorization-server/as",
                axum::routing::get(server_metadata),
            )
            .route("/as/token", axum::routing::post(token))
            .route("/as/authorize", axum::routing::get(authorize))
            .route("/as/register", axum::routing::post(register))
            .with_state(state);
        rt.spawn(async move { axum::serve(listener, app).await });
        OAuthServers {
            base,
            auth,
            _rt: rt,
        }
    }

    fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn auth(&self) -> std::sync::MutexGuard<'_, Auth> {
        self.auth.lock().unwrap()
    }
}

async fn resource_metadata(State((_, base)): State<Shared>) -> Response {
    axum::Json(
        json!({"resource": format!("{base}/mcp"), "authorization_servers": [format!("{base}/as")],
        "scopes_supported": ["tools"]}),
    )
    .into_response()
}

async fn server_metadata(State((_, base)): State<Shared>) -> Response {
    axum::Json(json!({
        "issuer": format!("{base}/as"),
        "authorization_endpoint": format!("{base}/as/authorize"),
        "token_endpoint": format!("{base}/as/token"),
        "registration_endpoint": format!("{base}/as/register"),
        "code_challenge_methods_supported": ["S256"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
    }))
    .into_response()
}

fn refuse(a: &mut Auth, form: &HashMap<String, String>, error: &str) -> Response {
    a.token_errors.push((
        form.get("grant_type").cloned().unwrap_or_default(),
        error.to_owned(),
    ));
    oauth_error(error)
}

fn oauth_error(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, axum::Json(json!({"error": error}))).into_response()
}

fn issue(a: &mut Auth, grant: &str, client: &str, refreshable: bool) -> Response {
    a.seq += 1;
    let access = format!("at-{}-{:08x}", a.seq, rand::random::<u32>());
    a.issued.insert(access.clone(), Instant::now());
    a.grants.push(grant.to_owned());
    let mut body = json!({"access_token": access, "token_type": "Bearer", "expires_in": SAID_LIFE});
    if refreshable {
        let refresh = format!("rt-{}-{:08x}", a.seq, rand::random::<u32>());
        a.refresh.insert(refresh.clone(), client.to_owned());
        body["refresh_token"] = json!(refresh);
    }
    axum::Json(body).into_response()
}

async fn token(State((auth, _)): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let basic = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok());
    let mut a = auth.lock().unwrap();
    match form.get("grant_type").map(String::as_str) {
        Some("client_credentials") => {
            if basic.as_deref() != Some("floor-client:floor-secret") {
                return refuse(&mut a, &form, "invalid_client");
            }
            issue(&mut a, "client_credentials", "floor-client", false)
        }
        Some("authorization_code") => {
            let (Some(code), Some(verifier), Some(client)) = (
                form.get("code"),
                form.get("code_verifier"),
                form.get("client_id"),
            ) else {
                return oauth_error("invalid_request");
            };
            let Some((c, redirect, challenge)) = a.codes.remove(code) else {
                return oauth_error("invalid_grant");
            };
            let hashed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(<sha2::Sha256 as sha2::Digest>::digest(verifier.as_bytes()));
            if &c != client || form.get("redirect_uri") != Some(&redirect) || hashed != challenge {
                return oauth_error("invalid_grant");
            }
            issue(&mut a, "authorization_code", client, true)
        }
        Some("refresh_token") => {
            let Some(client) = form.get("refresh_token").and_then(|r| a.refresh.remove(r)) else {
                return refuse(&mut a, &form, "invalid_grant");
            };
            if form.get("client_id") != Some(&client) {
                return refuse(&mut a, &form, "invalid_client");
            }
            issue(&mut a, "refresh_token", &client, true)
        }
        _ => oauth_error("unsupported_grant_type"),
    }
}

async fn register(State((auth, _)): State<Shared>, body: String) -> Response {
    let req: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if req["token_endpoint_auth_method"] != "none" || !req["redirect_uris"].is_array() {
        return oauth_error("invalid_client_metadata");
    }
    let mut a = auth.lock().unwrap();
    let id = format!("dyn-{}", a.clients.len() + 1);
    a.clients.push(id.clone());
    (StatusCode::CREATED, axum::Json(json!({"client_id": id}))).into_response()
}

/// Consent without a person: a registered client with a loopback redirect, PKCE S256, and
/// the code sent back to the redirect with the state.
async fn authorize(
    State((auth, _)): State<Shared>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let mut a = auth.lock().unwrap();
    let (Some(client), Some(redirect), Some(challenge), Some(state)) = (
        q.get("client_id"),
        q.get("redirect_uri"),
        q.get("code_challenge"),
        q.get("state"),
    ) else {
        return oauth_error("invalid_request");
    };
    if !a.clients.contains(client)
        || q.get("code_challenge_method").map(String::as_str) != Some("S256")
        || q.get("response_type").map(String::as_str) != Some("code")
        || !redirect.starts_with("http://127.0.0.1:")
    {
        return oauth_error("invalid_request");
    }
    let code = format!("code-{:08x}", rand::random::<u32>());
    a.codes.insert(
        code.clone(),
        (client.clone(), redirect.clone(), challenge.clone()),
    );
    let to = format!("{redirect}?code={code}&state={}", urlencode(state));
    (StatusCode::FOUND, [("location", to)]).into_response()
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

async fn no_stream() -> StatusCode {
    StatusCode::METHOD_NOT_ALLOWED
}

/// A streamable-HTTP MCP server answering with JSON: `initialize`, `tools/list`, `tools/call`
/// of one tool, `echo` (which sleeps `sleep_ms` first), to a live token only.
async fn mcp(State((auth, base)): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let sent = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    {
        let mut a = auth.lock().unwrap();
        let live = sent
            .as_ref()
            .and_then(|t| a.issued.get(t))
            .is_some_and(|at| at.elapsed() < LIFE);
        if !live {
            a.refused.push(sent.clone());
            let challenge = format!(
                "Bearer error=\"invalid_token\", resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
            );
            return (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)]).into_response();
        }
    }
    let msg: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let Some(id) = msg.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match msg["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oauth-test", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "echo",
            "description": "Says the text back",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"},
                "sleep_ms": {"type": "integer"}}, "required": ["text"]},
            "annotations": {"readOnlyHint": true},
        }]}),
        "tools/call" => {
            let args = &msg["params"]["arguments"];
            let text = args["text"].as_str().unwrap_or_default().to_owned();
            let ms = args["sleep_ms"].as_u64().unwrap_or(0).min(5_000);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            auth.lock()
                .unwrap()
                .calls
                .push((sent.unwrap_or_default(), text.clone()));
            json!({"content": [{"type": "text", "text": format!("echo: {text}")}]})
        }
        other => {
            return axum::Json(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("no method {other}")}}))
            .into_response();
        }
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// Every file under `dir`, as text.
fn all_text_under(dir: &Path) -> String {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

fn tool_results(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "message" && e["message"]["from"] == "@a")
        .flat_map(|e| {
            e["message"]["tool_results"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|r| r.as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn client_credentials_token_is_fetched_refreshed_and_never_written() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let servers = OAuthServers::start();
    // Three calls, each its own model turn: the first outlives the token (as the server
    // counts), the second outlives the one after it as ofc counts.
    let model = ModelServer::start(&[(
        "m",
        vec![
            pieces(&["TOOL docs__echo {\"text\": \"one\", \"sleep_ms\": 1200}"]),
            pieces(&["TOOL docs__echo {\"text\": \"two\", \"sleep_ms\": 2100}"]),
            pieces(&["TOOL docs__echo {\"text\": \"three\"}"]),
            pieces(&["All three echoed."]),
        ],
    )]);
    blueprint(
        proj.path(),
        &format!(
            "name: oauth-cc\ndefaults:\n  endpoint: {}\n  model: m\nfurniture:\n  - name: docs\n    type: mcp\n    url: {}\n    oauth:\n      grant: client_credentials\n      client_id: floor-client\n      client_secret: ${{DOCS_SECRET}}\nagents:\n  - {{id: \"@a\", furniture: [docs]}}\n",
            model.endpoint,
            servers.mcp_url()
        ),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(proj.path())
            .env("DOCS_SECRET", "floor-secret")
            .env("RUST_LOG", "debug")
            .args(["--json", "run", "@a? echo three times"]),
    );
    r.assert_code(0);
    let results = tool_results(&r.stdout);
    assert_eq!(
        results,
        ["echo: one", "echo: two", "echo: three"],
        "stdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    let a = servers.auth();
    // The first request had no token; the server's challenge led ofc to the token endpoint.
    assert_eq!(a.refused.first(), Some(&None), "{:?}", a.refused);
    // A token fetched at start, then at least once for each call after the first.
    assert!(
        a.grants.len() >= 3 && a.grants.iter().all(|g| g == "client_credentials"),
        "{:?}",
        a.grants
    );
    // The second call went with the first token, which the server had stopped taking: ofc
    // got a new one and sent the call again, once.
    let refused_tokens = a.refused.iter().filter(|t| t.is_some()).count();
    assert!(refused_tokens >= 1, "{:?}", a.refused);
    let used: std::collections::HashSet<&String> = a.calls.iter().map(|(t, _)| t).collect();
    assert!(used.len() >= 2, "calls with {used:?}");
    assert_eq!(
        a.calls.len(),
        3,
        "each call reached the server once: {:?}",
        a.calls
    );
    // No token and no secret anywhere ofc writes: the session, the transcript, the agents'
    // log, stdout, stderr (with debug logging on).
    let written = all_text_under(&proj.path().join(".ofc"));
    assert!(
        std::fs::read_dir(proj.path().join(".ofc/sessions"))
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".jsonl")),
        "a session was recorded"
    );
    assert!(written.contains("echo: two"), "the calls are recorded");
    for t in a.issued.keys() {
        for (what, text) in [
            ("files", &written),
            ("stdout", &r.stdout),
            ("stderr", &r.stderr),
        ] {
            assert!(!text.contains(t.as_str()), "token {t} in {what}");
        }
    }
    for text in [&written, &r.stdout, &r.stderr] {
        assert!(!text.contains("floor-secret"), "the client secret leaked");
    }
    drop(a);

    // A secret the token endpoint refuses: a start error naming the furniture and the
    // refusal, never the secret.
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(proj.path())
            .env("DOCS_SECRET", "wrong-s3cret-x")
            .args(["run", "@a? echo"]),
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("furniture `docs`") && r.stderr.contains("invalid_client"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("wrong-s3cret-x"), "{}", r.stderr);
}

/// How the test plays the person consenting in [`auth_as`].
#[derive(Clone, Copy, PartialEq)]
enum Person {
    /// Pastes the address the authorization endpoint redirects to on ofc's stdin.
    Pastes,
    /// Is the browser: follows the redirect to ofc's loopback callback (after a callback with a
    /// wrong state, which ofc must answer 400 and not take).
    Browses,
    /// Refuses: the callback gets `error=access_denied`.
    Refuses,
}

/// Runs `ofc auth docs [--force]` with stdin piped: reads the URL it prints, asks the
/// authorization endpoint (which answers with the redirect a browser would follow), and
/// consents as `person` says. Returns (exit code, stdout, stderr).
fn auth_as(
    person: Person,
    dir: &Path,
    home: &Path,
    oauth_dir: &Path,
    force: bool,
) -> (Option<i32>, String, String) {
    let mut child = Command::new(bin("ofc"))
        .args(["auth", "docs"])
        .args(force.then_some("--force"))
        .current_dir(dir)
        .env("OFC_HOME", home)
        .env("OFC_OAUTH_DIR", oauth_dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.trim().strip_prefix("http") {
                let _ = tx.send(format!("http{url}"));
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let url = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("ofc auth printed the authorization URL");
    let mut stdin = child.stdin.take().unwrap();
    match person {
        Person::Pastes => {
            writeln!(stdin, "{}", redirect_of(&url)).unwrap();
        }
        Person::Browses => {
            let location = redirect_of(&url);
            let forged = location.replace("state=", "state=x");
            let (status, text) = get(&forged);
            assert_eq!(status, 400, "{text}");
            assert!(text.contains("state differs"), "{text}");
            let (status, text) = get(&location);
            assert_eq!(status, 200, "{text}");
            assert!(text.contains("authorized"), "{text}");
        }
        Person::Refuses => {
            let q: HashMap<String, String> = url::Url::parse(&url)
                .unwrap()
                .query_pairs()
                .into_owned()
                .collect();
            let denied = format!(
                "{}?error=access_denied&state={}",
                q["redirect_uri"],
                urlencode(&q["state"])
            );
            let (status, text) = get(&denied);
            assert_eq!(status, 400, "{text}");
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        reader.join().unwrap(),
    )
}

/// GET `url`: the status and the body.
fn get(url: &str) -> (u16, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let resp = reqwest::get(url).await.unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    })
}

/// Where `url` redirects to (the `Location` of its 302), as a browser would be sent.
fn redirect_of(url: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let resp = client.get(url).send().await.unwrap();
        assert_eq!(resp.status(), 302, "{:?}", resp.text().await);
        resp.headers()["location"].to_str().unwrap().to_owned()
    })
}

fn file_mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn authorization_code_consent_by_ofc_auth_then_runs_refresh_the_stored_token() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let oauth_dir = tempfile::tempdir().unwrap();
    let oauth_dir = oauth_dir.path().join("oauth");
    let servers = OAuthServers::start();
    let model = ModelServer::start(&[(
        "m",
        vec![
            pieces(&["TOOL docs__echo {\"text\": \"stored\"}"]),
            pieces(&["Echoed."]),
        ],
    )]);
    // No client_id: ofc registers one.
    blueprint(
        proj.path(),
        &format!(
            "name: oauth-ac\ndefaults:\n  endpoint: {}\n  model: m\nfurniture:\n  - name: docs\n    type: mcp\n    url: {}\n    oauth: {{}}\nagents:\n  - {{id: \"@a\", furniture: [docs]}}\n",
            model.endpoint,
            servers.mcp_url()
        ),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");

    // Nobody to consent (stdin is not a terminal) and nothing stored: the clear error.
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(proj.path())
            .env("OFC_OAUTH_DIR", &oauth_dir)
            .args(["run", "@a? echo"]),
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("furniture `docs`: not authorized: run `ofc auth docs` to authorize"),
        "{}",
        r.stderr
    );

    // `ofc auth`: consent by pasting the callback address.
    // A person who refuses: ofc auth fails, saying so, and writes no token.
    let (code, stdout, stderr) =
        auth_as(Person::Refuses, proj.path(), home.path(), &oauth_dir, false);
    assert_eq!(code, Some(1), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stderr.contains("furniture `docs`: authorization failed: the authorization server refused: access_denied"),
        "{stderr}"
    );
    assert!(!oauth_dir.join("oauth-ac/docs.json").exists());
    let (code, stdout, stderr) =
        auth_as(Person::Pastes, proj.path(), home.path(), &oauth_dir, false);
    assert_eq!(code, Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stderr.contains("Open this URL to authorize docs:"),
        "{stderr}"
    );
    let file = oauth_dir.join("oauth-ac/docs.json");
    assert!(
        stdout.contains(&format!(
            "docs is authorized (1 tools); token in {}",
            file.display()
        )),
        "{stdout}"
    );
    assert_eq!(file_mode(&file), 0o600);
    assert_eq!(file_mode(file.parent().unwrap()), 0o700);
    assert_eq!(file_mode(&oauth_dir), 0o700);
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    // A client registered for this consent (each consent's loopback port is its own).
    assert_eq!(stored["client_id"], "dyn-2", "{stored}");
    assert_eq!(stored["token_url"], format!("{}/as/token", servers.base));
    let first = stored["token"]["access_token"].as_str().unwrap().to_owned();
    assert!(servers.auth().issued.contains_key(&first));

    // Again: already authorized, nobody asked (stdin closed; nothing printed to open).
    std::thread::sleep(LIFE + Duration::from_millis(100));
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(proj.path())
            .env("OFC_OAUTH_DIR", &oauth_dir)
            .args(["auth", "docs"]),
    );
    r.assert_code(0);
    assert!(
        r.stdout.contains("docs is already authorized (1 tools"),
        "{}",
        r.stdout
    );
    assert!(!r.stderr.contains("Open this URL"), "{}", r.stderr);

    // `ofc run` uses the stored token, refreshing it (it has expired by now).
    std::thread::sleep(LIFE + Duration::from_millis(100));
    let refreshes_before = servers
        .auth()
        .grants
        .iter()
        .filter(|g| *g == "refresh_token")
        .count();
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(proj.path())
            .env("OFC_OAUTH_DIR", &oauth_dir)
            .args(["--json", "run", "@a? echo"]),
    );
    r.assert_code(0);
    assert_eq!(tool_results(&r.stdout), ["echo: stored"], "{}", r.stderr);
    let a = servers.auth();
    let refreshes = a.grants.iter().filter(|g| *g == "refresh_token").count();
    assert!(refreshes > refreshes_before, "{:?}", a.grants);
    assert_eq!(
        a.grants
            .iter()
            .filter(|g| *g == "authorization_code")
            .count(),
        1,
        "one consent: {:?}",
        a.grants
    );
    let now: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let last = now["token"]["access_token"].as_str().unwrap();
    assert_ne!(last, first, "the refreshed token was written back");
    assert!(a.calls.iter().any(|(t, _)| t == last), "{:?}", a.calls);
    assert_eq!(file_mode(&file), 0o600);
    let written = all_text_under(&proj.path().join(".ofc"));
    for t in a.issued.keys() {
        assert!(
            !written.contains(t.as_str()) && !r.stderr.contains(t.as_str()),
            "token {t} leaked"
        );
    }
    assert!(a.token_errors.is_empty(), "{:?}", a.token_errors);
    drop(a);

    // `--force` asks anew even with a token stored; this time the browser reaches ofc's
    // loopback callback.
    let (code, stdout, stderr) =
        auth_as(Person::Browses, proj.path(), home.path(), &oauth_dir, true);
    assert_eq!(code, Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("docs is authorized (1 tools)"), "{stdout}");
    assert_eq!(
        servers
            .auth()
            .grants
            .iter()
            .filter(|g| *g == "authorization_code")
            .count(),
        2
    );

    // Two runs at once (two projects of the same floor, so one token file) on an expired
    // token whose refresh token rotates: the file's lock makes one refresh and the other read
    // what it wrote (refreshing with the same refresh token twice is refused `invalid_grant`).
    let proj2 = tempfile::tempdir().unwrap();
    let model2 = ModelServer::start(&[(
        "m",
        vec![
            pieces(&["TOOL docs__echo {\"text\": \"stored\"}"]),
            pieces(&["Echoed."]),
        ],
    )]);
    let text = std::fs::read_to_string(proj.path().join("blueprint.yaml")).unwrap();
    blueprint(
        proj2.path(),
        &text.replace(&model.endpoint, &model2.endpoint),
    );
    std::thread::sleep(LIFE + Duration::from_millis(100));
    let runs: Vec<_> = [proj.path(), proj2.path()]
        .into_iter()
        .map(|dir| {
            let mut c = ofc.cmd();
            c.current_dir(dir)
                .env("OFC_OAUTH_DIR", &oauth_dir)
                .args(["--json", "run", "@a? echo"]);
            std::thread::spawn(move || Ofc::finish(&mut c))
        })
        .collect();
    for r in runs {
        let r = r.join().unwrap();
        r.assert_code(0);
        assert_eq!(tool_results(&r.stdout), ["echo: stored"], "{}", r.stderr);
    }
    let a = servers.auth();
    assert!(a.token_errors.is_empty(), "{:?}", a.token_errors);
}

#[test]
fn bad_oauth_blocks_are_load_errors_naming_the_furniture() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let head = "name: bad\ndefaults:\n  endpoint: http://127.0.0.1:9/v1\n  model: m\nagents:\n  - {id: \"@a\", furniture: [docs]}\nfurniture:\n  - name: docs\n";
    for (furniture, path, says) in [
        (
            "    type: mcp\n    command: srv\n    oauth: {}\n",
            "furniture[0].oauth",
            "furniture `docs`: `oauth` needs an MCP server reached by `url`",
        ),
        (
            "    type: mcp\n    url: http://127.0.0.1:9/mcp\n    oauth: {grant: implicit}\n",
            "furniture[0].oauth",
            "`implicit` is not a grant ofc can use",
        ),
        (
            "    type: mcp\n    url: http://127.0.0.1:9/mcp\n    oauth: {grant: client_credentials, client_secret: s}\n",
            "furniture[0].oauth.client_id",
            "furniture `docs`: the `client_credentials` grant needs the `client_id`",
        ),
        (
            "    type: mcp\n    url: http://127.0.0.1:9/mcp\n    oauth: {grant: client_credentials, client_id: c}\n",
            "furniture[0].oauth.client_secret",
            "furniture `docs`: the `client_credentials` grant needs a `client_secret`",
        ),
        (
            "    type: taskboard\n    oauth: {}\n",
            "furniture[0].oauth",
            "",
        ),
    ] {
        blueprint(proj.path(), &format!("{head}{furniture}"));
        let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args(["run", "hi"]));
        assert_ne!(r.code, Some(0), "{furniture}");
        assert!(r.stderr.contains("blueprint.yaml:"), "{}", r.stderr);
        assert!(r.stderr.contains(path), "{furniture}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{furniture}: {}", r.stderr);
        // `ofc auth` refuses the same blueprint the same way.
        let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args(["auth", "docs"]));
        assert_eq!(r.code, Some(1), "{}", r.stderr);
        assert!(r.stderr.contains(path), "{}", r.stderr);
    }
    // `ofc auth` of a furniture without `oauth`, and of one the blueprint does not have.
    blueprint(
        proj.path(),
        &format!("{head}    type: mcp\n    url: http://127.0.0.1:9/mcp\n"),
    );
    let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args(["auth", "docs"]));
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("furniture `docs` has no `oauth:` block"),
        "{}",
        r.stderr
    );
    let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args(["auth", "nope"]));
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("has no furniture `nope`"), "{}", r.stderr);
    // A secret written in the file is accepted, with a warning that never shows it.
    blueprint(
        proj.path(),
        &format!(
            "{head}    type: mcp\n    url: http://127.0.0.1:9/mcp\n    oauth: {{grant: client_credentials, client_id: c, client_secret: lit3ral-s3cret}}\n"
        ),
    );
    let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args(["run", "hi"]));
    assert!(
        r.stderr.contains("warning: ")
            && r.stderr.contains(
                "furniture[0].oauth.client_secret: the secret is written in the blueprint"
            ),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("lit3ral-s3cret"), "{}", r.stderr);
}

/// `ofc run` in a real terminal (tmux) with nothing stored: a person is there, so it asks —
/// the URL on the screen, the code at its loopback callback — and the run goes on with the
/// token it got, kept for the next run.
#[test]
fn ofc_run_at_a_terminal_asks_the_person_and_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let oauth_dir = tempfile::tempdir().unwrap();
    let servers = OAuthServers::start();
    let model = ModelServer::start(&[(
        "m",
        vec![
            pieces(&["TOOL docs__echo {\"text\": \"at a terminal\"}"]),
            pieces(&["Echoed at a terminal."]),
        ],
    )]);
    blueprint(
        proj.path(),
        &format!(
            "name: oauth-tty\ndefaults:\n  endpoint: {}\n  model: m\nfurniture:\n  - name: docs\n    type: mcp\n    url: {}\n    oauth: {{}}\nagents:\n  - {{id: \"@a\", furniture: [docs]}}\n",
            model.endpoint,
            servers.mcp_url()
        ),
    );
    let command = format!(
        "cd '{}' && OFC_HOME='{}' OFC_OAUTH_DIR='{}' NO_COLOR=1 '{}' run '@a? echo'; echo \"ofc exited $?\"; sleep 60",
        proj.path().display(),
        home.path().display(),
        oauth_dir.path().display(),
        bin("ofc").display()
    );
    let tmux = crate::common::run::Tmux::start(&command);
    tmux.wait_for("Open this URL to authorize docs:", 1);
    // The URL is long: the pane's wrapped lines joined.
    let screen = tmux.ok(&["capture-pane", "-p", "-J", "-t", "t", "-S", "-200"]);
    let url = screen
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("http://") && l.contains("/as/authorize?"))
        .unwrap_or_else(|| panic!("no URL on the screen:\n{screen}"))
        .to_owned();
    let (status, text) = get(&redirect_of(&url));
    assert_eq!(status, 200, "{text}");
    let screen = tmux.wait_for("ofc exited", 1);
    assert!(screen.contains("ofc exited 0"), "{screen}");
    assert!(screen.contains("Echoed at a terminal."), "{screen}");
    let a = servers.auth();
    assert!(
        a.calls.iter().any(|(_, t)| t == "at a terminal"),
        "{:?}",
        a.calls
    );
    assert!(
        oauth_dir.path().join("oauth-tty/docs.json").is_file(),
        "the token was kept"
    );
}
