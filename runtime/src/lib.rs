//! Floors: the OFC turn-taking controller and the pieces around it.
//!
//! [`controller`] decides who speaks next on a floor — events in, actions out, no I/O and no
//! clock — following the Turn-Taking Protocol of the OFC draft. [`mention`] parses `@name?`
//! requests and `@name` references; [`handle`] holds the floor's names.

pub mod controller;
pub mod error;
pub mod handle;
pub mod mention;

pub use controller::{
    Action, Activation, AgentSpec, CallId, Controller, CyclePolicy, Event, EventKind, Limits, Note,
    PASS_MARKER, PollAnswer, RoundId, TurnEndReason, TurnId, Unanswered, WakeAnswer, WakeReason,
    is_pass,
};
pub use error::{Error, Result};
pub use handle::{Handle, Speaker};
pub use mention::{Mention, MentionKind, mentions};
