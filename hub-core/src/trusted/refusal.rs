//! Why an ID token was refused, and how a refusal answers: 401 `oidc_token_refused` naming the
//! check (`issuer_address` when the outbound address policy refused the issuer's address), or
//! 503 `oidc_issuer_unavailable` when the issuer's keys could not be fetched.

use crate::error::{CoreError, ErrorCode};

/// Why an ID token was refused; each names its check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not a JWT, or its JSON is wrong.
    Malformed(String),
    /// `alg` is `none`, `HS*` or unknown.
    Alg(String),
    /// `kid` missing or not among the issuer's keys.
    Kid(String),
    /// The key does not fit the algorithm.
    Key(String),
    /// The signature does not verify.
    Signature(String),
    /// `iss` is not an issuer the namespace trusts.
    Issuer(String),
    /// `aud` does not name the expected audience.
    Audience(String),
    /// `exp` passed (or missing).
    Expired(String),
    /// `nbf` in the future.
    NotYetValid(String),
    /// `iat` missing, in the future, or too long before `exp`.
    IssuedAt(String),
    /// `sub` matches no trusted pattern.
    Subject(String),
    /// The token was exchanged before.
    Replayed(String),
    /// The owner who registered the publisher no longer may publish there.
    Owner(String),
    /// The issuer's discovery document or keys could not be fetched.
    IssuerUnavailable(String),
    /// The issuer's (or its keys') address is one the outbound address policy refuses.
    IssuerAddress(String),
}

impl Refusal {
    /// The check's name, for logs.
    pub fn check(&self) -> &'static str {
        match self {
            Refusal::Malformed(_) => "malformed",
            Refusal::Alg(_) => "alg",
            Refusal::Kid(_) => "kid",
            Refusal::Key(_) => "key",
            Refusal::Signature(_) => "signature",
            Refusal::Issuer(_) => "iss",
            Refusal::Audience(_) => "aud",
            Refusal::Expired(_) => "exp",
            Refusal::NotYetValid(_) => "nbf",
            Refusal::IssuedAt(_) => "iat",
            Refusal::Subject(_) => "sub",
            Refusal::Replayed(_) => "replay",
            Refusal::Owner(_) => "owner",
            Refusal::IssuerUnavailable(_) => "issuer_unavailable",
            Refusal::IssuerAddress(_) => "issuer_address",
        }
    }

    /// What failed, for people.
    pub fn message(&self) -> &str {
        match self {
            Refusal::Malformed(m)
            | Refusal::Alg(m)
            | Refusal::Kid(m)
            | Refusal::Key(m)
            | Refusal::Signature(m)
            | Refusal::Issuer(m)
            | Refusal::Audience(m)
            | Refusal::Expired(m)
            | Refusal::NotYetValid(m)
            | Refusal::IssuedAt(m)
            | Refusal::Subject(m)
            | Refusal::Replayed(m)
            | Refusal::Owner(m)
            | Refusal::IssuerUnavailable(m)
            | Refusal::IssuerAddress(m) => m,
        }
    }
}

impl From<Refusal> for CoreError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::IssuerUnavailable(m) => {
                CoreError::unavailable(ErrorCode::OidcIssuerUnavailable, m)
            }
            r => CoreError::unauthenticated(
                ErrorCode::OidcTokenRefused,
                format!(
                    "trusted publishing refused ({}): {}",
                    r.check(),
                    r.message()
                ),
            ),
        }
    }
}
