//! `ofc info publisher/agent[@selector]`: an agent on the hub (`GET /api/v1/agents/{p}/{a}`) and
//! one of its versions (`GET …/versions/{v}`): the latest, or the one the selector picks. Shows
//! what the publisher wrote, the source, digests, signing key, downloads and every version with
//! its yanked and deprecated marks, and the hub's trust signals of the version (signing key and
//! its age, log proof, deprecation, last publish, downloads per week); `--json` prints both hub
//! answers (each with its `trust` block).

use anyhow::Result;
use index_schema::hub_api::trust::TrustSignals;
use index_schema::hub_api::{AgentInfo, VersionInfo, VersionSummary};
use index_schema::name::{AgentName, Reference, VersionSelector};
use semver::Version;
use serde_json::{Value, json};

use crate::config::Paths;
use crate::hub::{self, Hub};
use crate::output::{self, ExitStatus, Output, UserError};

/// Arguments of `ofc info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// `publisher/agent`, optionally `@1.2.3`, `@^1.2` or `@latest`.
    #[arg(value_name = "REF")]
    pub reference: String,
}

/// Runs the verb.
pub fn run(args: &InfoArgs, out: &mut Output) -> Result<ExitStatus> {
    let reference = parse_reference(&args.reference)?;
    let name = reference.name().clone();
    let paths = Paths::from_env()?;
    let hub = Hub::from_env(&paths)?;
    let rt = hub::runtime()?;
    let agent = rt.block_on(hub.agent(&name)).map_err(|e| {
        hub::refused(
            e,
            format!("cannot get {name} from {}", hub.url),
            |he| match he.status.as_u16() {
                404 => vec![format!(
                    "check the name; `ofc search {}` finds agents by words",
                    name.agent()
                )],
                _ => Vec::new(),
            },
        )
    })?;
    let version = pick(&name, &agent, reference.selector())?;
    // The version comes from the hub's list for `@latest` and digests: it must be one before
    // it goes into a URL path.
    let version = Version::parse(&version)
        .map_err(|e| anyhow::anyhow!("the hub lists an invalid version of {name}: {e}"))?
        .to_string();
    let v = rt
        .block_on(hub.version(&name, &version))
        .map_err(|e| hub::refused(e, format!("cannot get {name}@{version}"), |_| Vec::new()))?;
    if out.json {
        out.json_value(&json!({ "agent": agent, "version": v }));
        return Ok(ExitStatus::Success);
    }
    for line in render(&agent, &v) {
        // Everything shown came from the hub: no control characters reach the terminal.
        out.data(&output::clean_line(&line));
    }
    Ok(ExitStatus::Success)
}

fn parse_reference(text: &str) -> Result<Reference> {
    let r = Reference::parse(text).map_err(|e| {
        UserError::new(format!("invalid reference `{text}`: {e}"))
            .hint("give an agent as `publisher/agent`, optionally with `@1.2.3` or `@^1`")
    })?;
    if let Some(host) = r.host() {
        return Err(UserError::new(format!(
            "`{text}` names the hub `{host}`; ofc asks the hub of OFC_HUB"
        ))
        .hint("drop the host and set OFC_HUB to that hub")
        .into());
    }
    Ok(r)
}

/// The version the selector picks among the agent's versions.
fn pick(name: &AgentName, agent: &AgentInfo, selector: &VersionSelector) -> Result<String> {
    if agent.versions.is_empty() {
        return Err(UserError::new(format!("{name} has no versions")).into());
    }
    let listed = || {
        format!(
            "its versions: {}",
            agent
                .versions
                .iter()
                .map(|v| v.version.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let found = match selector {
        // With every version yanked there is nothing to install, but still something to show:
        // the highest version, marked yanked.
        VersionSelector::Latest => agent.latest.clone().or_else(|| {
            agent
                .versions
                .iter()
                .filter_map(|v| Version::parse(&v.version).ok().map(|p| (p, &v.version)))
                .max_by(|a, b| a.0.cmp(&b.0))
                .map(|(_, v)| v.clone())
        }),
        VersionSelector::Exact(want) => agent
            .versions
            .iter()
            .find(|v| Version::parse(&v.version).is_ok_and(|got| got == *want))
            .map(|v| v.version.clone()),
        VersionSelector::Req(_) => agent
            .versions
            .iter()
            .filter(|v| !v.yanked)
            .filter_map(|v| Version::parse(&v.version).ok().map(|p| (p, &v.version)))
            .filter(|(p, _)| selector.matches_version(p))
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, v)| v.clone()),
        VersionSelector::Digest(d) => agent
            .versions
            .iter()
            .find(|v| v.manifest_digest == d.to_string())
            .map(|v| v.version.clone()),
    };
    found.ok_or_else(|| {
        let what = match selector {
            VersionSelector::Latest => format!("every version of {name} is yanked"),
            sel => format!("no version of {name} matches `@{sel}`"),
        };
        UserError::new(what)
            .hint(listed())
            .hint(format!("pick one exactly: `ofc info {name}@VERSION`"))
            .into()
    })
}

fn render(agent: &AgentInfo, v: &VersionInfo) -> Vec<String> {
    let text = |key: &str| {
        v.manifest
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let mut lines = Vec::new();
    let latest = match agent.latest.as_deref() {
        Some(l) if l == v.version => " (latest)".to_string(),
        Some(l) => format!(" (latest: {l})"),
        None => " (every version is yanked)".to_string(),
    };
    lines.push(format!("{}@{}{latest}", agent.name, v.version));
    match (text("displayName"), text("tagline")) {
        (Some(d), Some(t)) => lines.push(format!("{d}: {t}")),
        (Some(one), None) | (None, Some(one)) => lines.push(one.to_string()),
        (None, None) => {}
    }
    if let Some(d) = text("description") {
        lines.push(String::new());
        // Indented: the publisher's text never starts a line at the margin, where ofc's own
        // `hint:`/`error:` lines are.
        lines.extend(
            d.lines()
                .map(|l| format!("  {}", l.trim_end()).trim_end().to_string()),
        );
    }
    lines.push(String::new());

    let mut fields: Vec<(&str, String)> = Vec::new();
    if let Some(d) = &agent.verified_domain {
        // The namespace proved it holds the domain (`ofc namespace verify`); the hub's text.
        fields.push((
            "verified",
            format!(
                "{} holds {}",
                agent.namespace,
                output::truncate(&output::clean_line(d), 80)
            ),
        ));
    }
    if let Some(h) = &agent.handle {
        fields.push(("handle", h.clone()));
    }
    fields.push(("source", v.source_kind.clone()));
    if let Some(b) = &v.bundle {
        fields.push(("bundle", format!("{} ({} bytes)", b.digest, b.size)));
    }
    fields.push(("manifest", v.manifest_digest.clone()));
    let key = match v.key.revoked_at {
        Some(at) => format!("{} (revoked {})", v.key.key_id, output::format_time_ms(at)),
        None => v.key.key_id.clone(),
    };
    fields.push(("key id", key));
    let by = if v.published_by.is_empty() {
        String::new()
    } else {
        format!(" by {}", v.published_by)
    };
    fields.push((
        "published",
        format!("{}{by}", output::format_time_ms(v.published_at)),
    ));
    if let Some(t) = &v.trusted_publishing {
        // Issuer and subject are the CI's text: cleaned like every line shown.
        fields.push((
            "published via",
            output::clean_line(&format!(
                "trusted publishing from {} (issuer {})",
                t.subject, t.issuer
            )),
        ));
    }
    fields.push((
        "downloads",
        format!(
            "{} (this version), {} (all versions)",
            v.downloads, agent.downloads
        ),
    ));
    for (label, key) in [
        ("license", "license"),
        ("homepage", "homepage"),
        ("repository", "repository"),
    ] {
        if let Some(t) = text(key) {
            fields.push((label, t.to_string()));
        }
    }
    let names = |key: &str, inner: Option<&str>| -> Vec<String> {
        v.manifest
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| match inner {
                        Some(k) => x.get(k).and_then(Value::as_str),
                        None => x.as_str(),
                    })
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let keywords = names("keywords", None);
    if !keywords.is_empty() {
        fields.push(("keywords", keywords.join(", ")));
    }
    let capabilities = names("capabilities", Some("name"));
    if !capabilities.is_empty() {
        fields.push(("capabilities", capabilities.join(", ")));
    }
    if v.yanked {
        fields.push((
            "yanked",
            v.yank_reason
                .clone()
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "yes".into()),
        ));
    }
    if let Some(d) = &v.deprecated {
        fields.push(("deprecated", d.clone()));
        if let Some(s) = &v.deprecated_successor {
            fields.push(("use instead", s.clone()));
        }
    }
    let width = fields.iter().map(|(l, _)| l.len()).max().unwrap_or(0) + 2;
    for (label, value) in fields {
        lines.push(format!("{label:<width$}{value}"));
    }

    if let Some(t) = &v.trust {
        lines.push(String::new());
        lines.extend(trust_lines(t));
    }
    lines.push(String::new());
    lines.push("versions:".into());
    let mut sorted: Vec<&VersionSummary> = agent.versions.iter().collect();
    // Newest first by semver (the hub lists them in publish order; backports come later).
    sorted.sort_by(|a, b| {
        let key = |x: &VersionSummary| Version::parse(&x.version).ok();
        key(b).cmp(&key(a))
    });
    let rows: Vec<Vec<String>> = sorted
        .into_iter()
        .map(|s| {
            let mut notes = Vec::new();
            if agent.latest.as_deref() == Some(s.version.as_str()) {
                notes.push("latest".to_string());
            }
            if s.yanked {
                notes.push(match s.yank_reason.as_deref().filter(|r| !r.is_empty()) {
                    Some(r) => format!("yanked: {}", output::truncate(r, 60)),
                    None => "yanked".into(),
                });
            }
            if let Some(d) = &s.deprecated {
                notes.push(format!("deprecated: {}", output::truncate(d, 60)));
                if let Some(n) = &s.deprecated_successor {
                    notes.push(format!("use {}", output::truncate(n, 80)));
                }
            }
            if s.key_revoked_at.is_some() {
                notes.push("key revoked".into());
            }
            vec![
                s.version.clone(),
                output::format_time_ms(s.published_at),
                s.downloads.to_string(),
                notes.join("; "),
            ]
        })
        .collect();
    for line in output::table(&["VERSION", "PUBLISHED", "DOWNLOADS", "NOTES"], &rows) {
        lines.push(format!("  {line}"));
    }
    lines
}

/// The hub's trust signals of the version (issue 33): facts, each on its line.
fn trust_lines(t: &TrustSignals) -> Vec<String> {
    let mut fields: Vec<(&str, String)> = Vec::new();
    let k = &t.signed_by;
    let mut key = match (k.added_at, k.age_days_at_publish) {
        (Some(added), Some(0)) => format!(
            "{}, added {} (less than a day before this version)",
            k.key_id,
            output::format_time_ms(added)
        ),
        (Some(added), Some(days)) => format!(
            "{}, added {} ({days} day{} before this version)",
            k.key_id,
            output::format_time_ms(added),
            if days == 1 { "" } else { "s" }
        ),
        _ => format!("{} (no longer registered)", k.key_id),
    };
    if let Some(r) = k.revoked_at {
        key.push_str(&format!(", revoked {}", output::format_time_ms(r)));
    }
    fields.push(("signed by", key));
    let log = match (t.log.verified, t.log.index, t.log.checkpoint_size) {
        (true, Some(i), Some(size)) => {
            format!("entry {i}, proven by the hub under its checkpoint of {size} entries")
        }
        _ => format!(
            "not proven{}",
            t.log
                .problem
                .as_deref()
                .map(|p| format!(": {}", output::truncate(p, 200)))
                .unwrap_or_default()
        ),
    };
    fields.push(("log", log));
    fields.push((
        "deprecation",
        match &t.deprecated {
            Some(d) => match &d.successor {
                Some(s) => format!("{} (use {s})", output::truncate(&d.message, 200)),
                None => output::truncate(&d.message, 200),
            },
            None => "none".into(),
        },
    ));
    fields.push(("last publish", output::format_time_ms(t.last_published_at)));
    if let Some(first) = t.downloads_per_week.first() {
        let counts: Vec<String> = t
            .downloads_per_week
            .iter()
            .map(|w| w.downloads.to_string())
            .collect();
        fields.push((
            "downloads/week",
            format!(
                "{} (weeks from Monday {}, oldest first)",
                counts.join(" "),
                first.week
            ),
        ));
    }
    let width = fields.iter().map(|(l, _)| l.len()).max().unwrap_or(0) + 2;
    let mut lines = vec!["trust signals:".to_string()];
    lines.extend(
        fields
            .into_iter()
            .map(|(label, value)| format!("  {label:<width$}{value}")),
    );
    lines
}
