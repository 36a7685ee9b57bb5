//! Errors that name what was wrong: a field path, a position in the source text and a message.
//!
//! Every document parser in this crate reports problems as [`Diagnostics`]. A diagnostic carries
//! the [`FieldPath`] of the offending field (`capabilities[0].inputSchema`) and, when the document
//! came from text, the 1-based line and column of that field's value, so `ofc validate` can print
//! `file:line:col: field: what is wrong`.

use std::fmt;

/// One step of a path into a document.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Segment {
    /// A key of a mapping.
    Key(String),
    /// An index into a sequence.
    Index(usize),
}

/// Where a field lives inside a document, e.g. `agents[2].id`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldPath(Vec<Segment>);

impl FieldPath {
    /// The document itself.
    pub fn root() -> Self {
        Self(Vec::new())
    }

    /// Parses the dotted form produced by [`fmt::Display`] (`a.b[3].c`). Keys containing `.` or
    /// `[` cannot be expressed in this form; they are not used by ofc's documents.
    pub fn parse(s: &str) -> Self {
        let mut out = Vec::new();
        for part in s.split('.').filter(|p| !p.is_empty()) {
            let mut rest = part;
            if let Some(i) = rest.find('[') {
                if i > 0 {
                    out.push(Segment::Key(rest[..i].to_string()));
                }
                rest = &rest[i..];
                while let Some(stripped) = rest.strip_prefix('[') {
                    let Some(end) = stripped.find(']') else { break };
                    match stripped[..end].parse() {
                        Ok(n) => out.push(Segment::Index(n)),
                        Err(_) => out.push(Segment::Key(stripped[..end].to_string())),
                    }
                    rest = &stripped[end + 1..];
                }
            } else {
                out.push(Segment::Key(rest.to_string()));
            }
        }
        Self(out)
    }

    /// This path with a key appended.
    pub fn key(&self, key: impl Into<String>) -> Self {
        let mut v = self.0.clone();
        v.push(Segment::Key(key.into()));
        Self(v)
    }

    /// This path with an index appended.
    pub fn index(&self, index: usize) -> Self {
        let mut v = self.0.clone();
        v.push(Segment::Index(index));
        Self(v)
    }

    /// The path one level up, or `None` at the root.
    pub fn parent(&self) -> Option<Self> {
        if self.0.is_empty() {
            None
        } else {
            Some(Self(self.0[..self.0.len() - 1].to_vec()))
        }
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// True for the document itself.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(document)");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Segment::Key(k) if i == 0 => write!(f, "{k}")?,
                Segment::Key(k) => write!(f, ".{k}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// A 1-based line and column in a source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    /// Line, starting at 1.
    pub line: u32,
    /// Column in characters, starting at 1.
    pub col: u32,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// One problem found in a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The field that is wrong; the root for problems with the whole document.
    pub path: FieldPath,
    /// Where in the text, when known.
    pub position: Option<Position>,
    /// What is wrong, lowercase, no trailing period.
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic for `path` with no position yet.
    pub fn new(path: FieldPath, message: impl Into<String>) -> Self {
        Self {
            path,
            position: None,
            message: message.into(),
        }
    }

    /// Sets the position.
    pub fn at(mut self, position: Option<Position>) -> Self {
        self.position = position;
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = self.position {
            write!(f, "{p}: ")?;
        }
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// All problems found in one document; never empty when returned as an error.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// A single diagnostic.
    pub fn one(path: FieldPath, message: impl Into<String>) -> Self {
        Self(vec![Diagnostic::new(path, message)])
    }

    /// Adds a problem.
    pub fn push(&mut self, path: FieldPath, message: impl Into<String>) {
        self.0.push(Diagnostic::new(path, message));
    }

    /// Adds all problems of another set.
    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }

    /// Adds the problems of `other` with `prefix` put in front of their paths.
    pub fn extend_under(&mut self, prefix: &FieldPath, other: Diagnostics) {
        for mut d in other.0 {
            let mut segs = prefix.segments().to_vec();
            segs.extend(d.path.0);
            d.path = FieldPath(segs);
            self.0.push(d);
        }
    }

    /// True when nothing was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok(value)` when empty, else `Err(self)`.
    pub fn into_result<T>(self, value: T) -> Result<T, Diagnostics> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }

    /// Iterates the problems.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Self(vec![d])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_display_and_parse_round_trip() {
        let p = FieldPath::root()
            .key("capabilities")
            .index(2)
            .key("inputSchema");
        assert_eq!(p.to_string(), "capabilities[2].inputSchema");
        assert_eq!(FieldPath::parse("capabilities[2].inputSchema"), p);
        assert_eq!(
            FieldPath::parse("a[1][2]"),
            FieldPath::root().key("a").index(1).index(2)
        );
        assert_eq!(FieldPath::root().to_string(), "(document)");
    }

    #[test]
    fn diagnostic_display_names_field_and_position() {
        let d = Diagnostic::new(FieldPath::root().key("name"), "must be lowercase")
            .at(Some(Position { line: 3, col: 7 }));
        assert_eq!(d.to_string(), "3:7: name: must be lowercase");
    }
}
