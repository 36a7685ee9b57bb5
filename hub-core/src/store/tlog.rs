//! The transparency log's tables (migration 0019): appends inside the writing transaction
//! ([`tlog_append`]), and the reads that serve tiles, checkpoints and proofs.
//!
//! Hashes are stored, not recomputed: an append reads the head row's right edge (the roots of
//! the tree's perfect subtrees), stores the entry's new hashes (about two on average), the new
//! edge and the new root, all in the transaction of the change. Tiles are stored hashes read by
//! index; a proof reads O(log n) of them. Nothing reads the leaves except `ofc-hub log verify`
//! (`tlog_check.rs`).
//!
//! An append takes the head row first (`UPDATE … RETURNING size, edge`: a row lock on PostgreSQL,
//! the single writer on SQLite), so indexes are commit order without gaps, like the outbox's; it
//! runs last in the change's transaction, just before the outbox row, so the head's lock is held
//! shortest. The new hashes come from the edge alone (`index_schema::tlog::append_to_edge`): no
//! stored hash is read. The alternative — storing only the leaves and computing tiles on demand —
//! costs O(n) per cold tile at level ≥ 1. Publishes/s with the log on and off: BENCHMARKS.md.

use std::collections::HashMap;

use index_schema::envelope::KeyId;
use index_schema::name::{AgentName, Digest};
use index_schema::tlog::{self, Attempt, Entry, Hash, HashCache, TileId, TileKind};
use sqlx::AnyConnection;

use super::repo::{Result, Store, StoreError};

/// Where an append put its entry.
#[derive(Debug, Clone, Copy)]
pub struct LogAppend {
    /// The entry's index.
    pub index: u64,
    /// The tree size right after it.
    pub size: u64,
    /// The root of that tree.
    pub root: Hash,
}

/// A logged entry as stored.
#[derive(Debug, Clone)]
pub struct LogEntryRow {
    /// Index.
    pub index: u64,
    /// The entry's bytes.
    pub data: Vec<u8>,
    /// Unix ms of the append.
    pub created_at: i64,
}

/// An entry as read.
#[derive(sqlx::FromRow)]
struct EntryRecord {
    idx: i64,
    data: Vec<u8>,
    created_at: i64,
}

/// Rounds of "read the missing hashes, compute again" a computation may need (one is the rule,
/// see `tlog_tiles`: each computation asks for all its hashes at once).
const MAX_HASH_ROUNDS: usize = 4;

/// A log error: the tables are inconsistent, or an entry could not be formed.
pub fn log_error(e: impl std::fmt::Display) -> StoreError {
    StoreError::Log(e.to_string())
}

pub(super) fn to_hash(bytes: &[u8], idx: i64) -> Result<Hash> {
    <[u8; 32]>::try_from(bytes)
        .map(Hash)
        .map_err(|_| log_error(format!("stored hash {idx} is {} bytes", bytes.len())))
}

/// The hashes of a stored edge (32 bytes each).
pub(super) fn hashes_of(bytes: &[u8]) -> Result<Vec<Hash>> {
    if !bytes.len().is_multiple_of(tlog::HASH_SIZE) {
        return Err(log_error(format!(
            "the stored edge is {} bytes",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks(tlog::HASH_SIZE)
        .map(|c| Hash(c.try_into().expect("chunks of HASH_SIZE")))
        .collect())
}

pub(super) fn to_i64(n: u64) -> Result<i64> {
    i64::try_from(n).map_err(|_| log_error(format!("{n} is out of range")))
}

fn placeholders(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The stored hashes at `indexes`, by index.
async fn stored_hashes(conn: &mut AnyConnection, indexes: &[u64]) -> Result<HashMap<i64, Vec<u8>>> {
    let sql = format!(
        "SELECT idx, hash FROM tlog_hashes WHERE idx IN ({})",
        placeholders(1, indexes.len())
    );
    let mut q = sqlx::query_as::<_, (i64, Vec<u8>)>(&sql);
    for i in indexes {
        q = q.bind(to_i64(*i)?);
    }
    Ok(q.fetch_all(&mut *conn).await?.into_iter().collect())
}

/// Runs `compute` (a `tlog_tiles` computation attempted over `cache`) until it is done, reading
/// the hashes it lacks from `conn` between attempts.
async fn with_hashes<T, E: std::fmt::Display>(
    conn: &mut AnyConnection,
    cache: &mut HashCache,
    compute: impl Fn(&HashCache) -> std::result::Result<Attempt<T>, E>,
) -> Result<T> {
    for round in 0..=MAX_HASH_ROUNDS {
        let mut need = match compute(cache).map_err(log_error)? {
            Attempt::Done(v) => return Ok(v),
            Attempt::Need(_) if round == MAX_HASH_ROUNDS => break,
            Attempt::Need(need) => need,
        };
        need.sort_unstable();
        need.dedup();
        for chunk in need.chunks(500) {
            let rows = stored_hashes(conn, chunk).await?;
            if rows.len() != chunk.len() {
                return Err(log_error(format!(
                    "the database lacks log hashes among {chunk:?}"
                )));
            }
            for (i, h) in rows {
                cache.insert(i as u64, to_hash(&h, i)?);
            }
        }
    }
    Err(log_error("a log computation kept asking for hashes"))
}

/// Appends `entry` to the log inside the writing transaction of `conn`; the caller commits it
/// with its change, or nothing.
pub(super) async fn tlog_append(
    conn: &mut AnyConnection,
    entry: &Entry,
    now: i64,
) -> Result<LogAppend> {
    // Taking the head's row first orders appends (row lock on PostgreSQL, the one writer on
    // SQLite): indexes are commit order, without gaps. The row's right edge gives the new
    // hashes and root without reading any stored hash.
    let (size, edge): (i64, Vec<u8>) =
        sqlx::query_as("UPDATE tlog_state SET size = size + 1 WHERE id = 1 RETURNING size, edge")
            .fetch_one(&mut *conn)
            .await?;
    let n = (size - 1) as u64;
    let data = entry.to_bytes();
    let a =
        tlog::append_to_edge(&hashes_of(&edge)?, n, tlog::record_hash(&data)).map_err(log_error)?;
    let first = tlog::stored_hash_index(0, n);
    let sql = format!(
        "INSERT INTO tlog_hashes (idx, hash) VALUES {}",
        (0..a.stored.len())
            .map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut q = sqlx::query(&sql);
    for (i, h) in a.stored.iter().enumerate() {
        q = q.bind(to_i64(first + i as u64)?).bind(h.0.to_vec());
    }
    q.execute(&mut *conn).await?;
    let root = a.root;
    sqlx::query("UPDATE tlog_state SET root = $1, edge = $2 WHERE id = 1")
        .bind(root.0.to_vec())
        .bind(a.edge.iter().flat_map(|h| h.0).collect::<Vec<u8>>())
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "INSERT INTO tlog_entries (idx, data, publisher, agent, created_at) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(size - 1)
    .bind(&data)
    .bind(entry.publisher())
    .bind(entry.agent().map(|a| a.to_string()))
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(LogAppend {
        index: n,
        size: n + 1,
        root,
    })
}

impl Store {
    /// The log's head: size and root.
    pub async fn log_head(&self) -> Result<(u64, Hash)> {
        let (size, root): (i64, Vec<u8>) =
            sqlx::query_as("SELECT size, root FROM tlog_state WHERE id = 1")
                .fetch_one(self.db.read())
                .await?;
        Ok((size as u64, to_hash(&root, -1)?))
    }

    /// A tile's bytes, or `None` when the tree (of size `size`) does not have it yet.
    pub async fn log_tile(&self, tile: &TileId, size: u64) -> Result<Option<Vec<u8>>> {
        if tile.needs_tree_size().is_none_or(|need| need > size) {
            return Ok(None);
        }
        let first = tile.index * tlog::TILE_WIDTH;
        let width = u64::from(tile.width);
        match tile.kind {
            TileKind::Entries => {
                let rows: Vec<(Vec<u8>,)> = sqlx::query_as(
                    "SELECT data FROM tlog_entries WHERE idx >= $1 AND idx < $2 ORDER BY idx",
                )
                .bind(to_i64(first)?)
                .bind(to_i64(first + width)?)
                .fetch_all(self.db.read())
                .await?;
                if rows.len() as u64 != width {
                    return Err(log_error(format!(
                        "entries {first}..{} are not all stored",
                        first + width
                    )));
                }
                let mut out = Vec::new();
                for (d,) in rows {
                    tlog::push_bundle_entry(&mut out, &d).map_err(log_error)?;
                }
                Ok(Some(out))
            }
            TileKind::Hashes { .. } => {
                let want = tile.hash_indexes();
                let mut conn = self.db.read().acquire().await?;
                let rows = stored_hashes(&mut conn, &want).await?;
                let mut out = Vec::with_capacity(want.len() * tlog::HASH_SIZE);
                for i in &want {
                    let h = rows
                        .get(&(*i as i64))
                        .ok_or_else(|| log_error(format!("stored hash {i} is missing")))?;
                    out.extend_from_slice(&to_hash(h, *i as i64)?.0);
                }
                Ok(Some(out))
            }
        }
    }

    /// The inclusion proof of entry `index` in the tree of size `size`.
    pub async fn log_inclusion(&self, index: u64, size: u64) -> Result<Vec<Hash>> {
        let mut conn = self.db.read().acquire().await?;
        with_hashes(&mut conn, &mut HashCache::new(), |c| {
            c.attempt(|r| tlog::prove_inclusion(size, index, r))
        })
        .await
    }

    /// The consistency proof from the tree of size `old` to the tree of size `new`.
    pub async fn log_consistency(&self, old: u64, new: u64) -> Result<Vec<Hash>> {
        if old == 0 || old == new {
            return Ok(Vec::new());
        }
        let mut conn = self.db.read().acquire().await?;
        with_hashes(&mut conn, &mut HashCache::new(), |c| {
            c.attempt(|r| tlog::prove_consistency(new, old, r))
        })
        .await
    }

    /// Every entry about `publisher` (and, with `agent`, about that agent — key events of the
    /// publisher included), in log order.
    pub async fn log_entries_of(
        &self,
        publisher: &str,
        agent: Option<&str>,
        after: Option<u64>,
        limit: u32,
    ) -> Result<Vec<LogEntryRow>> {
        let after = after.map_or(-1, |a| i64::try_from(a).unwrap_or(i64::MAX));
        let rows: Vec<EntryRecord> = sqlx::query_as(
            "SELECT idx, data, created_at FROM tlog_entries WHERE publisher = $1 \
             AND ($2 IS NULL OR agent IS NULL OR agent = $2) AND idx > $3 \
             ORDER BY idx LIMIT $4",
        )
        .bind(publisher)
        .bind(agent)
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(self.db.read())
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| LogEntryRow {
                index: r.idx as u64,
                data: r.data,
                created_at: r.created_at,
            })
            .collect())
    }
}

/// The publish entry of a version row.
pub fn publish_entry(agent: &str, version: &str, digest: &str, key_id: &str) -> Result<Entry> {
    Entry::publish(
        AgentName::parse(agent).map_err(log_error)?,
        version,
        Digest::parse(digest).map_err(log_error)?,
        KeyId::parse(key_id).map_err(log_error)?,
    )
    .map_err(log_error)
}

/// The entry of an operator's deletion of a version.
pub fn delete_entry(agent: &str, version: &str) -> Result<Entry> {
    Ok(Entry::Delete {
        agent: AgentName::parse(agent).map_err(log_error)?,
        version: version.to_string(),
    })
}

/// The yank (or unyank) entry of a version.
pub fn yank_entry(agent: &str, version: &str, yank: bool) -> Result<Entry> {
    let agent = AgentName::parse(agent).map_err(log_error)?;
    let version = version.to_string();
    Ok(if yank {
        Entry::Yank { agent, version }
    } else {
        Entry::Unyank { agent, version }
    })
}

/// The entry saying a version was published by trusted publishing, from `origin`.
pub fn trusted_publish_entry(
    agent: &str,
    version: &str,
    digest: &str,
    origin: &crate::auth::TrustedOrigin,
) -> Result<Entry> {
    Ok(Entry::TrustedPublish {
        agent: AgentName::parse(agent).map_err(log_error)?,
        version: version.to_string(),
        manifest_digest: Digest::parse(digest).map_err(log_error)?,
        issuer: origin.issuer.clone(),
        subject: origin.subject.clone(),
    })
}
