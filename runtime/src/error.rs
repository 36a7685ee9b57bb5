//! The one error type of this crate.

use crate::handle::Handle;

/// Everything that can go wrong while setting up a floor.
///
/// The turn-taking controller itself never fails once built: every surprise during a turn (an
/// agent error, a stale answer, a guard tripping) is an [`Action`](crate::controller::Action),
/// not an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A handle does not match `[a-z0-9][a-z0-9_-]{0,63}` (an optional leading `@` aside).
    #[error("invalid handle {input:?}: {reason}")]
    InvalidHandle {
        /// What was given.
        input: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The same handle was given to two agents of one floor.
    #[error("agent {0} is on the floor twice")]
    DuplicateAgent(Handle),
    /// `@user` names the human participant and cannot be an agent.
    #[error("{0} is reserved for the human participant")]
    ReservedHandle(Handle),
    /// The roster cannot change while a turn is in progress.
    #[error("a turn is in progress; the roster can change when it ends")]
    TurnInProgress,
    /// A limit that must be at least 1 was 0.
    #[error("limit `{name}` must be at least 1")]
    InvalidLimit {
        /// The field of [`Limits`](crate::controller::Limits).
        name: &'static str,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
