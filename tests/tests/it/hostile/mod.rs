//! A hostile hub for pull tests: a loopback proxy in front of the real `ofc-hub` that forwards
//! every request and then, depending on its [`Mode`], alters what the client receives — the
//! bundle bytes, the signature, the signing key, the version list, which version's manifest is
//! served — the attacks a compromised hub or a proxy on the path could mount. The client under
//! test is the real `ofc` binary; only the hub's answers are tampered with.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use index_schema::envelope::{SecretKey, sign_manifest};
use index_schema::manifest::{Manifest, Source};
use index_schema::name::Digest;
use serde_json::Value;

/// What the proxy does to the answers.
#[derive(Clone)]
pub enum Mode {
    /// Forwards untouched.
    Honest,
    /// Flips one byte of every bundle.
    CorruptBundle,
    /// Appends bytes to every bundle (more than the signed size).
    OversizeBundle,
    /// Flips one bit of the first signature of every version's envelope.
    BadSignature,
    /// Re-signs every version's manifest with this key and names it as the signer.
    ResignWith(Arc<SecretKey>),
    /// Leaves this version out of the agent's version list.
    HideVersion(String),
    /// Appends this text to every `tagline`, `description`, `displayName`, `message` and
    /// `reason` string of every JSON answer (errors included): text a person will read.
    InjectText(String),
    /// Marks this version yanked in the agent's version list (the flag is not signed).
    MarkYanked(String),
    /// Answers requests for version `.1` with version `.0`'s document (a signed, older manifest).
    ServeVersionAs(String, String),
    /// Serves these bundle bytes instead of the real ones, with the manifest re-signed by the
    /// publisher's own key (as if the publisher's key signed a malicious bundle) and the version
    /// list updated to match: only the unpacker stands in the way.
    HostileBundle(Arc<Vec<u8>>, Arc<SecretKey>),
    /// Sends the bundle in small chunks with a pause between them.
    SlowBundle(Duration),
    /// Sends the bundle one byte at a time with a pause between bytes (a stalling hub).
    TrickleBundle(Duration),
    /// Flips one byte of every OCI manifest fetched by digest (`/v2/…/manifests/sha256:…`).
    CorruptOciManifest,
    /// Flips one byte of every OCI blob (`/v2/…/blobs/…`).
    CorruptOciBlob,
    /// Sends every OCI blob in small chunks with a pause between them.
    SlowOciBlob(Duration),
    /// Sends every OCI blob one byte at a time with a pause between bytes (a stalling
    /// registry).
    TrickleOciBlob(Duration),
    /// Sends every OCI manifest fetched by digest one byte at a time with a pause between
    /// bytes.
    TrickleOciManifest(Duration),
    /// Rewrites the image of every docker source to this one, re-signed with the publisher's
    /// own key (as if the publisher had signed it) and the version list updated to match.
    SetImage(String, Arc<SecretKey>),
    /// Forwards everything to this other hub instead (one holding the same log key): a hub
    /// that shows some clients another log — a split view, a truncated or rewritten history.
    Fork(String),
}

/// The running proxy.
pub struct HostileHub {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    mode: Arc<Mutex<Mode>>,
    auth: Arc<Mutex<Vec<String>>>,
    _rt: tokio::runtime::Runtime,
}

#[derive(Clone)]
struct Proxy {
    upstream: String,
    mode: Arc<Mutex<Mode>>,
    auth: Arc<Mutex<Vec<String>>>,
    http: reqwest::Client,
}

impl HostileHub {
    /// A proxy in front of `upstream` (a hub URL), honest until told otherwise.
    pub fn start(upstream: &str) -> HostileHub {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mode = Arc::new(Mutex::new(Mode::Honest));
        let auth = Arc::new(Mutex::new(Vec::new()));
        let proxy = Proxy {
            upstream: upstream.trim_end_matches('/').to_string(),
            mode: mode.clone(),
            auth: auth.clone(),
            http: reqwest::Client::new(),
        };
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let app = axum::Router::new().fallback(forward).with_state(proxy);
        rt.spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        HostileHub {
            url: format!("http://{addr}"),
            mode,
            auth,
            _rt: rt,
        }
    }

    /// Every `Authorization` header received so far, in order.
    pub fn authorizations(&self) -> Vec<String> {
        self.auth.lock().unwrap().clone()
    }

    /// Changes what the proxy does from the next request on.
    pub fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }
}

async fn forward(State(p): State<Proxy>, req: Request) -> Response {
    let mode = p.mode.lock().unwrap().clone();
    let path = req.uri().path().to_string();
    let path_q = req
        .uri()
        .path_and_query()
        .map(|x| x.as_str().to_string())
        .unwrap_or_else(|| path.clone());
    // Which document is asked for: `ServeVersionAs` rewrites the version in the path.
    let mut upstream_path = path_q.clone();
    if let Mode::ServeVersionAs(real, asked) = &mode {
        let asked_seg = format!("/versions/{asked}");
        if path.ends_with(&asked_seg) || path.ends_with(&format!("{asked_seg}/bundle")) {
            upstream_path = upstream_path.replace(&asked_seg, &format!("/versions/{real}"));
        }
    }
    let method = req.method().clone();
    let headers = req.headers().clone();
    if let Some(a) = headers.get("authorization") {
        p.auth
            .lock()
            .unwrap()
            .push(String::from_utf8_lossy(a.as_bytes()).into_owned());
    }
    let body = axum::body::to_bytes(req.into_body(), 64 * 1024 * 1024)
        .await
        .unwrap();
    let mut rb = p
        .http
        .request(
            method,
            match &mode {
                Mode::Fork(other) => format!("{}{upstream_path}", other.trim_end_matches('/')),
                _ => format!("{}{upstream_path}", p.upstream),
            },
        )
        .body(body);
    for (k, v) in headers.iter() {
        if k != "host" && k != "content-length" {
            rb = rb.header(k, v);
        }
    }
    let resp = match rb.send().await {
        Ok(r) => r,
        Err(e) => {
            return Response::builder()
                .status(StatusCode::BAD_GATEWAY)
                .body(Body::from(e.to_string()))
                .unwrap();
        }
    };
    let status = resp.status();
    let mut out_headers = HeaderMap::new();
    for h in ["content-type", "www-authenticate"] {
        if let Some(v) = resp.headers().get(h) {
            out_headers.insert(h, v.clone());
        }
    }
    let mut bytes = resp.bytes().await.unwrap().to_vec();
    let is_bundle = path.ends_with("/bundle");
    let is_version =
        path.contains("/versions/") && !is_bundle && path.starts_with("/api/v1/agents/");
    let is_agent = path.starts_with("/api/v1/agents/") && !path.contains("/versions/");
    let is_oci_manifest = path.starts_with("/v2/") && path.contains("/manifests/sha256:");
    let is_oci_blob = path.starts_with("/v2/") && path.contains("/blobs/sha256:");

    if let Mode::InjectText(evil) = &mode
        && serde_json::from_slice::<Value>(&bytes).is_ok()
    {
        bytes = edit_json(&bytes, |v| inject_text(v, evil));
    }
    if status.is_success() {
        match &mode {
            Mode::CorruptBundle if is_bundle => {
                let mid = bytes.len() / 2;
                bytes[mid] ^= 0x55;
            }
            Mode::OversizeBundle if is_bundle => bytes.extend_from_slice(&[0u8; 4096]),
            Mode::CorruptOciManifest if is_oci_manifest && !bytes.is_empty() => {
                // A space where the JSON has one stays JSON; only the digest can tell.
                let i = bytes.iter().rposition(|b| *b == b'}').unwrap_or(0);
                bytes.insert(i, b' ');
            }
            Mode::CorruptOciBlob if is_oci_blob && !bytes.is_empty() => {
                let mid = bytes.len() / 2;
                bytes[mid] ^= 0x55;
            }
            Mode::BadSignature if is_version => {
                bytes = edit_json(&bytes, |v| {
                    let sig = v["envelope"]["signatures"][0]["sig"].as_str().unwrap();
                    let mut raw = STANDARD.decode(sig).unwrap();
                    raw[10] ^= 0x01;
                    v["envelope"]["signatures"][0]["sig"] = Value::String(STANDARD.encode(raw));
                });
            }
            Mode::ResignWith(key) if is_version => {
                bytes = edit_json(&bytes, |v| {
                    let m = manifest_of(v);
                    replace_envelope(v, &m, key);
                });
            }
            Mode::ResignWith(key) if is_agent => {
                // Keep the version list consistent with the re-signed manifests, so only the
                // signature check can catch it.
                let upstream = p.upstream.clone();
                let http = p.http.clone();
                let key = key.clone();
                let list: Value = serde_json::from_slice(&bytes).unwrap();
                let mut list = list;
                let versions = list["versions"].as_array().cloned().unwrap_or_default();
                for (i, ver) in versions.iter().enumerate() {
                    let vpath = format!(
                        "{upstream}{path}/versions/{}",
                        ver["version"].as_str().unwrap()
                    );
                    let doc: Value = http.get(vpath).send().await.unwrap().json().await.unwrap();
                    let m = manifest_of(&doc);
                    let env = sign_manifest(&m, &key);
                    list["versions"][i]["manifest_digest"] =
                        Value::String(env.payload_digest().to_string());
                }
                bytes = serde_json::to_vec(&list).unwrap();
            }
            Mode::HideVersion(hidden) if is_agent => {
                bytes = edit_json(&bytes, |v| {
                    if let Some(a) = v["versions"].as_array_mut() {
                        a.retain(|x| x["version"].as_str() != Some(hidden));
                    }
                });
            }
            Mode::MarkYanked(version) if is_agent => {
                bytes = edit_json(&bytes, |v| {
                    if let Some(a) = v["versions"].as_array_mut() {
                        for x in a.iter_mut() {
                            if x["version"].as_str() == Some(version) {
                                x["yanked"] = serde_json::json!(true);
                            }
                        }
                    }
                });
            }
            Mode::ServeVersionAs(real, asked) if is_agent => {
                // The list claims `asked` has `real`'s digest, so a client that trusted the
                // list alone would take the older manifest.
                bytes = edit_json(&bytes, |v| {
                    let digest = v["versions"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|x| x["version"].as_str() == Some(real))
                        .map(|x| x["manifest_digest"].clone())
                        .unwrap();
                    for x in v["versions"].as_array_mut().unwrap() {
                        if x["version"].as_str() == Some(asked) {
                            x["manifest_digest"] = digest.clone();
                        }
                    }
                });
            }
            Mode::HostileBundle(evil, key) if is_version => {
                bytes = edit_json(&bytes, |v| {
                    let mut m = manifest_of(v);
                    set_bundle(&mut m, evil);
                    replace_envelope(v, &m, key);
                });
            }
            Mode::HostileBundle(evil, key) if is_agent => {
                let upstream = p.upstream.clone();
                let mut list: Value = serde_json::from_slice(&bytes).unwrap();
                let versions = list["versions"].as_array().cloned().unwrap_or_default();
                for (i, ver) in versions.iter().enumerate() {
                    let vpath = format!(
                        "{upstream}{path}/versions/{}",
                        ver["version"].as_str().unwrap()
                    );
                    let doc: Value = p
                        .http
                        .get(vpath)
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    let mut m = manifest_of(&doc);
                    set_bundle(&mut m, evil);
                    let env = sign_manifest(&m, key);
                    list["versions"][i]["manifest_digest"] =
                        Value::String(env.payload_digest().to_string());
                }
                bytes = serde_json::to_vec(&list).unwrap();
            }
            Mode::SetImage(image, key) if is_version => {
                bytes = edit_json(&bytes, |v| {
                    let mut m = manifest_of(v);
                    set_image(&mut m, image);
                    replace_envelope(v, &m, key);
                });
            }
            Mode::SetImage(image, key) if is_agent => {
                let mut list: Value = serde_json::from_slice(&bytes).unwrap();
                let versions = list["versions"].as_array().cloned().unwrap_or_default();
                for (i, ver) in versions.iter().enumerate() {
                    let vpath = format!(
                        "{}{path}/versions/{}",
                        p.upstream,
                        ver["version"].as_str().unwrap()
                    );
                    let doc: Value = p
                        .http
                        .get(vpath)
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    let mut m = manifest_of(&doc);
                    set_image(&mut m, image);
                    let env = sign_manifest(&m, key);
                    list["versions"][i]["manifest_digest"] =
                        Value::String(env.payload_digest().to_string());
                }
                bytes = serde_json::to_vec(&list).unwrap();
            }
            Mode::HostileBundle(evil, _) if is_bundle => bytes = evil.as_ref().clone(),
            Mode::TrickleBundle(pause) if is_bundle => {
                return trickle(status, &out_headers, bytes, *pause);
            }
            Mode::TrickleOciBlob(pause) if is_oci_blob => {
                return trickle(status, &out_headers, bytes, *pause);
            }
            Mode::TrickleOciManifest(pause) if is_oci_manifest => {
                return trickle(status, &out_headers, bytes, *pause);
            }
            Mode::SlowBundle(pause) | Mode::SlowOciBlob(pause)
                if (is_bundle && matches!(mode, Mode::SlowBundle(_)))
                    || (is_oci_blob && matches!(mode, Mode::SlowOciBlob(_))) =>
            {
                let pause = *pause;
                let chunks: Vec<Vec<u8>> = bytes.chunks(16 * 1024).map(<[u8]>::to_vec).collect();
                let stream = futures_stream(chunks, pause);
                let mut r = Response::builder().status(status);
                for (k, v) in out_headers.iter() {
                    r = r.header(k, v);
                }
                return r.body(Body::from_stream(stream)).unwrap();
            }
            _ => {}
        }
    }
    let mut r = Response::builder().status(status);
    for (k, v) in out_headers.iter() {
        r = r.header(k, v);
    }
    r.body(Body::from(bytes)).unwrap()
}

/// The answer `bytes`, sent one byte at a time with `pause` before each.
fn trickle(status: StatusCode, headers: &HeaderMap, bytes: Vec<u8>, pause: Duration) -> Response {
    let chunks: Vec<Vec<u8>> = bytes.chunks(1).map(<[u8]>::to_vec).collect();
    let mut r = Response::builder().status(status);
    for (k, v) in headers.iter() {
        r = r.header(k, v);
    }
    r.body(Body::from_stream(futures_stream(chunks, pause)))
        .unwrap()
}

fn futures_stream(
    chunks: Vec<Vec<u8>>,
    pause: Duration,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures::stream::unfold(chunks.into_iter(), move |mut it| async move {
        let c = it.next()?;
        tokio::time::sleep(pause).await;
        Some((Ok(c), it))
    })
}

fn inject_text(v: &mut Value, evil: &str) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match x {
                    Value::String(s)
                        if ["tagline", "description", "displayName", "message", "reason"]
                            .contains(&k.as_str()) =>
                    {
                        s.push_str(evil);
                    }
                    _ => inject_text(x, evil),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| inject_text(x, evil)),
        _ => {}
    }
}

fn edit_json(bytes: &[u8], f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(bytes).unwrap();
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

fn manifest_of(version_doc: &Value) -> Manifest {
    let payload = version_doc["envelope"]["payload"].as_str().unwrap();
    let raw = STANDARD.decode(payload).unwrap();
    Manifest::from_json(std::str::from_utf8(&raw).unwrap()).unwrap()
}

fn replace_envelope(version_doc: &mut Value, m: &Manifest, key: &SecretKey) {
    let env = sign_manifest(m, key);
    version_doc["envelope"] = serde_json::from_str(&env.to_json()).unwrap();
    version_doc["manifest_digest"] = Value::String(env.payload_digest().to_string());
    version_doc["key"]["key_id"] = Value::String(key.key_id().to_string());
    version_doc["key"]["public_key"] = Value::String(key.public_key().to_string());
}

fn set_image(m: &mut Manifest, image: &str) {
    if let Source::Docker(d) = &mut m.source {
        d.image = image.to_string();
    }
}

fn set_bundle(m: &mut Manifest, evil: &[u8]) {
    if let Source::Bundle(b) = &mut m.source {
        b.digest = Digest::of(evil);
        b.size = evil.len() as u64;
    }
}
