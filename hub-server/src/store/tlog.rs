//! The transparency log's tables (migration 0019): appends inside the writing transaction
//! ([`TxLog::tlog_append`]), and the reads that serve tiles, checkpoints and proofs.
//!
//! Hashes are stored, not recomputed: an append reads the head row's right edge (the roots of
//! the tree's perfect subtrees), stores the entry's new hashes (about two on average), the new
//! edge and the new root, all in the transaction of the change. Tiles are stored hashes read by index;
//! a proof reads O(log n) of them. Nothing reads the leaves except `ofc-hub log verify`.

use index_schema::envelope::{KeyId, PublicKey};
use index_schema::name::{AgentName, Digest};
use index_schema::tlog::{
    self, Attempt, Entry, Hash, HashCache, HashReader as _, TileId, TileKind,
};

#[allow(clippy::wildcard_imports)]
use super::*;

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

/// Rounds of "read the missing hashes, compute again" a computation may need (one is the rule,
/// see `tlog_tiles`: each computation asks for all its hashes at once).
const MAX_HASH_ROUNDS: usize = 4;

pub(crate) fn log_error(e: impl std::fmt::Display) -> StoreError {
    StoreError::Log(e.to_string())
}

fn to_hash(bytes: &[u8], idx: i64) -> Result<Hash> {
    <[u8; 32]>::try_from(bytes)
        .map(Hash)
        .map_err(|_| log_error(format!("stored hash {idx} is {} bytes", bytes.len())))
}

/// The hashes of a stored edge (32 bytes each).
fn hashes_of(bytes: &[u8]) -> Result<Vec<Hash>> {
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

fn to_i64(n: u64) -> Result<i64> {
    i64::try_from(n).map_err(|_| log_error(format!("{n} is out of range")))
}

fn placeholders(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `$f` (a `tlog_tiles` computation over a `HashReader` named `$r`) over `$cache`,
/// reading the hashes it lacks from `$conn` until it is done.
macro_rules! with_hashes {
    ($conn:expr, $cache:expr, |$r:ident| $f:expr) => {{
        let mut rounds = 0;
        loop {
            match $cache.attempt(|$r| $f).map_err(log_error)? {
                Attempt::Done(v) => break v,
                Attempt::Need(mut need) => {
                    rounds += 1;
                    if rounds > MAX_HASH_ROUNDS {
                        return Err(log_error("a log computation kept asking for hashes"));
                    }
                    need.sort_unstable();
                    need.dedup();
                    for chunk in need.chunks(500) {
                        let sql = format!(
                            "SELECT idx, hash FROM tlog_hashes WHERE idx IN ({})",
                            placeholders(1, chunk.len())
                        );
                        let mut q = sqlx::query_as::<_, (i64, Vec<u8>)>(&sql);
                        for i in chunk {
                            q = q.bind(to_i64(*i)?);
                        }
                        let rows = q.fetch_all($conn).await?;
                        if rows.len() != chunk.len() {
                            return Err(log_error(format!(
                                "the database lacks log hashes among {chunk:?}"
                            )));
                        }
                        for (i, h) in rows {
                            $cache.insert(i as u64, to_hash(&h, i)?);
                        }
                    }
                }
            }
        }
    }};
}

/// Appending to the log, as a method of the writing transaction.
pub(crate) trait TxLog {
    /// Appends `entry`; the caller commits it with its change, or nothing.
    async fn tlog_append(&mut self, entry: &Entry, now: i64) -> Result<LogAppend>;
}

macro_rules! tx_log {
    ($db:ty) => {
        impl TxLog for sqlx::Transaction<'_, $db> {
            async fn tlog_append(&mut self, entry: &Entry, now: i64) -> Result<LogAppend> {
                // Taking the head's row first orders appends (row lock on PostgreSQL, the one
                // writer on SQLite): indexes are commit order, without gaps. The row's right
                // edge gives the new hashes and root without reading any stored hash.
                let (size, edge): (i64, Vec<u8>) = sqlx::query_as(
                    "UPDATE tlog_state SET size = size + 1 WHERE id = 1 RETURNING size, edge",
                )
                .fetch_one(&mut **self)
                .await?;
                let n = (size - 1) as u64;
                let data = entry.to_bytes();
                let a = tlog::append_to_edge(&hashes_of(&edge)?, n, tlog::record_hash(&data))
                    .map_err(log_error)?;
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
                q.execute(&mut **self).await?;
                let root = a.root;
                sqlx::query("UPDATE tlog_state SET root = $1, edge = $2 WHERE id = 1")
                    .bind(root.0.to_vec())
                    .bind(a.edge.iter().flat_map(|h| h.0).collect::<Vec<u8>>())
                    .execute(&mut **self)
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
                .execute(&mut **self)
                .await?;
                Ok(LogAppend {
                    index: n,
                    size: n + 1,
                    root,
                })
            }
        }
    };
}
tx_log!(sqlx::Sqlite);
tx_log!(sqlx::Postgres);

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

/// What `ofc-hub log verify` found.
#[derive(Debug, Clone, Default)]
pub struct LogVerifyReport {
    /// Entries read.
    pub size: u64,
    /// The root recomputed from the entries.
    pub root: Option<Hash>,
    /// Every disagreement found.
    pub problems: Vec<String>,
}

impl Store {
    /// The log's head: size and root.
    pub async fn log_head(&self) -> Result<(u64, Hash)> {
        on_read!(&self.db, |pool| {
            let (size, root): (i64, Vec<u8>) =
                sqlx::query_as("SELECT size, root FROM tlog_state WHERE id = 1")
                    .fetch_one(pool)
                    .await?;
            Ok((size as u64, to_hash(&root, -1)?))
        })
    }

    /// A tile's bytes, or `None` when the tree (of size `size`) does not have it yet.
    pub async fn log_tile(&self, tile: &TileId, size: u64) -> Result<Option<Vec<u8>>> {
        if tile.needs_tree_size().is_none_or(|need| need > size) {
            return Ok(None);
        }
        let first = tile.index * tlog::TILE_WIDTH;
        let width = u64::from(tile.width);
        on_read!(&self.db, |pool| {
            match tile.kind {
                TileKind::Entries => {
                    let rows: Vec<(Vec<u8>,)> = sqlx::query_as(
                        "SELECT data FROM tlog_entries WHERE idx >= $1 AND idx < $2 ORDER BY idx",
                    )
                    .bind(to_i64(first)?)
                    .bind(to_i64(first + width)?)
                    .fetch_all(pool)
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
                    let sql = format!(
                        "SELECT idx, hash FROM tlog_hashes WHERE idx IN ({})",
                        placeholders(1, want.len())
                    );
                    let mut q = sqlx::query_as::<_, (i64, Vec<u8>)>(&sql);
                    for i in &want {
                        q = q.bind(to_i64(*i)?);
                    }
                    let rows: std::collections::HashMap<i64, Vec<u8>> =
                        q.fetch_all(pool).await?.into_iter().collect();
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
        })
    }

    /// The inclusion proof of entry `index` in the tree of size `size`.
    pub async fn log_inclusion(&self, index: u64, size: u64) -> Result<Vec<Hash>> {
        let mut cache = HashCache::new();
        on_read!(&self.db, |pool| {
            let mut conn = pool.acquire().await?;
            Ok(with_hashes!(&mut *conn, cache, |r| tlog::prove_inclusion(
                size, index, r
            )))
        })
    }

    /// The consistency proof from the tree of size `old` to the tree of size `new`.
    pub async fn log_consistency(&self, old: u64, new: u64) -> Result<Vec<Hash>> {
        if old == 0 || old == new {
            return Ok(Vec::new());
        }
        let mut cache = HashCache::new();
        on_read!(&self.db, |pool| {
            let mut conn = pool.acquire().await?;
            Ok(with_hashes!(
                &mut *conn,
                cache,
                |r| tlog::prove_consistency(new, old, r)
            ))
        })
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
        on_read!(&self.db, |pool| {
            let rows: Vec<(i64, Vec<u8>, i64)> = sqlx::query_as(
                "SELECT idx, data, created_at FROM tlog_entries WHERE publisher = $1 \
                 AND ($2 IS NULL OR agent IS NULL OR agent = $2) AND idx > $3 \
                 ORDER BY idx LIMIT $4",
            )
            .bind(publisher)
            .bind(agent)
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?;
            Ok(rows
                .into_iter()
                .map(|(i, data, created_at)| LogEntryRow {
                    index: i as u64,
                    data,
                    created_at,
                })
                .collect())
        })
    }

    /// Recomputes the whole tree from the stored entries and compares every stored hash, the
    /// head, and each version's and key's logged index with what the entries say.
    pub async fn log_verify(&self) -> Result<LogVerifyReport> {
        let (size, root) = self.log_head().await?;
        let stored_edge: Vec<u8> = on_read!(&self.db, |pool| {
            sqlx::query_scalar("SELECT edge FROM tlog_state WHERE id = 1")
                .fetch_one(pool)
                .await
        })?;
        let mut edge: Vec<Hash> = Vec::new();
        let mut report = LogVerifyReport {
            size,
            ..Default::default()
        };
        let mut stored = HashCache::new();
        let mut next: u64 = 0;
        // The facts the entries state, to compare with the tables.
        let mut published: std::collections::HashMap<(String, String), (u64, String, String)> =
            Default::default();
        let mut keys: std::collections::HashMap<(String, String), u64> = Default::default();
        on_read!(&self.db, |pool| {
            loop {
                let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(
                    "SELECT idx, data FROM tlog_entries WHERE idx >= $1 ORDER BY idx LIMIT 4096",
                )
                .bind(to_i64(next)?)
                .fetch_all(pool)
                .await?;
                if rows.is_empty() {
                    break;
                }
                for (idx, data) in rows {
                    if idx as u64 != next {
                        report
                            .problems
                            .push(format!("entry {next} is missing (next stored: {idx})"));
                        return Ok(report);
                    }
                    match Entry::parse(&data) {
                        Ok(Entry::Publish {
                            agent,
                            version,
                            manifest_digest,
                            key_id,
                        }) => {
                            published.insert(
                                (agent.to_string(), version),
                                (next, manifest_digest.to_string(), key_id.to_string()),
                            );
                        }
                        Ok(Entry::KeyAdd { publisher, key }) => {
                            keys.insert((publisher, key.key_id().to_string()), next);
                        }
                        Ok(_) => {}
                        Err(e) => report.problems.push(format!("entry {next}: {e}")),
                    }
                    let leaf = tlog::record_hash(&data);
                    let hashes = match stored
                        .attempt(|r| tlog::stored_hashes_for(next, leaf, r))
                        .map_err(log_error)?
                    {
                        Attempt::Done(h) => h,
                        Attempt::Need(ix) => {
                            return Err(log_error(format!("recomputation lacks hashes {ix:?}")));
                        }
                    };
                    edge = tlog::append_to_edge(&edge, next, leaf)
                        .map_err(log_error)?
                        .edge;
                    let first = tlog::stored_hash_index(0, next);
                    for (i, h) in hashes.into_iter().enumerate() {
                        stored.insert(first + i as u64, h);
                    }
                    next += 1;
                }
            }
            if next != size {
                report.problems.push(format!(
                    "the head says {size} entries, the table holds {next}"
                ));
            }
            // Every stored hash must be the recomputed one.
            let total = tlog::stored_hash_count(next);
            let mut from: i64 = 0;
            loop {
                let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(
                    "SELECT idx, hash FROM tlog_hashes WHERE idx >= $1 ORDER BY idx LIMIT 8192",
                )
                .bind(from)
                .fetch_all(pool)
                .await?;
                let Some(last) = rows.last().map(|r| r.0) else {
                    break;
                };
                for (i, h) in rows {
                    let want = stored.attempt(|r| r.read_hashes(&[i as u64])).ok();
                    match want {
                        Some(Attempt::Done(w)) if w[0].0.as_slice() == h.as_slice() => {}
                        Some(Attempt::Done(_)) => report
                            .problems
                            .push(format!("stored hash {i} differs from the recomputed one")),
                        _ => report.problems.push(format!(
                            "stored hash {i} belongs to no entry (the tree has {total} hashes)"
                        )),
                    }
                }
                from = last + 1;
            }
            let recomputed = match stored
                .attempt(|r| tlog::tree_hash(next, r))
                .map_err(log_error)?
            {
                Attempt::Done(h) => h,
                Attempt::Need(ix) => return Err(log_error(format!("root lacks hashes {ix:?}"))),
            };
            report.root = Some(recomputed);
            if hashes_of(&stored_edge)? != edge {
                report
                    .problems
                    .push("the head's right edge is not the recomputed one".to_string());
            }
            if recomputed != root {
                report.problems.push(format!(
                    "the head's root {} is not the recomputed root {}",
                    tlog::hash_b64(&root),
                    tlog::hash_b64(&recomputed)
                ));
            }
            // Every version is logged, where its row says, with its digest and key.
            let versions: Vec<(String, String, String, String, Option<i64>)> = sqlx::query_as(
                "SELECT a.name, v.version, v.manifest_digest, v.key_id, v.log_index \
                 FROM versions v JOIN agents a ON a.id = v.agent_id",
            )
            .fetch_all(pool)
            .await?;
            for (agent, version, digest, key_id, log_index) in versions {
                match published.get(&(agent.clone(), version.clone())) {
                    None => report
                        .problems
                        .push(format!("{agent}@{version} has no publish entry in the log")),
                    Some((i, d, k)) => {
                        if *d != digest || *k != key_id {
                            report.problems.push(format!(
                                "{agent}@{version}: the log says digest {d} key {k}, the table \
                                 {digest} key {key_id}"
                            ));
                        }
                        if log_index != Some(*i as i64) {
                            report.problems.push(format!(
                                "{agent}@{version}: logged at {i}, the table says {log_index:?}"
                            ));
                        }
                    }
                }
            }
            let key_rows: Vec<(String, String)> = sqlx::query_as(
                "SELECT n.name, k.key_id FROM publisher_keys k \
                 JOIN namespaces n ON n.id = k.namespace_id",
            )
            .fetch_all(pool)
            .await?;
            for (ns, key_id) in key_rows {
                if !keys.contains_key(&(ns.clone(), key_id.clone())) {
                    report.problems.push(format!(
                        "key {key_id} of `{ns}` has no key-add entry in the log"
                    ));
                }
            }
            Ok(report)
        })
    }

    /// Logs what was committed before the log existed (rows with no `log_index`): keys in
    /// registration order (and their revocation), then versions in publish order (and their
    /// yank), in one transaction. Returns how many entries it appended.
    pub async fn log_backfill(&self) -> Result<u64> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let mut appended = 0;
            let keys: Vec<(i64, String, String, Option<i64>)> = sqlx::query_as(
                "SELECT k.id, n.name, k.public_key, k.revoked_at FROM publisher_keys k \
                 JOIN namespaces n ON n.id = k.namespace_id WHERE k.log_index IS NULL ORDER BY k.id",
            )
            .fetch_all(&mut *tx)
            .await?;
            for (id, ns, public_key, revoked) in keys {
                let key = PublicKey::parse(&public_key).map_err(log_error)?;
                let key_id = key.key_id();
                let at = tx
                    .tlog_append(
                        &Entry::KeyAdd {
                            publisher: ns.clone(),
                            key,
                        },
                        now,
                    )
                    .await?;
                sqlx::query("UPDATE publisher_keys SET log_index = $1 WHERE id = $2")
                    .bind(at.index as i64)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                appended += 1;
                if revoked.is_some() {
                    tx.tlog_append(
                        &Entry::KeyRevoke {
                            publisher: ns,
                            key_id,
                        },
                        now,
                    )
                    .await?;
                    appended += 1;
                }
            }
            let versions: Vec<(i64, String, String, String, String, Option<i64>)> = sqlx::query_as(
                "SELECT v.id, a.name, v.version, v.manifest_digest, v.key_id, v.yanked_at \
                     FROM versions v JOIN agents a ON a.id = v.agent_id \
                     WHERE v.log_index IS NULL ORDER BY v.id",
            )
            .fetch_all(&mut *tx)
            .await?;
            for (id, agent, version, digest, key_id, yanked) in versions {
                let entry = publish_entry(&agent, &version, &digest, &key_id)?;
                let at = tx.tlog_append(&entry, now).await?;
                sqlx::query("UPDATE versions SET log_index = $1 WHERE id = $2")
                    .bind(at.index as i64)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                appended += 1;
                if yanked.is_some() {
                    tx.tlog_append(&yank_entry(&agent, &version, true)?, now)
                        .await?;
                    appended += 1;
                }
            }
            tx.commit().await?;
            Ok(appended)
        })
    }
}

/// The publish entry of a version row.
pub(crate) fn publish_entry(
    agent: &str,
    version: &str,
    digest: &str,
    key_id: &str,
) -> Result<Entry> {
    Entry::publish(
        AgentName::parse(agent).map_err(log_error)?,
        version,
        Digest::parse(digest).map_err(log_error)?,
        KeyId::parse(key_id).map_err(log_error)?,
    )
    .map_err(log_error)
}

/// The yank (or unyank) entry of a version.
/// The entry of an operator's deletion of a version.
pub(crate) fn delete_entry(agent: &str, version: &str) -> Result<Entry> {
    Ok(Entry::Delete {
        agent: AgentName::parse(agent).map_err(log_error)?,
        version: version.to_string(),
    })
}

pub(crate) fn yank_entry(agent: &str, version: &str, yank: bool) -> Result<Entry> {
    let agent = AgentName::parse(agent).map_err(log_error)?;
    let version = version.to_string();
    Ok(if yank {
        Entry::Yank { agent, version }
    } else {
        Entry::Unyank { agent, version }
    })
}
