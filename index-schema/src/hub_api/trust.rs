//! Trust signals (issue 33, point 5): what a person or an agent deciding whether to run a version
//! can weigh, in one block of the agent and version answers — who signed it and how old that key
//! was, whether the hub proves it in its transparency log, its deprecation, how lately the agent
//! was published and how much it is pulled, week by week.
//!
//! The hub computes these (`hub_core::trust`); it states facts, not a score. A client still
//! checks the signature and the log itself on pull; `log.verified` says only that the hub could
//! prove the entry under its own current checkpoint when it answered.

use serde::{Deserialize, Serialize};

/// The trust signals of one version of an agent (`trust` in `GET /api/v1/agents/{p}/{a}`, for
/// the version `latest` names — or the newest when every version is yanked — and in
/// `GET …/versions/{v}`, for that version). The namespace's verified domain, when it has one,
/// is `AgentInfo::verified_domain` (issue 33, point 3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TrustSignals {
    /// The version these signals are of.
    pub version: String,
    /// The namespace key that signed it.
    pub signed_by: SignerSignal,
    /// Its entry in the hub's transparency log.
    pub log: LogSignal,
    /// Its deprecation, if it is deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<DeprecationSignal>,
    /// When the agent's newest version (of any) was published (Unix ms).
    pub last_published_at: i64,
    /// The agent's downloads (all versions, counted once per client and day) in each of the
    /// last [`WEEKS`] weeks, oldest first, the current (partial) week last. Weeks run Monday to
    /// Sunday, UTC. Downloads before the hub counted by week (migration 0026) are in no week.
    #[serde(default)]
    pub downloads_per_week: Vec<WeekDownloads>,
}

/// How many weeks [`TrustSignals::downloads_per_week`] covers.
pub const WEEKS: usize = 8;

/// The key that signed a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SignerSignal {
    /// Key id.
    pub key_id: String,
    /// When the namespace added the key (Unix ms); `None` when the key is no longer registered.
    pub added_at: Option<i64>,
    /// How old the key was when it signed this version, in whole days (a key added just
    /// before a publish deserves a second look); `None` when the key is no longer registered.
    pub age_days_at_publish: Option<i64>,
    /// When the key was revoked (Unix ms), if it was.
    pub revoked_at: Option<i64>,
}

/// A version's transparency-log entry, as the hub proves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogSignal {
    /// The index of its `publish` entry; `None` for versions published before the hub had a log.
    pub index: Option<u64>,
    /// Whether the hub proved the entry (its inclusion proof checked against the root of the
    /// checkpoint, whose signature by the hub's log key was checked too) when it answered.
    pub verified: bool,
    /// The size of the checkpoint it was proven under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_size: Option<u64>,
    /// Why it is not verified, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// A deprecation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeprecationSignal {
    /// The publisher's message.
    pub message: String,
    /// The agent to use instead (`publisher/agent`), if named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successor: Option<String>,
}

/// Downloads in one week.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WeekDownloads {
    /// The week's Monday (UTC), `YYYY-MM-DD`.
    pub week: String,
    /// Downloads counted in it.
    pub downloads: i64,
}

/// The Monday (as a day since 1970-01-01) of the week holding `day` (days since 1970-01-01,
/// a Thursday).
pub fn week_of_day(day: i64) -> i64 {
    day - (day + 3).rem_euclid(7)
}

/// `YYYY-MM-DD` of a day since 1970-01-01 (proleptic Gregorian, UTC).
pub fn day_text(day: i64) -> String {
    // Howard Hinnant's civil_from_days.
    let z = day + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weeks_start_on_monday() {
        // 1970-01-01 was a Thursday: its week began Monday 1969-12-29.
        assert_eq!(week_of_day(0), -3);
        assert_eq!(day_text(-3), "1969-12-29");
        // 2026-11-27 is a Friday (day 20_784); its Monday is 2026-11-23.
        assert_eq!(day_text(20_784), "2026-11-27");
        assert_eq!(day_text(week_of_day(20_784)), "2026-11-23");
        // A Monday is its own week's start; the Sunday before belongs to the week before.
        assert_eq!(week_of_day(20_780), 20_780);
        assert_eq!(week_of_day(20_779), 20_773);
        assert_eq!(day_text(11_016), "2000-02-29");
        assert_eq!(day_text(-719_468), "0000-03-01");
    }
}
