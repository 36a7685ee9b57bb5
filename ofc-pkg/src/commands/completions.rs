//! `ofc completions SHELL`: prints the completion script for bash, zsh, fish, PowerShell or
//! elvish, generated from the same clap definitions the command parses with.

use anyhow::Result;

use crate::output::{ExitStatus, Output};

/// Arguments of `ofc completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// Runs the verb: the script of `cmd`, the command line's definitions.
pub fn run(
    args: &CompletionsArgs,
    mut cmd: clap::Command,
    _out: &mut Output,
) -> Result<ExitStatus> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "ofc", &mut script);
    let mut stdout = std::io::stdout().lock();
    std::io::Write::write_all(&mut stdout, &script)?;
    std::io::Write::flush(&mut stdout)?;
    Ok(ExitStatus::Success)
}
