//! Whether a locked agent served from the cache was deprecated or removed since it was locked:
//! `ofc pull` and `ofc run` use such an agent without the hub, so one cheap question to the hub
//! brings the publisher's warning the fetch would have shown (issue 33). Never fatal: a hub that
//! does not answer within [`DEPRECATION_CHECK`] is noted once and the agent runs from the cache.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use index_schema::name::AgentName;
use semver::Version;

use super::context::Ctx;
use crate::hub::Hub;
use crate::output::truncate;

/// The longest a locked, cached agent's deprecation check waits for the hub.
const DEPRECATION_CHECK: Duration = Duration::from_secs(3);

/// Set once this process said that the hub did not answer a check: `ofc run` pulls its agents
/// one by one, and one note says it for all of them.
static UNANSWERED: AtomicBool = AtomicBool::new(false);

impl Ctx {
    /// A locked version served from the cache needs no hub, so nothing told this client that
    /// its publisher deprecated (or removed) it since: one cheap question, bounded by
    /// [`DEPRECATION_CHECK`], warns as a fetch would. A hub that does not answer does not stop
    /// the run; one line says so.
    pub(super) async fn warn_if_deprecated(&self, hub: &Hub, name: &AgentName, version: &Version) {
        let why = match tokio::time::timeout(DEPRECATION_CHECK, hub.agent(name)).await {
            Ok(Ok(info)) => {
                let listed = info
                    .versions
                    .iter()
                    .find(|v| Version::parse(&v.version).is_ok_and(|x| &x == version));
                match listed {
                    Some(v) => {
                        if let Some(message) = &v.deprecated {
                            eprintln!(
                                "{}",
                                deprecation_warning(
                                    name,
                                    version,
                                    message,
                                    v.deprecated_successor.as_deref()
                                )
                            );
                        }
                    }
                    None => eprintln!(
                        "warning: {} no longer lists {name} {version}, locked in ofc.lock; it may \
                         have been removed (`ofc audit {name}` shows why); using the cached copy",
                        hub.url
                    ),
                }
                return;
            }
            Ok(Err(e)) => match crate::hub::hub_error(&e) {
                Some(h) => format!("it answered {}", h.status),
                None => "it did not answer".to_string(),
            },
            Err(_) => format!("no answer within {} s", DEPRECATION_CHECK.as_secs()),
        };
        if !UNANSWERED.swap(true, Ordering::Relaxed) {
            eprintln!(
                "note: could not ask {} whether locked agents were deprecated since ({why}); \
                 running them from the cache",
                hub.url
            );
        }
    }
}

/// The warning for a deprecated version: the publisher's message (one line, shortened) and the
/// successor it names, if any. The hub's text, so cleaned of control characters.
pub(super) fn deprecation_warning(
    name: &AgentName,
    version: &Version,
    message: &str,
    successor: Option<&str>,
) -> String {
    let mut line = format!(
        "warning: {name} {version} is deprecated: {}",
        truncate(message, 200)
    );
    if let Some(s) = successor {
        line.push_str(&format!("; use {} instead", truncate(s, 100)));
    }
    crate::output::clean_line(&line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deprecation_warnings_name_the_successor_on_one_clean_line() {
        let n = AgentName::parse("acme/old").unwrap();
        let v = Version::parse("1.2.0").unwrap();
        assert_eq!(
            deprecation_warning(&n, &v, "moved", Some("acme/new")),
            "warning: acme/old 1.2.0 is deprecated: moved; use acme/new instead"
        );
        let w = deprecation_warning(&n, &v, "a\x1b[31mred\nline", None);
        assert!(!w.chars().any(char::is_control), "{w:?}");
        assert!(w.ends_with("red line"), "{w:?}");
    }
}
