//! `ofc namespace …`: a namespace on the hub — its verified domain (`verify`, `record`,
//! `show`, `unverify`; [`super::domain`]) and its trusted publishers (`trust`;
//! [`super::trusted`]).

use anyhow::Result;

use super::domain::{self, NsArgs, Verb, VerifyArgs};
use crate::output::{ExitStatus, Output};

/// `ofc namespace …`.
#[derive(Debug, clap::Subcommand)]
pub enum NamespaceCommand {
    /// Claim a domain for a namespace and prove it now (DNS TXT record or HTTPS file).
    Verify(VerifyArgs),
    /// Print the proof lines that would verify a namespace (one per live key).
    Record(NsArgs),
    /// Show a namespace's claimed domain and whether its proof holds.
    Show(NsArgs),
    /// Drop a namespace's claimed domain.
    Unverify(NsArgs),
    /// Trusted publishing: which CI identities (OIDC issuer and subject) may publish to a
    /// namespace with `ofc publish --oidc` ([`super::trusted`]).
    #[command(subcommand)]
    Trust(super::trusted::TrustedCommand),
}

/// Runs the verb.
pub fn run(cmd: &NamespaceCommand, out: &mut Output) -> Result<ExitStatus> {
    match cmd {
        NamespaceCommand::Verify(a) => domain::run(Verb::Verify(a), out),
        NamespaceCommand::Record(a) => domain::run(Verb::Record(a), out),
        NamespaceCommand::Show(a) => domain::run(Verb::Show(a), out),
        NamespaceCommand::Unverify(a) => domain::run(Verb::Unverify(a), out),
        NamespaceCommand::Trust(c) => super::trusted::run(c, out),
    }
}
