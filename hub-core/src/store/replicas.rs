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
    /// window (a new one when the stored one started at or before `expired_before`) gets one
    /// attempt in flight; when any key then has more than `limit` failures and attempts, nothing
    /// is kept and that key's window is returned as `Err`.
    pub async fn limiter_reserve(
        &self,
        keys: &[&str],
        now: i64,
        expired_before: i64,
        limit: i64,
    ) -> Result<std::result::Result<(), LimiterWindow>> {
        let mut tx = self.db.write().begin().await?;
        for key in keys {
            let (start, failures, in_flight): (i64, i64, i64) = sqlx::query_as(
                "INSERT INTO auth_failures (key, window_start, failures, in_flight) \
                 VALUES ($1, $2, 0, 1) ON CONFLICT (key) DO UPDATE SET \
                 window_start = CASE WHEN auth_failures.window_start <= $3 THEN $2 \
                     ELSE auth_failures.window_start END, \
                 failures = CASE WHEN auth_failures.window_start <= $3 THEN 0 \
                     ELSE auth_failures.failures END, \
                 in_flight = CASE WHEN auth_failures.window_start <= $3 THEN 1 \
                     ELSE auth_failures.in_flight + 1 END \
                 RETURNING window_start, failures, in_flight",
            )
            .bind(*key)
            .bind(now)
            .bind(expired_before)
            .fetch_one(&mut *tx)
            .await?;
            if failures + in_flight > limit {
                tx.rollback().await?;
                return Ok(Err(LimiterWindow {
                    start,
                    failures,
                    in_flight: in_flight - 1,
                }));
            }
        }
        tx.commit().await?;
        Ok(Ok(()))
    }

    /// Settles a reserved attempt of every key of `keys`: no longer in flight, and a failure
    /// when `failed` (in the key's current window; a window that ended meanwhile starts anew).
    pub async fn limiter_settle(
        &self,
        keys: &[String],
        failed: bool,
        now: i64,
        expired_before: i64,
    ) -> Result<()> {
        let mut tx = self.db.write().begin().await?;
        for key in keys {
            sqlx::query(
                "INSERT INTO auth_failures (key, window_start, failures, in_flight) \
                 VALUES ($1, $2, $4, 0) ON CONFLICT (key) DO UPDATE SET \
                 window_start = CASE WHEN auth_failures.window_start <= $3 THEN $2 \
                     ELSE auth_failures.window_start END, \
                 failures = CASE WHEN auth_failures.window_start <= $3 THEN $4 \
                     ELSE auth_failures.failures + $4 END, \
                 in_flight = CASE WHEN auth_failures.window_start <= $3 THEN 0 \
                     WHEN auth_failures.in_flight > 0 THEN auth_failures.in_flight - 1 \
                     ELSE 0 END",
            )
            .bind(key.as_str())
            .bind(now)
            .bind(expired_before)
            .bind(i64::from(failed))
            .execute(&mut *tx)
            .await?;
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
                 ELSE auth_failures.failures + 1 END, \
             in_flight = CASE WHEN auth_failures.window_start <= $3 THEN 0 \
                 ELSE auth_failures.in_flight END",
        )
        .bind(key)
        .bind(now)
        .bind(expired_before)
        .execute(self.db.write())
        .await?;
        Ok(())
    }

    /// The window of `key` as of now, when it has not ended (started after `expired_before`).
    pub async fn limiter_window(
        &self,
        key: &str,
        expired_before: i64,
    ) -> Result<Option<LimiterWindow>> {
        let row: Option<(i64, i64, i64)> = sqlx::query_as(
            "SELECT window_start, failures, in_flight FROM auth_failures \
             WHERE key = $1 AND window_start > $2",
        )
        .bind(key)
        .bind(expired_before)
        .fetch_optional(self.db.write())
        .await?;
        Ok(row.map(|(start, failures, in_flight)| LimiterWindow {
            start,
            failures,
            in_flight,
        }))
    }

    /// Deletes the windows that ended (started at or before `expired_before`); how many.
    pub async fn limiter_forget(&self, expired_before: i64) -> Result<u64> {
        Ok(
            sqlx::query("DELETE FROM auth_failures WHERE window_start <= $1")
                .bind(expired_before)
                .execute(self.db.write())
                .await?
                .rows_affected(),
        )
    }
}
