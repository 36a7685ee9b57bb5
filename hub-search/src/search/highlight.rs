//! Highlights: a snippet generator per highlighted stored field. It is what
//! `SnippetGenerator::create` builds, made from the query's own terms with the search's
//! memoised document frequencies and an analyzer that memoises stems (the English stemmer was
//! most of a highlight's time).

use std::collections::{BTreeMap, BTreeSet};

use tantivy::query::Query;
use tantivy::snippet::SnippetGenerator;
use tantivy::{Score, Searcher, TantivyError};

use crate::error::Result;
use crate::index::SearchIndex;
use crate::mapping::{analyzer, field, highlight_analyzer};
use crate::search::doc_freqs::DocFreqs;

/// Highlight fragment length.
const HIGHLIGHT_CHARS: usize = 160;

impl SearchIndex {
    /// What `SnippetGenerator::create` builds for a stored field (the query's words, weighted
    /// by `1 / (1 + document frequency)`): the words are the query's terms of [`field::TEXT`],
    /// whose analyzer the stored fields' text goes through, with stems memoised and the
    /// search's document frequencies.
    pub(super) fn highlighter(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        query: &dyn Query,
        name: &str,
    ) -> Result<SnippetGenerator> {
        let text = self.fields.get(field::TEXT);
        let mut terms = BTreeSet::new();
        query.query_terms(&mut |t, _| {
            if t.field() == text {
                terms.insert(t.clone());
            }
        });
        let mut weights = BTreeMap::new();
        for t in terms {
            let Some(word) = t.value().as_str().map(str::to_owned) else {
                continue;
            };
            let doc_freq = freqs.get(searcher, &t)?;
            if doc_freq > 0 {
                weights.insert(word, 1.0 / (1.0 + doc_freq as Score));
            }
        }
        let analyzer = highlight_analyzer(analyzer::TEXT)
            .ok_or_else(|| TantivyError::SchemaError(format!("no analyzer {}", analyzer::TEXT)))?;
        Ok(SnippetGenerator::new(
            weights,
            analyzer,
            self.fields.get(name),
            HIGHLIGHT_CHARS,
        ))
    }
}
