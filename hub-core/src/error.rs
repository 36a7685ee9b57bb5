//! [`CoreError`]: what a core service refuses or fails with — a [`Kind`] (what sort of answer
//! it is: the HTTP adapters map each kind to one status), the stable
//! [`ErrorCode`] clients match on, and a message for people.

pub use index_schema::hub_api::ErrorCode;

use crate::auth::Denied;
use crate::blob::BlobError;
use crate::store::StoreError;

/// What sort of refusal or failure a [`CoreError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The request is malformed or breaks a rule (400).
    Invalid,
    /// No usable credentials (401).
    Unauthenticated,
    /// Not allowed (403).
    Forbidden,
    /// No such thing (404).
    NotFound,
    /// In the way of something that exists (409).
    Conflict,
    /// It was there and was removed for good (410).
    Gone,
    /// Larger than the hub takes (413).
    TooLarge,
    /// Too many failed authentications from this client (429).
    TooMany,
    /// A part of the hub is not there (503).
    Unavailable,
    /// The hub failed (500).
    Internal,
}

/// A refusal or failure of a core service.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {message}")]
pub struct CoreError {
    /// What sort it is.
    pub kind: Kind,
    /// The stable code.
    pub code: ErrorCode,
    /// For people: what went wrong and what to do.
    pub message: String,
    /// With `version_removed`: the tombstone's reason class and time, for the answer's body.
    pub removed: Option<Box<index_schema::hub_api::Removed>>,
}

/// What core services return.
pub type CoreResult<T> = Result<T, CoreError>;

impl CoreError {
    /// An error of any kind.
    pub fn new(kind: Kind, code: ErrorCode, message: impl Into<String>) -> Self {
        CoreError {
            kind,
            code,
            message: message.into(),
            removed: None,
        }
    }
    /// With the machine-readable part of a `version_removed` answer.
    pub fn with_removed(mut self, removed: index_schema::hub_api::Removed) -> Self {
        self.removed = Some(Box::new(removed));
        self
    }
    /// [`Kind::Invalid`].
    pub fn invalid(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(Kind::Invalid, code, message)
    }
    /// [`Kind::Unauthenticated`].
    pub fn unauthenticated(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(Kind::Unauthenticated, code, message)
    }
    /// [`Kind::Forbidden`].
    pub fn forbidden(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(Kind::Forbidden, code, message)
    }
    /// [`Kind::NotFound`].
    pub fn not_found(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(Kind::NotFound, code, message)
    }
    /// [`Kind::Conflict`].
    pub fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(Kind::Conflict, code, message)
    }
    /// [`Kind::TooLarge`].
    pub fn too_large(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(Kind::TooLarge, code, message)
    }
    /// [`Kind::Unavailable`]: a peer of the hub (the database) does not answer; retry.
    pub fn unavailable(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(Kind::Unavailable, code, message)
    }
    /// [`Kind::TooMany`]: a client blocked for `secs` more seconds.
    pub fn too_many(secs: u64) -> Self {
        Self::new(
            Kind::TooMany,
            ErrorCode::TooManyAuthFailures,
            format!("too many failed authentications from this client; retry in {secs} s"),
        )
    }
    /// [`Kind::Internal`], logged once here; the client sees no internals.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        tracing::error!(error = %err, "internal error");
        Self::new(Kind::Internal, ErrorCode::Internal, "internal server error")
    }
}

impl From<StoreError> for CoreError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict(m) => CoreError::conflict(ErrorCode::Conflict, m),
            StoreError::NotFound(m) => CoreError::not_found(ErrorCode::NotFound, m),
            StoreError::BlobBackend(why) => BlobError::Upstream(why).into(),
            StoreError::Lookalike(m) => CoreError::conflict(ErrorCode::NamespaceLookalike, m),
            StoreError::Quota(m) => {
                CoreError::forbidden(ErrorCode::QuotaExceeded, format!("quota exceeded: {m}"))
            }
            e if e.is_unavailable() => {
                tracing::warn!(error = %e, "the database is unavailable");
                CoreError::unavailable(
                    ErrorCode::DatabaseUnavailable,
                    "the database is unavailable; nothing was changed — retry shortly",
                )
            }
            other => CoreError::internal(other),
        }
    }
}

impl From<BlobError> for CoreError {
    /// An upstream registry that does not answer is [`Kind::Unavailable`] (the client retries;
    /// nothing was recorded), logged; one that refuses is the hub's failure
    /// ([`ErrorCode::BlobsRefused`], no retry), logged with its answer; any other blob failure
    /// is the hub's.
    fn from(e: BlobError) -> Self {
        match e {
            BlobError::Refused(why) => {
                tracing::error!(error = %why, "the blob backend refused");
                CoreError::new(
                    Kind::Internal,
                    ErrorCode::BlobsRefused,
                    "the hub's blob store (its upstream registry) refused this blob; nothing was \
                     recorded, and retrying will not help: the hub's operator must look at the \
                     registry (the hub's log has its answer)",
                )
            }
            BlobError::Upstream(why) => {
                tracing::warn!(error = %why, "the blob backend failed");
                CoreError::new(
                    Kind::Unavailable,
                    ErrorCode::BlobsUnavailable,
                    "the hub's blob store (its upstream registry) failed or does not answer; \
                     nothing was recorded: retry shortly",
                )
            }
            e => CoreError::internal(e),
        }
    }
}

/// The 403 of a refusal.
impl From<Denied> for CoreError {
    fn from(d: Denied) -> Self {
        match d {
            Denied::Scope(s) => CoreError::forbidden(
                ErrorCode::ForbiddenScope,
                format!("this token lacks the `{}` scope", s.as_str()),
            ),
            Denied::Namespace(n) => CoreError::forbidden(
                ErrorCode::ForbiddenNamespace,
                format!("this token is not valid for namespace `{n}`"),
            ),
            Denied::NotMember(n) => CoreError::forbidden(
                ErrorCode::NotMember,
                format!("you are not a member of namespace `{n}`"),
            ),
            Denied::Role(r, s) => CoreError::forbidden(
                ErrorCode::ForbiddenRole,
                format!(
                    "your role `{}` does not allow `{}` in this namespace",
                    r.as_str(),
                    s.as_str()
                ),
            ),
            Denied::AdminOnly => {
                CoreError::forbidden(ErrorCode::AdminOnly, "only a hub administrator may do this")
            }
        }
    }
}
