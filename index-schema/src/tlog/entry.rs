//! Log entries: one line of text per fact (see the parent module for the format).

use std::fmt;

use base64::Engine as _;

use super::{ENTRY_FORMAT, Result, TlogError};
use crate::envelope::{KeyId, PublicKey};
use crate::name::{AgentName, Digest, check_publisher};

/// One fact of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A version was published.
    Publish {
        /// `publisher/agent`.
        agent: AgentName,
        /// The version, canonical semver.
        version: String,
        /// SHA-256 of the signed manifest bytes.
        manifest_digest: Digest,
        /// The key that signed it.
        key_id: KeyId,
    },
    /// A publisher key was registered.
    KeyAdd {
        /// Namespace.
        publisher: String,
        /// The key.
        key: PublicKey,
    },
    /// A publisher key was revoked.
    KeyRevoke {
        /// Namespace.
        publisher: String,
        /// The key's id.
        key_id: KeyId,
    },
    /// A version was yanked.
    Yank {
        /// `publisher/agent`.
        agent: AgentName,
        /// The version.
        version: String,
    },
    /// A yank was undone.
    Unyank {
        /// `publisher/agent`.
        agent: AgentName,
        /// The version.
        version: String,
    },
    /// An operator deleted a version (deleting an agent logs one per version); the version can
    /// never be published again.
    Delete {
        /// `publisher/agent`.
        agent: AgentName,
        /// The version.
        version: String,
    },
    /// A version was deprecated, with a message and perhaps the agent to use instead.
    Deprecate {
        /// `publisher/agent`.
        agent: AgentName,
        /// The version.
        version: String,
        /// The agent to use instead.
        successor: Option<AgentName>,
        /// Why, for people (one line, at most 1000 characters).
        message: String,
    },
    /// A deprecation was undone.
    Undeprecate {
        /// `publisher/agent`.
        agent: AgentName,
        /// The version.
        version: String,
    },
    /// A version was removed (unpublished by its publisher or taken down by an operator): its
    /// tombstone. The version can never be published again.
    Remove {
        /// `publisher/agent`.
        agent: AgentName,
        /// The version.
        version: String,
        /// The digest of the signed manifest that is gone.
        manifest_digest: Digest,
        /// Why.
        reason: RemovalReason,
    },
    /// The version just published (the `publish` entry before it, same digest) was published
    /// by trusted publishing: with a token exchanged for a CI's OIDC ID token of this issuer
    /// and subject (issue 33). A fact of its own, so the `publish` entry keeps its one form.
    TrustedPublish {
        /// `publisher/agent`.
        agent: AgentName,
        /// The version.
        version: String,
        /// SHA-256 of the signed manifest bytes (the publish entry's).
        manifest_digest: Digest,
        /// The ID token's `iss`, exactly.
        issuer: String,
        /// The ID token's `sub`, exactly.
        subject: String,
    },
}

/// Why a version was removed: its reason class, in the log, the tombstone and the 410 answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RemovalReason {
    /// Its publisher unpublished it (within the hub's window and under its download limit).
    Unpublished,
    /// Taken down by an operator: malicious code.
    Malware,
    /// Taken down by an operator: a legal demand (copyright, trademark, court order).
    Legal,
    /// Taken down by an operator: it leaks secrets or personal data, or is a security risk.
    Security,
    /// Taken down by an operator: spam, squatting, abuse of the hub.
    Abuse,
    /// Taken down by an operator: against the hub's policies otherwise.
    Policy,
}

impl RemovalReason {
    /// Every class, as written.
    pub const ALL: [RemovalReason; 6] = [
        RemovalReason::Unpublished,
        RemovalReason::Malware,
        RemovalReason::Legal,
        RemovalReason::Security,
        RemovalReason::Abuse,
        RemovalReason::Policy,
    ];
    /// The classes an operator's takedown may give (all but `unpublished`).
    pub const TAKEDOWN: [RemovalReason; 5] = [
        RemovalReason::Malware,
        RemovalReason::Legal,
        RemovalReason::Security,
        RemovalReason::Abuse,
        RemovalReason::Policy,
    ];

    /// The class as written in the log and the API.
    pub fn as_str(&self) -> &'static str {
        match self {
            RemovalReason::Unpublished => "unpublished",
            RemovalReason::Malware => "malware",
            RemovalReason::Legal => "legal",
            RemovalReason::Security => "security",
            RemovalReason::Abuse => "abuse",
            RemovalReason::Policy => "policy",
        }
    }

    /// Parses a class (exactly as written).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for RemovalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A deprecation message as one log field: unpadded base64url of its UTF-8 bytes.
fn message_field(message: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(message.as_bytes())
}

/// A free-text field written as [`message_field`]: decoded, non-empty UTF-8.
fn text_field(field: &str, what: &str) -> Result<String> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(field)
        .map_err(|e| TlogError::Entry(format!("{what} `{field}` is not base64url: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| TlogError::Entry(format!("the {what} is not UTF-8")))?;
    if text.is_empty() {
        return Err(TlogError::Entry(format!("the {what} is empty")));
    }
    Ok(text)
}

fn canonical_version(s: &str) -> Result<String> {
    let v =
        semver::Version::parse(s).map_err(|e| TlogError::Entry(format!("version `{s}`: {e}")))?;
    if v.to_string() != s || !v.build.is_empty() {
        return Err(TlogError::Entry(format!(
            "version `{s}` is not canonical semver without build metadata"
        )));
    }
    Ok(s.to_string())
}

impl Entry {
    /// A publish entry; `version` must be canonical semver.
    pub fn publish(
        agent: AgentName,
        version: &str,
        manifest_digest: Digest,
        key_id: KeyId,
    ) -> Result<Self> {
        Ok(Entry::Publish {
            agent,
            version: canonical_version(version)?,
            manifest_digest,
            key_id,
        })
    }

    /// The publisher (namespace) the entry concerns.
    pub fn publisher(&self) -> &str {
        match self {
            Entry::Publish { agent, .. }
            | Entry::Yank { agent, .. }
            | Entry::Unyank { agent, .. }
            | Entry::Delete { agent, .. }
            | Entry::Deprecate { agent, .. }
            | Entry::Undeprecate { agent, .. }
            | Entry::Remove { agent, .. }
            | Entry::TrustedPublish { agent, .. } => agent.publisher(),
            Entry::KeyAdd { publisher, .. } | Entry::KeyRevoke { publisher, .. } => publisher,
        }
    }

    /// The agent the entry concerns, if it is about one.
    pub fn agent(&self) -> Option<&AgentName> {
        match self {
            Entry::Publish { agent, .. }
            | Entry::Yank { agent, .. }
            | Entry::Unyank { agent, .. }
            | Entry::Delete { agent, .. }
            | Entry::Deprecate { agent, .. }
            | Entry::Undeprecate { agent, .. }
            | Entry::Remove { agent, .. }
            | Entry::TrustedPublish { agent, .. } => Some(agent),
            Entry::KeyAdd { .. } | Entry::KeyRevoke { .. } => None,
        }
    }

    /// The entry's bytes: one line, see the module documentation.
    pub fn to_bytes(&self) -> Vec<u8> {
        format!("{self}\n").into_bytes()
    }

    /// Parses an entry's bytes; anything but the one canonical form is refused.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let text = std::str::from_utf8(bytes).map_err(|_| TlogError::Entry("not UTF-8".into()))?;
        let line = text
            .strip_suffix('\n')
            .ok_or_else(|| TlogError::Entry("does not end with a line feed".into()))?;
        if line.contains('\n') {
            return Err(TlogError::Entry("more than one line".into()));
        }
        let fields: Vec<&str> = line.split(' ').collect();
        if fields.first() != Some(&ENTRY_FORMAT) {
            return Err(TlogError::Entry(format!(
                "does not start with `{ENTRY_FORMAT}`"
            )));
        }
        let agent = |s: &str| {
            AgentName::parse(s).map_err(|e| TlogError::Entry(format!("agent `{s}`: {e}")))
        };
        let key_id =
            |s: &str| KeyId::parse(s).map_err(|e| TlogError::Entry(format!("key id `{s}`: {e}")));
        let publisher = |s: &str| {
            check_publisher(s).map_err(|e| TlogError::Entry(format!("publisher `{s}`: {e}")))
        };
        let entry = match fields[1..] {
            ["publish", a, v, d, k] => Entry::Publish {
                agent: agent(a)?,
                version: canonical_version(v)?,
                manifest_digest: Digest::parse(d)
                    .map_err(|e| TlogError::Entry(format!("digest `{d}`: {e}")))?,
                key_id: key_id(k)?,
            },
            ["key-add", p, k, pk] => {
                let key = PublicKey::parse(pk)
                    .map_err(|e| TlogError::Entry(format!("public key `{pk}`: {e}")))?;
                if key.key_id() != key_id(k)? {
                    return Err(TlogError::Entry(format!(
                        "key id {k} is not the id of key {pk}"
                    )));
                }
                Entry::KeyAdd {
                    publisher: publisher(p)?,
                    key,
                }
            }
            ["key-revoke", p, k] => Entry::KeyRevoke {
                publisher: publisher(p)?,
                key_id: key_id(k)?,
            },
            ["yank", a, v] => Entry::Yank {
                agent: agent(a)?,
                version: canonical_version(v)?,
            },
            ["unyank", a, v] => Entry::Unyank {
                agent: agent(a)?,
                version: canonical_version(v)?,
            },
            ["delete", a, v] => Entry::Delete {
                agent: agent(a)?,
                version: canonical_version(v)?,
            },
            ["deprecate", a, v, s, m] => {
                let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(m)
                    .map_err(|e| {
                        TlogError::Entry(format!("message `{m}` is not base64url: {e}"))
                    })?;
                let message = String::from_utf8(bytes)
                    .map_err(|_| TlogError::Entry("the message is not UTF-8".into()))?;
                if message.is_empty() {
                    return Err(TlogError::Entry("the message is empty".into()));
                }
                Entry::Deprecate {
                    agent: agent(a)?,
                    version: canonical_version(v)?,
                    successor: if s == "-" { None } else { Some(agent(s)?) },
                    message,
                }
            }
            ["undeprecate", a, v] => Entry::Undeprecate {
                agent: agent(a)?,
                version: canonical_version(v)?,
            },
            ["remove", a, v, d, r] => Entry::Remove {
                agent: agent(a)?,
                version: canonical_version(v)?,
                manifest_digest: Digest::parse(d)
                    .map_err(|e| TlogError::Entry(format!("digest `{d}`: {e}")))?,
                reason: RemovalReason::parse(r)
                    .ok_or_else(|| TlogError::Entry(format!("unknown reason class `{r}`")))?,
            },
            ["trusted-publish", a, v, d, i, s] => Entry::TrustedPublish {
                agent: agent(a)?,
                version: canonical_version(v)?,
                manifest_digest: Digest::parse(d)
                    .map_err(|e| TlogError::Entry(format!("digest `{d}`: {e}")))?,
                issuer: text_field(i, "issuer")?,
                subject: text_field(s, "subject")?,
            },
            _ => {
                return Err(TlogError::Entry(format!(
                    "`{line}` is no known entry kind with its fields"
                )));
            }
        };
        // Canonical: the parsed entry prints back to the same bytes (lowercase names, …).
        if entry.to_bytes() != bytes {
            return Err(TlogError::Entry(format!(
                "`{line}` is not in canonical form"
            )));
        }
        Ok(entry)
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{ENTRY_FORMAT} ")?;
        match self {
            Entry::Publish {
                agent,
                version,
                manifest_digest,
                key_id,
            } => write!(f, "publish {agent} {version} {manifest_digest} {key_id}"),
            Entry::KeyAdd { publisher, key } => {
                write!(f, "key-add {publisher} {} {key}", key.key_id())
            }
            Entry::KeyRevoke { publisher, key_id } => write!(f, "key-revoke {publisher} {key_id}"),
            Entry::Yank { agent, version } => write!(f, "yank {agent} {version}"),
            Entry::Unyank { agent, version } => write!(f, "unyank {agent} {version}"),
            Entry::Delete { agent, version } => write!(f, "delete {agent} {version}"),
            Entry::Deprecate {
                agent,
                version,
                successor,
                message,
            } => {
                let s = successor
                    .as_ref()
                    .map_or("-".to_string(), |s| s.to_string());
                write!(
                    f,
                    "deprecate {agent} {version} {s} {}",
                    message_field(message)
                )
            }
            Entry::Undeprecate { agent, version } => write!(f, "undeprecate {agent} {version}"),
            Entry::Remove {
                agent,
                version,
                manifest_digest,
                reason,
            } => write!(f, "remove {agent} {version} {manifest_digest} {reason}"),
            Entry::TrustedPublish {
                agent,
                version,
                manifest_digest,
                issuer,
                subject,
            } => write!(
                f,
                "trusted-publish {agent} {version} {manifest_digest} {} {}",
                message_field(issuer),
                message_field(subject)
            ),
        }
    }
}
