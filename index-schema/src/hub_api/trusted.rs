//! Trusted publishing (issue 33): a namespace trusts an OIDC issuer, audience and subject
//! pattern (a CI's repository and workflow); the CI exchanges its ID token for a publish-only
//! hub token valid 15 minutes for that namespace.

use serde::{Deserialize, Serialize};

/// The audience a trusted publisher expects when none is given: the CI asks its identity
/// provider for an ID token with `aud` = `ofc` (GitHub Actions: `audience=ofc`).
pub const DEFAULT_AUDIENCE: &str = "ofc";

/// How long a token minted by an exchange lives, in seconds.
pub const EXCHANGED_TOKEN_SECS: i64 = 15 * 60;

/// `POST /api/v1/namespaces/{namespace}/trusted-publishers`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AddTrustedPublisherRequest {
    /// The issuer's URL exactly as its tokens' `iss` claim says it (`https://…`, no query
    /// or fragment), e.g. `https://token.actions.githubusercontent.com`.
    pub issuer: String,
    /// The `sub` claims trusted: exact text, or a glob whose only wildcard is `*` (any run of
    /// characters), matched against the whole subject, e.g.
    /// `repo:acme/coder:ref:refs/heads/main`.
    pub subject: String,
    /// The `aud` expected (default [`DEFAULT_AUDIENCE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
}

/// A trusted publisher of a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TrustedPublisher {
    /// Id (for removal).
    pub id: i64,
    /// Namespace.
    pub namespace: String,
    /// Issuer URL (`iss`, exact).
    pub issuer: String,
    /// Expected `aud`.
    pub audience: String,
    /// Subject pattern (`*` the only wildcard, anchored).
    pub subject: String,
    /// The owner who registered it; tokens minted for it act as this user.
    pub added_by: String,
    /// Unix ms.
    pub added_at: i64,
}

/// `GET /api/v1/namespaces/{namespace}/trusted-publishers`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TrustedPublisherList {
    /// Oldest first.
    pub trusted_publishers: Vec<TrustedPublisher>,
}

/// `POST /api/v1/trusted-publishing/exchange`: no `Authorization`; the ID token is the proof.
#[derive(Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ExchangeRequest {
    /// The namespace to publish to.
    pub namespace: String,
    /// The CI's OIDC ID token (a JWT).
    pub token: String,
}

impl std::fmt::Debug for ExchangeRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExchangeRequest")
            .field("namespace", &self.namespace)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// The answer of an exchange: a hub token that may only publish to the namespace.
#[derive(Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExchangeResponse {
    /// The token (`ofc_…`), shown once.
    pub token: String,
    /// The one namespace it may publish to.
    pub namespace: String,
    /// Unix ms: [`EXCHANGED_TOKEN_SECS`] after the exchange.
    pub expires_at: i64,
    /// The ID token's issuer.
    pub issuer: String,
    /// The ID token's subject.
    pub subject: String,
}

impl std::fmt::Debug for ExchangeResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExchangeResponse")
            .field("token", &"<redacted>")
            .field("namespace", &self.namespace)
            .field("expires_at", &self.expires_at)
            .field("issuer", &self.issuer)
            .field("subject", &self.subject)
            .finish()
    }
}

/// How a version was published by trusted publishing (in [`super::VersionInfo`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TrustedPublishing {
    /// The ID token's issuer.
    pub issuer: String,
    /// The ID token's subject.
    pub subject: String,
}
