//! `AtLeast`: the documents at least `m` of some queries match — what a fewer-words tier
//! leaves out because an earlier tier has them. Tantivy's minimum-should-match disjunction
//! walks every posting of every query through a heap; at 1M agents, with the common words of a
//! long sentence, that was most of a 10-word query's 40–55 ms. This one jumps: a document `m`
//! queries match lies at or after the `m`-th smallest of their positions, and every query
//! behind it seeks there (skip lists).

use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, TantivyError, Term};

/// The documents matched by at least `m` of `queries` (unscored: 1.0), the matches of Tantivy's
/// `BooleanQuery::with_minimum_required_clauses(queries, m)`.
#[derive(Debug)]
pub(in crate::search) struct AtLeast {
    pub(in crate::search) queries: Vec<Box<dyn Query>>,
    pub(in crate::search) m: usize,
}

impl Clone for AtLeast {
    fn clone(&self) -> Self {
        Self {
            queries: self.queries.iter().map(|q| q.box_clone()).collect(),
            m: self.m,
        }
    }
}

impl Query for AtLeast {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(AtLeastWeight {
            weights: self
                .queries
                .iter()
                .map(|q| q.weight(scoring))
                .collect::<tantivy::Result<_>>()?,
            m: self.m,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for q in &self.queries {
            q.query_terms(visitor);
        }
    }
}

struct AtLeastWeight {
    weights: Vec<Box<dyn Weight>>,
    m: usize,
}

impl Weight for AtLeastWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut scorers = Vec::with_capacity(self.weights.len());
        for w in &self.weights {
            let s = w.scorer(reader, boost)?;
            if s.doc() != TERMINATED {
                scorers.push(s);
            }
        }
        let mut s = AtLeastScorer {
            positions: Vec::with_capacity(scorers.len()),
            scorers,
            m: self.m.max(1),
            doc: 0,
        };
        s.doc = s.settle(0);
        Ok(Box::new(s))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut s = self.scorer(reader, 1.0)?;
        if s.seek(doc) != doc {
            return Err(TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        Ok(Explanation::new("at least m of the queries", 1.0))
    }
}

struct AtLeastScorer {
    scorers: Vec<Box<dyn Scorer>>,
    /// Scratch: each scorer's earliest possible next match.
    positions: Vec<DocId>,
    m: usize,
    doc: DocId,
}

impl AtLeastScorer {
    /// The first document at or after `target` that `m` scorers match.
    fn settle(&mut self, mut target: DocId) -> DocId {
        if self.scorers.len() < self.m {
            return TERMINATED;
        }
        loop {
            if target == TERMINATED {
                return TERMINATED;
            }
            let mut count = 0;
            self.positions.clear();
            for s in &mut self.scorers {
                let d = if s.doc() < target {
                    s.seek(target)
                } else {
                    s.doc()
                };
                if d == target {
                    count += 1;
                    // It can match again only after `target`.
                    self.positions.push(target.saturating_add(1));
                } else {
                    self.positions.push(d);
                }
            }
            if count >= self.m {
                return target;
            }
            // No `m` of them can meet before the m-th smallest of their earliest positions.
            let (_, mth, _) = self.positions.select_nth_unstable(self.m - 1);
            target = *mth;
        }
    }
}

impl DocSet for AtLeastScorer {
    fn advance(&mut self) -> DocId {
        if self.doc != TERMINATED {
            self.doc = self.settle(self.doc + 1);
        }
        self.doc
    }
    fn seek(&mut self, target: DocId) -> DocId {
        if target > self.doc {
            self.doc = self.settle(target);
        }
        self.doc
    }
    fn doc(&self) -> DocId {
        self.doc
    }
    fn size_hint(&self) -> u32 {
        // A match is counted in at least `m` of the scorers.
        let total = self
            .scorers
            .iter()
            .fold(0u32, |n, s| n.saturating_add(s.size_hint()));
        total / u32::try_from(self.m).unwrap_or(u32::MAX)
    }
}

impl Scorer for AtLeastScorer {
    fn score(&mut self) -> Score {
        1.0
    }
}
