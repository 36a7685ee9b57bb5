//! `ofc completions SHELL`: prints the completion script for bash, zsh, fish, PowerShell or
//! elvish, generated from the same clap definitions the command parses with.

use anyhow::Result;
use clap::CommandFactory as _;

use crate::cli::{Cli, CompletionsArgs};
use crate::output::{ExitStatus, Output};

/// Runs the verb.
pub fn run(args: &CompletionsArgs, _out: &mut Output) -> Result<ExitStatus> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "ofc", &mut script);
    let mut stdout = std::io::stdout().lock();
    std::io::Write::write_all(&mut stdout, &script)?;
    std::io::Write::flush(&mut stdout)?;
    Ok(ExitStatus::Success)
}
