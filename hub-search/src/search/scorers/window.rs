//! What the window loops of [`WordUnions`](super::word_unions::WordUnions) and
//! [`AnyWords`](super::any_words::AnyWords) share: a term's postings read block by block
//! ([`Cursor`], with its field's lengths from [`fieldnorms`]) and the heap's entry bar as the
//! collector's thresholds move it ([`Bar`]).

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::BlockSegmentPostings;
use tantivy::query::Bm25Weight;
use tantivy::{DocId, Score, SegmentReader, TERMINATED, Term};

use crate::popularity::PopularityBounds;

/// The lengths of a term's field in a segment (constant when the field keeps none).
pub(super) fn fieldnorms(reader: &SegmentReader, t: &Term) -> tantivy::Result<FieldNormReader> {
    Ok(reader
        .fieldnorms_readers()
        .get_field(t.field())?
        .unwrap_or_else(|| FieldNormReader::constant(reader.max_doc(), 1)))
}

/// Documents per cell: the window loops bound each cell of a window by its terms' [`Scout`]s
/// and leave out the cells whose bound cannot pass the bar.
pub(super) const CELL: u32 = if cfg!(test) { 32 } else { 512 };

/// Documents in a block of postings (Tantivy's bit-packed blocks; its constant is private).
const POSTINGS_BLOCK: usize = 128;

/// A term's postings read ahead of its [`Cursor`], block by block without scoring, for the
/// highest score it has in a range of documents: the largest maximum of its blocks with a
/// document in the range. Blocks' actual maxima are 10–20 % below the term's highest possible
/// score at a million agents, and a sum of several terms' bounds over a short range is over
/// documents that may have them together, so these bounds rule out far more than the terms'
/// maxima. Only the blocks of the ranges asked for are decoded.
pub(super) struct Scout {
    block: BlockSegmentPostings,
    bm25: Bm25Weight,
    norms: FieldNormReader,
}

impl Scout {
    pub(super) fn new(
        block: BlockSegmentPostings,
        bm25: Bm25Weight,
        norms: FieldNormReader,
    ) -> Self {
        Self { block, bm25, norms }
    }

    /// The highest score of a document of `[from, to]` (0 when the term has none there).
    /// Ranges must come in increasing order.
    pub(super) fn max_in(&mut self, from: DocId, to: DocId) -> Score {
        if self.block.docs().last().is_some_and(|&last| last < from) {
            self.block.seek(from);
        }
        let mut max: Score = 0.0;
        while let (Some(&first), Some(&last)) =
            (self.block.docs().first(), self.block.docs().last())
        {
            if first > to {
                break;
            }
            max = max.max(self.block.block_max_score(&self.norms, &self.bm25));
            if last >= to {
                // It may reach into the next range too.
                break;
            }
            self.block.advance();
        }
        max
    }
}

/// A term's posting list read block by block, with its (boosted) BM25 weight.
pub(super) struct Cursor {
    pub(super) block: BlockSegmentPostings,
    /// The current document's index in the loaded block.
    at: usize,
    done: bool,
    pub(super) bm25: Bm25Weight,
    norms: FieldNormReader,
}

impl Cursor {
    pub(super) fn new(
        block: BlockSegmentPostings,
        bm25: Bm25Weight,
        norms: FieldNormReader,
    ) -> Self {
        let done = block.docs().is_empty();
        Self {
            block,
            at: 0,
            done,
            bm25,
            norms,
        }
    }

    /// The current document (`TERMINATED` past the last).
    #[inline]
    pub(super) fn doc(&self) -> DocId {
        if self.done {
            TERMINATED
        } else {
            self.block.docs()[self.at]
        }
    }

    /// The current document's score (the cursor is on a document).
    #[inline]
    pub(super) fn score(&self) -> Score {
        let d = self.block.docs()[self.at];
        self.bm25
            .score(self.norms.fieldnorm_id(d), self.block.freqs()[self.at])
    }

    /// Moves to the first document at or after `target` (decoding only the block that holds
    /// it).
    #[inline]
    pub(super) fn seek(&mut self, target: DocId) -> DocId {
        if self.done {
            return TERMINATED;
        }
        let docs = self.block.docs();
        if docs[self.at] >= target {
            return docs[self.at];
        }
        if docs.last().is_some_and(|&last| last < target) {
            self.block.seek(target);
            self.at = 0;
        }
        let docs = self.block.docs();
        match docs[self.at..].iter().position(|&d| d >= target) {
            Some(i) => {
                self.at += i;
                docs[self.at]
            }
            None => {
                self.done = true;
                TERMINATED
            }
        }
    }

    /// The highest score of a document in `[from, to]` this cursor can give (its current
    /// block's maximum when the block reaches `to`, its highest score otherwise).
    #[inline]
    pub(super) fn bound(&mut self, to: DocId) -> Score {
        if self.done {
            return 0.0;
        }
        if self.block.docs().last().is_some_and(|&last| last >= to) {
            self.block.block_max_score(&self.norms, &self.bm25)
        } else {
            self.bm25.max_score()
        }
    }

    /// Sets the bit (offset from `start`) of each document before `end` in `has` — with
    /// `only`, of those whose bit is set in it — and stops at the first at or after `end`.
    pub(super) fn docs_before(
        &mut self,
        start: DocId,
        end: DocId,
        only: Option<&[u64]>,
        has: &mut [u64],
    ) {
        spans_before(
            &mut self.block,
            &mut self.at,
            &mut self.done,
            end,
            |docs, _| {
                for &d in docs {
                    let off = (d - start) as usize;
                    has[off / 64] |= only.map_or(u64::MAX, |m| m[off / 64]) & (1u64 << (off % 64));
                }
            },
        );
    }

    /// Calls `f(document, score)` for each document before `end`, in order, and stops at the
    /// first at or after it. With `only`, documents whose bit is not set in it (offsets from
    /// `start`) are passed over unscored.
    pub(super) fn each_before(
        &mut self,
        start: DocId,
        end: DocId,
        only: Option<&[u64]>,
        mut f: impl FnMut(usize, Score),
    ) {
        let Some(only) = only else {
            return self.each_scored_before(start, end, f);
        };
        // The documents of a block that `only` keeps are picked first, without a branch
        // (each one's index written, the count moved on by its bit), then scored: a test per
        // document that goes either way cost more than the work it saved.
        let mut picked = [0u8; POSTINGS_BLOCK];
        let (bm25, norms) = (&self.bm25, &self.norms);
        spans_before(
            &mut self.block,
            &mut self.at,
            &mut self.done,
            end,
            |docs, freqs| {
                assert!(docs.len() <= POSTINGS_BLOCK, "a span of {}", docs.len());
                let mut n = 0;
                for (i, &d) in docs.iter().enumerate() {
                    let off = (d - start) as usize;
                    picked[n] = i as u8;
                    n += (only[off / 64] >> (off % 64) & 1) as usize;
                }
                for &i in &picked[..n] {
                    let d = docs[i as usize];
                    let score = bm25.score(norms.fieldnorm_id(d), freqs[i as usize]);
                    f((d - start) as usize, score);
                }
            },
        );
    }

    /// [`Self::each_before`] without `only`: every document scored.
    fn each_scored_before(&mut self, start: DocId, end: DocId, mut f: impl FnMut(usize, Score)) {
        while !self.done {
            let docs = self.block.docs();
            let freqs = self.block.freqs();
            let mut i = self.at;
            while i < docs.len() {
                let d = docs[i];
                if d >= end {
                    self.at = i;
                    return;
                }
                f(
                    (d - start) as usize,
                    self.bm25.score(self.norms.fieldnorm_id(d), freqs[i]),
                );
                i += 1;
            }
            self.block.advance();
            self.at = 0;
            self.done = self.block.docs().is_empty();
        }
    }
}

/// Calls `span(documents, their frequencies)` for each run of a cursor's postings (`block`, the
/// current index `at` in it, `done` past the last) before `end`, block by block, and leaves the
/// cursor at the first document at or after `end`.
fn spans_before(
    block: &mut BlockSegmentPostings,
    at: &mut usize,
    done: &mut bool,
    end: DocId,
    mut span: impl FnMut(&[DocId], &[u32]),
) {
    while !*done {
        let docs = block.docs();
        let from = *at;
        let stop = from + docs[from..].partition_point(|&d| d < end);
        // A filter's postings keep no frequencies.
        let freqs = block.freqs().get(from..stop).unwrap_or(&[]);
        span(&docs[from..stop], freqs);
        if stop < docs.len() {
            *at = stop;
            return;
        }
        block.advance();
        *at = 0;
        *done = block.docs().is_empty();
    }
}

/// Adds `score` to document `off`'s sum in `acc`, `has` saying which documents have one: the
/// first score sets it (`0.0 + score`, as a union's sum starts), later ones add to it.
#[inline]
pub(super) fn add_score(has: &mut [u64], acc: &mut [Score], off: usize, score: Score) {
    let bit = 1u64 << (off % 64);
    if has[off / 64] & bit == 0 {
        has[off / 64] |= bit;
        acc[off] = score;
    } else {
        acc[off] += score;
    }
}

/// The heap's entry bar as a window loop tracks it, from the thresholds the collector returns
/// (see `RankCollector`): with the segment's popularity bounds, a document is held to its own
/// rank factor rather than to the bound of every later document's.
pub(super) struct Bar<'a> {
    /// The collector's last threshold: a text score at or below it cannot enter.
    threshold: Score,
    popularity: Option<&'a PopularityBounds>,
    /// The heap's entry bar on the rank key (`threshold × factor bound` where it was set),
    /// when the heap is full and popularity is known.
    key: Option<Score>,
}

impl<'a> Bar<'a> {
    pub(super) fn new(threshold: Score, popularity: Option<&'a PopularityBounds>) -> Self {
        let mut bar = Self {
            threshold: Score::MIN,
            popularity,
            key: None,
        };
        bar.set(threshold, 0);
        bar
    }

    /// A threshold the collector returned after `doc`: for later documents, a text score at
    /// or below it cannot enter the heap.
    #[inline]
    pub(super) fn set(&mut self, threshold: Score, doc: DocId) {
        self.threshold = threshold;
        self.key = match self.popularity {
            // The collector's threshold is `worst / factor bound(doc)` less a relative margin
            // of 1e-4: times that bound, it is just below the heap's worst rank key (1e-6
            // more keeps rounding on the safe side).
            Some(p) if threshold > 0.0 => Some(threshold * p.from(doc) * (1.0 - 1e-6)),
            _ => None,
        };
    }

    /// Whether any document is held back yet.
    #[inline]
    pub(super) fn pruning(&self) -> bool {
        self.key.is_some() || self.threshold > 0.0
    }

    /// The text score a document at or after `doc` must exceed.
    #[inline]
    pub(super) fn text(&self, doc: DocId) -> Score {
        match (self.key, self.popularity) {
            (Some(key), Some(p)) => key / p.from(doc) * (1.0 - 1e-6),
            _ => self.threshold,
        }
    }

    /// Whether a document whose text score is at most `score` may enter the heap (`score`
    /// computed in another order than the exact sum: a relative margin of 1e-5 covers it).
    #[inline]
    pub(super) fn may_enter(&self, score: Score, doc: DocId) -> bool {
        match (self.key, self.popularity) {
            (Some(key), Some(p)) => score * (1.0 + 1e-5) * p.factors[doc as usize] > key,
            _ => score * (1.0 + 1e-5) > self.threshold,
        }
    }

    /// Whether a document with this exact text score is passed on to the collector.
    #[inline]
    pub(super) fn passes(&self, score: Score, doc: DocId) -> bool {
        match (self.key, self.popularity) {
            (Some(key), Some(p)) => score * p.factors[doc as usize] > key,
            _ => score > self.threshold,
        }
    }
}

#[cfg(test)]
mod tests {
    use tantivy::query::Bm25Weight;
    use tantivy::schema::IndexRecordOption;
    use tantivy::{Score, Term};

    use super::{Scout, fieldnorms};
    use crate::mapping::{analyzer, field, tokens};

    /// Every document's score is at most the bound of the range it is in, ranges of every
    /// width asked in order, and the bounds are below the term's highest possible score (what
    /// the loops used before) in ranges where the term has documents.
    #[test]
    fn scout_bounds_hold_and_are_tighter_than_the_terms_maximum() {
        let index = crate::search::tests::synthetic_index(5, 1500);
        let searcher = index.reader.searcher();
        let text = index.fields.get(field::TEXT);
        for word in ["scraping", "data", "review", "monitor"] {
            let term = Term::from_field_text(text, &tokens(analyzer::TEXT, word)[0]);
            let bm25 = Bm25Weight::for_terms(&searcher, std::slice::from_ref(&term))
                .unwrap()
                .boost_by(0.7);
            for reader in searcher.segment_readers() {
                let inverted = reader.inverted_index(text).unwrap();
                let open = || {
                    inverted
                        .read_block_postings(&term, IndexRecordOption::WithFreqs)
                        .unwrap()
                };
                let Some(first) = open() else {
                    continue;
                };
                let norms = fieldnorms(reader, &term).unwrap();
                let mut scores = Vec::new();
                let mut postings = open().unwrap();
                while !postings.docs().is_empty() {
                    for (&d, &tf) in postings.docs().iter().zip(postings.freqs()) {
                        scores.push((d, bm25.score(norms.fieldnorm_id(d), tf)));
                    }
                    postings.advance();
                }
                assert!(!scores.is_empty(), "{word}");
                for width in [1, 7, 32, 200, 5000] {
                    let mut scout = Scout::new(first.clone(), bm25.clone(), norms.clone());
                    let (mut below, mut ranges) = (0, 0);
                    let mut from = 0;
                    while from < reader.max_doc() {
                        let to = from + width - 1;
                        let bound = scout.max_in(from, to);
                        let inside: Vec<Score> = scores
                            .iter()
                            .filter(|(d, _)| (from..=to).contains(d))
                            .map(|(_, s)| *s)
                            .collect();
                        for s in &inside {
                            assert!(*s <= bound, "{word}: {s} > {bound} in {from}..={to}");
                        }
                        if !inside.is_empty() {
                            ranges += 1;
                            below += usize::from(bound < bm25.max_score());
                        }
                        from += width;
                    }
                    assert!(ranges > 0 && below > 0, "{word}, width {width}");
                }
            }
        }
    }
}
