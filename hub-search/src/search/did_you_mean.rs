//! "Did you mean": each word the index does not know, replaced by the most common indexed word
//! within the typo distance. It walks the typo field's dictionary with the same automaton as a
//! typo match, so only words the index has are ever suggested.

use std::collections::BTreeMap;

use tantivy::{Searcher, Term};

use crate::error::{Error, Result};
use crate::index::SearchIndex;
use crate::mapping::field;
use crate::search::doc_freqs::DocFreqs;
use crate::search::plan::{FUZZY_MIN_CHARS, FUZZY_TWO_EDITS_CHARS};
use crate::search::scorers::loose::LooseMatch;

impl SearchIndex {
    /// The query with each word the index does not know replaced by the most common indexed
    /// word within the typo distance (1 edit from 4 characters, 2 from 8); `None` when no word
    /// changes. Only the index's own words are suggested.
    pub(super) fn did_you_mean(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        words: &[String],
    ) -> Result<Option<String>> {
        let typo = self.fields.get(field::TYPO);
        let mut changed = false;
        let mut out = Vec::with_capacity(words.len());
        for w in words {
            let chars = w.chars().count();
            let exact = Term::from_field_text(typo, w);
            if chars < FUZZY_MIN_CHARS || freqs.get(searcher, &exact)? > 0 {
                out.push(w.clone());
                continue;
            }
            // The closest words first (1 edit, then 2 from 8 characters), then the most used.
            let max_edits = if chars >= FUZZY_TWO_EDITS_CHARS { 2 } else { 1 };
            let mut counts: BTreeMap<String, u64> = Default::default();
            for edits in 1..=max_edits {
                let m = LooseMatch::new(exact.clone(), edits);
                for reader in searcher.segment_readers() {
                    let inverted = reader.inverted_index(typo)?;
                    let mut stream = inverted
                        .terms()
                        .search(m.dfa.as_ref())
                        .into_stream()
                        .map_err(|e| Error::Io("the term dictionary".into(), e))?;
                    while stream.advance() {
                        if let Ok(t) = std::str::from_utf8(stream.key()) {
                            *counts.entry(t.to_owned()).or_default() +=
                                u64::from(stream.value().doc_freq);
                        }
                    }
                }
                if !counts.is_empty() {
                    break;
                }
            }
            // Most agents first; among equals the first in byte order (deterministic).
            match counts
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            {
                Some((best, _)) if best != *w => {
                    changed = true;
                    out.push(best);
                }
                _ => out.push(w.clone()),
            }
        }
        Ok(changed.then(|| out.join(" ")))
    }
}
