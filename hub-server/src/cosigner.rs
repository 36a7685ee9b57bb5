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
//! for clients that require a maximum age. The cosigned heads are in memory: a restarted hub
//! serves fresh heads until its first round.

use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use futures::StreamExt as _;
use hub_core::Hub;
use hub_core::config::LogWitness;
use hub_core::log_heads::Cosigned;
use index_schema::tlog::{AddCheckpoint, Hash, WitnessVerifier, cosignature_lines};

/// How often the log's head is looked at.
const POLL: Duration = Duration::from_millis(200);
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
    // The size each witness last cosigned, as far as this hub knows (0 at first: a witness
    // that cosigned before answers 409 with its size).
    let mut known: Vec<u64> = vec![0; targets.len()];
    // An unchanged head cosigned this long ago is submitted again, so the cosignatures'
    // timestamps stay recent even when nothing is published.
    let refresh = Duration::from_secs(state.config.log_witness_refresh_secs.max(1));
    let mut done: Option<(u64, Hash, Instant)> = None;
    // The last cosignature line(s) each witness gave, with the tree they are for: a witness
    // failing a later round of the same tree keeps its line.
    let mut last: Vec<Option<(u64, Hash, String)>> = vec![None; targets.len()];
    let mut pause = POLL;
    loop {
        tokio::time::sleep(pause).await;
        let (size, root) = match state.store.log_head().await {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the log's head for the witnesses");
                pause = (pause * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        if let Some((s, r, at)) = &done
            && *s == size
            && *r == root
            && at.elapsed() < refresh
        {
            pause = POLL;
            continue;
        }
        let note = state.log.sign_checkpoint(size, root);
        let rounds: Vec<_> = targets
            .iter()
            .zip(known.iter_mut())
            .map(|(t, k)| submit(&client, &state, t, k, &note, size))
            .collect();
        let answers: Vec<_> = targets
            .iter()
            .zip(futures::future::join_all(rounds).await)
            .collect();
        let mut failed = 0;
        for (i, (t, r)) in answers.into_iter().enumerate() {
            match r {
                Ok(l) => last[i] = Some((size, root, l)),
                Err(e) => {
                    failed += 1;
                    tracing::warn!(witness = %t.url, size, error = %format!("{e:#}"), "no cosignature");
                }
            }
        }
        let lines: Vec<&str> = last
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
            let mut heads = state.cosigned.write().unwrap_or_else(|p| p.into_inner());
            if cosigned.count == targets.len() {
                heads.full = Some(cosigned.clone());
            }
            heads.latest = Some(cosigned);
        }
        if failed == 0 {
            done = Some((size, root, Instant::now()));
            pause = POLL;
        } else {
            pause = (pause * 2).min(MAX_BACKOFF);
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
