//! `AnyWords`: the any-word union of the last fewer-words tier (every word's alternatives in
//! one flat union: terms, synonyms' terms, typo and prefix matches), pruned window by window
//! the MaxScore way. Within a window of 4096 documents, the clauses whose bounds together
//! cannot lift a document into the top k only complete the scores of the documents the
//! others (the rarer words, with higher scores) bring — when they hold most of the postings
//! (otherwise every posting is read once, into a score array) — and a window nothing can
//! reach is skipped. Tantivy's union scores every document of every clause when one clause is
//! not a plain term (a typo or prefix match keeps it from block-max WAND), and block-max WAND
//! re-sorts its cursors at nearly every document of a long sentence's common words.
//!
//! Each document's score is, bit for bit, the one the exhaustive scorer gives: the clauses'
//! scores added in the order that scorer adds them (see [`SumOrder`]).

use std::sync::Arc;

use tantivy::query::{
    Bm25Weight, BooleanQuery, BoostQuery, EnableScoring, Explanation, Occur, Query, Scorer,
    TermQuery, Weight,
};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet as _, Score, SegmentReader, TERMINATED, Term};

use crate::popularity::PopularityBounds;
use crate::search::scorers::any_of::AnyOf;
use crate::search::scorers::loose::LooseMatch;
use crate::search::scorers::window::{Bar, Cursor, add_score, fieldnorms};

/// Documents per window: Tantivy's union buffers this many (its `HORIZON`), and the order in
/// which it adds a document's scores depends on where its windows start (see
/// [`SumOrder::Union`]).
const WINDOW: u32 = 4096;

/// A window's non-essential clauses are only read at the essential clauses' documents when
/// they have at least this many times as many documents (see [`Windows::run`]).
const SPLIT_RATIO: u64 = 8;

/// A clause of the union.
#[derive(Debug, Clone)]
pub(in crate::search) enum AnyClause {
    /// A term: its BM25 score times the boost.
    Term(Term, Score),
    /// A typo or prefix match, scoring this constant.
    Loose(LooseMatch, Score),
}

/// How a document's clause scores are added: the order of the query this one stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::search) enum SumOrder {
    /// Clause order (an [`AnyOf`] of the clauses; the sums of the `WordUnions` that ranked a
    /// union of plain terms before).
    Listed,
    /// The order of Tantivy's union (`BufferedUnionScorer`, a `BooleanQuery` of the clauses):
    /// clause order, except that a clause whose postings end within one of its windows is
    /// swapped with the last clause still going (from that clause on, in that window).
    Union,
}

/// The documents any of the clauses match, scored by the sum of the matching clauses' scores
/// added in `order`: the matches and scores of [`Self::exhaustive`], whose scorer it uses; only
/// the pruning loop is its own.
#[derive(Debug, Clone)]
pub(in crate::search) struct AnyWords {
    pub(in crate::search) clauses: Vec<AnyClause>,
    pub(in crate::search) order: SumOrder,
    /// The segment's popularity bounds, when the query is built for one segment and collected
    /// by relevance (as for `WordUnions`).
    pub(in crate::search) popularity: Option<Arc<PopularityBounds>>,
}

impl AnyWords {
    /// The query whose matches and scores these are: a union of the boosted clauses, in
    /// `order` (unscored, Tantivy's union: the same documents).
    pub(in crate::search) fn exhaustive(&self, order: SumOrder) -> Box<dyn Query> {
        let clauses = self.clauses.iter().map(|c| -> Box<dyn Query> {
            match c {
                AnyClause::Term(t, boost) => Box::new(BoostQuery::new(
                    Box::new(TermQuery::new(t.clone(), IndexRecordOption::WithFreqs)),
                    *boost,
                )),
                AnyClause::Loose(m, score) => {
                    Box::new(BoostQuery::new(Box::new(m.clone()), *score))
                }
            }
        });
        match order {
            SumOrder::Listed => Box::new(AnyOf(clauses.collect())),
            SumOrder::Union => Box::new(BooleanQuery::new(
                clauses.map(|q| (Occur::Should, q)).collect(),
            )),
        }
    }
}

impl Query for AnyWords {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let EnableScoring::Enabled {
            statistics_provider,
            ..
        } = scoring
        else {
            return self.exhaustive(SumOrder::Union).weight(scoring);
        };
        let exhaustive = self.exhaustive(self.order).weight(scoring)?;
        let clauses = self
            .clauses
            .iter()
            .map(|c| {
                Ok(match c {
                    // The weight of a boosted `TermQuery` (same statistics, same boost).
                    AnyClause::Term(t, boost) => WeightClause::Term(
                        t.clone(),
                        Bm25Weight::for_terms(statistics_provider, std::slice::from_ref(t))?
                            .boost_by(*boost),
                    ),
                    AnyClause::Loose(m, score) => WeightClause::Loose(m.weight(scoring)?, *score),
                })
            })
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(Box::new(AnyWordsWeight {
            exhaustive,
            clauses,
            order: self.order,
            popularity: self.popularity.clone(),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for c in &self.clauses {
            match c {
                AnyClause::Term(t, _) => visitor(t, false),
                AnyClause::Loose(m, _) => m.query_terms(visitor),
            }
        }
    }
}

enum WeightClause {
    Term(Term, Bm25Weight),
    /// A loose match's weight (its scorer scores the boost it is given) and its score.
    Loose(Box<dyn Weight>, Score),
}

struct AnyWordsWeight {
    /// The exhaustive query's weight: its scorer is this query's.
    exhaustive: Box<dyn Weight>,
    clauses: Vec<WeightClause>,
    order: SumOrder,
    popularity: Option<Arc<PopularityBounds>>,
}

impl Weight for AnyWordsWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        self.exhaustive.scorer(reader, boost)
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.exhaustive.explain(reader, doc)
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        // The clauses with documents in this segment, in clause order (Tantivy's union leaves
        // out the empty ones the same way).
        let mut clauses = Vec::with_capacity(self.clauses.len());
        for c in &self.clauses {
            match c {
                WeightClause::Term(t, bm25) => {
                    let Some(block) = reader
                        .inverted_index(t.field())?
                        .read_block_postings(t, IndexRecordOption::WithFreqs)?
                    else {
                        continue;
                    };
                    let cursor = Cursor::new(block, bm25.clone(), fieldnorms(reader, t)?);
                    if cursor.doc() != TERMINATED {
                        clauses.push(Clause::Term(cursor));
                    }
                }
                WeightClause::Loose(w, score) => {
                    let docs = w.scorer(reader, *score)?;
                    if docs.doc() != TERMINATED {
                        clauses.push(Clause::Loose(docs, *score));
                    }
                }
            }
        }
        let bar = Bar::new(threshold, self.popularity.as_deref());
        Windows::new(clauses, self.order, bar, reader.max_doc()).run(callback);
        Ok(())
    }
}

/// A clause opened for a segment.
enum Clause {
    Term(Cursor),
    /// A loose match's documents (a constant scorer) and its score.
    Loose(Box<dyn Scorer>, Score),
}

impl Clause {
    fn doc(&self) -> DocId {
        match self {
            Clause::Term(c) => c.doc(),
            Clause::Loose(s, _) => s.doc(),
        }
    }

    /// Moves to the first document at or after `target`.
    fn seek(&mut self, target: DocId) -> DocId {
        match self {
            Clause::Term(c) => c.seek(target),
            Clause::Loose(s, _) if s.doc() < target => s.seek(target),
            Clause::Loose(s, _) => s.doc(),
        }
    }

    /// The current document's score.
    fn score(&mut self) -> Score {
        match self {
            Clause::Term(c) => c.score(),
            Clause::Loose(s, _) => s.score(),
        }
    }

    /// The highest score this clause gives a document of `[start, end)`.
    fn bound(&mut self, end: DocId) -> Score {
        if self.doc() >= end {
            return 0.0;
        }
        match self {
            Clause::Term(c) => c.bound(end - 1),
            Clause::Loose(_, score) => *score,
        }
    }

    /// How many documents the clause has.
    fn docs(&self) -> u64 {
        u64::from(match self {
            Clause::Term(c) => c.block.doc_freq(),
            Clause::Loose(s, _) => s.size_hint(),
        })
    }

    /// The highest score this clause gives any document.
    fn max_score(&self) -> Score {
        match self {
            Clause::Term(c) => c.bm25.max_score(),
            Clause::Loose(_, score) => *score,
        }
    }

    /// Calls `f(offset from start, score)` for each document before `end`, in order, and
    /// stops at the first at or after it. With `only`, documents whose bit is not set in it
    /// are passed over unscored.
    fn each_before(
        &mut self,
        start: DocId,
        end: DocId,
        only: Option<&[u64]>,
        mut f: impl FnMut(usize, Score),
    ) {
        match self {
            Clause::Term(c) => c.each_before(start, end, only, f),
            Clause::Loose(s, _) => {
                let mut d = s.doc();
                while d < end {
                    let off = (d - start) as usize;
                    if only.is_none_or(|m| m[off / 64] >> (off % 64) & 1 == 1) {
                        f(off, s.score());
                    }
                    d = s.advance();
                }
            }
        }
    }
}

/// The window loop of [`AnyWordsWeight::for_each_pruning`].
struct Windows<'a> {
    clauses: Vec<Clause>,
    /// The clauses still going, in the order their scores are added (see [`SumOrder`]).
    going: Vec<usize>,
    order: SumOrder,
    bar: Bar<'a>,
    /// Per clause, its bound in the current window.
    bounds: Vec<Score>,
    /// The clauses still going, least bound first.
    by_bound: Vec<usize>,
    /// Per clause, whether it is essential in the current window: a document only the others
    /// match cannot enter the heap.
    essential: Vec<bool>,
    /// Per clause, its documents of the window (offsets) and their scores, when essential.
    found: Vec<Vec<(u16, Score)>>,
    /// The documents of the window that may enter the heap.
    candidates: [u64; WINDOW as usize / 64],
    /// The documents whose `sum` or `total` was started.
    started: [u64; WINDOW as usize / 64],
    /// The essential clauses' scores of each candidate, added in any order (a bound's).
    sum: Vec<Score>,
    /// Each candidate's exact score.
    total: Vec<Score>,
    /// The sum of every clause's highest score: no document scores more.
    max_total: Score,
    /// The segment's number of documents.
    max_doc: DocId,
}

impl<'a> Windows<'a> {
    fn new(clauses: Vec<Clause>, order: SumOrder, bar: Bar<'a>, max_doc: DocId) -> Self {
        let n = clauses.len();
        let max_total = clauses.iter().map(Clause::max_score).sum::<Score>()
            // A bound, never below a sum of the same scores added in another order.
            * (1.0 + 1e-5);
        Self {
            clauses,
            going: (0..n).collect(),
            order,
            bar,
            bounds: vec![0.0; n],
            by_bound: Vec::with_capacity(n),
            essential: vec![false; n],
            found: vec![Vec::new(); n],
            candidates: [0; WINDOW as usize / 64],
            started: [0; WINDOW as usize / 64],
            sum: vec![0.0; WINDOW as usize],
            total: vec![0.0; WINDOW as usize],
            max_total,
            max_doc: max_doc.max(1),
        }
    }

    fn run(&mut self, callback: &mut dyn FnMut(DocId, Score) -> Score) {
        // Tantivy's union: each window starts at the least document of the clauses still
        // going, all of them at or after the previous window's end.
        while let Some(start) = self.going.iter().map(|&i| self.clauses[i].doc()).min() {
            let bar = self.bar.text(start);
            if self.max_total <= bar {
                // No later document can enter (the bound of later factors only falls).
                return;
            }
            let end = start.saturating_add(WINDOW);
            // The clauses by bound, least first: those whose bounds together cannot reach the
            // bar are not essential.
            for &i in &self.going {
                self.bounds[i] = self.clauses[i].bound(end);
                self.essential[i] = true;
            }
            self.by_bound.clone_from(&self.going);
            let bounds = &self.bounds;
            self.by_bound
                .sort_by(|&a, &b| bounds[a].total_cmp(&bounds[b]));
            let mut rest: Score = 0.0;
            for &i in &self.by_bound {
                let b = self.bounds[i];
                if (rest + b) * (1.0 + 1e-5) > bar {
                    break;
                }
                rest += b;
                self.essential[i] = false;
            }
            // Completing the essential clauses' candidates pays when the other clauses hold
            // most of the postings; otherwise every posting is read anyway, once is cheaper.
            let (mut essential_docs, mut other_docs) = (0u64, 0u64);
            for &i in &self.going {
                let docs = self.clauses[i].docs();
                if self.essential[i] {
                    essential_docs += docs;
                } else {
                    other_docs += docs;
                }
            }
            let split = other_docs > 0 && other_docs >= SPLIT_RATIO * essential_docs;
            self.window(start, end, split.then_some(rest * (1.0 + 1e-5)), callback);
        }
    }

    /// The documents of `[start, end)` that may enter the heap, with their exact scores, to
    /// `callback`; every clause ends at or after `end`, and the clauses whose postings ended
    /// leave `going` as Tantivy's union drops them. `rest`: the non-essential clauses' bounds
    /// summed, when some clause is not essential.
    fn window(
        &mut self,
        start: DocId,
        end: DocId,
        rest: Option<Score>,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) {
        self.candidates = [0; WINDOW as usize / 64];
        self.started = [0; WINDOW as usize / 64];
        if let Some(rest) = rest {
            // The essential clauses' documents (the candidates), and their scores so far.
            let (clauses, found, candidates, sum) = (
                &mut self.clauses,
                &mut self.found,
                &mut self.candidates,
                &mut self.sum,
            );
            for &i in &self.going {
                if !self.essential[i] {
                    continue;
                }
                let found = &mut found[i];
                found.clear();
                clauses[i].each_before(start, end, None, |off, score| {
                    found.push((off as u16, score));
                    add_score(&mut candidates[..], sum, off, score);
                });
            }
            for (k, c) in self.candidates.iter_mut().enumerate() {
                let mut bits = *c;
                // Which of these 64 can no longer enter, gathered without a branch.
                let mut dropped = 0u64;
                while bits != 0 {
                    let bit = bits.trailing_zeros();
                    let off = k * 64 + bit as usize;
                    bits &= bits - 1;
                    let gone = !self
                        .bar
                        .may_enter(self.sum[off] + rest, start + off as DocId);
                    dropped |= u64::from(gone) << bit;
                }
                *c &= !dropped;
            }
        }
        let count: u32 = self.candidates.iter().map(|w| w.count_ones()).sum();
        // The exact scores, clause by clause in the union's order; a clause whose postings
        // end in this window leaves its place to the last one, which is added next.
        let mut n = 0;
        while n < self.going.len() {
            let i = self.going[n];
            let Self {
                clauses,
                found,
                candidates,
                started,
                total,
                essential,
                max_doc,
                ..
            } = self;
            let mut add = |off: usize, score: Score| add_score(&mut started[..], total, off, score);
            let clause = &mut clauses[i];
            if rest.is_none() {
                // Every clause essential: each of their documents is a candidate (`started`,
                // copied below).
                clause.each_before(start, end, None, add);
            } else if essential[i] {
                for &(off, score) in &found[i] {
                    let off = usize::from(off);
                    if candidates[off / 64] >> (off % 64) & 1 == 1 {
                        add(off, score);
                    }
                }
            } else if u64::from(count) * 4 * u64::from(*max_doc) < clause.docs() * u64::from(WINDOW)
            {
                for (k, &word) in candidates.iter().enumerate() {
                    let mut bits = word;
                    while bits != 0 {
                        let off = k * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let doc = start + off as DocId;
                        if clause.seek(doc) == doc {
                            add(off, clause.score());
                        }
                    }
                }
                clause.seek(end);
            } else {
                clause.each_before(start, end, Some(&candidates[..]), add);
            }
            if clause.doc() == TERMINATED {
                match self.order {
                    SumOrder::Union => self.going.swap_remove(n),
                    SumOrder::Listed => self.going.remove(n),
                };
            } else {
                n += 1;
            }
        }
        if rest.is_none() {
            self.candidates = self.started;
        }
        for k in 0..self.candidates.len() {
            let mut bits = self.candidates[k];
            while bits != 0 {
                let off = k * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let doc = start + off as DocId;
                let score = self.total[off];
                if self.bar.passes(score, doc) {
                    let t = callback(doc, score);
                    self.bar.set(t, doc);
                }
            }
        }
    }
}
