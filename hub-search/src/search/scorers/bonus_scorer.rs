//! The scorer of a phrase bonus and its per-phrase counters: the required words' documents,
//! each phrase's bound (from the rarest word's frequency) and, only when needed, its count
//! from positions.

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings as _, SegmentPostings};
use tantivy::query::{Bm25Weight, Scorer};
use tantivy::{DocId, DocSet, Score, Term};

/// One phrase in one segment: its words' postings (with positions) and its BM25 weight.
pub(super) struct PhraseCounter {
    pub(super) terms: Vec<Term>,
    pub(super) postings: Vec<SegmentPostings>,
    pub(super) fieldnorms: FieldNormReader,
    pub(super) bm25: Bm25Weight,
    /// Above any score of the phrase.
    pub(super) max: Score,
    /// The last [`Self::bound`] (0 when a word is missing from the document's field).
    pub(super) bound: Score,
    /// Scratch: the positions where the phrase may occur.
    pub(super) positions: Vec<u32>,
    /// Scratch: the next word's shifted positions.
    pub(super) next: Vec<u32>,
}

impl PhraseCounter {
    /// [`Self::bound`] from the smallest frequency of the phrase's words in the document and
    /// the document's field-length id, read elsewhere (the postings are not moved).
    pub(super) fn bound_from_tf(&mut self, fieldnorm_id: u8, tf: u32) -> Score {
        self.bound = if tf == 0 {
            0.0
        } else {
            self.bm25.score(fieldnorm_id, tf)
        };
        self.bound
    }

    /// Moves every word's postings to `doc`; the phrase's score if it occurred as often as its
    /// rarest word there (0 when a word is missing).
    pub(super) fn bound(&mut self, doc: DocId) -> Score {
        let mut tf = u32::MAX;
        for p in &mut self.postings {
            if p.doc() < doc {
                p.seek(doc);
            }
            if p.doc() != doc {
                self.bound = 0.0;
                return 0.0;
            }
            tf = tf.min(p.term_freq());
        }
        self.bound = self.bm25.score(self.fieldnorms.fieldnorm_id(doc), tf);
        self.bound
    }

    /// The phrase's score in `doc` (after [`Self::bound`] for `doc`), 0 without the phrase:
    /// BM25 of the number of positions where the words follow each other.
    pub(super) fn score(&mut self, doc: DocId) -> Score {
        if self.bound == 0.0 {
            return 0.0;
        }
        // After `bound_from_tf`, the postings are not at `doc` yet.
        for p in &mut self.postings {
            if p.doc() < doc {
                p.seek(doc);
            }
            if p.doc() != doc {
                return 0.0;
            }
        }
        let last = self.postings.len() as u32 - 1;
        // Word i at position p + i is shifted to p + last: an occurrence is a shared value.
        self.positions.clear();
        self.postings[0].append_positions_with_offset(last, &mut self.positions);
        for (i, p) in self.postings.iter_mut().enumerate().skip(1) {
            self.next.clear();
            p.append_positions_with_offset(last - i as u32, &mut self.next);
            let next = &self.next;
            let mut j = 0;
            self.positions.retain(|&x| {
                while j < next.len() && next[j] < x {
                    j += 1;
                }
                j < next.len() && next[j] == x
            });
            if self.positions.is_empty() {
                return 0.0;
            }
        }
        self.bm25.score(
            self.fieldnorms.fieldnorm_id(doc),
            self.positions.len() as u32,
        )
    }
}

/// The scorer of `PhraseBonus`: the required words' documents, scored with the bonuses.
pub(super) struct BonusScorer {
    pub(super) required: Box<dyn Scorer>,
    /// Highest maximum first.
    pub(super) phrases: Vec<PhraseCounter>,
    pub(super) exact_name: Option<Box<dyn Scorer>>,
}

impl BonusScorer {
    /// The exact-name clause's score in `doc` (0 without it).
    pub(super) fn name_bonus(&mut self, doc: DocId) -> Score {
        match self.exact_name.as_mut() {
            Some(s) => {
                if s.doc() < doc {
                    s.seek(doc);
                }
                if s.doc() == doc { s.score() } else { 0.0 }
            }
            None => 0.0,
        }
    }

    /// The score of `doc` (the current document) from its required score and name bonus.
    pub(super) fn total(&mut self, doc: DocId, base: Score, name: Score) -> Score {
        let mut total = base;
        for p in &mut self.phrases {
            if p.bound(doc) > 0.0 {
                total += p.score(doc);
            }
        }
        total + name
    }
}

// The required words' documents, as they are.
impl DocSet for BonusScorer {
    fn advance(&mut self) -> DocId {
        self.required.advance()
    }
    fn seek(&mut self, target: DocId) -> DocId {
        self.required.seek(target)
    }
    fn doc(&self) -> DocId {
        self.required.doc()
    }
    fn size_hint(&self) -> u32 {
        self.required.size_hint()
    }
}

impl Scorer for BonusScorer {
    fn score(&mut self) -> Score {
        let doc = self.required.doc();
        let base = self.required.score();
        let name = self.name_bonus(doc);
        self.total(doc, base, name)
    }
}
