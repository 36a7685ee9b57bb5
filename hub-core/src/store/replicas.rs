//! What replicas sharing one database share besides the hub's data (migration 0021): the log's
//! recorded key, the witnesses' cosigned checkpoints, and the failure limiter's windows.

use index_schema::tlog::Hash;

use super::repo::{Result, Store, StoreError, now_ms};
use super::tlog::to_hash;

/// A cosigned checkpoint as stored (`log_cosigned`).
#[derive(Debug, Clone)]
pub struct StoredCosigned {
    /// `latest` or `full`.
    pub kind: String,
    /// Tree size.
    pub size: u64,
    /// Tree root.
    pub root: Hash,
    /// The note with its cosignature lines.
    pub note: String,
    /// How many witnesses cosigned it.
    pub count: usize,
    /// Unix ms of the round that cosigned it.
    pub at: i64,
}

/// A limiter window of one key after a change: failures and attempts in flight, and when the
/// window started (Unix ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimiterWindow {
    /// Unix ms.
    pub start: i64,
    /// Failures counted in it.
    pub failures: i64,
    /// Attempts reserved and not yet settled.
    pub in_flight: i64,
}

impl Store {
    /// Records (`origin`, `verifier`) as the log's key unless one is recorded already, and
    /// returns the recorded one: the first hub to start on a database names its log's key.
    pub async fn record_log_key(&self, origin: &str, verifier: &str) -> Result<(String, String)> {
        sqlx::query(
            "INSERT INTO log_key (id, origin, verifier, created_at) VALUES (1, $1, $2, $3) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(origin)
        .bind(verifier)
        .bind(now_ms())
        .execute(self.db.write())
        .await?;
        self.recorded_log_key().await?.ok_or_else(|| {
            StoreError::Log("the log key row is missing right after it was written".into())
        })
    }

    /// The log key recorded for this database (origin, verifier), if a hub recorded one.
    pub async fn recorded_log_key(&self) -> Result<Option<(String, String)>> {
        Ok(
            sqlx::query_as("SELECT origin, verifier FROM log_key WHERE id = 1")
                .fetch_optional(self.db.write())
                .await?,
        )
    }

    /// Stores the cosigned checkpoint of `kind` (`latest`, `full`), replacing the one before.
    pub async fn put_cosigned(&self, c: &StoredCosigned) -> Result<()> {
        sqlx::query(
            "INSERT INTO log_cosigned (kind, size, root, note, count, at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (kind) DO UPDATE SET \
             size = excluded.size, root = excluded.root, note = excluded.note, \
             count = excluded.count, at = excluded.at",
        )
        .bind(&c.kind)
        .bind(i64::try_from(c.size).unwrap_or(i64::MAX))
        .bind(c.root.0.to_vec())
        .bind(&c.note)
        .bind(i64::try_from(c.count).unwrap_or(i64::MAX))
        .bind(c.at)
        .execute(self.db.write())
        .await?;
        Ok(())
    }

    /// The stored cosigned checkpoints.
    pub async fn cosigned(&self) -> Result<Vec<StoredCosigned>> {
        let rows: Vec<(String, i64, Vec<u8>, String, i64, i64)> =
            sqlx::query_as("SELECT kind, size, root, note, count, at FROM log_cosigned")
                .fetch_all(self.db.read())
                .await?;
        rows.into_iter()
            .map(|(kind, size, root, note, count, at)| {
                Ok(StoredCosigned {
                    kind,
                    size: size as u64,
                    root: to_hash(&root, size)?,
                    note,
                    count: count as usize,
                    at,
                })
            })
            .collect()
    }

    /// Reserves an attempt against every key of `keys` at once, in one transaction: each key's
    /// window (a new one when the stored one started at or before `expired_before`) is locked,
    /// its attempts in flight counted (those reserved after `stale_before`: an older one was left
    /// by a replica that died before settling it), and one more recorded; when any key then has
    /// more than `limit` failures and attempts, nothing is kept and that key's window is
    /// returned as `Err`. `Ok`: the ids of the attempts recorded, one per key, for
    /// [`Store::limiter_settle`].
    pub async fn limiter_reserve(
        &self,
        keys: &[&str],
        now: i64,
        expired_before: i64,
        stale_before: i64,
        limit: i64,
    ) -> Result<std::result::Result<Vec<i64>, LimiterWindow>> {
        let mut tx = self.db.write().begin().await?;
        let mut ids = Vec::with_capacity(keys.len());
        for key in keys {
            // The upsert locks the key's row (PostgreSQL; SQLite has one writer): reservations
            // of one key from every replica are counted one after the other.
            let (start, failures): (i64, i64) = sqlx::query_as(
                "INSERT INTO auth_failures (key, window_start, failures, in_flight) \
                 VALUES ($1, $2, 0, 0) ON CONFLICT (key) DO UPDATE SET \
                 window_start = CASE WHEN auth_failures.window_start <= $3 THEN $2 \
                     ELSE auth_failures.window_start END, \
                 failures = CASE WHEN auth_failures.window_start <= $3 THEN 0 \
                     ELSE auth_failures.failures END \
                 RETURNING window_start, failures",
            )
            .bind(*key)
            .bind(now)
            .bind(expired_before)
            .fetch_one(&mut *tx)
            .await?;
            let in_flight: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM auth_in_flight WHERE key = $1 AND reserved_at > $2",
            )
            .bind(*key)
            .bind(stale_before)
            .fetch_one(&mut *tx)
            .await?;
            if failures + in_flight + 1 > limit {
                tx.rollback().await?;
                return Ok(Err(LimiterWindow {
                    start,
                    failures,
                    in_flight,
                }));
            }
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO auth_in_flight (key, reserved_at) VALUES ($1, $2) RETURNING id",
            )
            .bind(*key)
            .bind(now)
            .fetch_one(&mut *tx)
            .await?;
            ids.push(id);
        }
        tx.commit().await?;
        Ok(Ok(ids))
    }

    /// Settles a reserved attempt: its rows `ids` (from [`Store::limiter_reserve`]) no longer
    /// in flight, and when `failed` a failure of every key of `keys` (in the key's current
    /// window; a window that ended meanwhile starts anew).
    pub async fn limiter_settle(
        &self,
        ids: &[i64],
        keys: &[String],
        failed: bool,
        now: i64,
        expired_before: i64,
    ) -> Result<()> {
        let mut tx = self.db.write().begin().await?;
        for id in ids {
            sqlx::query("DELETE FROM auth_in_flight WHERE id = $1")
                .bind(*id)
                .execute(&mut *tx)
                .await?;
        }
        if failed {
            for key in keys {
                sqlx::query(
                    "INSERT INTO auth_failures (key, window_start, failures, in_flight) \
                     VALUES ($1, $2, 1, 0) ON CONFLICT (key) DO UPDATE SET \
                     window_start = CASE WHEN auth_failures.window_start <= $3 THEN $2 \
                         ELSE auth_failures.window_start END, \
                     failures = CASE WHEN auth_failures.window_start <= $3 THEN 1 \
                         ELSE auth_failures.failures + 1 END",
                )
                .bind(key.as_str())
                .bind(now)
                .bind(expired_before)
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// Counts a failure of `key` that had no reservation (in its current window; a window that
    /// ended starts anew).
    pub async fn limiter_fail(&self, key: &str, now: i64, expired_before: i64) -> Result<()> {
        sqlx::query(
            "INSERT INTO auth_failures (key, window_start, failures, in_flight) \
             VALUES ($1, $2, 1, 0) ON CONFLICT (key) DO UPDATE SET \
             window_start = CASE WHEN auth_failures.window_start <= $3 THEN $2 \
                 ELSE auth_failures.window_start END, \
             failures = CASE WHEN auth_failures.window_start <= $3 THEN 1 \
                 ELSE auth_failures.failures + 1 END",
        )
        .bind(key)
        .bind(now)
        .bind(expired_before)
        .execute(self.db.write())
        .await?;
        Ok(())
    }

    /// The window of `key` as of now: its failures when it has not ended (started after
    /// `expired_before`), and its attempts in flight reserved after `stale_before`; `None` when
    /// it has neither.
    pub async fn limiter_window(
        &self,
        key: &str,
        expired_before: i64,
        stale_before: i64,
    ) -> Result<Option<LimiterWindow>> {
        let row: Option<(i64, i64)> = sqlx::query_as(
            "SELECT window_start, failures FROM auth_failures \
             WHERE key = $1 AND window_start > $2",
        )
        .bind(key)
        .bind(expired_before)
        .fetch_optional(self.db.write())
        .await?;
        let in_flight: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM auth_in_flight WHERE key = $1 AND reserved_at > $2",
        )
        .bind(key)
        .bind(stale_before)
        .fetch_one(self.db.write())
        .await?;
        Ok(match row {
            Some((start, failures)) => Some(LimiterWindow {
                start,
                failures,
                in_flight,
            }),
            // Attempts in flight in a window that ended: counted from their first.
            None if in_flight > 0 => {
                let start: i64 = sqlx::query_scalar(
                    "SELECT MIN(reserved_at) FROM auth_in_flight \
                     WHERE key = $1 AND reserved_at > $2",
                )
                .bind(key)
                .bind(stale_before)
                .fetch_one(self.db.write())
                .await?;
                Some(LimiterWindow {
                    start,
                    failures: 0,
                    in_flight,
                })
            }
            None => None,
        })
    }

    /// Deletes the windows that ended (started at or before `expired_before`) and the attempts
    /// in flight left by replicas that died (reserved at or before `stale_before`); how many
    /// windows.
    pub async fn limiter_forget(&self, expired_before: i64, stale_before: i64) -> Result<u64> {
        sqlx::query("DELETE FROM auth_in_flight WHERE reserved_at <= $1")
            .bind(stale_before)
            .execute(self.db.write())
            .await?;
        Ok(
            sqlx::query("DELETE FROM auth_failures WHERE window_start <= $1")
                .bind(expired_before)
                .execute(self.db.write())
                .await?
                .rows_affected(),
        )
    }
}
