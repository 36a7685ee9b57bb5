//! Trust signals (issue 33, point 5): the facts about a version that the agent and version
//! answers, `ofc info` and the agent page show beside it — the namespace key that signed it
//! (when the namespace added it, how old it was at the publish, whether it was revoked since),
//! its transparency-log entry proven here under the hub's current checkpoint, its deprecation,
//! the agent's last publish and its downloads week by week. The formats are
//! [`index_schema::hub_api::trust`]; the weekly counts are kept with the downloads
//! (`store/trust.rs`, migration 0026).
//!
//! **The log signal is checked, not asserted.** The hub proves the entry as a client would: the
//! checkpoint's signature with the log's own verifier key, then the inclusion proof of the
//! entry's exact bytes against that checkpoint's root. A stored hash that went wrong, or an
//! entry that does not match the version row, shows as `verified: false` with the reason —
//! never as a silent `true`. Clients still check for themselves on pull (`ofc-pkg`'s
//! `pull/log.rs`); the signal is for people reading a page and for agents choosing.
//!
//! No score: each signal is a fact with its time, so a reader weighs them (a key added an hour
//! before the publish, a log entry that does not prove, a deprecation, no downloads for weeks).

use index_schema::hub_api::LogInclusion;
use index_schema::hub_api::trust::{
    DeprecationSignal, LogSignal, SignerSignal, TrustSignals, WEEKS, WeekDownloads, day_text,
    week_of_day,
};
use index_schema::tlog::{check_inclusion, parse_hash_b64};

use crate::error::{CoreError, CoreResult};
use crate::hub::Hub;
use crate::store::{AgentRow, KeyRow, VersionRow, now_ms, publish_entry};
use crate::tlog::inclusion_now;

const DAY_MS: i64 = 86_400_000;

/// The publish entry of `v` proven under the hub's current head (with `log_size`, also the
/// consistency proof from it); `None` for a version published before the hub had a log.
pub async fn log_proof(
    hub: &Hub,
    a: &AgentRow,
    v: &VersionRow,
    log_size: Option<u64>,
) -> CoreResult<Option<LogInclusion>> {
    match v.log_index {
        Some(index) => {
            let entry = publish_entry(&a.name, &v.version, &v.manifest_digest, &v.key_id)?;
            let index = u64::try_from(index).map_err(CoreError::internal)?;
            Ok(Some(inclusion_now(hub, &entry, index, log_size).await?))
        }
        None => Ok(None),
    }
}

/// The trust signals of version `v` of agent `a`, signed by `key` (`None`: no longer
/// registered), whose log proof is `log` (from [`log_proof`]).
pub async fn signals(
    hub: &Hub,
    a: &AgentRow,
    v: &VersionRow,
    key: Option<&KeyRow>,
    log: Option<&LogInclusion>,
) -> CoreResult<TrustSignals> {
    let last_published_at = hub
        .store
        .last_published_at(a.id)
        .await?
        .unwrap_or(v.created_at);
    let this_week = week_of_day(now_ms().div_euclid(DAY_MS));
    let weeks = i64::try_from(WEEKS).unwrap_or(8);
    let first = this_week - 7 * (weeks - 1);
    let counted = hub.store.downloads_by_week(a.id, first).await?;
    Ok(TrustSignals {
        version: v.version.clone(),
        signed_by: signer(&v.key_id, v.created_at, key),
        log: log_signal(hub, v, log),
        deprecated: v
            .deprecated_message
            .clone()
            .map(|message| DeprecationSignal {
                message,
                successor: v.deprecated_successor.clone(),
            }),
        last_published_at,
        downloads_per_week: per_week(first, weeks, &counted),
    })
}

/// The signer signal of a version published at `published_at` with `key_id`.
fn signer(key_id: &str, published_at: i64, key: Option<&KeyRow>) -> SignerSignal {
    SignerSignal {
        key_id: key_id.to_string(),
        added_at: key.map(|k| k.added_at),
        age_days_at_publish: key.map(|k| (published_at - k.added_at).max(0) / DAY_MS),
        revoked_at: key.and_then(|k| k.revoked_at),
    }
}

/// `weeks` weeks from the Monday `first`, each with its count in `counted` (week, downloads)
/// or 0.
fn per_week(first: i64, weeks: i64, counted: &[(i64, i64)]) -> Vec<WeekDownloads> {
    (0..weeks)
        .map(|i| {
            let week = first + 7 * i;
            WeekDownloads {
                week: day_text(week),
                downloads: counted
                    .iter()
                    .find(|(w, _)| *w == week)
                    .map_or(0, |(_, n)| *n),
            }
        })
        .collect()
}

/// Whether `log` proves the publish entry of `v`: its checkpoint signed by this hub's log key,
/// its inclusion proof leading from the entry's bytes to that checkpoint's root.
fn log_signal(hub: &Hub, v: &VersionRow, log: Option<&LogInclusion>) -> LogSignal {
    let index = v.log_index.and_then(|i| u64::try_from(i).ok());
    let Some(log) = log else {
        return LogSignal {
            index,
            verified: false,
            checkpoint_size: None,
            problem: Some(
                "published before this hub kept a transparency log: no entry to prove".into(),
            ),
        };
    };
    match prove(hub, log) {
        Ok(size) => LogSignal {
            index,
            verified: true,
            checkpoint_size: Some(size),
            problem: None,
        },
        Err(problem) => {
            tracing::error!(version = %v.version, index = ?index, %problem,
                "a version's log entry does not prove under the hub's own checkpoint");
            LogSignal {
                index,
                verified: false,
                checkpoint_size: None,
                problem: Some(problem),
            }
        }
    }
}

/// Checks `log` as a client would; the checkpoint's size, or what failed.
fn prove(hub: &Hub, log: &LogInclusion) -> Result<u64, String> {
    let cp = hub
        .log
        .verifier()
        .verify_checkpoint(&log.checkpoint)
        .map_err(|e| format!("the checkpoint does not verify with the log's key: {e}"))?;
    let proof = log
        .inclusion
        .iter()
        .map(|h| parse_hash_b64(h))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the inclusion proof is malformed: {e}"))?;
    check_inclusion(
        &proof,
        cp.size,
        cp.root,
        log.index,
        format!("{}\n", log.entry).as_bytes(),
    )
    .map_err(|e| format!("entry {} is not proven: {e}", log.index))?;
    Ok(cp.size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(added_at: i64, revoked_at: Option<i64>) -> KeyRow {
        KeyRow {
            key_id: "k".into(),
            public_key: "ed25519:x".into(),
            added_by: "ann".into(),
            added_at,
            revoked_at,
            revoked_by: revoked_at.map(|_| "ann".into()),
        }
    }

    #[test]
    fn key_age_is_whole_days_before_the_publish() {
        let k = key(1_000, None);
        let s = signer("k", 1_000 + 3 * DAY_MS + DAY_MS / 2, Some(&k));
        assert_eq!(s.age_days_at_publish, Some(3));
        assert_eq!(s.added_at, Some(1_000));
        assert_eq!(s.revoked_at, None);
        // A key added after the publish (clock skew between replicas) is not "negative days".
        assert_eq!(signer("k", 0, Some(&k)).age_days_at_publish, Some(0));
        let gone = signer("k", 5, None);
        assert_eq!((gone.added_at, gone.age_days_at_publish), (None, None));
        let revoked = key(0, Some(77));
        assert_eq!(signer("k", 5, Some(&revoked)).revoked_at, Some(77));
    }

    #[test]
    fn weeks_without_downloads_are_zero_and_in_order() {
        let first = 20_780 - 7 * 7; // 8 weeks ending with the week of Monday 2026-11-23
        let w = per_week(first, 8, &[(20_780, 4), (first, 2), (20_773, 1)]);
        assert_eq!(w.len(), 8);
        assert_eq!(w[0].week, "2026-10-05");
        assert_eq!(w[0].downloads, 2);
        assert_eq!(w[6].week, "2026-11-16");
        assert_eq!(w[6].downloads, 1);
        assert_eq!(w[7].week, "2026-11-23");
        assert_eq!(w[7].downloads, 4);
        assert!(w[1..6].iter().all(|d| d.downloads == 0));
    }
}
