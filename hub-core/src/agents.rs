//! Agents and versions as the read API and the pages show them, and the changes to a version
//! after its publish: yank, deprecate, delete; the outbox and the audit log.
//!
//! **Takedown.** Deleting an agent (admin only) also deletes its repository's OCI tags and
//! manifests in the same transaction; deleting a version deletes its tag, the manifest it named
//! (unless another tag names it) and the manifests referring to it. Nothing of it answers under
//! `/v2/` afterwards, its blobs leave the repository at once (a later publish of that name must
//! upload them again), and the next `ofc-hub gc` frees them. A deleted version is a tombstone
//! (`deleted_versions`, same transaction): publishing that name and version again is 409
//! `version_deleted`, so a version number, once seen, never names other bytes. The transparency
//! log gets a `delete` entry per version; the publish entry stays (the log is append-only).
//!
//! **Downloads** count bundle downloads once per client, version and UTC day (`download_seen`,
//! migration 0015): the client is a hash of the connecting address (IPv6 by its /64), never the
//! address itself, and rows older than yesterday are deleted as downloads come in, so a script
//! fetching a bundle in a loop does not pump the numbers ranking uses. Behind a reverse proxy every
//! download comes from the proxy (`X-Forwarded-For` is not trusted): counts undercount there.
//!
//! **A2A cards**: `GET …/agent-card.json` serves the card of a `remote` agent's latest version,
//! made from the signed manifest (`index_schema::a2a_card::from_manifest`: a card published as
//! A2A comes back as it was); agents of other sources have none (404 `no_agent_card`).

use std::collections::HashMap;
use std::net::IpAddr;

use index_schema::envelope::Envelope;
use index_schema::hub_api::{
    AgentInfo, AgentList, AgentSummary, BundleInfo, EnvelopeJson, SigningKey, TrustedPublishing,
    VersionInfo, VersionSummary,
};
use index_schema::manifest::{Manifest, parse_exact_version};
use index_schema::name::{AgentName, Digest};
use sha2::Digest as _;

use crate::accounts::actor;
use crate::auth::{Principal, Scope};
use crate::error::{CoreError, CoreResult, ErrorCode};
use crate::hub::Hub;
use crate::namespaces;
use crate::store::{AgentRow, AuditRow, KeyRow, OutboxRow, VersionRow};

/// `publisher/agent` from the path's two parts.
pub fn parse_name(publisher: &str, agent: &str) -> CoreResult<AgentName> {
    AgentName::new(publisher, agent)
        .map_err(|e| CoreError::invalid(ErrorCode::InvalidName, e.to_string()))
}

/// An exact version, as an OCI tag can carry it (no build metadata).
pub fn parse_version(v: &str) -> CoreResult<String> {
    let parsed = parse_exact_version(v)
        .map_err(|m| CoreError::invalid(ErrorCode::InvalidVersion, format!("`{v}`: {m}")))?;
    if !parsed.build.is_empty() {
        return Err(CoreError::invalid(
            ErrorCode::InvalidVersion,
            format!("`{v}`: build metadata (`+…`) is not allowed; versions are OCI tags"),
        ));
    }
    Ok(parsed.to_string())
}

/// An agent by name, or 404 `agent_not_found`.
pub async fn agent(hub: &Hub, name: &AgentName) -> CoreResult<AgentRow> {
    hub.store
        .agent(&name.to_string())
        .await?
        .ok_or_else(|| CoreError::not_found(ErrorCode::AgentNotFound, format!("no agent `{name}`")))
}

/// A version of `agent`, or 404 `version_not_found`.
pub async fn version(hub: &Hub, agent: &AgentRow, version: &str) -> CoreResult<VersionRow> {
    let v = parse_version(version)?;
    match hub.store.version(agent.id, &v).await? {
        Some(row) => Ok(row),
        None => Err(gone_or_missing(hub, &agent.name, &v).await),
    }
}

/// The error for a version that is not there: 410 `version_removed` naming the reason class
/// when it was removed (or deleted by an operator), else 404 `version_not_found`.
pub async fn gone_or_missing(hub: &Hub, agent: &str, version: &str) -> CoreError {
    match removal(hub, agent, version).await {
        Ok(Some(removed)) => CoreError::new(
            crate::error::Kind::Gone,
            ErrorCode::VersionRemoved,
            format!(
                "`{agent}` {version} was removed (reason class `{}`); its number will never be \
                 used again — `ofc audit {agent}` shows its publish and removal in the \
                 transparency log",
                removed.reason
            ),
        )
        .with_removed(removed),
        Ok(None) => CoreError::not_found(
            ErrorCode::VersionNotFound,
            format!("`{agent}` has no version {version}"),
        ),
        Err(e) => e,
    }
}

/// How `agent@version` was removed, when it has a tombstone: the fields of the JSON API's 410
/// and of the OCI registry's 404 `detail` (see [`crate::lifecycle`] for why 404 there).
pub async fn removal(
    hub: &Hub,
    agent: &str,
    version: &str,
) -> CoreResult<Option<index_schema::hub_api::Removed>> {
    Ok(hub
        .store
        .tombstone(agent, version)
        .await?
        .map(|t| index_schema::hub_api::Removed {
            reason: t
                .reason
                .unwrap_or_else(|| index_schema::hub_api::Removed::DELETED.to_string()),
            removed_at: t.removed_at,
            manifest_digest: t.manifest_digest,
        }))
}

/// A version's URL whose agent is gone (every version deleted, or never there): 410 when the
/// version has a tombstone, else the agent's 404.
pub async fn agent_of_version(
    hub: &Hub,
    publisher: &str,
    agent_name: &str,
    version_text: &str,
) -> CoreResult<AgentRow> {
    let name = parse_name(publisher, agent_name)?;
    match agent(hub, &name).await {
        Err(e) if e.kind == crate::error::Kind::NotFound => match parse_version(version_text) {
            Ok(v) => match hub.store.tombstone(&name.to_string(), &v).await? {
                Some(_) => Err(gone_or_missing(hub, &name.to_string(), &v).await),
                None => Err(e),
            },
            Err(_) => Err(e),
        },
        other => other,
    }
}

fn key_map(keys: Vec<KeyRow>) -> HashMap<String, KeyRow> {
    keys.into_iter().map(|k| (k.key_id.clone(), k)).collect()
}

/// An agent: latest version and every version with its yanked/deprecated state.
pub async fn info(hub: &Hub, publisher: &str, agent_name: &str) -> CoreResult<AgentInfo> {
    let name = parse_name(publisher, agent_name)?;
    let a = agent(hub, &name).await?;
    let keys = key_map(hub.store.keys(a.namespace_id).await?);
    let rows = hub.store.versions(a.id).await?;
    // The trust signals of the version `latest` names, else of the newest.
    let shown = match &a.latest_version {
        Some(l) => rows.iter().find(|v| &v.version == l),
        None => rows.iter().max_by_key(|v| (v.created_at, v.id)),
    };
    let trust = match shown {
        Some(v) => {
            let log = crate::trust::log_proof(hub, &a, v, None).await?;
            let key = keys.get(&v.key_id);
            Some(crate::trust::signals(hub, &a, v, key, log.as_ref()).await?)
        }
        None => None,
    };
    let versions = rows
        .into_iter()
        .map(|v| VersionSummary {
            key_revoked_at: keys.get(&v.key_id).and_then(|k| k.revoked_at),
            version: v.version,
            manifest_digest: v.manifest_digest,
            published_at: v.created_at,
            yanked: v.yanked_at.is_some(),
            yank_reason: v.yank_reason,
            deprecated: v.deprecated_message,
            deprecated_successor: v.deprecated_successor,
            key_id: v.key_id,
            downloads: v.downloads,
        })
        .collect();
    Ok(AgentInfo {
        namespace: name.publisher().to_string(),
        name: a.name,
        handle: a.handle.map(|h| format!("@{h}")),
        latest: a.latest_version,
        versions,
        downloads: a.downloads,
        created_at: a.created_at,
        updated_at: a.updated_at,
        trust,
        verified_domain: hub.store.verified_domain(a.namespace_id).await?,
    })
}

/// The signed manifest of a stored version.
pub fn manifest_of(v: &VersionRow) -> CoreResult<Manifest> {
    let env = Envelope::from_json(&v.envelope).map_err(CoreError::internal)?;
    let text = std::str::from_utf8(&env.payload).map_err(CoreError::internal)?;
    Manifest::from_json(text).map_err(CoreError::internal)
}

/// The A2A agent card (v0.3) of a `remote` agent, built from its latest version's signed
/// manifest; other sources have none (404 `no_agent_card`).
pub async fn agent_card(
    hub: &Hub,
    publisher: &str,
    agent_name: &str,
) -> CoreResult<serde_json::Map<String, serde_json::Value>> {
    let name = parse_name(publisher, agent_name)?;
    let a = agent(hub, &name).await?;
    let Some(latest) = a.latest_version.clone() else {
        return Err(CoreError::not_found(
            ErrorCode::VersionNotFound,
            format!("`{name}` has no version that is not yanked"),
        ));
    };
    let v = version(hub, &a, &latest).await?;
    let manifest = manifest_of(&v)?;
    index_schema::a2a_card::from_manifest(&manifest).ok_or_else(|| {
        CoreError::not_found(
            ErrorCode::NoAgentCard,
            format!(
                "`{name}` is a `{}` agent, not a remote one, so it has no A2A card",
                manifest.source.kind()
            ),
        )
    })
}

/// One version: manifest, envelope, digests, key state, and its transparency-log entry proven
/// under the current checkpoint (with `log_size`, also the consistency proof from that size).
pub async fn version_info(
    hub: &Hub,
    publisher: &str,
    agent_name: &str,
    version_text: &str,
    log_size: Option<u64>,
) -> CoreResult<VersionInfo> {
    let a = agent_of_version(hub, publisher, agent_name, version_text).await?;
    let v = version(hub, &a, version_text).await?;
    let log = crate::trust::log_proof(hub, &a, &v, log_size).await?;
    let keys = key_map(hub.store.keys(a.namespace_id).await?);
    let trust = crate::trust::signals(hub, &a, &v, keys.get(&v.key_id), log.as_ref()).await?;
    let env = Envelope::from_json(&v.envelope).map_err(CoreError::internal)?;
    let manifest: serde_json::Value =
        serde_json::from_slice(&env.payload).map_err(CoreError::internal)?;
    let envelope = EnvelopeJson::from_text(v.envelope).map_err(CoreError::internal)?;
    let k = keys.get(&v.key_id);
    Ok(VersionInfo {
        name: a.name,
        version: v.version,
        manifest,
        envelope,
        manifest_digest: v.manifest_digest,
        source_kind: v.source_kind,
        bundle: v.bundle_digest.map(|digest| BundleInfo {
            digest,
            size: v.bundle_size.unwrap_or(0),
        }),
        key: SigningKey {
            key_id: v.key_id.clone(),
            public_key: k.map(|k| k.public_key.clone()),
            revoked_at: k.and_then(|k| k.revoked_at),
        },
        published_by: v.published_by,
        published_at: v.created_at,
        yanked: v.yanked_at.is_some(),
        yank_reason: v.yank_reason,
        deprecated: v.deprecated_message,
        deprecated_successor: v.deprecated_successor,
        downloads: v.downloads,
        log,
        trust: Some(trust),
        trusted_publishing: v
            .trusted_issuer
            .zip(v.trusted_subject)
            .map(|(issuer, subject)| TrustedPublishing { issuer, subject }),
    })
}

/// Who downloads, for counting a download once per client and day: a hash of the address
/// (IPv6 by its /64, which one host can fill), so addresses are not stored.
pub fn download_client(ip: Option<IpAddr>) -> String {
    let key = match ip {
        Some(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        Some(IpAddr::V6(v6)) => v6
            .to_ipv4_mapped()
            .map(|v4| v4.to_string())
            .unwrap_or_default(),
        Some(ip) => ip.to_string(),
        None => "unknown".to_owned(),
    };
    hex::encode(&sha2::Sha256::digest(format!("ofc-download\0{key}").as_bytes())[..16])
}

/// The bundle of a version, opened for reading (its file, size and digest), counted as a
/// download by the client at `ip` (reading metadata is not pulling the agent).
pub async fn bundle(
    hub: &Hub,
    publisher: &str,
    agent_name: &str,
    version_text: &str,
    ip: Option<IpAddr>,
) -> CoreResult<(std::fs::File, u64, String)> {
    let a = agent_of_version(hub, publisher, agent_name, version_text).await?;
    let v = version(hub, &a, version_text).await?;
    let Some(d) = v.bundle_digest.as_deref() else {
        return Err(CoreError::not_found(
            ErrorCode::NoBundle,
            format!(
                "`{}` {} has a `{}` source, not a bundle",
                a.name, v.version, v.source_kind
            ),
        ));
    };
    let digest = Digest::parse(d).map_err(CoreError::internal)?;
    let (file, size) = hub
        .blobs
        .open(digest)
        .await?
        .ok_or_else(|| CoreError::internal(format!("blob {d} missing from the blob store")))?;
    hub.store
        .count_download(a.id, v.id, &download_client(ip))
        .await?;
    Ok((file, size, d.to_string()))
}

/// The most entries of a page of agents, outbox entries or audit entries (100 by default).
pub fn clamp_limit(l: Option<i64>) -> CoreResult<i64> {
    match l {
        None => Ok(100),
        Some(l) if (1..=1000).contains(&l) => Ok(l),
        Some(_) => Err(CoreError::invalid(
            ErrorCode::InvalidLimit,
            "limit is 1 to 1000",
        )),
    }
}

/// Agents ordered by last change, after `cursor` (a previous page's) or changed since
/// `updated_since`.
pub async fn list(
    hub: &Hub,
    cursor: Option<&str>,
    updated_since: Option<i64>,
    limit: Option<i64>,
) -> CoreResult<AgentList> {
    let limit = clamp_limit(limit)?;
    let (after_t, after_id) = match (cursor, updated_since) {
        (Some(c), _) => {
            let bad = || {
                CoreError::invalid(
                    ErrorCode::InvalidCursor,
                    "the cursor is not one this hub gave",
                )
            };
            let (t, id) = c.split_once('.').ok_or_else(bad)?;
            (
                t.parse::<i64>().map_err(|_| bad())?,
                id.parse::<i64>().map_err(|_| bad())?,
            )
        }
        (None, Some(since)) => (since, 0),
        (None, None) => (i64::MIN, 0),
    };
    let rows = hub.store.list_agents(after_t, after_id, limit).await?;
    let next_cursor = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| format!("{}.{}", r.updated_at, r.id)))
        .flatten();
    Ok(AgentList {
        agents: rows
            .into_iter()
            .map(|a| AgentSummary {
                name: a.name,
                latest: a.latest_version,
                updated_at: a.updated_at,
                downloads: a.downloads,
            })
            .collect(),
        next_cursor,
    })
}

/// The agent and exact version a change by `p` (yank, deprecate) acts on, once `p` may.
pub(crate) async fn changing(
    hub: &Hub,
    p: &Principal,
    publisher: &str,
    agent_name: &str,
    version_text: &str,
) -> CoreResult<(AgentRow, String)> {
    let name = parse_name(publisher, agent_name)?;
    let ns = namespaces::find(hub, name.publisher()).await?;
    namespaces::authorize(hub, p, Scope::Yank, &ns).await?;
    let a = agent(hub, &name).await?;
    let v = version(hub, &a, version_text).await?;
    Ok((a, v.version))
}

/// A reason or message shown on terminals by clients: at most 1000 characters on one line,
/// no control characters, no bidirectional overrides.
pub(crate) fn check_text(field: &str, s: &str) -> CoreResult<()> {
    if s.chars().count() > 1000 {
        return Err(CoreError::invalid(
            ErrorCode::InvalidMessage,
            format!("{field} is at most 1000 characters"),
        ));
    }
    // Shown on terminals by clients: one line, no escape sequences.
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Err(CoreError::invalid(
            ErrorCode::InvalidMessage,
            format!(
                "{field} must be one line of text without control characters (found U+{:04X})",
                c as u32
            ),
        ));
    }
    // Nor text that reads otherwise than it is (as the manifest's own fields).
    if let Some(c) = s
        .chars()
        .find(|c| index_schema::manifest::is_bidi_control(*c))
    {
        return Err(CoreError::invalid(
            ErrorCode::InvalidMessage,
            format!(
                "{field} contains a bidirectional override U+{:04X}, which can disguise text",
                c as u32
            ),
        ));
    }
    Ok(())
}

/// Yanks a version (`reason`: `Some`, possibly empty) or unyanks it (`None`): selectors skip a
/// yanked version; it stays downloadable by exact version.
pub async fn set_yanked(
    hub: &Hub,
    p: &Principal,
    publisher: &str,
    agent_name: &str,
    version_text: &str,
    reason: Option<&str>,
) -> CoreResult<()> {
    if let Some(r) = reason {
        check_text("reason", r)?;
    }
    let (a, v) = changing(hub, p, publisher, agent_name, version_text).await?;
    hub.store.set_yanked(&actor(p), &a, &v, reason).await?;
    Ok(())
}

/// Deletes an agent and all its versions (administrators only); each version stays a
/// tombstone.
pub async fn delete_agent(
    hub: &Hub,
    p: &Principal,
    publisher: &str,
    agent_name: &str,
) -> CoreResult<()> {
    p.authorize_admin()?;
    let name = parse_name(publisher, agent_name)?;
    if hub.store.delete_agent(&actor(p), &name.to_string()).await? {
        Ok(())
    } else {
        Err(CoreError::not_found(
            ErrorCode::AgentNotFound,
            format!("no agent `{name}`"),
        ))
    }
}

/// Deletes one version (administrators only); it stays a tombstone.
pub async fn delete_version(
    hub: &Hub,
    p: &Principal,
    publisher: &str,
    agent_name: &str,
    version_text: &str,
) -> CoreResult<()> {
    p.authorize_admin()?;
    let name = parse_name(publisher, agent_name)?;
    let a = agent(hub, &name).await?;
    let v = version(hub, &a, version_text).await?;
    hub.store.delete_version(&actor(p), &a, &v.version).await?;
    Ok(())
}

/// The outbox that search indexes and mirrors follow, after `after`.
pub async fn outbox(
    hub: &Hub,
    after: Option<i64>,
    limit: Option<i64>,
) -> CoreResult<Vec<OutboxRow>> {
    let limit = clamp_limit(limit)?;
    Ok(hub.store.outbox_after(after.unwrap_or(0), limit).await?)
}

/// The audit log (administrators only), newest first, of targets starting with `target`.
pub async fn audit(
    hub: &Hub,
    p: &Principal,
    target: Option<&str>,
    limit: Option<i64>,
) -> CoreResult<Vec<AuditRow>> {
    p.authorize_admin()?;
    let limit = clamp_limit(limit)?;
    Ok(hub.store.audit_log(target, limit).await?)
}
