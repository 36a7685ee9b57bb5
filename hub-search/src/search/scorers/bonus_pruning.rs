//! The pruning loop of a phrase bonus: a document is passed on only when its required score plus
//! what its phrases could add can pass the threshold, and over a [`TermConjunction`] the loop
//! runs block by block on the words' block maxima, raising the threshold as the popularity
//! bound of later documents falls.

use tantivy::postings::Postings as _;
use tantivy::query::Scorer;
use tantivy::{DocId, DocSet as _, Score, SegmentReader, TERMINATED};

use crate::popularity::PopularityBounds;
use crate::search::scorers::bonus_scorer::BonusScorer;
#[cfg(doc)]
use crate::search::scorers::conjunction::TermConjunction;
use crate::search::scorers::conjunction::{ConjunctionScorer, ConjunctionWeight};

/// `PhraseBonusWeight::for_each_pruning`'s state: the threshold, and per phrase the largest
/// it may add to a document.
pub(super) struct Visit {
    threshold: Score,
    max_phrases: Vec<Score>,
    parts: Vec<Score>,
}

impl Visit {
    pub(super) fn new(s: &BonusScorer, threshold: Score) -> Self {
        let max_phrases: Vec<Score> = s.phrases.iter().map(|p| p.max).collect();
        Self {
            threshold,
            parts: max_phrases.clone(),
            max_phrases,
        }
    }

    /// Scores `doc` (the required part's current document) and passes it on if it may pass the
    /// threshold. Per phrase, the largest it may add is its maximum, replaced by its bound in
    /// the document one phrase at a time (the phrases with the highest maximum first) until
    /// the sum cannot pass the threshold or every phrase is bounded.
    pub(super) fn doc(
        &mut self,
        s: &mut BonusScorer,
        doc: DocId,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) {
        let base = s.required.score();
        let name = s.name_bonus(doc);
        self.parts.copy_from_slice(&self.max_phrases);
        for i in 0..=self.parts.len() {
            if i > 0 {
                self.parts[i - 1] = s.phrases[i - 1].bound(doc);
            }
            // Same additions, in the same order, as `BonusScorer::total`.
            let mut bound = base;
            for p in &self.parts {
                bound += p;
            }
            if bound + name <= self.threshold {
                return;
            }
        }
        let score = s.total(doc, base, name);
        if score > self.threshold {
            self.threshold = callback(doc, score);
        }
    }

    /// [`Self::doc`] for a [`TermConjunction`] whose phrases are made of its words: a
    /// phrase's bound is computed from the words' frequencies the conjunction already read,
    /// and positions are read only when the bounds let the document through.
    fn doc_from_tfs(
        &mut self,
        s: &mut BonusScorer,
        doc: DocId,
        phrase_words: &[Vec<usize>],
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) {
        let Some(conj) = s.required.downcast_mut::<ConjunctionScorer>() else {
            return self.doc(s, doc, callback);
        };
        let base = conj.score();
        let id = conj.fieldnorms.fieldnorm_id(doc);
        let mut bound = base;
        for (p, words) in s.phrases.iter_mut().zip(phrase_words) {
            let tf = words
                .iter()
                .map(|&i| conj.postings[i].term_freq())
                .min()
                .unwrap_or(0);
            bound += p.bound_from_tf(id, tf);
        }
        // No exact-name clause on this path: the name bonus is 0.
        if bound <= self.threshold {
            return;
        }
        let mut total = base;
        for p in &mut s.phrases {
            if p.bound > 0.0 {
                total += p.score(doc);
            }
        }
        let score = total + 0.0;
        if score > self.threshold {
            self.threshold = callback(doc, score);
        }
    }

    /// The loop over a [`TermConjunction`] (no exact-name clause), block by block: where every
    /// word's block holds, the highest score a document could get is the sum of the words'
    /// block maxima plus, per phrase, a bound from those maxima; a stretch whose bound cannot
    /// pass the threshold is skipped without reading its documents, and the loop ends once the
    /// same bound over all later blocks cannot.
    ///
    /// The phrase bound: a phrase's BM25 and a word's BM25 in the same field are `weight *
    /// tf / (tf + K(field length))` with the same `K`, and a phrase occurs at most as often as
    /// each of its words, so the phrase adds at most `phrase weight / word weight` times the
    /// word's score there (times a margin of 1e-3 for rounding). Bounds are added in the order
    /// scores are (words in order, then phrases), and float addition is monotonic, so a bound
    /// is never below the score.
    pub(super) fn blocks(
        &mut self,
        c: &ConjunctionWeight,
        popularity: Option<&PopularityBounds>,
        s: &mut BonusScorer,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        let Some(words) = c.block_maxima(reader)? else {
            return Ok(());
        };
        // Per phrase, (word index, ratio) for each of its words.
        let ratios: Vec<Vec<(usize, Score)>> = s
            .phrases
            .iter()
            .map(|p| {
                c.terms
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| p.terms.contains(t))
                    .map(|(i, _)| (i, p.max / c.bm25[i].max_score() * 1.001))
                    .collect()
            })
            .collect();
        let bound = |at: &dyn Fn(usize) -> Score, phrase_max: &[Score]| -> Score {
            let mut b = 0.0;
            for i in 0..words.len() {
                b += at(i);
            }
            for (r, max) in ratios.iter().zip(phrase_max) {
                b += r
                    .iter()
                    .map(|&(i, ratio)| ratio * at(i))
                    .fold(*max, Score::min);
            }
            b
        };
        // Per phrase, the indexes of its words in the conjunction (every phrase word is one).
        let phrase_words: Vec<Vec<usize>> = ratios
            .iter()
            .map(|r| r.iter().map(|&(i, _)| i).collect())
            .collect();
        let tf_bounds = phrase_words
            .iter()
            .zip(&s.phrases)
            .all(|(w, p)| w.len() == p.terms.len());
        let mut at = vec![0usize; words.len()];
        let mut from: DocId = 0;
        // The threshold was computed for the document the collector last saw; the bound on the
        // popularity factor of later documents only falls.
        let mut seen: Option<DocId> = None;
        loop {
            if let (Some(p), Some(last)) = (popularity, seen)
                && self.threshold > 0.0
            {
                // `threshold * factor(last)` is the heap's worst rank key (less its margin);
                // the 1e-6 keeps rounding on the safe side.
                self.threshold = self.threshold * p.from(last) / p.from(from) * (1.0 - 1e-6);
                seen = Some(from);
            }
            // Every word's block that holds `from` (or comes after it).
            let mut end = TERMINATED;
            for (w, k) in words.iter().zip(at.iter_mut()) {
                while *k < w.last.len() && w.last[*k] < from {
                    *k += 1;
                }
                let Some(&last) = w.last.get(*k) else {
                    return Ok(());
                };
                end = end.min(last);
            }
            if bound(&|i| words[i].rest[at[i]], &self.max_phrases) <= self.threshold {
                return Ok(());
            }
            if bound(&|i| words[i].max[at[i]], &self.max_phrases) <= self.threshold {
                from = end + 1;
                continue;
            }
            let mut doc = s.required.seek(from);
            while doc <= end {
                if tf_bounds {
                    self.doc_from_tfs(s, doc, &phrase_words, callback);
                } else {
                    self.doc(s, doc, callback);
                }
                seen = Some(doc);
                doc = s.required.advance();
            }
            if doc == TERMINATED {
                return Ok(());
            }
            from = doc;
        }
    }
}
