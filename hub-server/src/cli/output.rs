//! Data goes to standard output (everything else to standard error).

#[allow(clippy::print_stdout)]
pub(crate) fn out(s: impl std::fmt::Display) {
    println!("{s}");
}
