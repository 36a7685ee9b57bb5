//! Login, `me`, API tokens.

use serde::{Deserialize, Serialize};

/// `POST /api/v1/login`.
#[derive(Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    /// User name.
    pub username: String,
    /// Password.
    pub password: String,
    /// Label of the token to create (`ofc login` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_name: Option<String>,
    /// Scopes; every non-admin scope by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// Namespace patterns; `*` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
    /// Expiry in days; none by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_days: Option<u32>,
}

impl std::fmt::Debug for LoginRequest {
    /// Never the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginRequest")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("token_name", &self.token_name)
            .field("scopes", &self.scopes)
            .field("namespaces", &self.namespaces)
            .field("expires_in_days", &self.expires_in_days)
            .finish()
    }
}

/// `POST /api/v1/tokens`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateTokenRequest {
    /// Label.
    pub name: String,
    /// Scopes (`publish-new`, `publish-update`, `yank`, `manage-keys`, `manage-members`,
    /// `admin`), at most those of the token making the request.
    pub scopes: Vec<String>,
    /// Namespace patterns (`*`, `acme`, `acme-*`), within those of the token making the request.
    pub namespaces: Vec<String>,
    /// Expiry in days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_days: Option<u32>,
}

/// A token as listed (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenInfo {
    /// Id.
    pub id: i64,
    /// Label.
    pub name: String,
    /// Scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Namespace patterns.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Unix ms.
    #[serde(default)]
    pub created_at: i64,
    /// Unix ms.
    pub expires_at: Option<i64>,
    /// Unix ms.
    pub revoked_at: Option<i64>,
    /// Unix ms of the last use, to the minute.
    pub last_used_at: Option<i64>,
}

/// A newly created token: the only time its secret is shown.
#[derive(Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewToken {
    /// The secret (`ofc_…`). Shown once; the hub keeps only its SHA-256.
    pub token: String,
    /// What it is.
    #[serde(flatten)]
    pub info: TokenInfo,
}

impl std::fmt::Debug for NewToken {
    /// Never the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewToken")
            .field("token", &"<redacted>")
            .field("info", &self.info)
            .finish()
    }
}

/// `GET /api/v1/tokens`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenList {
    /// Newest first.
    pub tokens: Vec<TokenInfo>,
}

/// A namespace the caller belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MyNamespace {
    /// Name.
    pub name: String,
    /// `owner`, `maintainer` or `publisher`.
    pub role: String,
}

/// `GET /api/v1/me`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Me {
    /// User name.
    pub user: String,
    /// Site administrator.
    #[serde(default)]
    pub is_admin: bool,
    /// Namespaces and roles.
    #[serde(default)]
    pub namespaces: Vec<MyNamespace>,
    /// The token used for this request.
    pub token: TokenInfo,
}
