//! Namespaces (the `publisher` part of names), their members and their publisher keys.

use serde::{Deserialize, Serialize};

/// `POST /api/v1/namespaces`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateNamespaceRequest {
    /// `[a-z0-9][a-z0-9_-]{0,63}`, compared case-insensitively, not reserved.
    pub name: String,
}

/// A member of a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Member {
    /// User name.
    pub user: String,
    /// `owner`, `maintainer` or `publisher`.
    pub role: String,
    /// Unix ms.
    pub added_at: i64,
}

/// A publisher key of a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Key {
    /// Key id (hex).
    pub key_id: String,
    /// `ed25519:<base64>`.
    pub public_key: String,
    /// Who registered it.
    pub added_by: String,
    /// Unix ms.
    pub added_at: i64,
    /// Unix ms, if revoked.
    pub revoked_at: Option<i64>,
    /// Who revoked it.
    pub revoked_by: Option<String>,
}

/// A namespace with its members and keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NamespaceInfo {
    /// Name.
    pub name: String,
    /// Unix ms.
    pub created_at: i64,
    /// Members.
    #[serde(default)]
    pub members: Vec<Member>,
    /// Keys, revoked ones included.
    #[serde(default)]
    pub keys: Vec<Key>,
    /// The domain the namespace claimed and proved (issue 33), verified or lapsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<DomainInfo>,
}

/// A namespace's claimed domain and the state of its proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DomainInfo {
    /// The domain (lowercase, no trailing dot).
    pub domain: String,
    /// How it is proved: `https` (`https://DOMAIN/.well-known/ofc-namespace.txt`) or `dns`
    /// (a TXT record on DOMAIN).
    pub method: String,
    /// The namespace key the proof names (its key id).
    pub key_id: String,
    /// The proof held at the last check and the key is not revoked: the namespace is verified.
    pub verified: bool,
    /// When it was first proved (Unix ms).
    pub verified_at: i64,
    /// When the proof was last checked (Unix ms).
    pub checked_at: i64,
    /// When a re-check first failed (Unix ms); absent while the proof holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lapsed_at: Option<i64>,
    /// Why it lapsed (the failed re-check's message, or the key's revocation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lapse_reason: Option<String>,
}

/// `PUT /api/v1/namespaces/{namespace}/domain`: claim DOMAIN and prove it now.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct VerifyDomainRequest {
    /// The domain, e.g. `example.com`.
    pub domain: String,
    /// `https` or `dns`.
    pub method: String,
}

/// `PUT /api/v1/namespaces/{namespace}/members/{user}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SetMemberRequest {
    /// `owner`, `maintainer` or `publisher`.
    pub role: String,
}

/// `POST /api/v1/namespaces/{namespace}/keys`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AddKeyRequest {
    /// `ed25519:<base64 of 32 bytes>`.
    pub public_key: String,
}

/// `GET /api/v1/namespaces/{namespace}/keys`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KeyList {
    /// Oldest first.
    #[serde(default)]
    pub keys: Vec<Key>,
}
