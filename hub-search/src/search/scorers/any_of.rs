//! `AnyOf`: a union that seeks clause by clause, for a word with several alternatives that a
//! far rarer word leads in a conjunction.

use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, TantivyError, Term};

use crate::search::scorers::union::{union_advance, union_seek};

/// The documents of any of the queries, scored by the sum of the scores of those that match (in
/// clause order): the matches and scores of a union `BooleanQuery` of them. Tantivy's union
/// refills a window of 4096 documents on every seek, which makes a conjunction that a rarer
/// word leads cost about the whole union; here a seek moves each clause to its next document.
#[derive(Debug)]
pub(in crate::search) struct AnyOf(pub(in crate::search) Vec<Box<dyn Query>>);

impl Clone for AnyOf {
    fn clone(&self) -> Self {
        Self(self.0.iter().map(|q| q.box_clone()).collect())
    }
}

impl Query for AnyOf {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(AnyOfWeight(
            self.0
                .iter()
                .map(|q| q.weight(scoring))
                .collect::<tantivy::Result<_>>()?,
        )))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for q in &self.0 {
            q.query_terms(visitor);
        }
    }
}

struct AnyOfWeight(Vec<Box<dyn Weight>>);

impl Weight for AnyOfWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut scorers = Vec::with_capacity(self.0.len());
        for w in &self.0 {
            let s = w.scorer(reader, boost)?;
            if s.doc() != TERMINATED {
                scorers.push(s);
            }
        }
        let doc = scorers.iter().map(|s| s.doc()).min().unwrap_or(TERMINATED);
        Ok(Box::new(AnyOfScorer { scorers, doc }))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut s = self.scorer(reader, 1.0)?;
        if s.seek(doc) != doc {
            return Err(TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        let mut e = Explanation::new("any of (sum)", s.score());
        for w in &self.0 {
            if let Ok(d) = w.explain(reader, doc) {
                e.add_detail(d);
            }
        }
        Ok(e)
    }
}

struct AnyOfScorer {
    scorers: Vec<Box<dyn Scorer>>,
    doc: DocId,
}

impl DocSet for AnyOfScorer {
    fn advance(&mut self) -> DocId {
        union_advance(&mut self.scorers, &mut self.doc)
    }
    fn seek(&mut self, target: DocId) -> DocId {
        union_seek(&mut self.scorers, &mut self.doc, target)
    }
    fn doc(&self) -> DocId {
        self.doc
    }
    fn size_hint(&self) -> u32 {
        self.scorers
            .iter()
            .fold(0u32, |n, s| n.saturating_add(s.size_hint()))
    }
}

impl Scorer for AnyOfScorer {
    fn score(&mut self) -> Score {
        let doc = self.doc;
        let mut total = 0.0;
        for s in &mut self.scorers {
            if s.doc() == doc {
                total += s.score();
            }
        }
        total
    }
}
