//! `TermConjunction`: every word one term of one field, intersected led by the rarest, with
//! each word's block maxima for the block-by-block loop of a phrase bonus.

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings as _, SegmentPostings};
use tantivy::query::{
    Bm25StatisticsProvider, Bm25Weight, BooleanQuery, EmptyScorer, EnableScoring, Explanation,
    Occur, Query, Scorer, TermQuery, Weight,
};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, TantivyError, Term};

/// Every word required, each word one term of one field: a document's score is the sum of its
/// terms' BM25 scores, added in word order on every path. Used as `PhraseBonus`'s required
/// part, which prunes it block by block (see `PhraseBonusWeight::for_each_pruning`).
#[derive(Debug, Clone)]
pub(in crate::search) struct TermConjunction {
    /// The words' terms (one field) and their boosts, in word order.
    pub(in crate::search) terms: Vec<(Term, Score)>,
}

impl TermConjunction {
    /// The scored weight, for `PhraseBonus`(super::phrase_bonus::PhraseBonus)'s block loop.
    pub(super) fn conjunction_weight(
        &self,
        statistics: &dyn Bm25StatisticsProvider,
    ) -> tantivy::Result<ConjunctionWeight> {
        let bm25 = self
            .terms
            .iter()
            .map(|(t, boost)| {
                Ok(Bm25Weight::for_terms(statistics, std::slice::from_ref(t))?.boost_by(*boost))
            })
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(ConjunctionWeight {
            terms: self.terms.iter().map(|(t, _)| t.clone()).collect(),
            bm25,
        })
    }
}

impl Query for TermConjunction {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        match scoring {
            EnableScoring::Enabled {
                statistics_provider,
                ..
            } => Ok(Box::new(self.conjunction_weight(statistics_provider)?)),
            // Unscored, Tantivy's intersection gives the same documents.
            EnableScoring::Disabled { .. } => BooleanQuery::new(
                self.terms
                    .iter()
                    .map(|(t, _)| {
                        (
                            Occur::Must,
                            Box::new(TermQuery::new(t.clone(), IndexRecordOption::Basic))
                                as Box<dyn Query>,
                        )
                    })
                    .collect(),
            )
            .weight(scoring),
        }
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for (t, _) in &self.terms {
            visitor(t, false);
        }
    }
}

#[derive(Clone)]
pub(super) struct ConjunctionWeight {
    pub(super) terms: Vec<Term>,
    pub(super) bm25: Vec<Bm25Weight>,
}

impl ConjunctionWeight {
    fn fieldnorms(&self, reader: &SegmentReader) -> tantivy::Result<FieldNormReader> {
        Ok(reader
            .fieldnorms_readers()
            .get_field(self.terms[0].field())?
            .unwrap_or_else(|| FieldNormReader::constant(reader.max_doc(), 1)))
    }

    /// The scorer, `None` when the segment lacks a word.
    fn conjunction_scorer(
        &self,
        reader: &SegmentReader,
        boost: Score,
    ) -> tantivy::Result<Option<ConjunctionScorer>> {
        let inverted = reader.inverted_index(self.terms[0].field())?;
        let mut postings = Vec::with_capacity(self.terms.len());
        for t in &self.terms {
            match inverted.read_postings(t, IndexRecordOption::WithFreqs)? {
                Some(p) => postings.push(p),
                None => return Ok(None),
            }
        }
        // Rarest word first: it leads the intersection.
        let mut lead: Vec<usize> = (0..postings.len()).collect();
        lead.sort_by_key(|&i| postings[i].doc_freq());
        let mut scorer = ConjunctionScorer {
            postings,
            lead,
            bm25: self.bm25.iter().map(|w| w.boost_by(boost)).collect(),
            fieldnorms: self.fieldnorms(reader)?,
            doc: 0,
        };
        let first = scorer.postings[scorer.lead[0]].doc();
        scorer.align(first);
        Ok(Some(scorer))
    }

    /// Per word, its posting list's blocks as (last document, highest score in the block),
    /// and the highest score of each block and every later one. `None` when the segment lacks
    /// a word. Decoding every block is cheaper than scoring the documents it lets skip.
    pub(super) fn block_maxima(
        &self,
        reader: &SegmentReader,
    ) -> tantivy::Result<Option<Vec<WordBlocks>>> {
        let inverted = reader.inverted_index(self.terms[0].field())?;
        let fieldnorms = self.fieldnorms(reader)?;
        let mut out = Vec::with_capacity(self.terms.len());
        for (t, bm25) in self.terms.iter().zip(&self.bm25) {
            let Some(mut block) = inverted.read_block_postings(t, IndexRecordOption::WithFreqs)?
            else {
                return Ok(None);
            };
            let mut w = WordBlocks::default();
            while let Some(&last) = block.docs().last() {
                w.last.push(last);
                w.max.push(block.block_max_score(&fieldnorms, bm25));
                block.advance();
            }
            w.rest = w.max.clone();
            for i in (0..w.rest.len().saturating_sub(1)).rev() {
                w.rest[i] = w.rest[i].max(w.rest[i + 1]);
            }
            out.push(w);
        }
        Ok(Some(out))
    }
}

/// One word's blocks (see [`ConjunctionWeight::block_maxima`]).
#[derive(Default)]
pub(super) struct WordBlocks {
    /// Each block's last document.
    pub(super) last: Vec<DocId>,
    /// Each block's highest score.
    pub(super) max: Vec<Score>,
    /// The highest score of each block and every later one.
    pub(super) rest: Vec<Score>,
}

impl Weight for ConjunctionWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(match self.conjunction_scorer(reader, boost)? {
            Some(s) => Box::new(s),
            None => Box::new(EmptyScorer),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let Some(mut s) = self.conjunction_scorer(reader, 1.0)? else {
            return Err(TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        };
        if s.seek(doc) != doc {
            return Err(TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        let mut e = Explanation::new("every word (BM25, summed)", s.score());
        let id = s.fieldnorms.fieldnorm_id(doc);
        for (p, w) in s.postings.iter().zip(&s.bm25) {
            e.add_detail(w.explain(id, p.term_freq()));
        }
        Ok(e)
    }
}

/// The documents with every word (a leapfrog intersection led by the rarest word).
pub(super) struct ConjunctionScorer {
    /// In word order (the order scores are added in).
    pub(super) postings: Vec<SegmentPostings>,
    /// Indexes of `postings`, rarest first.
    lead: Vec<usize>,
    bm25: Vec<Bm25Weight>,
    pub(super) fieldnorms: FieldNormReader,
    doc: DocId,
}

impl ConjunctionScorer {
    /// Moves to the first document at or after `target` that has every word.
    fn align(&mut self, mut target: DocId) -> DocId {
        'candidate: while target != TERMINATED {
            for &i in &self.lead {
                let p = &mut self.postings[i];
                let d = if p.doc() < target {
                    p.seek(target)
                } else {
                    p.doc()
                };
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

impl DocSet for ConjunctionScorer {
    fn advance(&mut self) -> DocId {
        if self.doc == TERMINATED {
            return self.doc;
        }
        let next = self.postings[self.lead[0]].advance();
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
        self.postings[self.lead[0]].size_hint()
    }
}

impl Scorer for ConjunctionScorer {
    fn score(&mut self) -> Score {
        let id = self.fieldnorms.fieldnorm_id(self.doc);
        let mut total = 0.0;
        for (p, w) in self.postings.iter().zip(&self.bm25) {
            total += w.score(id, p.term_freq());
        }
        total
    }
}
