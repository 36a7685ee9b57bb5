//! `ofc-hub` itself, built with the cargo feature `upgrade-test-migration`: one additive
//! migration more than this commit has (hub-core/src/store/upgrade_test.rs). It is "the new
//! binary" the rolling-upgrade test (`tests/tests/it/deploy_e2e.rs`) rolls the replicas onto;
//! `scripts/build-hub-next` builds it. Not for use anywhere else.

#[path = "../src/cli/mod.rs"]
mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
