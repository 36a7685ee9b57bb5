//! Synonym sets applied at query time: a query word also finds the words of its sets, ranked a
//! little below the word itself. Nothing is indexed differently, so a changed set takes effect
//! on the next search, without reindexing.
//!
//! The file format is the one Solr, Elasticsearch and OpenSearch read (`synonyms.txt`), for
//! single words:
//!
//! ```text
//! # a comment
//! chart, plot, graph          multi-way: each word finds the others
//! db, database => postgres    one-way: `db` and `database` find `postgres`, not the reverse
//! ```
//!
//! Every entry must be one word as search reads a query (lowercase; `time-series` is two
//! words): anything else is refused with the line it is on. [`Synonyms::default_set`] is the
//! set the hub ships (`hub-search/synonyms/default.txt`).

use std::collections::HashMap;

use crate::words::query_words;

/// The set shipped with the hub.
pub const DEFAULT_SET: &str = include_str!("../synonyms/default.txt");

/// Most synonyms one word expands to (a query stays bounded whatever the file says).
pub const MAX_PER_WORD: usize = 24;

/// A mistake in a synonym file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{line}: {message}")]
pub struct SynonymError {
    /// The file (or `default set`).
    pub source_name: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Word → the words it also finds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Synonyms {
    map: HashMap<String, Vec<String>>,
}

impl Synonyms {
    /// No synonyms.
    pub fn none() -> Self {
        Self::default()
    }

    /// The set shipped with the hub.
    pub fn default_set() -> Self {
        Self::parse(DEFAULT_SET, "default set").expect("the default synonym set parses")
    }

    /// Parses a synonym file; `source_name` names it in errors.
    pub fn parse(text: &str, source_name: &str) -> Result<Self, SynonymError> {
        let mut map: HashMap<String, Vec<String>> = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let err = |message: String| SynonymError {
                source_name: source_name.to_string(),
                line: i + 1,
                message,
            };
            let line = raw.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let sides: Vec<&str> = line.split("=>").collect();
            let words = |side: &str| -> Result<Vec<String>, SynonymError> {
                let mut out = Vec::new();
                for entry in side.split(',') {
                    let entry = entry.trim();
                    if entry.is_empty() {
                        return Err(err("an empty entry (two commas, or one at an end)".into()));
                    }
                    let read = query_words(entry);
                    if read.len() != 1 || read[0] != entry.to_lowercase() {
                        return Err(err(format!(
                            "`{entry}` is not one search word (search reads it as {}); \
                             synonyms are single lowercase words",
                            if read.is_empty() {
                                "nothing".to_string()
                            } else {
                                read.iter()
                                    .map(|w| format!("`{w}`"))
                                    .collect::<Vec<_>>()
                                    .join(" ")
                            }
                        )));
                    }
                    if !out.contains(&read[0]) {
                        out.push(read[0].clone());
                    }
                }
                Ok(out)
            };
            match sides.as_slice() {
                [all] => {
                    let set = words(all)?;
                    if set.len() < 2 {
                        return Err(err(format!(
                            "a set needs two words or more, or `=>` for a one-way rule: `{line}`"
                        )));
                    }
                    for w in &set {
                        let others = set.iter().filter(|o| *o != w).cloned();
                        add(&mut map, w, others);
                    }
                }
                [from, to] => {
                    let from = words(from)?;
                    let to = words(to)?;
                    for w in &from {
                        add(&mut map, w, to.iter().filter(|o| *o != w).cloned());
                    }
                }
                _ => return Err(err("more than one `=>` on the line".into())),
            }
        }
        for v in map.values_mut() {
            v.truncate(MAX_PER_WORD);
        }
        Ok(Self { map })
    }

    /// The words `word` also finds (none when it has no set).
    pub fn of(&self, word: &str) -> &[String] {
        self.map.get(word).map_or(&[], Vec::as_slice)
    }

    /// How many words have synonyms.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No word has synonyms.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

fn add(map: &mut HashMap<String, Vec<String>>, word: &str, more: impl Iterator<Item = String>) {
    let entry = map.entry(word.to_string()).or_default();
    for m in more {
        if !entry.contains(&m) {
            entry.push(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Synonyms;

    #[test]
    fn multi_way_and_one_way() {
        let s = Synonyms::parse(
            "# c\nchart, plot, graph\n\ndb, database => postgres, mysql # trailing\n",
            "t",
        )
        .unwrap();
        assert_eq!(s.of("chart"), ["plot", "graph"]);
        assert_eq!(s.of("graph"), ["chart", "plot"]);
        assert_eq!(s.of("db"), ["postgres", "mysql"]);
        assert_eq!(s.of("database"), ["postgres", "mysql"]);
        assert!(s.of("postgres").is_empty(), "one way only");
        assert!(s.of("unknown").is_empty());
    }

    #[test]
    fn mistakes_name_their_line() {
        for (text, line, says) in [
            ("a, b\nc,, d\n", 2, "empty entry"),
            (
                "a, b\n\n# x\ntime-series, timeseries\n",
                4,
                "not one search word",
            ),
            ("lonely\n", 1, "two words or more"),
            ("a => b => c\n", 1, "more than one `=>`"),
            ("a, b\nx => \n", 2, "empty entry"),
            ("Data Store, db\n", 1, "not one search word"),
        ] {
            let e = Synonyms::parse(text, "syn.txt").unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(
                e.to_string().starts_with(&format!("syn.txt:{line}: ")),
                "{e}"
            );
            assert!(e.message.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn the_default_set_parses_and_covers_the_usual_vocabulary() {
        let s = Synonyms::default_set();
        assert!(s.of("db").contains(&"postgres".to_string()));
        assert!(s.of("plots").contains(&"charts".to_string()));
        assert!(s.of("crawl").contains(&"scrape".to_string()));
        assert!(s.of("translate").contains(&"l10n".to_string()));
        assert!(s.of("localization").contains(&"i18n".to_string()));
        // Never a target: it stems to `local`.
        assert!(!s.of("translate").contains(&"localization".to_string()));
    }
}
