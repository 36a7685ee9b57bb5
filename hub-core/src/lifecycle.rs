//! The life of a version after its publish (issue 33): deprecation, unpublish, takedown, and
//! the tombstones they leave.
//!
//! **Deprecate** marks a version with a message and perhaps a successor (`publisher/agent`,
//! which need not exist yet); the version stays listed, selectable and downloadable, search
//! ranks the agent lower and marks it, clients warn on pull and run. Same rights as yank (the
//! `yank` scope and the maintainer or owner role in the namespace). Logged as `deprecate` /
//! `undeprecate` entries.
//!
//! **Unpublish** is the publisher removing a version they regret: allowed while the version is
//! younger than `unpublish_window_secs` (72 h by default) and has fewer than
//! `unpublish_max_downloads` counted downloads (100 by default), as the Rust registry allows
//! deletion only early and little used; both are re-checked in the removing statement. Past
//! either, only an operator removes it: `ofc-hub admin takedown NAME@VERSION --reason CLASS`.
//! Same rights as yank.
//!
//! **Either leaves a tombstone** (`deleted_versions` with the manifest digest and the reason
//! class) and a `remove` log entry naming agent, version, digest and class, so audit tells a
//! removed version (its publish entry, then its `remove`) from one that never existed (no
//! entry at all). The version's URLs answer 410 `version_removed` naming the class; a version
//! that never existed stays 404. The 410's body carries the class and the removal's time as
//! fields (`removed: {reason, removed_at, manifest_digest}`), for clients to act on.
//!
//! **Under `/v2/`** (the OCI registry) a removed version's tag answers **404
//! `MANIFEST_UNKNOWN`**, not 410: the distribution spec says a manifest that is not in the
//! repository is 404 with that code, and OCI clients (docker, containerd, oras, skopeo) know
//! only its error codes — a 410 would read as an unexpected server failure, some would retry
//! it. The removal is named in the message and, machine-readable, in the error's `detail`
//! (`{"ofc_code": "version_removed", "reason", "removed_at", "manifest_digest"}`), which the
//! spec leaves to the registry. A removed version's OCI manifest asked by its digest is a plain
//! 404: the tombstone keeps the ofc manifest's digest, not the OCI manifest's.
//!
//! **Never again, whatever the content.** A removed `name@version` cannot be published again,
//! not even with the same bytes: a takedown (malware) must not be undone by re-pushing the same
//! bytes, and after a `remove` entry a reader of the log must never find the version back — a
//! version number, once removed, means "gone" for good. Publish a new version instead.

use index_schema::hub_api::ErrorCode;
use index_schema::name::AgentName;
use index_schema::tlog::RemovalReason;

use crate::accounts::actor;
use crate::agents::{changing, gone_or_missing, parse_version};
use crate::auth::Principal;
use crate::error::{CoreError, CoreResult};
use crate::hub::Hub;
use crate::store::{Actor, Deprecation, RemoveOutcome, Store, UnpublishLimits, now_ms};

/// Deprecates a version with `message` and perhaps `successor`, or clears its deprecation
/// (`message` `None`; a successor alone is refused).
pub async fn set_deprecated(
    hub: &Hub,
    p: &Principal,
    publisher: &str,
    agent_name: &str,
    version_text: &str,
    message: Option<&str>,
    successor: Option<&str>,
) -> CoreResult<()> {
    let successor = match successor {
        None => None,
        Some(_) if message.is_none() => {
            return Err(CoreError::invalid(
                ErrorCode::InvalidMessage,
                "a successor needs a deprecation message",
            ));
        }
        Some(s) => Some(AgentName::parse(s).map_err(|e| {
            CoreError::invalid(
                ErrorCode::InvalidName,
                format!(
                    "successor `{}`: {e}",
                    s.chars().take(100).collect::<String>()
                ),
            )
        })?),
    };
    if let Some(m) = message {
        crate::agents::check_text("message", m)?;
        if m.trim().is_empty() {
            return Err(CoreError::invalid(
                ErrorCode::InvalidMessage,
                "the deprecation message is empty",
            ));
        }
    }
    let (a, v) = changing(hub, p, publisher, agent_name, version_text).await?;
    if successor.as_ref().is_some_and(|s| s.to_string() == a.name) {
        return Err(CoreError::invalid(
            ErrorCode::InvalidName,
            format!("`{}` cannot be its own successor", a.name),
        ));
    }
    let deprecation = message.map(|m| Deprecation {
        message: m,
        successor: successor.as_ref(),
    });
    hub.store
        .set_deprecated(&actor(p), &a, &v, deprecation)
        .await?;
    Ok(())
}

/// The publisher unpublishes a version, within the hub's window and download limit; returns
/// the index of its `remove` entry in the log.
pub async fn unpublish(
    hub: &Hub,
    p: &Principal,
    publisher: &str,
    agent_name: &str,
    version_text: &str,
) -> CoreResult<u64> {
    let (a, v) = changing(hub, p, publisher, agent_name, version_text).await?;
    let row = crate::agents::version(hub, &a, &v).await?;
    let window_ms =
        i64::try_from(hub.config.unpublish_window_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    let max = i64::try_from(hub.config.unpublish_max_downloads).unwrap_or(i64::MAX);
    let refused = |why: String| {
        CoreError::forbidden(
            ErrorCode::UnpublishRefused,
            format!(
                "`{}` {v} cannot be unpublished: {why}; a hub operator can still take it down \
                 (`ofc-hub admin takedown {}@{v} --reason CLASS`, CLASS one of {}) — or yank \
                 or deprecate it",
                a.name,
                a.name,
                takedown_classes()
            ),
        )
    };
    if window_ms == 0 || max == 0 {
        return Err(refused(
            "this hub does not let publishers unpublish (its unpublish window or download limit \
             is 0)"
                .into(),
        ));
    }
    let age_ms = now_ms().saturating_sub(row.created_at);
    if age_ms > window_ms {
        return Err(refused(format!(
            "it was published {} ago, past the hub's unpublish window of {}",
            duration(age_ms / 1000),
            duration(window_ms / 1000)
        )));
    }
    if row.downloads >= max {
        return Err(refused(format!(
            "it has {} counted downloads, and the hub allows unpublishing only below {max}",
            row.downloads
        )));
    }
    let limits = UnpublishLimits {
        published_since: now_ms().saturating_sub(window_ms),
        max_downloads: max,
    };
    match hub
        .store
        .remove_version(&actor(p), &a, &v, RemovalReason::Unpublished, Some(limits))
        .await?
    {
        RemoveOutcome::Removed(index) => Ok(index),
        RemoveOutcome::Missing => Err(gone_or_missing(hub, &a.name, &v).await),
        RemoveOutcome::Refused => Err(refused(
            "it passed the window or the download limit while being unpublished".into(),
        )),
    }
}

/// An operator's takedown of `name@version` with a reason class (not `unpublished`); returns
/// the index of its `remove` entry. No limits: the operator decides.
pub async fn takedown(
    store: &Store,
    name: &str,
    version: &str,
    reason: &str,
) -> anyhow::Result<u64> {
    let reason = RemovalReason::parse(reason)
        .filter(|r| *r != RemovalReason::Unpublished)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "unknown takedown reason class `{reason}`; expected one of {}",
                takedown_classes()
            )
        })?;
    let name = AgentName::parse(name)?;
    let version = parse_version(version).map_err(|e| anyhow::anyhow!("{}", e.message))?;
    let Some(a) = store.agent(&name.to_string()).await? else {
        anyhow::bail!("no agent `{name}`");
    };
    match store
        .remove_version(&Actor::operator(), &a, &version, reason, None)
        .await?
    {
        RemoveOutcome::Removed(index) => Ok(index),
        _ => match store.tombstone(&a.name, &version).await? {
            Some(_) => anyhow::bail!("`{name}` {version} was removed already"),
            None => anyhow::bail!("`{name}` has no version {version}"),
        },
    }
}

/// The reason classes a takedown takes, for messages.
pub fn takedown_classes() -> String {
    RemovalReason::TAKEDOWN
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `3 days 4 h`, `5 min`, `12 s`.
fn duration(secs: i64) -> String {
    match secs {
        s if s >= 86_400 => format!("{} days {} h", s / 86_400, s % 86_400 / 3600),
        s if s >= 3600 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::duration;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(duration(259_200), "3 days 0 h");
        assert_eq!(duration(90_061), "1 days 1 h");
        assert_eq!(duration(7_260), "2 h 1 min");
        assert_eq!(duration(61), "1 min");
        assert_eq!(duration(0), "0 s");
    }
}
