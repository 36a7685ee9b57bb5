//! `ofc-hub log verify` (the whole tree recomputed from the stored entries and compared with
//! every stored hash, the head, the versions' and keys' logged indexes, the tombstones against
//! the `remove` entries, and no version, key or revocation logged twice) and the start-up backfill of what was committed before the log
//! existed.

use std::collections::{HashMap, HashSet};

use index_schema::envelope::PublicKey;
use index_schema::tlog::{self, Attempt, Entry, Hash, HashCache, HashReader as _};

use super::db::Flag;
use super::repo::{Result, Store, now_ms};
use super::tlog::{hashes_of, log_error, publish_entry, tlog_append, to_i64, yank_entry};

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
    /// Recomputes the whole tree from the stored entries and compares every stored hash, the
    /// head, and each version's and key's logged index with what the entries say; a version,
    /// key or revocation logged twice is a problem too.
    pub async fn log_verify(&self) -> Result<LogVerifyReport> {
        let (size, root) = self.log_head().await?;
        let pool = self.db.read();
        let stored_edge: Vec<u8> = sqlx::query_scalar("SELECT edge FROM tlog_state WHERE id = 1")
            .fetch_one(pool)
            .await?;
        let mut edge: Vec<Hash> = Vec::new();
        let mut report = LogVerifyReport {
            size,
            ..Default::default()
        };
        let mut stored = HashCache::new();
        let mut next: u64 = 0;
        // The facts the entries state, to compare with the tables.
        let mut published: HashMap<(String, String), (u64, String, String)> = Default::default();
        let mut keys: HashMap<(String, String), u64> = Default::default();
        let mut revoked_keys: HashMap<(String, String), u64> = Default::default();
        // Removed versions: (digest, reason class, index) of their `remove` entry; versions an
        // operator deleted (`delete` entries, no digest or class).
        let mut removed: HashMap<(String, String), (String, String, u64)> = Default::default();
        let mut deleted: HashSet<(String, String)> = Default::default();
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
                        // A version is published once: its number is never used again.
                        if let Some((first, _, _)) = published.insert(
                            (agent.to_string(), version.clone()),
                            (next, manifest_digest.to_string(), key_id.to_string()),
                        ) {
                            report.problems.push(format!(
                                "entry {next} publishes {agent}@{version} again (first at \
                                 entry {first})"
                            ));
                        }
                    }
                    Ok(Entry::KeyAdd { publisher, key }) => {
                        let key_id = key.key_id().to_string();
                        if let Some(first) = keys.insert((publisher.clone(), key_id.clone()), next)
                        {
                            report.problems.push(format!(
                                "entry {next} adds key {key_id} of `{publisher}` again (first \
                                 at entry {first})"
                            ));
                        }
                    }
                    Ok(Entry::KeyRevoke { publisher, key_id }) => {
                        let key_id = key_id.to_string();
                        if let Some(first) =
                            revoked_keys.insert((publisher.clone(), key_id.clone()), next)
                        {
                            report.problems.push(format!(
                                "entry {next} revokes key {key_id} of `{publisher}` again (first \
                                 at entry {first})"
                            ));
                        }
                    }
                    Ok(Entry::Remove {
                        agent,
                        version,
                        manifest_digest,
                        reason,
                    }) => {
                        let at = (agent.to_string(), version);
                        // A tombstone names what was published: the publish entry comes first,
                        // with the same digest.
                        match published.get(&at) {
                            Some((_, d, _)) if *d == manifest_digest.to_string() => {}
                            Some((_, d, _)) => report.problems.push(format!(
                                "entry {next} removes {}@{} with digest {manifest_digest}, \
                                 published with {d}",
                                at.0, at.1
                            )),
                            None => report.problems.push(format!(
                                "entry {next} removes {}@{}, which the log never published",
                                at.0, at.1
                            )),
                        }
                        if removed
                            .insert(
                                at.clone(),
                                (manifest_digest.to_string(), reason.to_string(), next),
                            )
                            .is_some()
                        {
                            report.problems.push(format!(
                                "entry {next} removes {}@{} a second time",
                                at.0, at.1
                            ));
                        }
                    }
                    Ok(Entry::Delete { agent, version }) => {
                        deleted.insert((agent.to_string(), version));
                    }
                    Ok(Entry::TrustedPublish {
                        agent,
                        version,
                        manifest_digest,
                        ..
                    }) => {
                        // Written in the publish's transaction, right after its entry.
                        let at = (agent.to_string(), version);
                        let follows = published.get(&at).is_some_and(|(i, d, _)| {
                            *i + 1 == next && *d == manifest_digest.to_string()
                        });
                        if !follows {
                            report.problems.push(format!(
                                "entry {next} says {}@{} was published by trusted publishing, \
                                 but does not follow its publish entry with digest \
                                 {manifest_digest}",
                                at.0, at.1
                            ));
                        }
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
            let at = (agent.clone(), version.clone());
            if let Some((_, _, i)) = removed.get(&at) {
                report.problems.push(format!(
                    "{agent}@{version} is in the table, but entry {i} of the log removed it"
                ));
            } else if deleted.contains(&at) {
                report.problems.push(format!(
                    "{agent}@{version} is in the table, but the log deleted it"
                ));
            }
            match published.get(&at) {
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
        // Every tombstone with a reason class has its `remove` entry, naming the same digest
        // and class; every `remove` entry has its tombstone.
        let tombstones: Vec<(String, String, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT agent, version, manifest_digest, reason_class FROM deleted_versions",
        )
        .fetch_all(pool)
        .await?;
        let mut stoned = HashSet::new();
        for (agent, version, digest, reason) in tombstones {
            let at = (agent, version);
            match (removed.get(&at), reason) {
                (Some((d, r, _)), reason)
                    if digest.as_deref() != Some(d.as_str())
                        || reason.as_deref() != Some(r.as_str()) =>
                {
                    report.problems.push(format!(
                        "{}@{}: the log's tombstone says digest {d} reason {r}, the table \
                         {} reason {}",
                        at.0,
                        at.1,
                        digest.as_deref().unwrap_or("(none)"),
                        reason.as_deref().unwrap_or("(none)")
                    ))
                }
                (None, Some(reason)) => report.problems.push(format!(
                    "{}@{} was removed ({reason}) with no remove entry in the log",
                    at.0, at.1
                )),
                _ => {}
            }
            stoned.insert(at);
        }
        for ((agent, version), (_, _, i)) in &removed {
            if !stoned.contains(&(agent.clone(), version.clone())) {
                report.problems.push(format!(
                    "entry {i} removes {agent}@{version}, which has no tombstone in the table"
                ));
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
    }

    /// Logs what was committed before the log existed (rows with no `log_index`): keys in
    /// registration order (and their revocation), then versions in publish order (and their
    /// yank), in one transaction. Returns how many entries it appended.
    ///
    /// Replicas starting together each run it: the transaction takes the log's head row first
    /// (the row lock on PostgreSQL, the one writer on SQLite) and only then reads what is
    /// unlogged, so the second one waits for the first to commit and finds nothing left.
    pub async fn log_backfill(&self) -> Result<u64> {
        // Nothing to log (every start after the first): no write, no lock.
        let unlogged: Flag = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM publisher_keys WHERE log_index IS NULL) \
             OR EXISTS (SELECT 1 FROM versions WHERE log_index IS NULL)",
        )
        .fetch_one(self.db.write())
        .await?;
        if !unlogged.0 {
            return Ok(0);
        }
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        sqlx::query("UPDATE tlog_state SET size = size WHERE id = 1")
            .execute(&mut *tx)
            .await?;
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
            let at = tlog_append(
                &mut tx,
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
                tlog_append(
                    &mut tx,
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
            let at = tlog_append(&mut tx, &entry, now).await?;
            sqlx::query("UPDATE versions SET log_index = $1 WHERE id = $2")
                .bind(at.index as i64)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            appended += 1;
            if yanked.is_some() {
                tlog_append(&mut tx, &yank_entry(&agent, &version, true)?, now).await?;
                appended += 1;
            }
        }
        tx.commit().await?;
        Ok(appended)
    }
}
