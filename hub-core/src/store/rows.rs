//! The rows the store reads and the records it writes. Rows come through `sqlx::FromRow`; the
//! API-shaped ones are `index_schema::hub_api` types, read through a record of their own (the
//! schema crate knows no database).

use serde::Serialize;

use crate::store::db::Flag;

/// The columns of a [`User`] (SQLite's BOOLEAN columns read as integers, see [`crate::store::db`]).
pub(super) const USER_COLUMNS: &str = "id, name, CAST(is_admin AS INTEGER) AS is_admin, \
    CAST(disabled AS INTEGER) AS disabled, created_at, password_hash";

/// A user.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct User {
    /// Id.
    pub id: i64,
    /// Lowercase name.
    pub name: String,
    /// Site administrator.
    #[sqlx(try_from = "Flag")]
    pub is_admin: bool,
    /// Disabled users cannot authenticate.
    #[sqlx(try_from = "Flag")]
    pub disabled: bool,
    /// Unix ms.
    pub created_at: i64,
    /// Argon2 PHC string.
    #[serde(skip)]
    pub password_hash: Option<String>,
}

/// An API token (never its secret).
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct TokenRow {
    /// Id.
    pub id: i64,
    /// Owner.
    pub user_id: i64,
    /// Label.
    pub name: String,
    /// Comma-separated scopes.
    pub scopes: String,
    /// Comma-separated namespace patterns.
    pub namespaces: String,
    /// Unix ms, if it expires.
    pub expires_at: Option<i64>,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms, if revoked.
    pub revoked_at: Option<i64>,
    /// Unix ms of the last authenticated request, to the minute ([`TOKEN_USE_PRECISION_MS`]).
    pub last_used_at: Option<i64>,
    /// Minted by trusted publishing: the ID token's issuer (migration 0025).
    pub trusted_issuer: Option<String>,
    /// Minted by trusted publishing: the ID token's subject.
    pub trusted_subject: Option<String>,
}

/// The columns of a [`TokenRow`].
pub(super) const TOKEN_COLUMNS: &str = "id, user_id, name, scopes, namespaces, expires_at, \
    created_at, revoked_at, last_used_at, trusted_issuer, trusted_subject";

/// A token with its user, as authentication reads them.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(super) struct TokenUser {
    #[sqlx(flatten)]
    pub token: TokenRow,
    pub user_name: String,
    #[sqlx(try_from = "Flag")]
    pub is_admin: bool,
    #[sqlx(try_from = "Flag")]
    pub disabled: bool,
    pub user_created_at: i64,
}

/// `api_tokens.last_used_at` is written at most once per this many milliseconds per token, so
/// authenticating stays a read.
pub const TOKEN_USE_PRECISION_MS: i64 = 60_000;

/// A namespace.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Namespace {
    /// Id.
    pub id: i64,
    /// Lowercase name.
    pub name: String,
    /// Unix ms.
    pub created_at: i64,
}

/// A member of a namespace.
pub use index_schema::hub_api::Member;

/// A member as read.
#[derive(sqlx::FromRow)]
pub(super) struct MemberRecord {
    name: String,
    role: String,
    added_at: i64,
}

impl From<MemberRecord> for Member {
    fn from(r: MemberRecord) -> Self {
        Member {
            user: r.name,
            role: r.role,
            added_at: r.added_at,
        }
    }
}

/// A publisher key.
pub use index_schema::hub_api::Key as KeyRow;

/// A key as read.
#[derive(sqlx::FromRow)]
pub(super) struct KeyRecord {
    key_id: String,
    public_key: String,
    added_by: String,
    added_at: i64,
    revoked_at: Option<i64>,
    revoked_by: Option<String>,
}

impl From<KeyRecord> for KeyRow {
    fn from(r: KeyRecord) -> Self {
        KeyRow {
            key_id: r.key_id,
            public_key: r.public_key,
            added_by: r.added_by,
            added_at: r.added_at,
            revoked_at: r.revoked_at,
            revoked_by: r.revoked_by,
        }
    }
}

/// An agent.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AgentRow {
    /// Id.
    pub id: i64,
    /// Owning namespace.
    pub namespace_id: i64,
    /// `publisher/agent`.
    pub name: String,
    /// Floor handle without `@`.
    pub handle: Option<String>,
    /// Highest non-yanked version.
    pub latest_version: Option<String>,
    /// Registry API: endpoint.
    pub registry_endpoint: Option<String>,
    /// Registry API: metadata JSON.
    pub registry_metadata: Option<String>,
    /// Registry API: public key.
    pub registry_key: Option<String>,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub updated_at: i64,
    /// Downloads over all versions.
    pub downloads: i64,
}

/// The columns of an [`AgentRow`] of `agents a`.
pub(super) const AGENT_COLUMNS: &str = "a.id, a.namespace_id, a.name, a.handle, \
    a.latest_version, a.registry_endpoint, a.registry_metadata, a.registry_key, a.created_at, \
    a.updated_at, a.downloads";

/// One published version.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionRow {
    /// Id.
    pub id: i64,
    /// Semver.
    pub version: String,
    /// `sha256:…` of the manifest bytes.
    pub manifest_digest: String,
    /// DSSE envelope JSON.
    pub envelope: String,
    /// Key that signed.
    pub key_id: String,
    /// Source kind.
    pub source_kind: String,
    /// Bundle digest.
    pub bundle_digest: Option<String>,
    /// Bundle size.
    pub bundle_size: Option<i64>,
    /// Publisher.
    pub published_by: String,
    /// Token used.
    pub token_id: Option<i64>,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub yanked_at: Option<i64>,
    /// Why.
    pub yank_reason: Option<String>,
    /// Deprecation message.
    pub deprecated_message: Option<String>,
    /// Downloads.
    pub downloads: i64,
    /// Index of its publish entry in the transparency log (`None`: not logged yet).
    pub log_index: Option<i64>,
    /// The agent a deprecation names to use instead.
    pub deprecated_successor: Option<String>,
    /// Published by trusted publishing: the ID token's issuer (migration 0025).
    pub trusted_issuer: Option<String>,
    /// And its subject.
    pub trusted_subject: Option<String>,
}

/// The columns of a [`VersionRow`] of `versions v JOIN users u`.
pub(super) const VERSION_COLUMNS: &str = "v.id, v.version, v.manifest_digest, v.envelope, \
    v.key_id, v.source_kind, v.bundle_digest, v.bundle_size, u.name AS published_by, \
    v.token_id, v.created_at, v.yanked_at, v.yank_reason, v.deprecated_message, v.downloads, \
    v.log_index, v.deprecated_successor, v.trusted_issuer, v.trusted_subject";

/// An outbox entry.
pub use index_schema::hub_api::OutboxEntry as OutboxRow;

/// An outbox entry as read.
#[derive(sqlx::FromRow)]
pub(super) struct OutboxRecord {
    seq: i64,
    kind: String,
    agent: String,
    version: Option<String>,
    created_at: i64,
}

impl From<OutboxRecord> for OutboxRow {
    fn from(r: OutboxRecord) -> Self {
        OutboxRow {
            seq: r.seq,
            kind: r.kind,
            agent: r.agent,
            version: r.version,
            created_at: r.created_at,
        }
    }
}

/// An audit entry.
pub use index_schema::hub_api::AuditEntry as AuditRow;

/// An audit entry as read.
#[derive(sqlx::FromRow)]
pub(super) struct AuditRecord {
    id: i64,
    at: i64,
    user_name: Option<String>,
    token_id: Option<i64>,
    action: String,
    target: String,
    detail: Option<String>,
}

impl From<AuditRecord> for AuditRow {
    fn from(r: AuditRecord) -> Self {
        AuditRow {
            id: r.id,
            at: r.at,
            user_name: r.user_name,
            token_id: r.token_id,
            action: r.action,
            target: r.target,
            detail: r.detail,
        }
    }
}

/// A version about to be published.
#[derive(Debug, Clone)]
pub struct NewVersion {
    /// Namespace id.
    pub namespace_id: i64,
    /// `publisher/agent`.
    pub agent: String,
    /// Floor handle without `@`.
    pub handle: String,
    /// Semver.
    pub version: String,
    /// `sha256:…`.
    pub manifest_digest: String,
    /// Envelope JSON.
    pub envelope: String,
    /// Signing key id.
    pub key_id: String,
    /// Source kind.
    pub source_kind: String,
    /// Bundle digest.
    pub bundle_digest: Option<String>,
    /// Bundle size.
    pub bundle_size: Option<i64>,
    /// Published by trusted publishing: the ID token's issuer and subject.
    pub trusted: Option<crate::auth::TrustedOrigin>,
    /// The publisher may also publish to the agent once it exists (`publish-update`): when
    /// another publish creates the agent first, this one adds its version to it; otherwise it
    /// is refused as a conflict (it was allowed to create the agent, not to add to another's).
    pub may_update: bool,
}

/// A registry-API registration (an unsigned `remote` entry).
#[derive(Debug, Clone)]
pub struct NewRegistryAgent {
    /// Namespace id.
    pub namespace_id: i64,
    /// `publisher/agent`.
    pub agent: String,
    /// Handle without `@`.
    pub handle: String,
    /// Endpoint.
    pub endpoint: String,
    /// Metadata JSON.
    pub metadata: String,
    /// Public key text.
    pub public_key: String,
    /// SHA-256 of the agent token.
    pub token_hash: String,
}
