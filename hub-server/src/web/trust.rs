//! The trust signals of a version as the agent page shows them (issue 33, point 5): the key
//! that signed it and its age, its transparency-log entry as the hub proved it, its
//! deprecation, the agent's last publish and its downloads per week. The facts are the core's
//! ([`hub_core::trust`]); this is their HTML, each with an id a test (or a reader's tool) finds.

use index_schema::hub_api::trust::TrustSignals;
use maud::{Markup, html};

/// The "Trust signals" section, or nothing when the hub has none for the version.
pub(super) fn section(t: Option<&TrustSignals>, when: impl Fn(i64) -> String) -> Markup {
    let Some(t) = t else {
        return html! {};
    };
    let peak = t
        .downloads_per_week
        .iter()
        .map(|w| w.downloads)
        .max()
        .unwrap_or(0);
    html! {
        section aria-labelledby="signals" {
            h2 id="signals" { "Trust signals" }
            ul class="signals" {
                li id="signal-key" {
                    "Signed by key " code { (t.signed_by.key_id) } ", "
                    @match (t.signed_by.added_at, t.signed_by.age_days_at_publish) {
                        (Some(added), Some(days)) => {
                            "added to the namespace " (when(added)) " — "
                            @if days == 0 {
                                strong class="warn" { "less than a day before this version was published" }
                            } @else {
                                (days) @if days == 1 { " day" } @else { " days" } " before this version was published"
                            }
                        }
                        _ => strong class="warn" { "no longer registered with the namespace" },
                    }
                    @if let Some(r) = t.signed_by.revoked_at { "; " strong class="danger" { "revoked " (when(r)) } }
                }
                li id="signal-log" {
                    "Transparency log: "
                    @match (t.log.verified, t.log.index, t.log.checkpoint_size) {
                        (true, Some(i), Some(size)) => {
                            strong class="ok" { "entry " (i) " proven" } " by this hub under its signed checkpoint of " (size) " entries"
                        }
                        _ => strong class="danger" { "not proven" @if let Some(p) = &t.log.problem { ": " (p) } },
                    }
                }
                li id="signal-deprecation" {
                    @if let Some(d) = &t.deprecated {
                        strong class="warn" { "Deprecated" } ": " (d.message)
                        @if let Some(s) = &d.successor { " — use " a href=(format!("/agents/{s}")) { (s) } }
                    } @else {
                        "Not deprecated"
                    }
                }
                li id="signal-published" { "Last published " (when(t.last_published_at)) }
                li id="signal-downloads" {
                    "Downloads per week (weeks from Monday, UTC):"
                    table class="weeks" {
                        thead { tr { th scope="col" { "Week of" } th scope="col" { "Downloads" } } }
                        tbody {
                            @for w in &t.downloads_per_week {
                                tr {
                                    td { (w.week) }
                                    td {
                                        (w.downloads)
                                        @if peak > 0 { " " meter min="0" max=(peak) value=(w.downloads) aria-label=(format!("{} downloads in the week of {}", w.downloads, w.week)) {} }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
