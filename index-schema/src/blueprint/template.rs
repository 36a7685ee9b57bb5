//! Prompt templates, as the OFC reference CLI has them: a prompt holding `<%` is a template,
//! parsed when the blueprint is loaded (a syntax error fails the load) and rendered before
//! every turn, so a file or variable it reads is read afresh each time.
//!
//! - `<% readfile "path" %>`: the file's text (where it may be read from is the loader's rule);
//! - `<% env "NAME" %>`: the variable's value (empty if set but empty); unset, the turn fails;
//! - `<% env "NAME" "default" %>`: `default` when NAME is unset;
//! - `<% "text" %>`: the text itself, which is how a literal `<%` is written (`<% "<%" %>`);
//! - `<%- ` and ` -%>` also drop the whitespace before or after the action.
//!
//! Strings are `"…"` (with `\"`, `\\`, `\n`, `\t`) or `` `…` `` (raw). What a function returns is
//! never rendered again. This module parses and renders; the caller reads files and variables.

use std::fmt;

/// What an action asks of the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `readfile "path"`.
    ReadFile(String),
    /// `env "NAME"` or `env "NAME" "default"`.
    Env {
        /// The variable.
        name: String,
        /// Used when it is unset.
        default: Option<String>,
    },
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Call::ReadFile(p) => write!(f, "readfile {p:?}"),
            Call::Env {
                name,
                default: None,
            } => write!(f, "env {name:?}"),
            Call::Env {
                name,
                default: Some(d),
            } => write!(f, "env {name:?} {d:?}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Call(Call),
}

/// A parsed prompt template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(Vec<Piece>);

/// Whether `prompt` is a template (holds `<%`).
pub fn is_template(prompt: &str) -> bool {
    prompt.contains("<%")
}

impl Template {
    /// Parses `text`; the error says what is wrong and where (`line N`).
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut pieces = Vec::new();
        let mut rest = text;
        let mut trim_next = false;
        while let Some(at) = rest.find("<%") {
            let mut before = &rest[..at];
            if trim_next {
                before = before.trim_start();
            }
            let after_open = &rest[at + 2..];
            let (trim_before, body_start) = match after_open.strip_prefix('-') {
                Some(b) if b.starts_with(char::is_whitespace) => (true, b),
                _ => (false, after_open),
            };
            if trim_before {
                before = before.trim_end();
            }
            if !before.is_empty() {
                pieces.push(Piece::Text(before.to_owned()));
            }
            let line = text[..text.len() - rest.len() + at].matches('\n').count() + 1;
            let (piece, trim_after, tail) =
                action(body_start).map_err(|e| format!("prompt template, line {line}: {e}"))?;
            pieces.push(piece);
            trim_next = trim_after;
            rest = tail;
        }
        let last = if trim_next { rest.trim_start() } else { rest };
        if !last.is_empty() {
            pieces.push(Piece::Text(last.to_owned()));
        }
        Ok(Template(pieces))
    }

    /// The calls the template makes, in order (for checks at load).
    pub fn calls(&self) -> impl Iterator<Item = &Call> {
        self.0.iter().filter_map(|p| match p {
            Piece::Call(c) => Some(c),
            Piece::Text(_) => None,
        })
    }

    /// The text, each call answered by `answer`; the first failing call's error, naming it.
    pub fn render(
        &self,
        answer: &mut dyn FnMut(&Call) -> Result<String, String>,
    ) -> Result<String, String> {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Call(c) => out.push_str(&answer(c).map_err(|e| format!("`{c}`: {e}"))?),
            }
        }
        Ok(out)
    }
}

/// One action after its `<%` (and trim marker): the piece, whether it trims what follows, and
/// the text after its `%>`.
fn action(s: &str) -> Result<(Piece, bool, &str), String> {
    let mut words: Vec<String> = Vec::new();
    let mut rest = s.trim_start();
    loop {
        if let Some(tail) = rest.strip_prefix("%>") {
            return finish(words, false, tail);
        }
        // Reached only after a space: a word must be followed by one or by `%>`.
        if let Some(tail) = rest.strip_prefix("-%>") {
            return finish(words, true, tail);
        }
        if rest.is_empty() {
            return Err("`<%` is not closed by `%>`".into());
        }
        let (word, tail) = word(rest)?;
        words.push(word);
        if !(tail.is_empty() || tail.starts_with(char::is_whitespace) || tail.starts_with("%>")) {
            let last = words.last().map(String::as_str).unwrap_or_default();
            let shown = match last.strip_prefix('"') {
                Some(q) => format!("{q:?}"),
                None => last.to_owned(),
            };
            return Err(format!("expected a space or `%>` after `{shown}`"));
        }
        rest = tail.trim_start();
    }
}

/// A word: a function name or a quoted string (marked by a leading `"`, kept unquoted after it).
fn word(s: &str) -> Result<(String, &str), String> {
    if let Some(raw) = s.strip_prefix('`') {
        let end = raw.find('`').ok_or("a `` ` `` string is not closed")?;
        return Ok((format!("\"{}", &raw[..end]), &raw[end + 1..]));
    }
    if let Some(q) = s.strip_prefix('"') {
        let mut out = String::from("\"");
        let mut chars = q.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => return Ok((out, &q[i + 1..])),
                '\\' => match chars.next().map(|(_, c)| c) {
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(c) => return Err(format!("unknown escape `\\{c}` in a string")),
                    None => break,
                },
                '\n' => return Err("a `\"` string does not span lines (use `` ` ``)".into()),
                c => out.push(c),
            }
        }
        return Err("a `\"` string is not closed".into());
    }
    let end = s
        .find(|c: char| c.is_whitespace() || c == '%')
        .unwrap_or(s.len());
    if end == 0 {
        return Err(format!("unexpected `{}`", s.chars().next().unwrap_or(' ')));
    }
    Ok((s[..end].to_owned(), &s[end..]))
}

fn finish(words: Vec<String>, trim: bool, tail: &str) -> Result<(Piece, bool, &str), String> {
    let string = |w: &String| w.strip_prefix('"').map(str::to_owned);
    let args: Option<Vec<String>> = words.iter().skip(1).map(string).collect();
    let piece = match (words.first().map(String::as_str), args) {
        (None, _) => return Err("an empty `<% %>`".into()),
        (Some(w), _) if w.starts_with('"') && words.len() == 1 => Piece::Text(w[1..].to_owned()),
        (Some("readfile"), Some(a)) if a.len() == 1 => Piece::Call(Call::ReadFile(a[0].clone())),
        (Some("env"), Some(a)) if a.len() == 1 || a.len() == 2 => Piece::Call(Call::Env {
            name: a[0].clone(),
            default: a.get(1).cloned(),
        }),
        (Some(f @ ("readfile" | "env")), _) => {
            return Err(format!(
                "`{f}` takes {}",
                if f == "env" {
                    "a quoted variable name and optionally a quoted default"
                } else {
                    "one quoted path"
                }
            ));
        }
        (Some(other), _) => {
            return Err(format!(
                "unknown `{}`: a prompt template has `readfile \"path\"`, `env \"NAME\"`, \
                 `env \"NAME\" \"default\"` and `\"text\"`",
                other.trim_start_matches('"')
            ));
        }
    };
    Ok((piece, trim, tail))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str) -> Result<String, String> {
        Template::parse(text)?.render(&mut |c| match c {
            Call::ReadFile(p) if p == "notes.md" => Ok("NOTES".into()),
            Call::ReadFile(p) => Err(format!("no file {p}")),
            Call::Env { name, default } => match (name.as_str(), default) {
                ("WHO", _) => Ok("Ada".into()),
                (_, Some(d)) => Ok(d.clone()),
                (n, None) => Err(format!("{n} is not set")),
            },
        })
    }

    #[test]
    fn functions_and_text() {
        assert_eq!(render("plain").unwrap(), "plain");
        assert_eq!(
            render("Hi <% env \"WHO\" %>, read <%readfile \"notes.md\"%>.").unwrap(),
            "Hi Ada, read NOTES."
        );
        assert_eq!(render("<% env \"NOPE\" \"x\" %>").unwrap(), "x");
        assert_eq!(render("<% env `NOPE` `a\\b` %>").unwrap(), "a\\b");
        assert_eq!(render("a <% \"<%\" %> b").unwrap(), "a <% b");
        assert_eq!(render("<% \"q\\\"\\n\" %>").unwrap(), "q\"\n");
    }

    #[test]
    fn trim_markers_drop_the_whitespace_beside_them() {
        assert_eq!(render("a  \n<%- env \"WHO\" -%>\n  b").unwrap(), "aAdab");
        assert!(render("a <%-x%>").unwrap_err().contains("unknown `-x`"));
    }

    #[test]
    fn syntax_errors_say_what_and_where() {
        for (text, want) in [
            (
                "x\n<% readfile %>",
                "line 2: `readfile` takes one quoted path",
            ),
            ("<% readfile \"a\" \"b\" %>", "takes one quoted path"),
            ("<% env %>", "`env` takes a quoted variable name"),
            ("<% include \"x\" %>", "unknown `include`"),
            ("<% env \"A\"", "not closed by `%>`"),
            ("<% \"open %>", "string is not closed"),
            ("<% %>", "empty"),
            ("<% env \"A\"\"B\" %>", "expected a space"),
        ] {
            let e = Template::parse(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_failing_call_is_named() {
        let e = render("<% env \"NOPE\" %>").unwrap_err();
        assert_eq!(e, "`env \"NOPE\"`: NOPE is not set");
        let e = render("<% readfile \"../x\" %>").unwrap_err();
        assert!(e.starts_with("`readfile \"../x\"`"), "{e}");
    }

    #[test]
    fn output_is_not_rendered_again() {
        let t = Template::parse("<% \"<% env \\\"WHO\\\" %>\" %>").unwrap();
        assert_eq!(
            t.render(&mut |_| unreachable!()).unwrap(),
            "<% env \"WHO\" %>"
        );
    }
}
