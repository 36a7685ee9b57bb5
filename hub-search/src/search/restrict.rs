//! Which of some named agents pass a query's filters: the hybrid search's vector side checks its
//! candidates here, so that a hit found by meaning obeys the same filters as one found by words.

use std::collections::HashSet;

use tantivy::collector::DocSetCollector;

use crate::error::{Error, Result};
use crate::index::SearchIndex;
use crate::mapping::field;
use crate::query::SearchQuery;

impl SearchIndex {
    /// The names among `names` of agents in the index that pass `q`'s filters (capability,
    /// keyword, kind, publisher, deprecated, ...; not its text).
    pub(crate) fn passing_filters(
        &self,
        q: &SearchQuery,
        names: &[String],
    ) -> Result<HashSet<String>> {
        if names.is_empty() {
            return Ok(HashSet::new());
        }
        let searcher = self.reader.searcher();
        let restricted = SearchQuery {
            only_names: names.to_vec(),
            ..q.clone()
        };
        let query = self.full_query(&restricted, None);
        let docs = searcher.search(query.as_ref(), &DocSetCollector)?;
        let mut out = HashSet::with_capacity(docs.len());
        let mut columns = Vec::new();
        for reader in searcher.segment_readers() {
            columns.push(reader.fast_fields().str(field::NAME)?);
        }
        let mut name = String::new();
        for addr in docs {
            let column = columns[addr.segment_ord as usize]
                .as_ref()
                .ok_or_else(|| Error::Format("the name field is not a fast field".into()))?;
            for ord in column.term_ords(addr.doc_id) {
                name.clear();
                column
                    .ord_to_str(ord, &mut name)
                    .map_err(|e| Error::Format(format!("reading an agent's name: {e}")))?;
                out.insert(name.clone());
            }
        }
        Ok(out)
    }
}
