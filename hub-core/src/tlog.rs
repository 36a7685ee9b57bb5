//! The transparency log as the core proves it: the head to prove against (the witnesses'
//! cosigned checkpoint when it covers what is asked, else the current head), inclusion and
//! consistency proofs, and the JSON views' content (`GET /api/v1/log`, a publisher's entries,
//! the `log` field of publish and version answers). The tables and appends are
//! `store/tlog.rs`; the key `log_key.rs`; the formats [`index_schema::tlog`].
//!
//! **What is logged**: every publish, key registration, first key revocation, yank and unyank,
//! and an operator's delete (a `delete` entry per version; the publish entry stays) — each
//! appended inside the transaction of the change, so nothing commits without its entry and no
//! entry exists for what rolled back. Rows committed by a hub older than the log are logged at
//! the next start (`Store::log_backfill`, keys first, in one transaction that takes the log's
//! head row before it reads what is unlogged, so replicas starting together log each row once);
//! `ofc-hub log verify` recomputes every stored hash and the root from the entries and checks
//! that each version and each registered key has its entry, and that none is logged twice.
//!
//! **The key**: `DATA/log-key` (the signed-note secret form, 0600), created on first start with
//! the origin `log_origin` (default `<registry_host>/log`); a configured origin that differs from
//! the key's name stops the hub. Replicas sharing one PostgreSQL share the key file
//! (`log_key_file`); the database records the key's public half, and a replica with another
//! key refuses to start (`log_key.rs`).
//!
//! **Which head a reader is shown** (`log_head_covering`, one snapshot of size, root and note):
//! for a reader that holds entries (a version's proof with the client's `log_size`, a
//! publisher's entries) the cosigned checkpoint holding them with the most cosignatures; for one
//! that holds nothing (`/log/checkpoint`, `GET /api/v1/log` without `log_size`) the newest
//! cosigned one while it is recent (twice `log_witness_refresh_secs`), else the fresh head — so a
//! log whose witnesses are all down does not look frozen. No client is ever shown a smaller tree
//! than it verified.

use std::time::Duration;

use index_schema::hub_api::{LogEntries, LogEntriesQuery, LogEntryInfo, LogInclusion, LogInfo};
use index_schema::tlog::{self, Hash};

use crate::error::{CoreError, CoreResult, ErrorCode};
use crate::hub::Hub;
use crate::log_heads::Head;
use crate::store::Result as StoreResult;

/// The most entries in one page of a publisher's log entries.
const MAX_LOG_PAGE: u32 = 1000;

impl Hub {
    /// The head to prove against, one snapshot: of the cosigned checkpoints that hold at least
    /// `need` entries, the one most witnesses cosigned (then the larger); else the log's
    /// current head. With `need` 0 (a reader that holds nothing of the log, such as a tiles
    /// reader or a monitor), the newest cosigned checkpoint, and one behind the head only while
    /// recent (twice `log_witness_refresh_secs`): with every witness down the log must not look
    /// frozen.
    pub async fn log_head_covering(&self, need: u64) -> StoreResult<Head> {
        let (size, root) = self.store.log_head().await?;
        // With witnesses, the cosigned heads as stored, read now: every replica on the database
        // then answers from the same heads (each replica's own copy trails the cosigner's by up
        // to a follow interval, and a reader sent to the replicas in turn saw the tree shrink).
        let heads = if self.config.log_witnesses.is_empty() {
            self.cosigned
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
        } else {
            crate::log_heads::CosignedHeads::from_stored(self.store.cosigned().await?)
        };
        let stale_after = Duration::from_secs(self.config.log_witness_refresh_secs.max(1) * 2);
        let candidates = [heads.full, heads.latest]
            .into_iter()
            .flatten()
            .filter(|c| c.size >= need && c.size <= size);
        let best = if need > 0 {
            candidates.max_by_key(|c| (c.count, c.size))
        } else {
            candidates
                .filter(|c| c.size == size || c.at.elapsed() < stale_after)
                .max_by_key(|c| (c.size, c.count))
        };
        Ok(match best {
            Some(c) => Head {
                size: c.size,
                root: c.root,
                cosigned: Some(c.note),
            },
            None => Head {
                size,
                root,
                cosigned: None,
            },
        })
    }

    /// The signed checkpoint note of (`size`, `root`): a cosigned one when it is that tree.
    pub fn checkpoint_note(&self, size: u64, root: Hash) -> String {
        let heads = self.cosigned.read().unwrap_or_else(|p| p.into_inner());
        [&heads.full, &heads.latest]
            .into_iter()
            .flatten()
            .filter(|c| c.size == size && c.root == root)
            .max_by_key(|c| c.count)
            .map(|c| c.note.clone())
            .unwrap_or_else(|| self.log.sign_checkpoint(size, root))
    }
}

fn b64(hashes: &[Hash]) -> Vec<String> {
    hashes.iter().map(tlog::hash_b64).collect()
}

/// The consistency proof from the client's `log_size` to `size`, when it asked for one the
/// tree can give (a `log_size` past `size` gets none: the client sees the truncation itself).
async fn consistency(
    hub: &Hub,
    log_size: Option<u64>,
    size: u64,
) -> CoreResult<Option<Vec<String>>> {
    match log_size {
        Some(old) if old <= size => Ok(Some(b64(&hub.store.log_consistency(old, size).await?))),
        _ => Ok(None),
    }
}

/// `entry` at `index`, proven in the tree (`size`, `root`), with its signed checkpoint.
pub async fn inclusion(
    hub: &Hub,
    entry: &tlog::Entry,
    index: u64,
    size: u64,
    root: Hash,
    log_size: Option<u64>,
) -> CoreResult<LogInclusion> {
    Ok(LogInclusion {
        index,
        entry: entry.to_string(),
        checkpoint: hub.checkpoint_note(size, root),
        inclusion: b64(&hub.store.log_inclusion(index, size).await?),
        consistency: consistency(hub, log_size, size).await?,
    })
}

/// `entry` at `index`, proven under the latest cosigned checkpoint when it holds the entry
/// (and the client's `log_size`), else under the current head.
pub async fn inclusion_now(
    hub: &Hub,
    entry: &tlog::Entry,
    index: u64,
    log_size: Option<u64>,
) -> CoreResult<LogInclusion> {
    let need = (index + 1).max(log_size.unwrap_or(0));
    let head = hub.log_head_covering(need).await?;
    Ok(LogInclusion {
        index,
        entry: entry.to_string(),
        checkpoint: head.note(&hub.log),
        inclusion: b64(&hub.store.log_inclusion(index, head.size).await?),
        consistency: consistency(hub, log_size, head.size).await?,
    })
}

/// The log's origin, verifier key and current checkpoint (with the consistency proof from the
/// client's `log_size`).
pub async fn info(hub: &Hub, log_size: Option<u64>) -> CoreResult<LogInfo> {
    let head = hub.log_head_covering(log_size.unwrap_or(0)).await?;
    Ok(LogInfo {
        origin: hub.log.origin().to_string(),
        key: hub.log.verifier().to_string(),
        checkpoint: head.note(&hub.log),
        consistency: consistency(hub, log_size, head.size).await?,
    })
}

/// Every logged version and key event of `publisher` (or of one of its agents, with the
/// publisher's key events), each with its inclusion proof under one checkpoint, in pages.
pub async fn publisher_entries(
    hub: &Hub,
    publisher: &str,
    q: &LogEntriesQuery,
) -> CoreResult<LogEntries> {
    let publisher = index_schema::name::check_publisher(publisher)
        .map_err(|e| CoreError::invalid(ErrorCode::InvalidName, e.to_string()))?;
    let agent = match &q.agent {
        Some(a) => Some(
            index_schema::name::AgentName::new(&publisher, a)
                .map_err(|e| CoreError::invalid(ErrorCode::InvalidName, e.to_string()))?
                .to_string(),
        ),
        None => None,
    };
    // In pages: a publisher with many versions is many entries, each with its proof.
    let limit = match q.limit {
        None => MAX_LOG_PAGE,
        Some(n) if (1..=MAX_LOG_PAGE).contains(&n) => n,
        Some(_) => {
            return Err(CoreError::invalid(
                ErrorCode::InvalidLimit,
                format!("limit is 1 to {MAX_LOG_PAGE}"),
            ));
        }
    };
    let mut rows = hub
        .store
        .log_entries_of(&publisher, agent.as_deref(), q.after, limit + 1)
        .await?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let need = rows
        .iter()
        .map(|r| r.index + 1)
        .max()
        .unwrap_or(0)
        .max(q.log_size.unwrap_or(0));
    let head = hub.log_head_covering(need).await?;
    let size = head.size;
    let mut entries = Vec::with_capacity(rows.len());
    let next_after = if more {
        rows.last().map(|r| r.index)
    } else {
        None
    };
    for r in rows.into_iter().filter(|r| r.index < size) {
        entries.push(LogEntryInfo {
            index: r.index,
            // As everywhere in the API: the line without its line feed.
            entry: String::from_utf8(r.data)
                .map_err(CoreError::internal)?
                .trim_end_matches('\n')
                .to_string(),
            logged_at: r.created_at,
            inclusion: b64(&hub.store.log_inclusion(r.index, size).await?),
        });
    }
    Ok(LogEntries {
        checkpoint: head.note(&hub.log),
        entries,
        consistency: consistency(hub, q.log_size, size).await?,
        next_after,
    })
}
