//! `ofc audit PUBLISHER[/AGENT]`: every version and key event the hub's transparency log holds
//! for a publisher (or one of its agents, with the publisher's key events), each proven to be in
//! the log under a checkpoint signed by the hub's log key and consistent with the last one this
//! client verified — so a publisher sees anything published in their name. The hub says which
//! entries concern the publisher; an entry it leaves out is not found by this command (a full
//! walk of the log's tiles, e.g. with aics-tlog, finds it).
//!
//! A removed version shows as its `publish` entry followed by a `remove` entry (its
//! tombstone: digest and reason class); a version that never existed has neither. A
//! deprecation's message, base64url in the entry, is shown decoded.

use anyhow::{Result, anyhow};
use index_schema::name::{AgentName, check_publisher};
use index_schema::tlog::Entry;
use serde_json::json;

use crate::config::Paths;
use crate::hub::{self, Hub};
use crate::output::{self, ExitStatus, Output, UserError};
use crate::pull::log;
use crate::trust::TrustStore;

/// Arguments of `ofc audit`.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// `publisher` or `publisher/agent`.
    #[arg(value_name = "PUBLISHER[/AGENT]")]
    pub target: String,
}

/// Runs the verb.
pub fn run(args: &AuditArgs, out: &mut Output) -> Result<ExitStatus> {
    let (publisher, agent) = match args.target.split_once('/') {
        Some(_) => {
            let name = AgentName::parse(&args.target).map_err(|e| {
                UserError::new(format!("invalid agent name `{}`: {e}", args.target))
            })?;
            (name.publisher().to_string(), Some(name.agent().to_string()))
        }
        None => (
            check_publisher(&args.target)
                .map_err(|e| UserError::new(format!("invalid publisher `{}`: {e}", args.target)))?,
            None,
        ),
    };
    let paths = Paths::from_env()?;
    let hub = Hub::from_env(&paths)?;
    let rt = hub::runtime()?;
    let mut before = log::before(&paths, &hub.url)?;
    let witnesses = log::witnesses(&paths, &hub.url)?;
    let what = format!("the log entries of `{}`", args.target);
    // Page by page (the hub answers at most 1000 entries at a time); each page's checkpoint
    // must extend the one verified before it.
    let mut after: Option<u64> = None;
    let mut rows = Vec::new();
    let (checked, cp) = loop {
        let page = rt
            .block_on(hub.log_entries(
                &publisher,
                agent.as_deref(),
                before.as_ref().map(log::Before::size),
                after,
            ))
            .map_err(|e| {
                hub::refused(e, format!("cannot read the log of {}", hub.url), |_| {
                    Vec::new()
                })
            })?;
        let (checked, cp) = rt.block_on(log::check_head(
            &hub,
            before.as_ref(),
            &witnesses,
            &page.checkpoint,
            page.consistency.as_deref(),
            &what,
        ))?;
        for e in &page.entries {
            if after.is_some_and(|a| e.index <= a) {
                return Err(UserError::new(format!(
                    "the hub answered entry {} on a page of entries after {}",
                    e.index,
                    after.unwrap_or_default()
                ))
                .into());
            }
            log::check_entry(&cp, e.index, &e.entry, &e.inclusion)?;
            let entry = Entry::parse(format!("{}\n", e.entry).as_bytes())
                .map_err(|err| anyhow!("entry {} of the hub's log: {err}", e.index))?;
            if entry.publisher() != publisher
                || agent
                    .as_deref()
                    .is_some_and(|a| entry.agent().is_some_and(|n| n.agent() != a))
            {
                return Err(UserError::new(format!(
                    "the hub answered with entry {} (`{}`), which is not about `{}`",
                    e.index, e.entry, args.target
                ))
                .into());
            }
            rows.push((e.index, e.logged_at, e.entry.clone(), shown(&entry)));
        }
        before = Some(log::Before::verified(&checked, cp.clone())?);
        match page.next_after {
            Some(n) if after.is_none_or(|a| n > a) => after = Some(n),
            Some(n) => {
                return Err(UserError::new(format!(
                    "the hub's next page starts after entry {n}, which is not past this page"
                ))
                .into());
            }
            None => break (checked, cp),
        }
    };
    TrustStore::update(&paths, |t| {
        t.saw_checkpoint(&hub.url, &checked.key, &checked.checkpoint, checked.size)
    })?;
    if out.json {
        out.json_value(&json!({
            "hub": hub.url,
            "log_size": cp.size,
            "entries": rows.iter().map(|(i, at, e, _)| json!({"index": i, "logged_at": at, "entry": e})).collect::<Vec<_>>(),
        }));
        return Ok(ExitStatus::Success);
    }
    for (index, at, _, text) in &rows {
        let when = time::OffsetDateTime::from_unix_timestamp(at / 1000)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
            .unwrap_or_default();
        out.data(&output::clean_line(&format!("{index:>8}  {when}  {text}")));
    }
    out.status(&format!(
        "{} entries of `{}` verified in the log of {} (size {})",
        rows.len(),
        args.target,
        hub.url,
        cp.size
    ));
    Ok(ExitStatus::Success)
}

/// An entry as printed: its fields after the format, a deprecation's message decoded.
fn shown(entry: &Entry) -> String {
    match entry {
        Entry::Deprecate {
            agent,
            version,
            successor,
            message,
        } => {
            let successor = successor
                .as_ref()
                .map(|s| format!(" (use {s})"))
                .unwrap_or_default();
            format!("deprecate {agent} {version}{successor}: {message}")
        }
        Entry::Remove {
            agent,
            version,
            manifest_digest,
            reason,
        } => format!("remove {agent} {version} {manifest_digest} {reason} (tombstone)"),
        Entry::TrustedPublish {
            agent,
            version,
            manifest_digest,
            issuer,
            subject,
        } => format!(
            "trusted-publish {agent} {version} {manifest_digest}: published by trusted \
             publishing from {subject} (issuer {issuer})"
        ),
        other => {
            let text = other.to_string();
            text.strip_prefix("ofc-log/v1 ")
                .unwrap_or(&text)
                .to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deprecations_show_their_message_and_removals_say_tombstone() {
        let e =
            Entry::parse(b"ofc-log/v1 deprecate acme/old 1.0.0 acme/new bW92ZWQgb24\n").unwrap();
        assert_eq!(
            shown(&e),
            "deprecate acme/old 1.0.0 (use acme/new): moved on"
        );
        let e = Entry::parse(b"ofc-log/v1 yank acme/old 1.0.0\n").unwrap();
        assert_eq!(shown(&e), "yank acme/old 1.0.0");
    }
}
