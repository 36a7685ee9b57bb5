//! `ofc run [MESSAGE] [-f blueprint.yaml]`: the blueprint's agents on a live floor (see
//! [`crate::run`]).

use std::process::ExitCode;

use crate::output::Output;
pub use crate::run::RunArgs;

/// Runs `ofc run`; the exit code says how the turn ended (see [`crate::run::exit`]).
pub fn run(args: &RunArgs, out: &mut Output) -> ExitCode {
    crate::run::main(args, out)
}
