//! Which of some named agents pass a query's filters: the hybrid search's vector side checks its
//! candidates here, so that a hit found by meaning obeys the same filters as one found by words.

use std::collections::HashSet;

use tantivy::query::EnableScoring;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, TERMINATED, Term};

use crate::error::Result;
use crate::index::SearchIndex;
use crate::mapping::field;
use crate::query::SearchQuery;

impl SearchIndex {
    /// The names among `names` of agents in the index that pass `q`'s filters (capability,
    /// keyword, kind, publisher, deprecated, ...; not its text).
    ///
    /// Each name is looked up in the name field's term dictionary (a live document holds it or
    /// none does); then, when the query has filters, the filters' scorer is moved forward to
    /// each found document in order (`seek`). So the cost follows the number of names, a few
    /// microseconds each, not the number of agents or of documents the filters match.
    pub(crate) fn passing_filters(
        &self,
        q: &SearchQuery,
        names: &[String],
    ) -> Result<HashSet<String>> {
        if names.is_empty() {
            return Ok(HashSet::new());
        }
        let searcher = self.reader.searcher();
        let name_field = self.fields.get(field::NAME);
        let filtered = SearchQuery {
            only_names: Vec::new(),
            ..q.clone()
        };
        let weight = if self.has_filters(&filtered) {
            let query = self.full_query(&filtered, None);
            Some(query.weight(EnableScoring::disabled_from_searcher(&searcher))?)
        } else {
            None
        };
        let mut out = HashSet::with_capacity(names.len());
        let mut found: Vec<(DocId, usize)> = Vec::with_capacity(names.len());
        for reader in searcher.segment_readers() {
            let inverted = reader.inverted_index(name_field)?;
            found.clear();
            for (i, name) in names.iter().enumerate() {
                let term = Term::from_field_text(name_field, name);
                let postings = inverted
                    .read_postings(&term, IndexRecordOption::Basic)
                    .map_err(tantivy::TantivyError::from)?;
                let Some(mut postings) = postings else {
                    continue;
                };
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if !reader.is_deleted(doc) {
                        found.push((doc, i));
                    }
                    doc = postings.advance();
                }
            }
            let Some(weight) = &weight else {
                out.extend(found.iter().map(|&(_, i)| names[i].clone()));
                continue;
            };
            found.sort_unstable();
            let mut scorer = weight.scorer(reader, 1.0)?;
            for &(doc, i) in &found {
                let at = if scorer.doc() < doc {
                    scorer.seek(doc)
                } else {
                    scorer.doc()
                };
                if at == doc {
                    out.insert(names[i].clone());
                }
            }
        }
        Ok(out)
    }
}
