//! `BoostedTerm`: a term query times a boost that keeps the term's block-max pruning loop, for
//! a word that is one term (Tantivy's `BoostQuery` scores every document).

use tantivy::query::{EnableScoring, Explanation, Query, Scorer, TermQuery, Weight};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Score, SegmentReader, Term};

/// A term query whose BM25 score is multiplied by `boost`, pruned with the term's block-max
/// loop. (Tantivy's `BoostQuery` has no pruning loop of its own: it scores every document.) Both
/// loops compute `term score × boost`, so pruned and exhaustive collection see equal scores.
#[derive(Debug, Clone)]
pub(in crate::search) struct BoostedTerm {
    pub(in crate::search) term: Term,
    pub(in crate::search) boost: Score,
}

impl Query for BoostedTerm {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Scaled {
            inner: Box::new(TermQuery::new(
                self.term.clone(),
                IndexRecordOption::WithFreqs,
            )),
            factor: self.boost,
        }
        .weight(scoring)
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        visitor(&self.term, false);
    }
}

/// Any query whose scores are multiplied by `factor`, keeping the query's own pruning loop
/// (its thresholds divided by the factor): [`BoostedTerm`]'s term query, or a one-term
/// [`WordUnions`](super::word_unions::WordUnions) with filters folded in that stands for a
/// `BoostedTerm` and must score exactly as it does (`term score × boost`).
#[derive(Debug)]
pub(in crate::search) struct Scaled {
    pub(in crate::search) inner: Box<dyn Query>,
    pub(in crate::search) factor: Score,
}

impl Clone for Scaled {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.box_clone(),
            factor: self.factor,
        }
    }
}

impl Query for Scaled {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let inner = self.inner.weight(scoring)?;
        if !scoring.is_scoring_enabled() {
            return Ok(inner);
        }
        Ok(Box::new(BoostedTermWeight {
            inner,
            boost: self.factor,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.inner.query_terms(visitor);
    }
}

struct BoostedTermWeight {
    /// Tantivy's term weight: its pruning loop is block-max on one posting list.
    inner: Box<dyn Weight>,
    boost: Score,
}

impl Weight for BoostedTermWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(ScaledScorer {
            inner: self.inner.scorer(reader, boost)?,
            factor: self.boost,
        }))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let e = self.inner.explain(reader, doc)?;
        let mut out =
            Explanation::new_with_string(format!("x{}", self.boost), e.value() * self.boost);
        out.add_detail(e);
        Ok(out)
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        let b = self.boost;
        // Thresholds are exchanged unscaled with the term's loop. Dividing may round a bound
        // down by an ulp, which only lets one more document through; callers keep a relative
        // margin far larger than that anyway.
        self.inner
            .for_each_pruning(threshold / b, reader, &mut |doc, score| {
                callback(doc, score * b) / b
            })
    }
}

/// A scorer whose scores are multiplied by `factor`.
struct ScaledScorer {
    inner: Box<dyn Scorer>,
    factor: Score,
}

// The inner scorer's documents, as they are.
impl DocSet for ScaledScorer {
    fn advance(&mut self) -> DocId {
        self.inner.advance()
    }
    fn seek(&mut self, target: DocId) -> DocId {
        self.inner.seek(target)
    }
    fn doc(&self) -> DocId {
        self.inner.doc()
    }
    fn size_hint(&self) -> u32 {
        self.inner.size_hint()
    }
}

impl Scorer for ScaledScorer {
    fn score(&mut self) -> Score {
        self.inner.score() * self.factor
    }
}
