//! The body of every error answer of the JSON API, and its stable codes.

use serde::{Deserialize, Serialize};

open_enum! {
    /// The stable, machine-readable code of an error answer. Clients match on it, never on
    /// the message; a code from a newer hub is kept as [`ErrorCode::Other`].
    pub enum ErrorCode {
        /// No token was sent where one is needed.
        Unauthenticated = "unauthenticated",
        /// The token is not one the hub issued.
        InvalidToken = "invalid_token",
        /// The token was revoked.
        TokenRevoked = "token_revoked",
        /// The token has expired.
        TokenExpired = "token_expired",
        /// The account is disabled.
        UserDisabled = "user_disabled",
        /// Wrong user name or password.
        InvalidCredentials = "invalid_credentials",
        /// Too many failed authentications from this client.
        TooManyAuthFailures = "too_many_auth_failures",
        /// The token lacks a scope.
        ForbiddenScope = "forbidden_scope",
        /// The token is not valid for the namespace.
        ForbiddenNamespace = "forbidden_namespace",
        /// The user is not a member of the namespace.
        NotMember = "not_member",
        /// The member's role does not allow this.
        ForbiddenRole = "forbidden_role",
        /// Only a hub administrator may do this.
        AdminOnly = "admin_only",
        /// The token asked for would outlive the token that asks for it.
        ForbiddenExpiry = "forbidden_expiry",
        /// A quota of the hub would be passed (the message names the setting).
        QuotaExceeded = "quota_exceeded",
        /// A malformed `publisher/agent` name.
        InvalidName = "invalid_name",
        /// A malformed or disallowed version.
        InvalidVersion = "invalid_version",
        /// A malformed query parameter (the message names it).
        InvalidParameter = "invalid_parameter",
        /// A page size out of range.
        InvalidLimit = "invalid_limit",
        /// A cursor this hub did not issue.
        InvalidCursor = "invalid_cursor",
        /// An unknown scope, or one the requesting token does not hold.
        InvalidScope = "invalid_scope",
        /// A malformed namespace pattern, or one outside the requesting token's.
        InvalidNamespacePattern = "invalid_namespace_pattern",
        /// An expiry out of range.
        InvalidExpiry = "invalid_expiry",
        /// A malformed token label.
        InvalidTokenName = "invalid_token_name",
        /// An unknown role.
        InvalidRole = "invalid_role",
        /// A malformed public key.
        InvalidKey = "invalid_key",
        /// A malformed floor handle.
        InvalidHandle = "invalid_handle",
        /// A malformed domain name (a namespace's claimed domain).
        InvalidDomain = "invalid_domain",
        /// A domain's proof (its TXT record or its `/.well-known/ofc-namespace.txt`) is
        /// missing, names no live key of the namespace, could not be fetched, or the domain
        /// resolves only to addresses the hub's outbound address policy refuses; the message
        /// says which and what to publish.
        DomainProofFailed = "domain_proof_failed",
        /// A namespace name that looks like an existing namespace or a reserved name
        /// (separators, case, `0`/`o`, `1`/`l`/`i`, `rn`/`m`, `vv`/`w`).
        NamespaceLookalike = "namespace_lookalike",
        /// A malformed endpoint URL.
        InvalidEndpoint = "invalid_endpoint",
        /// A malformed deprecation message.
        InvalidMessage = "invalid_message",
        /// Registry metadata past the limit.
        MetadataTooLarge = "metadata_too_large",
        /// A body that is not the expected JSON.
        InvalidBody = "invalid_body",
        /// A malformed request.
        BadRequest = "bad_request",
        /// The DSSE envelope is malformed.
        InvalidEnvelope = "invalid_envelope",
        /// The manifest inside the envelope is invalid.
        InvalidManifest = "invalid_manifest",
        /// The signature does not verify.
        BadSignature = "bad_signature",
        /// The signing key was revoked.
        KeyRevoked = "key_revoked",
        /// The signing key is not an active key of the namespace.
        UntrustedKey = "untrusted_key",
        /// The manifest names another agent than the path.
        NameMismatch = "name_mismatch",
        /// The manifest has another version than the path.
        VersionMismatch = "version_mismatch",
        /// The bundle is past `max_bundle_bytes`.
        BundleTooLarge = "bundle_too_large",
        /// The bundle is too large to send inline: upload it as a blob.
        InlineBundleTooLarge = "inline_bundle_too_large",
        /// The bundle is not valid base64 or not a bundle.
        InvalidBundle = "invalid_bundle",
        /// The bundle's size is not the manifest's.
        BundleSizeMismatch = "bundle_size_mismatch",
        /// The bundle's digest is not the manifest's.
        BundleDigestMismatch = "bundle_digest_mismatch",
        /// The manifest names a bundle the hub does not have.
        BundleMissing = "bundle_missing",
        /// A bundle was sent for a source that has none.
        UnexpectedBundle = "unexpected_bundle",
        /// The name is an OFC registry entry, which cannot be published to.
        RegistryEntry = "registry_entry",
        /// The agent is published (signed) and cannot be changed through the registry API.
        SignedAgent = "signed_agent",
        /// The version has no bundle.
        NoBundle = "no_bundle",
        /// The agent is not a `remote` agent, so it has no A2A card.
        NoAgentCard = "no_agent_card",
        /// No such endpoint or object.
        NotFound = "not_found",
        /// No such agent.
        AgentNotFound = "agent_not_found",
        /// No such version.
        VersionNotFound = "version_not_found",
        /// No such namespace.
        NamespaceNotFound = "namespace_not_found",
        /// No such user.
        UserNotFound = "user_not_found",
        /// No such member.
        MemberNotFound = "member_not_found",
        /// No such key.
        KeyNotFound = "key_not_found",
        /// No such token.
        TokenNotFound = "token_not_found",
        /// The agent exists already.
        AgentExists = "agent_exists",
        /// The namespace exists already.
        NamespaceExists = "namespace_exists",
        /// The key is registered already.
        KeyExists = "key_exists",
        /// The version exists (versions are immutable).
        VersionExists = "version_exists",
        /// The version was deleted; its number cannot be used again.
        VersionDeleted = "version_deleted",
        /// The version was removed (unpublished or taken down; 410): the message names the
        /// reason class. Its number cannot be used again.
        VersionRemoved = "version_removed",
        /// The publisher may no longer unpublish the version (past the hub's window, or
        /// downloaded too often); only an operator's takedown removes it now.
        UnpublishRefused = "unpublish_refused",
        /// An OIDC ID token offered for trusted publishing was refused (401): the message names
        /// the check that failed (signature, `alg`, `kid`, `iss`, `aud`, `exp`, `nbf`, `iat`,
        /// subject, replay, or the issuer's address refused by the hub's outbound address
        /// policy).
        OidcTokenRefused = "oidc_token_refused",
        /// The OIDC issuer's discovery document or keys could not be fetched (503).
        OidcIssuerUnavailable = "oidc_issuer_unavailable",
        /// A malformed trusted publisher (issuer, audience or subject pattern).
        InvalidTrustedPublisher = "invalid_trusted_publisher",
        /// No such trusted publisher.
        TrustedPublisherNotFound = "trusted_publisher_not_found",
        /// The last owner of a namespace cannot leave it.
        LastOwner = "last_owner",
        /// Another change got there first.
        Conflict = "conflict",
        /// 401 from the framework.
        Unauthorized = "unauthorized",
        /// 403 from the framework.
        Forbidden = "forbidden",
        /// The route does not take this method.
        MethodNotAllowed = "method_not_allowed",
        /// No acceptable representation.
        NotAcceptable = "not_acceptable",
        /// The body is past the route's limit.
        PayloadTooLarge = "payload_too_large",
        /// The body's content type is not JSON.
        UnsupportedMediaType = "unsupported_media_type",
        /// Rate-limited.
        TooManyRequests = "too_many_requests",
        /// The request took longer than `request_timeout_secs`.
        RequestTimeout = "request_timeout",
        /// Search is not enabled on this hub.
        SearchUnavailable = "search_unavailable",
        /// The hub is not ready (its database does not answer, or its search index is still
        /// catching up with the changes after a start).
        NotReady = "not_ready",
        /// The blob backend (the upstream OCI registry) does not answer: retry after the
        /// `Retry-After` seconds; nothing was recorded.
        BlobsUnavailable = "blobs_unavailable",
        /// The blob backend (the upstream OCI registry) refused to store or serve a blob (a
        /// read-only registry, a policy, credentials it rejects): nothing was recorded, and
        /// retrying will not help until the hub's operator mends the registry or its settings.
        BlobsRefused = "blobs_refused",
        /// The database does not answer: nothing was changed; retry after `Retry-After`.
        DatabaseUnavailable = "database_unavailable",
        /// The hub failed; it logged why.
        Internal = "internal",
        /// Any other error status.
        Error = "error",
    }
}

impl ErrorCode {
    /// A refusal about the caller's rights (scope, namespace, membership, role, administrator),
    /// as opposed to, say, an untrusted signing key, which is also a 403.
    pub fn is_about_rights(&self) -> bool {
        matches!(
            self,
            ErrorCode::Forbidden
                | ErrorCode::ForbiddenScope
                | ErrorCode::ForbiddenNamespace
                | ErrorCode::NotMember
                | ErrorCode::ForbiddenRole
                | ErrorCode::AdminOnly
                | ErrorCode::ForbiddenExpiry
        )
    }
}

/// The body of every error answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// Stable, machine-readable (`version_exists`, `forbidden_scope`, …).
    pub code: ErrorCode,
    /// For people: what went wrong and what to do.
    pub message: String,
    /// With `version_removed` (410, and 409 on a publish of a removed number): what removed the
    /// version and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<Removed>,
}

/// How a removed version went (issue 33): the machine-readable part of a `version_removed`
/// answer, from its tombstone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Removed {
    /// The reason class: `unpublished` (by its publisher), an operator takedown's `malware`,
    /// `legal`, `security`, `abuse` or `policy` — or `deleted`: deleted by an operator
    /// (`ofc-hub admin delete`, or any removal before reason classes existed), no class given.
    pub reason: String,
    /// When it was removed (Unix ms).
    pub removed_at: i64,
    /// The manifest digest that is gone, when the tombstone recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_digest: Option<String>,
}

impl Removed {
    /// The class of a removal by an operator's delete, which gives none.
    pub const DELETED: &'static str = "deleted";
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for ErrorCode {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(ErrorCode::KNOWN.iter().copied()))
            .description(Some(
                "Stable error code; clients must accept codes they do not know.",
            ))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for ErrorCode {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_ones_are_kept() {
        for known in ErrorCode::KNOWN {
            let c = ErrorCode::from(*known);
            assert!(!matches!(c, ErrorCode::Other(_)), "{known}");
            assert_eq!(serde_json::to_string(&c).unwrap(), format!("\"{known}\""));
        }
        let b: ErrorBody =
            serde_json::from_str(r#"{"code":"from_the_future","message":"m"}"#).unwrap();
        assert_eq!(b.code, ErrorCode::Other("from_the_future".into()));
        assert_eq!(ErrorCode::VersionExists.as_str(), "version_exists");
    }
}
