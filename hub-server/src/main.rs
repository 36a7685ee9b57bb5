//! `ofc-hub`: serve the hub, migrate its database, and administer it (see `cli/`).

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
