//! The transparency-log check of every version fetched from a hub: the hub's answer must prove
//! that the manifest it served (name, version, digest, signing key) is an entry of its log,
//! under a checkpoint signed by the hub's log key (pinned on first use, per hub, in
//! `trust.toml`), and that checkpoint must extend the last one this client verified for the hub
//! (an RFC 6962 consistency proof). So a hub cannot show this client a version it did not log
//! for everyone, nor rewrite or truncate its history, without the pull being refused. Versions
//! served from the cache were checked when they were fetched; nothing here needs the network
//! but the version answer (and, on first use, `GET /api/v1/log` for the key).
//!
//! When the user requires witnesses for the hub (`ofc trust witness`), the checkpoint must also
//! carry valid cosignatures (C2SP tlog-cosignature) of enough of them: witnesses cosign only
//! checkpoints that extend what they saw, so a view of the log shown to this client alone is
//! refused on its first use, not only at the next pull.

use anyhow::{Result, anyhow, bail};
use index_schema::envelope::KeyId;
use index_schema::hub_api::VersionInfo;
use index_schema::name::{AgentName, Digest};
use index_schema::tlog::{
    Checkpoint, Entry, Hash, LogVerifier, WitnessVerifier, check_consistency, check_inclusion,
    hash_b64, parse_hash_b64,
};
use semver::Version;

use crate::config::Paths;
use crate::hub::Hub;
use crate::hub_url::HubUrl;
use crate::output::UserError;
use crate::trust::TrustStore;

/// What this client verified of a hub's log before this pull.
#[derive(Debug, Clone)]
pub(crate) struct Before {
    key: String,
    verifier: LogVerifier,
    checkpoint: Checkpoint,
}

impl Before {
    /// The stored checkpoint's size, for `?log_size=`.
    pub(crate) fn size(&self) -> u64 {
        self.checkpoint.size
    }

    /// What was just verified (`checked`, whose checkpoint is `cp`), as the start of the next
    /// check (the next page of an answer must extend it).
    pub(crate) fn verified(checked: &Checked, cp: Checkpoint) -> Result<Self> {
        let verifier = LogVerifier::parse(&checked.key)
            .map_err(|e| anyhow!("the log key {} is invalid: {e}", checked.key))?;
        Ok(Self {
            key: checked.key.clone(),
            verifier,
            checkpoint: cp,
        })
    }
}

/// A checked version's checkpoint, to record once the pull succeeded.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    /// The log key (pinned now when it was not).
    pub key: String,
    /// The checkpoint note.
    pub checkpoint: String,
    /// Its size.
    pub size: u64,
}

/// The hub's pinned log key and last verified checkpoint, if any.
pub(crate) fn before(paths: &Paths, hub: &HubUrl) -> Result<Option<Before>> {
    let Some(l) = TrustStore::load(paths)?.log(hub) else {
        return Ok(None);
    };
    let verifier = LogVerifier::parse(&l.key)
        .map_err(|e| anyhow!("trust.toml: the log key pinned for {hub} is invalid: {e}"))?;
    let checkpoint = verifier
        .verify_checkpoint(&l.checkpoint)
        .map_err(|e| anyhow!("trust.toml: the checkpoint stored for {hub} does not verify: {e}"))?;
    Ok(Some(Before {
        key: l.key,
        verifier,
        checkpoint,
    }))
}

/// The witnesses whose cosignatures a hub's checkpoints must carry.
#[derive(Debug, Clone, Default)]
pub(crate) struct Witnesses {
    keys: Vec<WitnessVerifier>,
    required: usize,
    max_age_secs: Option<u64>,
}

/// How far ahead of this machine's clock a cosignature may be dated (clock skew) when
/// freshness is required.
const MAX_FUTURE_SECS: u64 = 30;

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The witness policy the user set for `hub` in `trust.toml`.
pub(crate) fn witnesses(paths: &Paths, hub: &HubUrl) -> Result<Witnesses> {
    let w = TrustStore::load(paths)?.witnesses(hub);
    let keys = w
        .keys
        .iter()
        .map(|k| {
            WitnessVerifier::parse(k).map_err(|e| {
                anyhow!(
                    UserError::new(format!(
                        "trust.toml: the witness key `{}` of {hub} is invalid: {e}",
                        index_schema::tlog::shown_key(k)
                    ))
                    .hint("`ofc trust witness remove KEY` removes it")
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if w.required > keys.len() {
        bail!(
            UserError::new(format!(
                "trust.toml: {hub} requires {} witness cosignatures, but only {} witness keys are set",
                w.required,
                keys.len()
            ))
            .hint("`ofc trust witness add KEY` adds one; `ofc trust witness require N` changes the number")
        );
    }
    Ok(Witnesses {
        keys,
        required: w.required,
        max_age_secs: w.max_age_secs,
    })
}

fn refuse(what: String) -> anyhow::Error {
    anyhow!(
        UserError::new(format!("{what}; refusing it"))
            .hint("nothing was installed; the hub (or a proxy) is not showing the log every client sees — report it to the hub's operator")
    )
}

fn hashes(list: &[String], what: &str) -> Result<Vec<Hash>> {
    list.iter()
        .map(|h| parse_hash_b64(h))
        .collect::<Result<_, _>>()
        .map_err(|e| refuse(format!("the hub sent a malformed {what}: {e}")))
}

/// Checks a checkpoint the hub sent: signed by the pinned log key (on first use, the key the
/// hub announces at `GET /api/v1/log`, pinned when the caller records the result) and, when
/// this client verified a checkpoint of the hub before, an extension of it (`consistency`: the
/// proof from that size). `what` names what came with it, for the errors.
pub(crate) async fn check_head(
    hub: &Hub,
    before: Option<&Before>,
    witnesses: &Witnesses,
    note: &str,
    consistency: Option<&[String]>,
    what: &str,
) -> Result<(Checked, Checkpoint)> {
    let (verifier, key) = match before {
        Some(b) => (b.verifier.clone(), b.key.clone()),
        None => {
            // First use: the hub names its log key, which is pinned with this pull.
            let info = hub.log_info(None).await?;
            let v = LogVerifier::parse(&info.key)
                .map_err(|e| refuse(format!("the hub's log key `{}` is invalid: {e}", info.key)))?;
            (v, info.key)
        }
    };
    let (cp, cosigned) = verifier.verify_cosigned(note, &witnesses.keys).map_err(|e| {
        anyhow!(
            UserError::new(format!(
                "the checkpoint sent with {what} does not verify with the hub's {} log key \
                 {key}: {e}; refusing it",
                if before.is_some() { "pinned" } else { "announced" }
            ))
            .hint("nothing was installed; the hub (or a proxy) is not showing the log every client sees — report it to the hub's operator")
            .hint(format!(
                "only if the hub's operator announced a new log (ask them): remove the `log` table of {} from trust.toml to pin its new key",
                hub.url
            ))
        )
    })?;
    let now = now_secs();
    let fresh = cosigned
        .iter()
        .filter(|c| match witnesses.max_age_secs {
            Some(max) => {
                c.timestamp <= now + MAX_FUTURE_SECS && c.timestamp.saturating_add(max) >= now
            }
            None => true,
        })
        .count();
    if fresh < witnesses.required {
        let names: Vec<&str> = witnesses.keys.iter().map(WitnessVerifier::name).collect();
        let stale = match (
            witnesses.max_age_secs,
            cosigned.iter().map(|c| c.timestamp).max(),
        ) {
            (Some(max), Some(newest)) => format!(
                " (cosignatures older than {max} s do not count; the newest was made {} s ago)",
                now.saturating_sub(newest)
            ),
            _ => String::new(),
        };
        bail!(
            UserError::new(format!(
                "the checkpoint sent with {what} (log size {}) carries valid cosignatures of {fresh} \
                 of the witnesses this client trusts for {} ({}), and {} are required{stale}; \
                 refusing it",
                cp.size,
                hub.url,
                names.join(", "),
                witnesses.required
            ))
            .hint("nothing was installed; the hub's witnesses cosign new entries within seconds of a publish: retry shortly")
            .hint("if it persists, its witnesses are down or the hub is showing this client a view of its log they did not see — report it to the hub's operator; `ofc trust witness list` shows the policy")
        );
    }
    if let Some(b) = before {
        let old = &b.checkpoint;
        if cp.size < old.size {
            bail!(refuse(format!(
                "the hub's log has {} entries, but this client verified {} entries of it before: \
                 the log was truncated, or this client is shown another view",
                cp.size, old.size
            )));
        }
        let proof = match consistency {
            Some(c) => hashes(c, "consistency proof")?,
            None if old.size == cp.size || old.size == 0 => Vec::new(),
            None => bail!(refuse(format!(
                "the hub sent no consistency proof from the log of size {} this client verified",
                old.size
            ))),
        };
        check_consistency(&proof, old.size, old.root, cp.size, cp.root).map_err(|_| {
            refuse(format!(
                "the hub's log (size {}, root {}) does not extend the log this client verified \
                 before (size {}, root {}): its history was rewritten, or this client is shown \
                 another view than others",
                cp.size,
                hash_b64(&cp.root),
                old.size,
                hash_b64(&old.root)
            ))
        })?;
    }
    Ok((
        Checked {
            key,
            checkpoint: note.to_string(),
            size: cp.size,
        },
        cp,
    ))
}

/// Checks that `entry` (without its line feed) is at `index` under `cp`.
pub(crate) fn check_entry(
    cp: &Checkpoint,
    index: u64,
    entry: &str,
    proof: &[String],
) -> Result<()> {
    let proof = hashes(proof, "inclusion proof")?;
    check_inclusion(
        &proof,
        cp.size,
        cp.root,
        index,
        format!("{entry}\n").as_bytes(),
    )
    .map_err(|e| {
        refuse(format!(
            "`{entry}` is not proven to be entry {index} of the hub's log (size {}): {e}",
            cp.size
        ))
    })
}

/// Checks `vi`'s log proof for the verified manifest (`digest`, signed by `key_id`).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn check(
    hub: &Hub,
    before: Option<&Before>,
    witnesses: &Witnesses,
    name: &AgentName,
    version: &Version,
    digest: &Digest,
    key_id: &KeyId,
    vi: &VersionInfo,
) -> Result<Checked> {
    let Some(l) = &vi.log else {
        bail!(refuse(format!(
            "the hub at {} sent {name} {version} without a transparency-log proof",
            hub.url
        )));
    };
    let what = format!("{name} {version}");
    let (checked, cp) = check_head(
        hub,
        before,
        witnesses,
        &l.checkpoint,
        l.consistency.as_deref(),
        &what,
    )
    .await?;
    let want = Entry::publish(name.clone(), &version.to_string(), *digest, *key_id)
        .map_err(|e| anyhow!("{e}"))?
        .to_string();
    if l.entry != want {
        bail!(refuse(format!(
            "the manifest the hub served for {name} {version} is not in its log: the entry at \
             index {} reads `{}`, the manifest needs `{want}`",
            l.index, l.entry
        )));
    }
    check_entry(&cp, l.index, &want, &l.inclusion)?;
    Ok(checked)
}
