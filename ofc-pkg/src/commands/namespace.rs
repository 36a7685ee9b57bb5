//! `ofc namespace …`: a namespace on the hub — its trusted publishers (`trust`;
//! [`super::trusted`]).

use anyhow::Result;

use crate::output::{ExitStatus, Output};

/// `ofc namespace …`.
#[derive(Debug, clap::Subcommand)]
pub enum NamespaceCommand {
    /// Trusted publishing: which CI identities (OIDC issuer and subject) may publish to a
    /// namespace with `ofc publish --oidc` ([`super::trusted`]).
    #[command(subcommand)]
    Trust(super::trusted::TrustedCommand),
}

/// Runs the verb.
pub fn run(cmd: &NamespaceCommand, out: &mut Output) -> Result<ExitStatus> {
    match cmd {
        NamespaceCommand::Trust(c) => super::trusted::run(c, out),
    }
}
