//! `WordUnions`: every word required, each word a union of plain terms (its own terms and its
//! synonyms'), collected window by window: within a window of document ids each word's
//! postings are decoded block by block and their scores added into an array, the words'
//! match sets are intersected as bitsets, and only the documents whose score (times their
//! popularity factor) can enter the top k are passed on.
//!
//! It replaces block-max WAND over a union of common terms and Tantivy's intersection of
//! unions: with a few near-synonyms of one topic (`scraping`: scrape, crawl, spider, ...) most
//! blocks hold a document near the best score, so WAND re-sorts its cursors at nearly every
//! document (72% of the slowest queries' time at 1M agents); here a posting costs an add.
//!
//! A window's bounds come from the blocks actually there: a second, unscored cursor per term
//! (`Scout`, paused while it rules nothing out) reads the block maxima of each cell, so windows
//! and cells that cannot reach the heap are skipped. Filters the collection folds in
//! (`WordUnions::filters`) are words without a score: they narrow before anything is scored.

use std::sync::Arc;

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{BlockSegmentPostings, Postings as _, SegmentPostings};
use tantivy::query::{
    Bm25Weight, BooleanQuery, ConstScoreQuery, EnableScoring, Explanation, Occur, Query, Scorer,
    TermQuery, Weight,
};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, TantivyError, Term};

use crate::popularity::PopularityBounds;
use crate::search::filters::any_term;
use crate::search::scorers::union::{union_advance, union_seek};
use crate::search::scorers::window::{Bar, CELL, Cursor, Scout, add_score, fieldnorms};

/// Documents per window (a multiple of 64): the score arrays of a few words stay in the L1/L2
/// cache. The tests' indexes are small: there, windows are short so that a segment has many.
const WINDOW: u32 = if cfg!(test) { 128 } else { 4096 };

/// Every word required; a word matches when any of its terms does. A document's score is, word
/// by word in word order, the sum of its matching terms' BM25 scores (times their boosts) in
/// term order, on every path (scorer, pruning loop, explanation): the matches and, up to float
/// rounding, the scores of a `BooleanQuery` of required unions of boosted term queries.
#[derive(Debug, Clone)]
pub(in crate::search) struct WordUnions {
    /// Per word, its terms and their boosts (no term twice within a word).
    pub(in crate::search) words: Vec<Vec<(Term, Score)>>,
    /// The segment's popularity bounds, when the query is built for one segment and collected
    /// by relevance: documents are then passed on only when their score times their own rank
    /// factor can reach the heap, and the loop ends once no later document can.
    pub(in crate::search) popularity: Option<Arc<PopularityBounds>>,
    /// Filters the collection folded in (capability, keyword, ...): each, terms of which a
    /// document must have one; they add nothing to the score. The window loop narrows by them
    /// as by the rarest words, before any score is computed; the other paths (scorer,
    /// explanation, unscored) run the intersection with the filters' constant-scored clauses
    /// (`SearchIndex::full_query`'s query, same documents and scores).
    pub(in crate::search) filters: Vec<Vec<Term>>,
}

impl WordUnions {
    /// The query with the filters as required constant-scored clauses next to it.
    fn intersected(&self) -> BooleanQuery {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(
            Occur::Must,
            Box::new(WordUnions {
                filters: Vec::new(),
                ..self.clone()
            }),
        )];
        clauses.extend(self.filters.iter().map(|any| -> (Occur, Box<dyn Query>) {
            (
                Occur::Must,
                Box::new(ConstScoreQuery::new(any_term(any.clone()), 0.0)),
            )
        }));
        BooleanQuery::new(clauses)
    }
}

impl Query for WordUnions {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let intersected = if self.filters.is_empty() {
            None
        } else if !scoring.is_scoring_enabled() {
            return self.intersected().weight(scoring);
        } else {
            Some(self.intersected().weight(scoring)?)
        };
        let EnableScoring::Enabled {
            statistics_provider,
            ..
        } = scoring
        else {
            // Unscored: Tantivy's intersection of unions gives the same documents.
            let words = self
                .words
                .iter()
                .map(|terms| {
                    let union = terms
                        .iter()
                        .map(|(t, _)| {
                            (
                                Occur::Should,
                                Box::new(TermQuery::new(t.clone(), IndexRecordOption::Basic))
                                    as Box<dyn Query>,
                            )
                        })
                        .collect();
                    (
                        Occur::Must,
                        Box::new(BooleanQuery::new(union)) as Box<dyn Query>,
                    )
                })
                .collect();
            return BooleanQuery::new(words).weight(scoring);
        };
        let words = self
            .words
            .iter()
            .map(|terms| {
                terms
                    .iter()
                    .map(|(t, boost)| {
                        Ok((
                            t.clone(),
                            Bm25Weight::for_terms(statistics_provider, std::slice::from_ref(t))?
                                .boost_by(*boost),
                        ))
                    })
                    .collect::<tantivy::Result<Vec<_>>>()
            })
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(Box::new(WordUnionsWeight {
            words,
            popularity: self.popularity.clone(),
            filters: self.filters.clone(),
            intersected,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for (t, _) in self.words.iter().flatten() {
            visitor(t, false);
        }
    }
}

struct WordUnionsWeight {
    words: Vec<Vec<(Term, Bm25Weight)>>,
    popularity: Option<Arc<PopularityBounds>>,
    filters: Vec<Vec<Term>>,
    /// With filters: the intersection's weight, for every path but the window loop.
    intersected: Option<Box<dyn Weight>>,
}

/// A term's postings as opened for a segment, its weight and its field's lengths.
type Opened<P> = (P, Bm25Weight, FieldNormReader);

impl WordUnionsWeight {
    /// Per word, its terms the segment has (`None` when it lacks every term of some word: no
    /// document matches).
    fn open<P>(
        &self,
        reader: &SegmentReader,
        mut open: impl FnMut(&Term) -> tantivy::Result<Option<P>>,
    ) -> tantivy::Result<Option<Vec<Vec<Opened<P>>>>> {
        let mut words = Vec::with_capacity(self.words.len());
        for terms in &self.words {
            let mut word = Vec::with_capacity(terms.len());
            for (t, bm25) in terms {
                if let Some(p) = open(t)? {
                    word.push((p, bm25.clone(), fieldnorms(reader, t)?));
                }
            }
            if word.is_empty() {
                return Ok(None);
            }
            words.push(word);
        }
        Ok(Some(words))
    }

    fn word_scorer(
        &self,
        reader: &SegmentReader,
        boost: Score,
    ) -> tantivy::Result<Option<WordUnionsScorer>> {
        let Some(words) = self.open(reader, |t| {
            Ok(reader
                .inverted_index(t.field())?
                .read_postings(t, IndexRecordOption::WithFreqs)?)
        })?
        else {
            return Ok(None);
        };
        let words: Vec<Word> = words
            .into_iter()
            .map(|terms| {
                let mut w = Word {
                    doc: TERMINATED,
                    postings: Vec::with_capacity(terms.len()),
                    bm25: Vec::with_capacity(terms.len()),
                    norms: Vec::with_capacity(terms.len()),
                };
                for (p, bm25, norms) in terms {
                    w.doc = w.doc.min(p.doc());
                    w.postings.push(p);
                    w.bm25.push(bm25.boost_by(boost));
                    w.norms.push(norms);
                }
                w
            })
            .collect();
        let mut s = WordUnionsScorer { words, doc: 0 };
        s.align(0);
        Ok(Some(s))
    }
}

impl Weight for WordUnionsWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        if let Some(w) = &self.intersected {
            return w.scorer(reader, boost);
        }
        Ok(match self.word_scorer(reader, boost)? {
            Some(s) => Box::new(s),
            None => Box::new(tantivy::query::EmptyScorer),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if let Some(w) = &self.intersected {
            return w.explain(reader, doc);
        }
        let unmatched = || TantivyError::InvalidArgument(format!("document {doc} does not match"));
        let mut s = self.word_scorer(reader, 1.0)?.ok_or_else(unmatched)?;
        if s.seek(doc) != doc {
            return Err(unmatched());
        }
        let mut e = Explanation::new("every word, any of its terms (BM25, summed)", s.score());
        for w in &s.words {
            for ((p, bm25), norms) in w.postings.iter().zip(&w.bm25).zip(&w.norms) {
                if p.doc() == doc {
                    e.add_detail(bm25.explain(norms.fieldnorm_id(doc), p.term_freq()));
                }
            }
        }
        Ok(e)
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        // Each term's postings twice: one read ahead for the cells' bounds, one scored.
        let Some(opened) = self.open(reader, |t| {
            let index = reader.inverted_index(t.field())?;
            Ok(index
                .get_term_info(t)?
                .map(|info| -> std::io::Result<_> {
                    Ok((
                        index.read_block_postings_from_terminfo(
                            &info,
                            IndexRecordOption::WithFreqs,
                        )?,
                        index.read_block_postings_from_terminfo(
                            &info,
                            IndexRecordOption::WithFreqs,
                        )?,
                    ))
                })
                .transpose()?)
        })?
        else {
            return Ok(());
        };
        let mut scouts = Vec::with_capacity(opened.len() + self.filters.len());
        let mut words = Vec::with_capacity(opened.len() + self.filters.len());
        for word in opened {
            let mut terms = Vec::with_capacity(word.len());
            let mut ahead = Vec::with_capacity(word.len());
            for ((scout, block), bm25, norms) in word {
                ahead.push(Scout::new(scout, bm25.clone(), norms.clone()));
                terms.push((block, bm25, norms));
            }
            scouts.push(ahead);
            words.push(terms);
        }
        // The filters, after the words: their documents only (a weight of 0, no lengths).
        let scored = words.len();
        let nothing = Bm25Weight::for_one_term(1, 1, 1.0).boost_by(0.0);
        for any in &self.filters {
            let mut terms = Vec::with_capacity(any.len());
            for t in any {
                if let Some(block) = reader
                    .inverted_index(t.field())?
                    .read_block_postings(t, IndexRecordOption::Basic)?
                {
                    let norms = FieldNormReader::constant(reader.max_doc(), 1);
                    terms.push((block, nothing.clone(), norms));
                }
            }
            if terms.is_empty() {
                // No document of the segment passes this filter.
                return Ok(());
            }
            // A filter adds nothing: no bound to read.
            scouts.push(Vec::new());
            words.push(terms);
        }
        let mut loop_ = Windows::new(words, scored, scouts, threshold, self.popularity.as_deref());
        loop_.run(callback);
        Ok(())
    }
}

/// One word's terms in the scorer.
struct Word {
    /// The least of the terms' documents.
    doc: DocId,
    postings: Vec<SegmentPostings>,
    bm25: Vec<Bm25Weight>,
    norms: Vec<FieldNormReader>,
}

/// The documents with every word (a leapfrog of the words' unions).
struct WordUnionsScorer {
    words: Vec<Word>,
    doc: DocId,
}

impl WordUnionsScorer {
    /// Moves to the first document at or after `target` that has every word.
    fn align(&mut self, mut target: DocId) -> DocId {
        'candidate: while target != TERMINATED {
            for w in &mut self.words {
                let d = union_seek(&mut w.postings, &mut w.doc, target);
                if d > target {
                    target = d;
                    continue 'candidate;
                }
            }
            break;
        }
        self.doc = target;
        target
    }
}

impl DocSet for WordUnionsScorer {
    fn advance(&mut self) -> DocId {
        if self.doc == TERMINATED {
            return self.doc;
        }
        let w = &mut self.words[0];
        let next = union_advance(&mut w.postings, &mut w.doc);
        self.align(next)
    }
    fn seek(&mut self, target: DocId) -> DocId {
        if target <= self.doc {
            return self.doc;
        }
        self.align(target)
    }
    fn doc(&self) -> DocId {
        self.doc
    }
    fn size_hint(&self) -> u32 {
        self.words
            .iter()
            .map(|w| {
                w.postings
                    .iter()
                    .fold(0u32, |n, p| n.saturating_add(p.size_hint()))
            })
            .min()
            .unwrap_or(0)
    }
}

impl Scorer for WordUnionsScorer {
    fn score(&mut self) -> Score {
        let doc = self.doc;
        let mut total = 0.0;
        for w in &self.words {
            let mut word: Score = 0.0;
            for ((p, bm25), norms) in w.postings.iter().zip(&w.bm25).zip(&w.norms) {
                if p.doc() == doc {
                    word += bm25.score(norms.fieldnorm_id(doc), p.term_freq());
                }
            }
            total += word;
        }
        total
    }
}

/// The window loop of [`WordUnionsWeight::for_each_pruning`].
struct Windows<'a> {
    /// Per word, its terms' cursors (term order).
    words: Vec<Vec<Cursor>>,
    /// Word indexes in reading order: the fewest documents first (it drives), then by
    /// documents per unit of bound.
    narrow: Vec<usize>,
    /// Per word, the score of each document of the window (valid where `has` is set).
    acc: Vec<Vec<Score>>,
    /// Per word, the documents of the window it matches.
    has: Vec<Vec<u64>>,
    /// The documents every word read so far matches (and that may still enter the heap).
    mask: Vec<u64>,
    /// The score of each document of `mask` over the words read so far.
    sum: Vec<Score>,
    /// Per word, the bound of its score in the current window.
    bounds: Vec<Score>,
    bar: Bar<'a>,
    /// Per word, its terms read ahead for their bounds in each cell of a window.
    scouts: Vec<Vec<Scout>>,
    /// The sum of every term's highest score: no document scores more.
    max_total: Score,
    /// The documents of the window in cells whose bound can still enter.
    live: Vec<u64>,
    /// The words before this index are the query's; the others are filters (read for their
    /// documents only: their `acc` stays 0).
    scored: usize,
}

impl<'a> Windows<'a> {
    fn new(
        words: Vec<Vec<Opened<BlockSegmentPostings>>>,
        scored: usize,
        scouts: Vec<Vec<Scout>>,
        threshold: Score,
        popularity: Option<&'a PopularityBounds>,
    ) -> Self {
        let words: Vec<Vec<Cursor>> = words
            .into_iter()
            .map(|terms| {
                terms
                    .into_iter()
                    .map(|(b, w, n)| Cursor::new(b, w, n))
                    .collect()
            })
            .collect();
        // The word with the fewest documents drives; then the words by documents per unit of
        // bound (a word with a high bound read early rules out the most candidates for the
        // reads after it), a filter as if it had the highest bound of a word (a selective
        // filter early, a common one late).
        let docs =
            |i: usize| -> f64 { words[i].iter().map(|c| f64::from(c.block.doc_freq())).sum() };
        let bound =
            |i: usize| -> f64 { words[i].iter().map(|c| f64::from(c.bm25.max_score())).sum() };
        let highest = (0..scored).map(bound).fold(f64::MIN_POSITIVE, f64::max);
        let mut narrow: Vec<usize> = (0..words.len()).collect();
        narrow.sort_by(|&a, &b| docs(a).total_cmp(&docs(b)));
        let per_bound = |i: usize| docs(i) / if i < scored { bound(i) } else { highest };
        narrow[1..].sort_by(|&a, &b| per_bound(a).total_cmp(&per_bound(b)));
        let max_total = words
            .iter()
            .flatten()
            .map(|c| c.bm25.max_score())
            .sum::<Score>()
            // A bound, never below a sum of the same terms added in another order.
            * (1.0 + 1e-5);
        let n = words.len();
        Self {
            words,
            narrow,
            acc: vec![vec![0.0; WINDOW as usize]; n],
            has: vec![vec![0; WINDOW as usize / 64]; n],
            mask: vec![0; WINDOW as usize / 64],
            sum: vec![0.0; WINDOW as usize],
            bounds: vec![0.0; n],
            bar: Bar::new(threshold, popularity),
            scouts,
            max_total,
            live: vec![0; WINDOW as usize / 64],
            scored,
        }
    }

    fn run(&mut self, callback: &mut dyn FnMut(DocId, Score) -> Score) {
        let mut from: DocId = 0;
        // Scouting costs a second decode of the blocks it reads: after `SCOUT_MISSES` windows
        // in a row where it ruled nothing out, the next windows (twice as many each time, up
        // to `SCOUT_PAUSE_MAX`) are bounded by the cursors' blocks as before.
        let (mut misses, mut pause, mut paused) = (0u32, 1u32, 0u32);
        loop {
            let bar = self.bar.text(from);
            if self.max_total <= bar {
                // No later document can enter (the bound of later factors only falls).
                return;
            }
            if paused > 0 {
                paused -= 1;
                #[cfg(test)]
                PAUSED_WINDOWS.with(|n| n.set(n.get() + 1));
                // The first window that can hold every word, bounded by the cursors' current
                // blocks (their maxima where a block reaches the window's end).
                let start = self.align(from);
                if start == TERMINATED {
                    return;
                }
                let end = start.saturating_add(WINDOW);
                self.bounds.fill(0.0);
                for (w, b) in self.words.iter_mut().zip(&mut self.bounds) {
                    for c in w.iter_mut() {
                        *b += c.bound(end - 1);
                    }
                }
                if self.bounds.iter().sum::<Score>() * (1.0 + 1e-5) > self.bar.text(start) {
                    self.window(start, end, true, callback);
                }
                from = end;
                continue;
            }
            let end = from.saturating_add(WINDOW);
            // Each word's bound in the window, from the scouts (the cursors are not moved
            // through a window that cannot pass), and the documents of the cells whose bound
            // passes the bar.
            let (bound, every_cell, some_word_absent) = self.window_bounds(from, end, bar);
            if every_cell && !some_word_absent && bound * (1.0 + 1e-5) > bar {
                misses += 1;
                if misses >= SCOUT_MISSES {
                    (misses, paused) = (0, pause);
                    pause = (pause * 2).min(SCOUT_PAUSE_MAX);
                }
            } else {
                (misses, pause) = (0, 1);
            }
            if some_word_absent || bound * (1.0 + 1e-5) <= bar {
                #[cfg(test)]
                DEAD_CELLS.with(|n| n.set(n.get() + 1));
                if some_word_absent {
                    // Jump to where every word may be again.
                    match self.align(end) {
                        TERMINATED => return,
                        next => from = next,
                    }
                } else {
                    from = end;
                }
                continue;
            }
            #[cfg(test)]
            DEAD_CELLS.with(|n| n.set(n.get() + u64::from(!every_cell)));
            // The first document at or after `from` where every word may be.
            let start = self.align(from);
            if start == TERMINATED {
                return;
            }
            if start < end {
                self.window(from, end, every_cell, callback);
                from = end;
            } else {
                from = start;
            }
        }
    }

    /// The first document at or after `from` that each word's cursors reach (each word's
    /// first document at or after it, the greatest of them), every cursor moved there;
    /// `TERMINATED` when some word has no later document.
    fn align(&mut self, from: DocId) -> DocId {
        let mut start = from;
        'align: loop {
            for w in &mut self.words {
                let mut first = TERMINATED;
                for c in w.iter_mut() {
                    first = first.min(c.seek(start));
                }
                if first == TERMINATED {
                    return TERMINATED;
                }
                if first > start {
                    start = first;
                    continue 'align;
                }
            }
            return start;
        }
    }

    /// Each word's bound in `[from, end)` (into `bounds`) and the documents of the cells
    /// whose bound passes `bar` (into `live`): the highest bound of a cell, whether every
    /// cell passes, and whether some word of the query has no document in the window.
    fn window_bounds(&mut self, from: DocId, end: DocId, bar: Score) -> (Score, bool, bool) {
        self.bounds.fill(0.0);
        self.live.fill(0);
        let mut bound: Score = 0.0;
        let mut every_cell = true;
        let mut at = from;
        while at < end {
            let to = ((at / CELL + 1) * CELL).min(end);
            let mut in_cell: Score = 0.0;
            for (w, b) in self.scouts.iter_mut().zip(&mut self.bounds) {
                let mut word: Score = 0.0;
                for s in w.iter_mut() {
                    word += s.max_in(at, to - 1);
                }
                *b = b.max(word);
                in_cell += word;
            }
            bound = bound.max(in_cell);
            if in_cell * (1.0 + 1e-5) > bar {
                set_bits(&mut self.live, (at - from) as usize, (to - from) as usize);
            } else {
                every_cell = false;
            }
            at = to;
        }
        let absent = self.bounds[..self.scored].contains(&0.0);
        (bound, every_cell, absent)
    }

    /// Scores the documents of `[start, end)` and passes on those that may enter the heap.
    /// Words are read rarest first; after each, a document whose score so far plus the bound
    /// of the words still to read cannot enter the heap is dropped, so a common word is
    /// scored only where the rarer ones left a chance.
    fn window(
        &mut self,
        start: DocId,
        end: DocId,
        every_cell: bool,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) {
        for n in 0..self.narrow.len() {
            let i = self.narrow[n];
            let rest: Score = self.narrow[n + 1..].iter().map(|&j| self.bounds[j]).sum();
            let Self {
                words,
                acc,
                has,
                mask,
                scored,
                ..
            } = self;
            let (acc, has) = (&mut acc[i], &mut has[i]);
            has.fill(0);
            let only = if n > 0 {
                Some(&mask[..])
            } else {
                (!every_cell).then_some(&self.live[..])
            };
            for c in &mut words[i] {
                if i >= *scored {
                    // A filter: its documents only (its scores stay 0).
                    c.docs_before(start, end, only, has);
                    continue;
                }
                c.each_before(start, end, only, |off, score| {
                    add_score(has, acc, off, score)
                });
            }
            if n == 0 {
                mask.copy_from_slice(has);
            } else {
                for (m, h) in mask.iter_mut().zip(has.iter()) {
                    *m &= h;
                }
            }
            // The score so far (in reading order: a bound's, not the exact sum's), and the
            // documents it rules out.
            let pruning = self.bar.pruning();
            let (acc, sum) = (&self.acc[i][..], &mut self.sum[..]);
            for (k, m) in self.mask.iter_mut().enumerate() {
                let mut bits = *m;
                // Which of these 64 can no longer enter, gathered without a branch (a branch
                // the CPU guessed wrong for many of them: `monitor product listing` 2.10 ->
                // 1.86-1.93 ms at 1M).
                let mut dropped = 0u64;
                while bits != 0 {
                    let bit = bits.trailing_zeros();
                    let off = k * 64 + bit as usize;
                    bits &= bits - 1;
                    let so_far = if n == 0 {
                        acc[off]
                    } else {
                        sum[off] + acc[off]
                    };
                    sum[off] = so_far;
                    let gone = !self.bar.may_enter(so_far + rest, start + off as DocId);
                    dropped |= u64::from(gone && pruning) << bit;
                }
                *m &= !dropped;
            }
            if self.mask.iter().all(|&m| m == 0) {
                // No document of the window can enter; the other words' cursors stay before
                // `end` and seek past it next window.
                return;
            }
        }
        for k in 0..self.mask.len() {
            let mut bits = self.mask[k];
            while bits != 0 {
                let off = k * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let doc = start + off as DocId;
                // Word by word, in word order (as the scorer adds; a filter's 0 last, as the
                // intersection with the filters adds it).
                let mut total: Score = 0.0;
                for a in &self.acc {
                    total += a[off];
                }
                if self.bar.passes(total, doc) {
                    let t = callback(doc, total);
                    self.bar.set(t, doc);
                }
            }
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Windows that had cells whose bound could not pass the bar (tests: the cells do prune).
    pub(in crate::search) static DEAD_CELLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Windows bounded by the cursors while the scouts paused (tests: that path runs).
    pub(in crate::search) static PAUSED_WINDOWS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Windows in a row whose scouting ruled nothing out before it pauses.
const SCOUT_MISSES: u32 = 4;
/// The longest pause of the scouts, in windows.
const SCOUT_PAUSE_MAX: u32 = 32;

/// Sets bits `from..to` of `bits`.
fn set_bits(bits: &mut [u64], from: usize, to: usize) {
    let mut i = from;
    while i < to {
        let k = i / 64;
        let lo = i % 64;
        let hi = (to - k * 64).min(64);
        let ones = if hi - lo == 64 {
            u64::MAX
        } else {
            ((1u64 << (hi - lo)) - 1) << lo
        };
        bits[k] |= ones;
        i = k * 64 + hi;
    }
}
