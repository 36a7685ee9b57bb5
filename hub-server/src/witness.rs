//! `ofc-hub witness serve`: a transparency-log witness speaking C2SP `tlog-witness`.
//!
//! It knows the verifier keys of the logs it witnesses (`--log`), keeps for each the last
//! checkpoint it cosigned, and answers `POST /add-checkpoint` (a checkpoint plus the consistency
//! proof from the size it last cosigned) with a `cosignature/v1` line — only when the checkpoint
//! is signed by the log's key and extends what it saw. A hub configured with the witness
//! (`log_witnesses` in `hub.toml`) submits each new checkpoint and serves the cosignatures with
//! it; a client that requires them (`ofc trust witness`) then refuses any view of the log the
//! witness did not see. Any tlog-witness client (Sigsum's, litetlog's) can submit too.
//!
//! State: one JSON file, rewritten (temp file, fsync, rename) before every answer that cosigns,
//! under one lock, so a crash never rolls a log back in the witness's memory.
//!
//! It cosigns the checkpoint's text as sent, extension lines included, and writes its state
//! only when the tree changes; a lock file beside the state (`<state>.lock`, flock) stops a
//! second witness on it. Answers as the spec says: 404 unknown origin, 403 not signed by the
//! log's key, 400 malformed or old size greater than new, 409 (`text/x.tlog.size`, its size)
//! when the old size is not what it cosigned or the same size has another root, 422 when the
//! consistency proof fails; the last two are also a warning in its log. It has no read API for
//! monitors beyond `GET /` (its key and the size it holds per log).

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use index_schema::tlog::{
    AddCheckpoint, LogVerifier, WitnessSigner, WitnessVerifier, check_consistency, checkpoint_text,
    hash_b64, origin_of, parse_hash_b64,
};
use serde::{Deserialize, Serialize};

/// The largest `add-checkpoint` body taken: 63 proof lines and a checkpoint with a few
/// signatures fit many times over.
const MAX_BODY: usize = 64 * 1024;

/// The largest tree size a witness cosigns (2^48).
const MAX_TREE_SIZE: u64 = 1 << 48;

/// Time a request's body may take to arrive whole, however it trickles (the connection
/// layer's body timeout ends only a body that sends nothing).
const BODY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads the witness key from `path`, creating it (0600) named `name` when it does not exist.
pub fn open_witness_key(path: &Path, name: &str) -> anyhow::Result<WitnessSigner> {
    match std::fs::read_to_string(path) {
        Ok(text) => WitnessSigner::from_secret_text(&text)
            .with_context(|| format!("{} is not a witness key", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = WitnessSigner::generate(name, &mut rand::rngs::OsRng)
                .with_context(|| format!("cannot create a witness key named `{name}`"))?;
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            let mut f = hub_core::private::private_file(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            f.write_all(key.to_secret_text().as_bytes())?;
            f.write_all(b"\n")?;
            f.sync_all()?;
            tracing::info!(key = %key.verifier(), "created the witness key");
            Ok(key)
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// What the witness last cosigned of one log.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Seen {
    size: u64,
    /// The root hash, base64.
    root: String,
    /// The checkpoint note as submitted.
    checkpoint: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WitnessState {
    /// By log origin.
    #[serde(default)]
    logs: BTreeMap<String, Seen>,
}

/// A witness: its key, the logs it follows and what it saw of them.
#[derive(Debug)]
pub struct Witness {
    signer: WitnessSigner,
    logs: HashMap<String, LogVerifier>,
    state_path: PathBuf,
    state: tokio::sync::Mutex<WitnessState>,
    /// `<state>.lock`, held (flock) for the witness's life: two witnesses on one state file
    /// could each cosign another fork.
    _lock: std::fs::File,
}

/// Takes the exclusive lock of the state file `state_path`, or says who holds it.
fn lock_state(state_path: &Path) -> anyhow::Result<std::fs::File> {
    let path = state_path.with_extension("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    #[cfg(unix)]
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
        |_| {
            anyhow::anyhow!(
                "another witness uses the state file {} (its lock {} is held)",
                state_path.display(),
                path.display()
            )
        },
    )?;
    Ok(file)
}

impl Witness {
    /// A witness cosigning as `signer` for `logs`, keeping its state in `state_path` (read now
    /// when it exists: a file that does not parse is an error, never a fresh start).
    pub fn open(
        signer: WitnessSigner,
        logs: Vec<LogVerifier>,
        state_path: PathBuf,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(
            !logs.is_empty(),
            "a witness needs at least one log key (--log ORIGIN+ID+KEY, as `ofc-hub log key` prints it)"
        );
        let mut by_origin = HashMap::new();
        for l in logs {
            if let Some(prev) = by_origin.insert(l.origin().to_string(), l.clone()) {
                anyhow::bail!(
                    "two log keys for the origin `{}`: {prev} and {l}",
                    l.origin()
                );
            }
        }
        let lock = lock_state(&state_path)?;
        let state = match std::fs::read_to_string(&state_path) {
            Ok(text) => serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is not a witness state file; fix or move it (a fresh state forgets \
                     what the logs showed)",
                    state_path.display()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => WitnessState::default(),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read {}", state_path.display()));
            }
        };
        Ok(Witness {
            signer,
            logs: by_origin,
            state_path,
            state: tokio::sync::Mutex::new(state),
            _lock: lock,
        })
    }

    /// The witness's verifier key, for hubs and clients to configure.
    pub fn verifier(&self) -> WitnessVerifier {
        self.signer.verifier()
    }

    /// The routes: `POST /add-checkpoint` (tlog-witness) and `GET /` (what it is).
    pub fn router(self: Arc<Self>) -> axum::Router {
        axum::Router::new()
            .route("/add-checkpoint", post(add_checkpoint))
            .route("/", get(about))
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(self)
    }

    /// Writes `state` (temp file, fsync, rename, fsync dir) on a blocking thread; the caller
    /// holds the state's lock throughout.
    async fn save(&self, state: &WitnessState) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(state)?;
        let path = self.state_path.clone();
        tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
            let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
            {
                let mut f = std::fs::File::create(&tmp)
                    .with_context(|| format!("cannot write {}", tmp.display()))?;
                f.write_all(text.as_bytes())?;
                f.sync_all()?;
            }
            std::fs::rename(&tmp, &path)
                .with_context(|| format!("cannot replace {}", path.display()))?;
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        })
        .await
        .map_err(|e| anyhow::anyhow!("the save stopped: {e}"))?
    }

    /// The answer to one `add-checkpoint` body, as tlog-witness specifies it.
    async fn add(&self, body: &[u8]) -> Response {
        let Ok(body) = std::str::from_utf8(body) else {
            return text(StatusCode::BAD_REQUEST, "the body is not UTF-8\n".into());
        };
        let req = match AddCheckpoint::parse(body) {
            Ok(r) => r,
            Err(e) => return text(StatusCode::BAD_REQUEST, format!("{e}\n")),
        };
        // What a cosignature signs: the checkpoint's text, extension lines included. A note
        // that is not a checkpoint is the submitter's mistake (400), not a bad signature.
        let body = match checkpoint_text(&req.checkpoint) {
            Ok(b) => b,
            Err(e) => return text(StatusCode::BAD_REQUEST, format!("{e}\n")),
        };
        let Some(origin) = origin_of(&req.checkpoint) else {
            return text(
                StatusCode::BAD_REQUEST,
                "the checkpoint has no origin\n".into(),
            );
        };
        let Some(log) = self.logs.get(origin) else {
            return text(
                StatusCode::NOT_FOUND,
                format!("this witness does not follow the log `{origin}`\n"),
            );
        };
        let cp = match log.verify_checkpoint(&req.checkpoint) {
            Ok(cp) => cp,
            Err(e) => return text(StatusCode::FORBIDDEN, format!("{e}\n")),
        };
        // A tree past 2^48 entries is no log anyone runs; taken on first sight (when no proof
        // can be asked for), it would have pinned this witness above every real checkpoint.
        if cp.size > MAX_TREE_SIZE {
            return text(
                StatusCode::BAD_REQUEST,
                format!(
                    "a tree of {} entries is past what this witness takes ({MAX_TREE_SIZE})\n",
                    cp.size
                ),
            );
        }
        if req.old > cp.size {
            return text(
                StatusCode::BAD_REQUEST,
                format!(
                    "old size {} is past the checkpoint's {}\n",
                    req.old, cp.size
                ),
            );
        }
        let mut state = self.state.lock().await;
        let seen = state.logs.get(origin).cloned();
        let seen_size = seen.as_ref().map_or(0, |s| s.size);
        if req.old != seen_size {
            return (
                StatusCode::CONFLICT,
                [(header::CONTENT_TYPE, "text/x.tlog.size")],
                format!("{seen_size}\n"),
            )
                .into_response();
        }
        match &seen {
            None if !req.proof.is_empty() => {
                return text(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "a consistency proof from size 0 must be empty\n".into(),
                );
            }
            None => {}
            Some(s) => {
                let old_root = match parse_hash_b64(&s.root) {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::error!(origin, error = %e, "the witness state holds a bad root");
                        return text(StatusCode::INTERNAL_SERVER_ERROR, "bad state\n".into());
                    }
                };
                if s.size == cp.size && old_root != cp.root {
                    tracing::warn!(
                        origin,
                        size = cp.size,
                        seen = %s.root,
                        shown = %hash_b64(&cp.root),
                        "the log signed two trees of one size: it shows different views"
                    );
                    return (
                        StatusCode::CONFLICT,
                        [(header::CONTENT_TYPE, "text/x.tlog.size")],
                        format!("{seen_size}\n"),
                    )
                        .into_response();
                }
                if check_consistency(&req.proof, s.size, old_root, cp.size, cp.root).is_err() {
                    tracing::warn!(
                        origin,
                        old = s.size,
                        new = cp.size,
                        "a checkpoint signed by the log does not extend the one cosigned: \
                         the log's history was rewritten, or it shows different views"
                    );
                    return text(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        format!(
                            "the consistency proof from size {} to {} does not verify\n",
                            s.size, cp.size
                        ),
                    );
                }
            }
        }
        let next = Seen {
            size: cp.size,
            root: hash_b64(&cp.root),
            checkpoint: req.checkpoint.clone(),
        };
        // Persisted when the tree changes (not for another note of the same tree).
        if seen
            .as_ref()
            .is_none_or(|s| s.size != next.size || s.root != next.root)
        {
            state.logs.insert(origin.to_string(), next);
            if let Err(e) = self.save(&state).await {
                // Not persisted: not cosigned, and not remembered either.
                match seen {
                    Some(s) => state.logs.insert(origin.to_string(), s),
                    None => state.logs.remove(origin),
                };
                tracing::error!(error = %format!("{e:#}"), "cannot save the witness state");
                return text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the witness cannot save its state\n".into(),
                );
            }
        }
        drop(state);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        text(StatusCode::OK, self.signer.cosign(&body, now))
    }
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

async fn add_checkpoint(State(w): State<Arc<Witness>>, body: axum::body::Body) -> Response {
    let body = match tokio::time::timeout(BODY_DEADLINE, axum::body::to_bytes(body, MAX_BODY)).await
    {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => {
            // axum's error says which: a body past the limit, or one that failed to arrive.
            let status = if e.to_string().contains("length limit") {
                StatusCode::PAYLOAD_TOO_LARGE
            } else {
                StatusCode::BAD_REQUEST
            };
            return (
                status,
                format!("cannot read the body (at most {MAX_BODY} bytes): {e}\n"),
            )
                .into_response();
        }
        Err(_) => {
            return (
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the body did not arrive within {} s\n",
                    BODY_DEADLINE.as_secs()
                ),
            )
                .into_response();
        }
    };
    w.add(&body).await
}

/// `GET /`: the witness's key and the logs it follows, with the size it last cosigned.
async fn about(State(w): State<Arc<Witness>>) -> Response {
    let state = w.state.lock().await;
    let mut s = format!("ofc-hub witness {}\n", w.verifier());
    let mut logs: Vec<_> = w.logs.values().collect();
    logs.sort_by(|a, b| a.origin().cmp(b.origin()));
    for l in logs {
        let size = state.logs.get(l.origin()).map_or(0, |s| s.size);
        s.push_str(&format!("log {l} size {size}\n"));
    }
    text(StatusCode::OK, s)
}
