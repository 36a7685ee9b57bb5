//! Exit codes of `ofc run MESSAGE`: how the turn ended.

/// The turn ended with an answer to the user (or an agent asking the user).
pub const ANSWERED: u8 = 0;
/// `ofc run` itself failed (bad blueprint, an agent did not start…).
pub const FAILURE: u8 = 1;
/// Usage error.
pub const USAGE: u8 = 2;
/// No agent wanted to respond.
pub const NO_ONE_WOKE: u8 = 3;
/// A guard ended the turn (hop limit, pair limit, refused cycle).
pub const GUARD: u8 = 4;
/// An agent failed (error, deadline) and the turn ended.
pub const AGENT_ERROR: u8 = 5;
/// The turn was cancelled (Ctrl-C).
pub const CANCELLED: u8 = 130;
