//! An agent version's tag in the upstream registry (`upstream_registry`): made again when a
//! client pushes the same manifest again, and by a repair pass.
//!
//! A publish mirrors its manifest to the registry by digest before its transaction and tags it
//! with the version after the commit ([`crate::publish`]). That tag can be lost: the replica
//! dies between the commit and the tag, or the registry does not answer the tag request (the
//! publish stands; only the tag is at stake). Two things make it again:
//!
//! - **A push is idempotent by digest** ([`publish_pushed`]). An OCI client that lost the
//!   answer to its push (the replica died under it) pushes the same manifest again. A manifest
//!   whose digest is the one the version was published with is answered as the publish was —
//!   201, the same digest — and tagged in the registry again; nothing new is recorded (no
//!   version, log entry or outbox row). A *different* manifest for an existing version is
//!   refused as before (`version_exists`): versions are immutable. The push goes through every
//!   check of a publish first (the token's right, the signature by an active key, the
//!   layers), so only what could publish the version can repeat it.
//! - **A repair pass** ([`repair_pass`], run by [`start_repairs`] every `mirror_repair_secs`)
//!   follows the outbox's publishes in sequence (commit) order, asks the registry for each
//!   version's tag (a `HEAD`) once the version is 10 s old (the publish's own tag request has
//!   had its chance; `mirror_repair_secs` when shorter), and mirrors the manifest under its tag again (its blobs
//!   mounted, then the manifest) when the tag is missing or names another manifest. Its cursor
//!   is kept in memory: a process's first pass covers every version, later ones what was
//!   published since. One replica among those sharing a database runs the passes: the holder
//!   of the lease [`MIRROR_REPAIR_LEASE`] (a PostgreSQL session advisory lock, see
//!   [`crate::store::db::Lease`]); the others ask for it every 2 s, so when the holder dies
//!   another takes it within seconds and runs its first pass, from the first version. A
//!   process's later passes do not look again at versions checked before: a tag lost from
//!   the registry after its check waits for the next holder's (or restart's) first pass, or
//!   the client's retry. Each repair is logged and counted
//!   (`ofc_hub_mirror_tags_repaired_total`).

use std::time::Duration;

use index_schema::name::{AgentName, Digest};

use crate::auth::Principal;
use crate::error::CoreError;
use crate::hub::Hub;
use crate::oci::{mirror, parse_manifest};
use crate::publish::{PublishError, Published, Pushed, Request, counted, publish_checked};
use crate::store::db::Lease;
use crate::store::now_ms;

/// The repair pass's lease (a PostgreSQL advisory lock key: `ofc-tags` in ASCII).
pub const MIRROR_REPAIR_LEASE: i64 = 0x6f66_632d_7461_6773;

/// Versions read per query of a pass.
const PAGE: i64 = 200;

/// How old a version must be before a pass checks its tag: its publish's own tag request
/// has had its chance (or `mirror_repair_secs`, when shorter).
const SETTLE: Duration = Duration::from_secs(10);

/// How often a replica that is not the repairer asks for the lease (and the holder checks it
/// still holds it).
const LEASE_ASK: Duration = Duration::from_secs(2);

/// What a push of an agent artifact did.
#[derive(Debug, Clone)]
pub enum PushOutcome {
    /// A new version, committed.
    Published(Box<Published>),
    /// The version existed with exactly this manifest: nothing recorded, its tag in the
    /// upstream registry made again.
    Again {
        /// The agent.
        name: AgentName,
        /// The version.
        version: String,
        /// The manifest's digest (the pushed one, the recorded one).
        oci_digest: Digest,
    },
}

/// Publishes an agent artifact pushed through `/v2/` (`req.pushed`), as [`crate::publish::publish`]
/// does, except that pushing again the manifest an existing version was published with is
/// that publish again ([`PushOutcome::Again`]; see the module documentation).
pub async fn publish_pushed(
    hub: &Hub,
    principal: &Principal,
    req: Request<'_>,
) -> Result<PushOutcome, PublishError> {
    let pushed = req.pushed;
    let r = publish_checked(hub, principal, req).await;
    let r = match (r, pushed) {
        (Err(PublishError::VersionExists { name, version }), Some(p)) => {
            match again(hub, &name, &version, p).await {
                Ok(true) => {
                    return Ok(PushOutcome::Again {
                        name,
                        version,
                        oci_digest: p.digest,
                    });
                }
                Ok(false) => Err(PublishError::VersionExists { name, version }),
                Err(e) => Err(e),
            }
        }
        (r, _) => r,
    };
    counted(hub, &r);
    r.map(|p| PushOutcome::Published(Box::new(p)))
}

/// When version `version` of `name` has the manifest `p` as its tag: mirrors it under the tag
/// again and says so; `false` when its manifest is another.
async fn again(
    hub: &Hub,
    name: &AgentName,
    version: &str,
    p: Pushed<'_>,
) -> Result<bool, PublishError> {
    let repository = name.to_string();
    let recorded = hub.store.manifest_by_tag(&repository, version).await?;
    if recorded.is_none_or(|m| m.digest != p.digest.to_string()) {
        return Ok(false);
    }
    // Blobs mounted again too: cheap (the registry has them), and whole whatever it lost.
    mirror(hub, &repository, version, p.parsed, p.bytes).await?;
    tracing::info!(agent.name = %repository, agent.version = %version, digest = %p.digest,
        "the manifest of a published version pushed again: answered as its publish, its tag \
         in the upstream registry made again");
    Ok(true)
}

/// Where a repair pass is and what it did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RepairPass {
    /// The outbox sequence up to which every version was checked (the next pass starts after
    /// it; 0: from the first version).
    pub cursor: i64,
    /// Versions whose tag was asked for.
    pub checked: u64,
    /// Tags made again.
    pub repaired: u64,
    /// Whether it stopped at a version too recent to check (the next pass should come once
    /// that one is old enough).
    pub recent: bool,
}

impl RepairPass {
    /// A pass from after outbox sequence `cursor`.
    pub fn after(cursor: i64) -> RepairPass {
        RepairPass {
            cursor,
            ..RepairPass::default()
        }
    }
}

/// One repair pass (see the module documentation): every version published after
/// `pass.cursor` and at least `settle` old has its tag in the upstream registry checked, and
/// made again when missing or naming another manifest. `pass` records the progress, also
/// when an error (the registry or the database not answering) ends the pass early. Nothing to
/// do without an upstream registry.
pub async fn repair_pass(
    hub: &Hub,
    pass: &mut RepairPass,
    settle: Duration,
) -> Result<(), CoreError> {
    if !hub.blobs.mirrors() {
        return Ok(());
    }
    let settle_ms = i64::try_from(settle.as_millis()).unwrap_or(i64::MAX);
    loop {
        let page = hub.store.published_tags(pass.cursor, PAGE).await?;
        let full = page.len() as i64 == PAGE;
        for t in page {
            if t.created_at > now_ms().saturating_sub(settle_ms) {
                // Too recent: its publish may be tagging it right now. The next pass.
                pass.recent = true;
                return Ok(());
            }
            pass.checked += 1;
            let found = hub
                .blobs
                .mirrored_tag(t.repository.clone(), t.tag.clone())
                .await?;
            if found.is_none_or(|d| d.to_string() != t.digest) {
                let Some(bytes) = hub.store.manifest_content(&t.repository, &t.digest).await?
                else {
                    // Deleted since the page was read.
                    pass.cursor = t.seq;
                    continue;
                };
                let parsed = match parse_manifest(Some(&t.media_type), &bytes) {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::warn!(agent.name = %t.repository, agent.version = %t.tag,
                            error = %e, "the recorded manifest does not parse; not mirrored");
                        pass.cursor = t.seq;
                        continue;
                    }
                };
                mirror(hub, &t.repository, &t.tag, &parsed, &bytes).await?;
                hub.counters.mirror_tag_repaired();
                pass.repaired += 1;
                tracing::info!(agent.name = %t.repository, agent.version = %t.tag,
                    digest = %t.digest, found = ?found.map(|d| d.to_string()),
                    "made the version's tag in the upstream registry again");
            }
            pass.cursor = t.seq;
        }
        if !full {
            return Ok(());
        }
    }
}

/// Runs [`repair_pass`] every `mirror_repair_secs` on the replica holding
/// [`MIRROR_REPAIR_LEASE`], from the first version at the process's first pass. Nothing
/// without an upstream registry.
pub fn start_repairs(hub: Hub) -> Option<tokio::task::JoinHandle<()>> {
    if !hub.blobs.mirrors() {
        return None;
    }
    let every = Duration::from_secs(hub.config.mirror_repair_secs.max(1));
    Some(tokio::spawn(async move { run(hub, every).await }))
}

async fn run(hub: Hub, every: Duration) {
    let mut lease: Option<Lease> = None;
    let mut cursor = 0;
    let mut next = tokio::time::Instant::now();
    let settle = SETTLE.min(every);
    loop {
        let held = match &mut lease {
            Some(l) => l.still_held().await,
            None => false,
        };
        if !held {
            if lease.take().is_some() {
                tracing::warn!("lost the mirror repair lease (the database connection broke)");
            }
            match hub.store.db().try_lease(MIRROR_REPAIR_LEASE).await {
                Ok(Some(l)) => {
                    tracing::info!(
                        "this replica now checks the agent versions' tags in the upstream registry"
                    );
                    lease = Some(l);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "cannot ask for the mirror repair lease"),
            }
        }
        if lease.is_some() && tokio::time::Instant::now() >= next {
            let mut pass = RepairPass::after(cursor);
            let r = repair_pass(&hub, &mut pass, settle).await;
            cursor = pass.cursor;
            next = tokio::time::Instant::now() + if pass.recent { settle } else { every };
            if pass.repaired > 0 {
                tracing::info!(
                    checked = pass.checked,
                    repaired = pass.repaired,
                    "repair pass: versions' tags made again in the upstream registry"
                );
            }
            if let Err(e) = r {
                tracing::warn!(error = %e.message, checked = pass.checked,
                    "repair pass of the upstream registry's tags ended early; the next goes on");
            }
        }
        // The lease is asked for (or checked) more often than passes run, so a replica takes
        // over within seconds of the holder's death.
        tokio::time::sleep(
            LEASE_ASK.min(
                next.saturating_duration_since(tokio::time::Instant::now())
                    .max(Duration::from_millis(100)),
            ),
        )
        .await;
    }
}
