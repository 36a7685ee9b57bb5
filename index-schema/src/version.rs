//! Which version of an agent a selector picks, shared by the hub (its `latest` version, which
//! the API, the OCI tags and search show) and the client (`ofc pull`), so that the two can never
//! disagree.
//!
//! The rule, for a list of versions each marked yanked or not:
//!
//! - **No selector (`latest`)**: the highest version that is neither yanked nor a pre-release;
//!   when there is none, the highest non-yanked pre-release. An agent that has only published
//!   `1.0.0-rc.1` is still found and pulled by its name; as soon as a release exists, no
//!   pre-release is picked, however high.
//! - **A requirement (`^1.2`, `>=1.0.0-0`)**: the highest non-yanked version it matches, with
//!   semver's rule for pre-releases (a requirement matches a pre-release only when one of its
//!   comparators names a pre-release of the same `major.minor.patch`): pre-releases are picked
//!   only when asked for.
//! - **An exact version**: that version, yanked or not (asking exactly is explicit).
//! - **A digest**: cannot be decided from versions; never picks (the caller matches digests).

use semver::Version;

use crate::name::VersionSelector;

/// Picks the version `selector` asks for among `candidates` (`(version, yanked)`); see the
/// [module documentation](self) for the rule. `None` when nothing qualifies.
pub fn select<'a>(
    candidates: impl IntoIterator<Item = (&'a Version, bool)>,
    selector: &VersionSelector,
) -> Option<&'a Version> {
    let mut best_release: Option<&Version> = None;
    let mut best_pre: Option<&Version> = None;
    let mut best_match: Option<&Version> = None;
    for (v, yanked) in candidates {
        match selector {
            VersionSelector::Digest(_) => return None,
            VersionSelector::Exact(e) => {
                if e == v {
                    return Some(v);
                }
            }
            VersionSelector::Req(r) => {
                if !yanked && r.matches(v) && best_match.is_none_or(|b| v > b) {
                    best_match = Some(v);
                }
            }
            VersionSelector::Latest => {
                if yanked {
                    continue;
                }
                let slot = if v.pre.is_empty() {
                    &mut best_release
                } else {
                    &mut best_pre
                };
                if slot.is_none_or(|b| v > b) {
                    *slot = Some(v);
                }
            }
        }
    }
    match selector {
        VersionSelector::Latest => best_release.or(best_pre),
        _ => best_match,
    }
}

/// The hub's `latest`: [`select`] with no selector, over version texts (texts that are not
/// semver are skipped). Returns the chosen text as given.
pub fn latest<'a>(candidates: impl IntoIterator<Item = (&'a str, bool)>) -> Option<&'a str> {
    let parsed: Vec<(Version, bool, &str)> = candidates
        .into_iter()
        .filter_map(|(t, y)| Version::parse(t).ok().map(|v| (v, y, t)))
        .collect();
    let pick = select(
        parsed.iter().map(|(v, y, _)| (v, *y)),
        &VersionSelector::Latest,
    )?;
    parsed
        .iter()
        .find(|(v, _, _)| v == pick)
        .map(|(_, _, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(list: &[(&str, bool)], sel: &str) -> Option<String> {
        let vs: Vec<(Version, bool)> = list
            .iter()
            .map(|(v, y)| (Version::parse(v).unwrap(), *y))
            .collect();
        let sel = if sel.is_empty() {
            VersionSelector::Latest
        } else {
            VersionSelector::parse(sel).unwrap()
        };
        select(vs.iter().map(|(v, y)| (v, *y)), &sel).map(|v| v.to_string())
    }

    /// The cases both the hub's `latest` and `ofc pull` are held to.
    /// `(version, yanked)` candidates.
    type Candidates = &'static [(&'static str, bool)];

    const LATEST_CASES: &[(Candidates, Option<&str>)] = &[
        (&[], None),
        (&[("1.0.0", false), ("2.0.0-rc.1", false)], Some("1.0.0")),
        (&[("2.0.0-rc.1", false), ("1.0.0", false)], Some("1.0.0")),
        (&[("1.0.0-rc.1", false)], Some("1.0.0-rc.1")),
        (
            &[("1.0.0-rc.1", false), ("1.0.0-rc.2", false)],
            Some("1.0.0-rc.2"),
        ),
        (&[("1.0.0", true), ("0.9.0", false)], Some("0.9.0")),
        (
            &[("1.0.0", true), ("2.0.0-beta.1", false)],
            Some("2.0.0-beta.1"),
        ),
        (&[("1.0.0", true)], None),
        (&[("1.2.0", false), ("1.10.0", false)], Some("1.10.0")),
    ];

    #[test]
    fn latest_prefers_releases_and_falls_back_to_pre_releases() {
        for (list, want) in LATEST_CASES {
            assert_eq!(pick(list, "").as_deref(), *want, "{list:?}");
            let texts = list.iter().map(|(v, y)| (*v, *y));
            assert_eq!(latest(texts), *want, "{list:?}");
        }
    }

    #[test]
    fn latest_skips_texts_that_are_not_semver() {
        assert_eq!(
            latest([("nope", false), ("1.0.0", false), ("", false)]),
            Some("1.0.0")
        );
    }

    #[test]
    fn requirements_pick_pre_releases_only_when_asked() {
        let list = [
            ("1.0.0", false),
            ("1.1.0-rc.1", false),
            ("1.2.0", true),
            ("2.0.0", false),
        ];
        assert_eq!(pick(&list, "^1").as_deref(), Some("1.0.0"));
        assert_eq!(pick(&list, ">=1.1.0-0, <2").as_deref(), Some("1.1.0-rc.1"));
        assert_eq!(pick(&list, "*").as_deref(), Some("2.0.0"));
        assert_eq!(pick(&list, "^3"), None);
        // Only pre-releases: a requirement naming none does not fall back to them.
        assert_eq!(pick(&[("1.0.0-rc.1", false)], "^1"), None);
    }

    #[test]
    fn exact_picks_even_a_yanked_version_and_digests_never_pick() {
        let list = [("1.0.0", true), ("1.1.0", false)];
        assert_eq!(pick(&list, "1.0.0").as_deref(), Some("1.0.0"));
        assert_eq!(pick(&list, "=1.1.0").as_deref(), Some("1.1.0"));
        assert_eq!(pick(&list, "1.2.0"), None);
        let d = format!("sha256:{}", "0".repeat(64));
        assert_eq!(pick(&list, &d), None);
    }
}
