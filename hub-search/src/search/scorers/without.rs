//! `Without`: the documents of one query that another does not match, pruned by the first
//! query's own loop (Tantivy's `Exclude` has no pruning loop: it would score every document).

use tantivy::query::{EnableScoring, Exclude, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet as _, Score, SegmentReader, TantivyError, Term};

/// The documents of `inner` that `excluded` does not match, scored by `inner`. Pruned, it is
/// `inner`'s own loop (block-max WAND, a conjunction's block loop, ...) with the excluded
/// documents skipped as they are passed on: the threshold only comes from documents kept.
#[derive(Debug)]
pub(in crate::search) struct Without {
    /// The query matched and scored.
    pub(in crate::search) inner: Box<dyn Query>,
    /// The documents left out (unscored).
    pub(in crate::search) excluded: Box<dyn Query>,
}

impl Clone for Without {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.box_clone(),
            excluded: self.excluded.box_clone(),
        }
    }
}

impl Query for Without {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let unscored = match scoring.searcher() {
            Some(s) => EnableScoring::disabled_from_searcher(s),
            None => EnableScoring::disabled_from_schema(scoring.schema()),
        };
        Ok(Box::new(WithoutWeight {
            inner: self.inner.weight(scoring)?,
            excluded: self.excluded.weight(unscored)?,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.inner.query_terms(visitor);
    }
}

struct WithoutWeight {
    inner: Box<dyn Weight>,
    excluded: Box<dyn Weight>,
}

impl Weight for WithoutWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(Exclude::new(
            self.inner.scorer(reader, boost)?,
            self.excluded.scorer(reader, boost)?,
        )))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut excluded = self.excluded.scorer(reader, 1.0)?;
        if excluded.doc() <= doc && excluded.seek(doc) == doc {
            return Err(TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        self.inner.explain(reader, doc)
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        let mut excluded = self.excluded.scorer(reader, 1.0)?;
        let mut current = threshold;
        // Documents come in increasing order.
        self.inner
            .for_each_pruning(threshold, reader, &mut |doc, score| {
                if excluded.doc() < doc {
                    excluded.seek(doc);
                }
                if excluded.doc() != doc {
                    current = callback(doc, score);
                }
                current
            })
    }
}
