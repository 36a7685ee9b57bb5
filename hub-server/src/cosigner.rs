//! The hub's side of witnessing: each new checkpoint of the log is submitted to the configured
//! witnesses (`log_witnesses`, C2SP `tlog-witness` `add-checkpoint`, with the consistency proof
//! from the size each last cosigned), and their cosignatures are kept with it (in the core's
//! [`hub_core::log_heads`]). From then on the hub serves that cosigned checkpoint
//! (`/log/checkpoint`, the log's JSON views, and the proofs of the versions it covers); entries
//! newer than it are proven under a fresh, uncosigned head until the next round, a fraction of
//! a second later.
//!
//! A witness that is down or refuses is retried with a growing pause (up to 30 s), and said in
//! the hub's log; the others' cosignatures are served meanwhile. A refusal that means the
//! witness saw another history (409 at the same size, 422) is logged as an error: it is what
//! witnesses are for.
//!
//! A task looks at the log's head every 200 ms and submits each new head to every witness (the
//! proof from the size the hub believes that witness holds; a 409 teaches it the size, one
//! retry), verifies the lines it gets back with the configured key, and keeps each witness's last
//! line with its tree: a witness failing a later round of the same tree keeps its cosignature
//! there. Two cosigned checkpoints are kept: the latest, and the latest every witness cosigned.
//! The same head is resubmitted every `log_witness_refresh_secs` so that timestamps stay recent
//! for clients that require a maximum age.
//!
//! **One cosigner among replicas.** Of the replicas sharing one database, exactly one submits:
//! the holder of the cosigner lease ([`COSIGNER_LEASE`], a PostgreSQL session advisory lock on
//! a connection of its own, see `hub_core::store::db::Lease`). It checks the lease before each
//! round and stores what the witnesses cosigned in the database (`log_cosigned`); the other
//! replicas ask for the lease every second and meanwhile serve the stored cosigned checkpoints.
//! When the holder dies, PostgreSQL sees its connection close and frees the lock; another
//! replica takes it at its next ask (about a second) and goes on from the witnesses' answers
//! (a 409 teaches it each witness's size). So witnesses never get heads from two submitters at
//! once, and every replica serves the same cosigned checkpoints. A new holder (or a restarted
//! single hub) serves fresh heads until its first round.

use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use futures::StreamExt as _;
use hub_core::Hub;
use hub_core::config::LogWitness;
use hub_core::log_heads::{Cosigned, CosignedHeads, FULL, LATEST};
use hub_core::store::db::Lease;
use hub_core::store::{StoredCosigned, now_ms};
use index_schema::tlog::{AddCheckpoint, Hash, WitnessVerifier, cosignature_lines};

/// How often the log's head is looked at.
const POLL: Duration = Duration::from_millis(200);
/// How often a replica that is not the cosigner asks for the lease (and reads the cosigned
/// checkpoints the cosigner stored).
const FOLLOW: Duration = Duration::from_secs(1);
/// The cosigner's lease (a PostgreSQL advisory lock key: `ofc-cosi` in ASCII).
pub const COSIGNER_LEASE: i64 = 0x6f66_632d_636f_7369;
/// Longest pause after failures.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The largest witness answer read.
const MAX_ANSWER: usize = 16 * 1024;

/// A configured witness, checked.
#[derive(Debug, Clone)]
pub struct Target {
    url: String,
    key: WitnessVerifier,
}

/// Checks the `log_witnesses` settings: every key parses and every URL is http(s).
pub fn targets(list: &[LogWitness]) -> anyhow::Result<Vec<Target>> {
    list.iter()
        .enumerate()
        .map(|(i, w)| {
            let key = WitnessVerifier::parse(&w.key).with_context(|| {
                format!(
                    "log_witnesses[{i}].key `{}` is invalid",
                    index_schema::tlog::shown_key(&w.key)
                )
            })?;
            let url = url::Url::parse(&w.url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .ok_or_else(|| {
                    anyhow!("log_witnesses[{i}].url `{}` is not an http(s) URL", w.url)
                })?;
            Ok(Target {
                url: url.as_str().trim_end_matches('/').to_string(),
                key,
            })
        })
        .collect()
}

/// Runs the rounds until the process ends.
pub fn start(state: Hub, targets: Vec<Target>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move { run(state, targets).await })
}

async fn run(state: Hub, targets: Vec<Target>) {
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .connect_timeout(Duration::from_secs(5))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot make the HTTP client for the witnesses");
            return;
        }
    };
    let mut lease: Option<Lease> = None;
    let mut rounds = Rounds::new(targets.len());
    loop {
        // Stay, or try to become, the one replica that submits heads.
        let held = match &mut lease {
            Some(l) => l.still_held().await,
            None => false,
        };
        if !held {
            if lease.take().is_some() {
                tracing::warn!("lost the cosigner lease (the database connection broke)");
                state.counters.set_cosigning(false);
            }
            match state.store.db().try_lease(COSIGNER_LEASE).await {
                Ok(Some(l)) => {
                    tracing::info!("this replica now submits the log's heads to the witnesses");
                    lease = Some(l);
                    state.counters.set_cosigning(true);
                    // What the previous holder learned is in the database, not here.
                    rounds = Rounds::new(targets.len());
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "cannot ask for the cosigner lease"),
            }
        }
        if lease.is_none() {
            follow(&state).await;
            tokio::time::sleep(FOLLOW).await;
            continue;
        }
        tokio::time::sleep(rounds.pause).await;
        rounds.round(&state, &client, &targets).await;
    }
}

/// A replica that is not the cosigner serves what the cosigner stored.
async fn follow(state: &Hub) {
    let stored = match state.store.cosigned().await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the cosigned checkpoints");
            return;
        }
    };
    let heads = CosignedHeads::from_stored(stored);
    *state.cosigned.write().unwrap_or_else(|p| p.into_inner()) = heads;
}

/// What the cosigner knows between rounds.
struct Rounds {
    /// The size each witness last cosigned, as far as this hub knows (0 at first: a witness
    /// that cosigned before answers 409 with its size).
    known: Vec<u64>,
    /// The head last cosigned by every witness, and when.
    done: Option<(u64, Hash, Instant)>,
    /// The last cosignature line(s) each witness gave, with the tree they are for: a witness
    /// failing a later round of the same tree keeps its line.
    last: Vec<Option<(u64, Hash, String)>>,
    pause: Duration,
}

impl Rounds {
    fn new(n: usize) -> Rounds {
        Rounds {
            known: vec![0; n],
            done: None,
            last: vec![None; n],
            pause: Duration::ZERO,
        }
    }

    /// One round: the head, when new (or due for a refresh), to every witness.
    async fn round(&mut self, state: &Hub, client: &reqwest::Client, targets: &[Target]) {
        // An unchanged head cosigned this long ago is submitted again, so the cosignatures'
        // timestamps stay recent even when nothing is published.
        let refresh = Duration::from_secs(state.config.log_witness_refresh_secs.max(1));
        let (size, root) = match state.store.log_head().await {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the log's head for the witnesses");
                self.pause = (self.pause * 2).clamp(POLL, MAX_BACKOFF);
                return;
            }
        };
        if let Some((s, r, at)) = &self.done
            && *s == size
            && *r == root
            && at.elapsed() < refresh
        {
            self.pause = POLL;
            return;
        }
        let note = state.log.sign_checkpoint(size, root);
        let rounds: Vec<_> = targets
            .iter()
            .zip(self.known.iter_mut())
            .map(|(t, k)| submit(client, state, t, k, &note, size))
            .collect();
        let answers: Vec<_> = targets
            .iter()
            .zip(futures::future::join_all(rounds).await)
            .collect();
        let mut failed = 0;
        for (i, (t, r)) in answers.into_iter().enumerate() {
            match r {
                Ok(l) => self.last[i] = Some((size, root, l)),
                Err(e) => {
                    failed += 1;
                    tracing::warn!(witness = %t.url, size, error = %format!("{e:#}"), "no cosignature");
                }
            }
        }
        let lines: Vec<&str> = self
            .last
            .iter()
            .flatten()
            .filter(|(s, r, _)| *s == size && *r == root)
            .map(|(_, _, l)| l.as_str())
            .collect();
        if !lines.is_empty() {
            let cosigned = Cosigned {
                size,
                root,
                note: format!("{note}{}", lines.concat()),
                count: lines.len(),
                at: Instant::now(),
            };
            let full = cosigned.count == targets.len();
            let at = now_ms();
            for kind in [LATEST, FULL].into_iter().filter(|k| *k == LATEST || full) {
                let stored = StoredCosigned {
                    kind: kind.to_string(),
                    size,
                    root,
                    note: cosigned.note.clone(),
                    count: cosigned.count,
                    at,
                };
                if let Err(e) = state.store.put_cosigned(&stored).await {
                    tracing::warn!(error = %e, "cannot store the cosigned checkpoint for the other replicas");
                }
            }
            let mut heads = state.cosigned.write().unwrap_or_else(|p| p.into_inner());
            if full {
                heads.full = Some(cosigned.clone());
            }
            heads.latest = Some(cosigned);
        }
        if failed == 0 {
            self.done = Some((size, root, Instant::now()));
            self.pause = POLL;
        } else {
            self.pause = (self.pause * 2).clamp(POLL, MAX_BACKOFF);
        }
    }
}

/// One witness's cosignature line(s) on the checkpoint `note` of (`size`, `root`).
async fn submit(
    client: &reqwest::Client,
    state: &Hub,
    t: &Target,
    known: &mut u64,
    note: &str,
    size: u64,
) -> anyhow::Result<String> {
    // A 409 tells the witness's size; the second try uses it.
    for _ in 0..2 {
        let old = *known;
        if old > size {
            bail!(
                "the witness cosigned a larger tree ({old} entries) than this log's ({size}): \
                 another replica of this hub submitted a newer head (then the next round \
                 passes), or the log lost entries it showed, or it is another log with this \
                 origin"
            );
        }
        let proof = if old == 0 || old == size {
            Vec::new()
        } else {
            state
                .store
                .log_consistency(old, size)
                .await
                .map_err(|e| anyhow!("cannot prove consistency from {old}: {e}"))?
        };
        let body = AddCheckpoint {
            old,
            proof,
            checkpoint: note.to_string(),
        }
        .to_body();
        let resp = client
            .post(format!("{}/add-checkpoint", t.url))
            .header(reqwest::header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .body(body)
            .send()
            .await
            .context("cannot reach the witness")?;
        let status = resp.status();
        let text = read_limited(resp).await?;
        match status.as_u16() {
            200 => {
                let lines = cosignature_lines(&text)?;
                let mut keep = String::new();
                for l in lines {
                    let (_, c) = state
                        .log
                        .verifier()
                        .verify_cosigned(&format!("{note}{l}"), std::slice::from_ref(&t.key))?;
                    if !c.is_empty() {
                        keep.push_str(&l);
                    }
                }
                if keep.is_empty() {
                    bail!(
                        "the witness answered without a valid cosignature of its key {}",
                        t.key
                    );
                }
                *known = size;
                return Ok(keep);
            }
            409 => {
                let theirs: u64 = text.trim().parse().map_err(|_| {
                    anyhow!("the witness answered 409 without a size: {}", quoted(&text))
                })?;
                if theirs == old {
                    tracing::error!(
                        witness = %t.url, size,
                        "the witness cosigned another tree of this size: the log's history \
                         differs from what the witness saw"
                    );
                    bail!("the witness holds another tree of size {theirs}");
                }
                *known = theirs;
            }
            422 => {
                tracing::error!(
                    witness = %t.url, old, size,
                    "the witness says this log does not extend what it cosigned: the log's \
                     history differs from what the witness saw"
                );
                bail!(
                    "the witness refuses the consistency proof from {old}: {}",
                    quoted(&text)
                );
            }
            s => bail!("the witness answered {s}: {}", quoted(&text)),
        }
    }
    bail!("the witness's size kept changing")
}

/// A witness's answer as the hub's log may show it: at most 200 characters, control
/// characters escaped (a witness is not trusted to write to the operator's terminal).
fn quoted(text: &str) -> String {
    let short: String = text.trim().chars().take(200).collect();
    format!("{:?}", short)
}

async fn read_limited(resp: reqwest::Response) -> anyhow::Result<String> {
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.context("the witness's answer broke off")?;
        if body.len() + chunk.len() > MAX_ANSWER {
            bail!("the witness's answer is larger than {MAX_ANSWER} bytes");
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).map_err(|_| anyhow!("the witness's answer is not UTF-8"))
}
