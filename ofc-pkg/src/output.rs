//! How the command talks: data on stdout, everything else on stderr; errors as a cause chain
//! followed by `hint:` lines; `NO_COLOR` honoured (no colour is used yet).

use std::io::Write;
use std::process::ExitCode;

/// The outcome of a verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Everything worked.
    Success,
    /// The operation failed or found something invalid.
    Failure,
    /// The command line was wrong (bad flag, missing path).
    Usage,
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> Self {
        match s {
            ExitStatus::Success => ExitCode::SUCCESS,
            ExitStatus::Failure => ExitCode::from(1),
            ExitStatus::Usage => ExitCode::from(2),
        }
    }
}

/// An error meant for a person: what failed, why, and what to do.
#[derive(Debug)]
pub struct UserError {
    /// What went wrong, lowercase, no trailing period.
    pub message: String,
    /// Suggestions printed as `hint:` lines.
    pub hints: Vec<String>,
}

impl UserError {
    /// An error with no hints.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hints: Vec::new(),
        }
    }

    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }
}

impl std::fmt::Display for UserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UserError {}

/// Where the command writes.
#[derive(Debug)]
pub struct Output {
    /// `--json` was given.
    pub json: bool,
}

impl Output {
    /// A writer for the given mode.
    pub fn new(json: bool) -> Self {
        Self { json }
    }

    /// Writes a line of data to stdout.
    pub fn data(&mut self, line: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
    }

    /// Writes a JSON document to stdout.
    pub fn json_value(&mut self, value: &serde_json::Value) {
        let mut out = std::io::stdout().lock();
        let _ = serde_json::to_writer_pretty(&mut out, value);
        let _ = writeln!(out);
    }

    /// Writes a status line to stderr.
    pub fn status(&mut self, line: &str) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
    }

    /// Prints an error with its cause chain and hints to stderr.
    pub fn error(&mut self, e: &anyhow::Error) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "error: {e}");
        for cause in e.chain().skip(1) {
            let _ = writeln!(err, "  caused by: {cause}");
        }
        // Hints from any level: a `UserError` may be the top message or a cause.
        for cause in e.chain() {
            if let Some(u) = cause.downcast_ref::<UserError>() {
                for h in &u.hints {
                    let _ = writeln!(err, "hint: {h}");
                }
            }
        }
    }
}
