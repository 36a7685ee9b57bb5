//! The rules of who may do what, without a database: API tokens (`token.rs`), scopes,
//! namespace patterns, roles and the authorization decision (`access.rs`), passwords
//! (`password.rs`) and the limiter on authentication failures (`limiter.rs`). The checks that
//! read the store (a token's principal, a password log-in) are [`crate::accounts`]'.

mod access;
mod limiter;
mod password;
mod token;

pub use access::{
    Denied, Principal, Role, Scope, TrustedOrigin, check_pattern, parse_scopes, pattern_covers,
    pattern_matches,
};
pub use limiter::FailureLimiter;
pub use password::{dummy_password_hash, hash_password, verify_password};
pub use token::{AGENT_TOKEN_PREFIX, Secret, TOKEN_PREFIX, generate_token, hash_token};
