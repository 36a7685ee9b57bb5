//! Publish, agents and versions, yank and deprecation, the outbox and the audit log.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::diagnostic::Diagnostics;
use crate::envelope::Envelope;

/// A DSSE envelope as it travels in the API: its JSON text, verbatim. [`EnvelopeJson::parse`]
/// is the one way to an [`Envelope`], with every check and diagnostics that name the field; the
/// text is never turned into a `serde_json::Value` and back on the way.
#[derive(Clone)]
pub struct EnvelopeJson(Box<RawValue>);

impl EnvelopeJson {
    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The envelope of an agent manifest, with every structural and manifest check.
    pub fn parse(&self) -> Result<Envelope, Diagnostics> {
        Envelope::from_json(self.get())
    }

    /// JSON text that is not a JSON value is refused here; what the value holds is checked by
    /// [`EnvelopeJson::parse`].
    pub fn from_text(text: String) -> Result<Self, serde_json::Error> {
        RawValue::from_string(text).map(Self)
    }
}

impl From<&Envelope> for EnvelopeJson {
    fn from(e: &Envelope) -> Self {
        Self(RawValue::from_string(e.to_json()).expect("an envelope serializes to JSON"))
    }
}

impl std::fmt::Debug for EnvelopeJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EnvelopeJson({} bytes)", self.get().len())
    }
}

impl PartialEq for EnvelopeJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Serialize for EnvelopeJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for EnvelopeJson {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(d).map(Self)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for EnvelopeJson {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::Object)
            .description(Some(
                "DSSE envelope: {payloadType, payload (base64), signatures: [{keyid, sig}]}",
            ))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for EnvelopeJson {}

/// `PUT /api/v1/agents/{publisher}/{agent}/versions/{version}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PublishRequest {
    /// The DSSE envelope of the manifest, signed by an active key of the namespace.
    pub envelope: EnvelopeJson,
    /// For `bundle` sources: the tar.gz bytes, base64, for bundles up to the hub's
    /// `max_inline_bundle_bytes` (8 MiB by default; bigger ones are 413
    /// `inline_bundle_too_large`). Leave it out after uploading the bundle as a blob to
    /// `/v2/{publisher}/{agent}/blobs/uploads/` (streamed; what `ofc publish` does), or when
    /// the hub has the blob already.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
}

/// A stored publish.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PublishResponse {
    /// `publisher/agent`.
    pub name: String,
    /// Version.
    pub version: String,
    /// `sha256:…` of the manifest bytes.
    pub manifest_digest: String,
    /// Bundle digest, for bundle sources.
    pub bundle_digest: Option<String>,
    /// Signing key.
    pub key_id: String,
    /// Outbox sequence of this publish.
    pub seq: i64,
    /// Unix ms.
    pub published_at: i64,
    /// The publish's transparency-log entry, proven under the checkpoint right after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<super::LogInclusion>,
}

/// A version in an agent's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionSummary {
    /// Version.
    pub version: String,
    /// `sha256:…`.
    pub manifest_digest: String,
    /// Unix ms.
    pub published_at: i64,
    /// Yanked: not picked by selectors, still downloadable by exact version.
    #[serde(default)]
    pub yanked: bool,
    /// Why.
    pub yank_reason: Option<String>,
    /// Deprecation message.
    pub deprecated: Option<String>,
    /// The agent a deprecation names to use instead (`publisher/agent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated_successor: Option<String>,
    /// Signing key.
    pub key_id: String,
    /// When the signing key was revoked, if it was.
    pub key_revoked_at: Option<i64>,
    /// Downloads.
    #[serde(default)]
    pub downloads: i64,
}

/// `GET /api/v1/agents/{publisher}/{agent}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentInfo {
    /// `publisher/agent`.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// Floor handle (`@code`).
    pub handle: Option<String>,
    /// Highest non-yanked release (a pre-release only when there is no release), the version
    /// `ofc pull` picks.
    pub latest: Option<String>,
    /// Every version, oldest first.
    #[serde(default)]
    pub versions: Vec<VersionSummary>,
    /// Downloads over all versions.
    #[serde(default)]
    pub downloads: i64,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub updated_at: i64,
    /// The trust signals of the version `latest` names (else the newest version); absent from
    /// hubs before issue 33's point 5 and for an agent without versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<super::trust::TrustSignals>,
    /// The domain its namespace proved, when verified (issue 33).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_domain: Option<String>,
}

/// The signing key of a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SigningKey {
    /// Key id.
    pub key_id: String,
    /// `ed25519:…`, when still registered.
    pub public_key: Option<String>,
    /// When it was revoked.
    pub revoked_at: Option<i64>,
}

/// The bundle of a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BundleInfo {
    /// `sha256:…`.
    pub digest: String,
    /// Bytes.
    pub size: i64,
}

/// `GET /api/v1/agents/{publisher}/{agent}/versions/{version}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionInfo {
    /// `publisher/agent`.
    pub name: String,
    /// Version.
    pub version: String,
    /// The manifest, for display; what a client trusts is the envelope's payload, checked
    /// with [`EnvelopeJson::parse`] and the publisher's key.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub manifest: Value,
    /// The DSSE envelope as published.
    pub envelope: EnvelopeJson,
    /// `sha256:…` of the manifest bytes.
    pub manifest_digest: String,
    /// Source kind.
    pub source_kind: String,
    /// The bundle, for bundle sources.
    pub bundle: Option<BundleInfo>,
    /// Signing key and its state.
    pub key: SigningKey,
    /// Publisher.
    pub published_by: String,
    /// Unix ms.
    pub published_at: i64,
    /// Yanked.
    #[serde(default)]
    pub yanked: bool,
    /// Why.
    pub yank_reason: Option<String>,
    /// Deprecation message.
    pub deprecated: Option<String>,
    /// The agent a deprecation names to use instead (`publisher/agent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated_successor: Option<String>,
    /// Downloads.
    #[serde(default)]
    pub downloads: i64,
    /// The publish's transparency-log entry, proven under the current checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<super::LogInclusion>,
    /// The version's trust signals (absent from hubs before issue 33's point 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<super::trust::TrustSignals>,
    /// Set when the version was published by trusted publishing: from which OIDC issuer and
    /// subject (also a `trusted-publish` entry of the log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_publishing: Option<super::TrustedPublishing>,
}

/// One agent in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentSummary {
    /// `publisher/agent`.
    pub name: String,
    /// Highest non-yanked version.
    pub latest: Option<String>,
    /// Unix ms.
    pub updated_at: i64,
    /// Downloads.
    #[serde(default)]
    pub downloads: i64,
}

/// `GET /api/v1/agents`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentList {
    /// Ordered by last change, oldest first.
    pub agents: Vec<AgentSummary>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// Query of `GET /api/v1/agents`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// From a previous page's `next_cursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Only agents changed at or after this Unix ms time (for mirrors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_since: Option<i64>,
    /// Page size, 1 to 1000 (100 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
}

/// `PUT …/yank`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct YankRequest {
    /// Why (shown to users).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `PUT …/deprecation`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DeprecateRequest {
    /// Why, and what to use instead (one line, at most 1000 characters).
    pub message: String,
    /// The agent to use instead (`publisher/agent`); it need not exist on this hub yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successor: Option<String>,
}

/// Query of `GET /api/v1/outbox`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct OutboxQuery {
    /// Entries after this sequence number (0 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<i64>,
    /// 1 to 1000 (100 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
}

/// An outbox entry: one change to what the hub lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OutboxEntry {
    /// Monotonic, gapless.
    pub seq: i64,
    /// `publish`, `yank`, `unyank`, `deprecate`, `undeprecate`, `delete_version`, `delete_agent`,
    /// `registry_update`.
    pub kind: String,
    /// `publisher/agent`.
    pub agent: String,
    /// Version, when the change is about one.
    pub version: Option<String>,
    /// Unix ms.
    pub created_at: i64,
}

/// `GET /api/v1/outbox`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OutboxPage {
    /// In sequence order.
    pub entries: Vec<OutboxEntry>,
}

/// Query of `GET /api/v1/audit`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Only entries whose target is or starts with this (`acme`, `acme/coder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// 1 to 1000 (100 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
}

/// An audit entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEntry {
    /// Id.
    pub id: i64,
    /// Unix ms.
    pub at: i64,
    /// Acting user name.
    pub user_name: Option<String>,
    /// Acting token id.
    pub token_id: Option<i64>,
    /// What was done.
    pub action: String,
    /// On what.
    pub target: String,
    /// Details.
    pub detail: Option<String>,
}

/// `GET /api/v1/audit`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditPage {
    /// Newest first.
    pub entries: Vec<AuditEntry>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_travels_verbatim() {
        let text = r#"{"payloadType":"x","payload":"e30=","signatures":[]}"#;
        let req: PublishRequest =
            serde_json::from_str(&format!(r#"{{"envelope":{text}}}"#)).unwrap();
        assert_eq!(req.envelope.get(), text);
        assert_eq!(
            serde_json::to_string(&req).unwrap(),
            format!(r#"{{"envelope":{text}}}"#)
        );
        // What it holds is checked by parse, with a diagnostic naming the field.
        let e = req.envelope.parse().unwrap_err().to_string();
        assert!(e.contains("payloadType"), "{e}");
        assert!(
            serde_json::from_str::<PublishRequest>(r#"{"envelope":{},"extra":1}"#).is_err(),
            "requests refuse unknown fields"
        );
    }
}
