//! The `ofc` command.

fn main() -> std::process::ExitCode {
    ofc_pkg::cli::main()
}
