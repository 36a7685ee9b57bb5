//! `PhraseBonus`: every word required, plus bonuses for phrases of the words and the exact
//! `publisher/agent` name, with positions read only for the documents that could enter the
//! top k with them. The hub's queries use it to run a [`TermConjunction`] block by block with
//! the exact-name bonus when the text is a name (plain words without one are a `WordUnions`);
//! phrases are off (`PHRASE_BOOST`), the machinery is kept and tested.

use std::sync::Arc;

use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{Bm25Weight, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet as _, Score, SegmentReader, TERMINATED, TantivyError, Term};

use crate::popularity::PopularityBounds;
use crate::search::scorers::bonus_pruning::Visit;
use crate::search::scorers::bonus_scorer::{BonusScorer, PhraseCounter};
use crate::search::scorers::conjunction::{ConjunctionWeight, TermConjunction};

/// Every word required (`required`), plus bonuses: each phrase of the words in a field, and the
/// exact `publisher/agent` name. A document's score is the required part's, plus every phrase
/// it contains (BM25 of the phrase count with the phrase's summed IDF, times the boost: what
/// Tantivy's `PhraseQuery` gives), plus the exact-name clause, added in that order on every
/// path, so pruned and exhaustive collection see equal scores.
///
/// Checking a phrase means reading positions, and Tantivy does it for every document that has
/// the words: most of a two-word query's time. Here, while pruning, a document is dropped when
/// its required score plus what the phrases could add cannot pass the threshold — first with
/// each phrase's highest possible score, then with each phrase's score at `min(term
/// frequencies)` of its words in the document's field (a phrase occurs at most as often as its
/// rarest word, BM25 grows with the count, and float addition and rounding are monotonic, so
/// neither bound is ever below the exact sum). Positions are read only for the rest.
#[derive(Debug)]
pub(in crate::search) struct PhraseBonus {
    /// The words, every one required.
    pub(in crate::search) required: Box<dyn Query>,
    /// Terms of one field in phrase order, and the phrase's boost.
    pub(in crate::search) phrases: Vec<(Vec<Term>, Score)>,
    /// The exact-name clause, when the text is a `publisher/agent` name.
    pub(in crate::search) exact_name: Option<Box<dyn Query>>,
    /// The segment's popularity bounds, when the query is built for one segment and collected
    /// by relevance: a [`TermConjunction`] then raises the threshold as the bound of later
    /// documents falls (see [`Visit::blocks`]).
    pub(in crate::search) popularity: Option<Arc<PopularityBounds>>,
}

impl Clone for PhraseBonus {
    fn clone(&self) -> Self {
        Self {
            required: self.required.box_clone(),
            phrases: self.phrases.clone(),
            exact_name: self.exact_name.as_ref().map(|q| q.box_clone()),
            popularity: self.popularity.clone(),
        }
    }
}

impl Query for PhraseBonus {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let EnableScoring::Enabled {
            statistics_provider,
            ..
        } = scoring
        else {
            // Unscored, the bonuses change nothing: the matches are the required words'.
            return self.required.weight(scoring);
        };
        let conjunction = match self.required.downcast_ref::<TermConjunction>() {
            Some(c) => Some(c.conjunction_weight(statistics_provider)?),
            None => None,
        };
        let required = match &conjunction {
            Some(c) => Box::new(c.clone()),
            None => self.required.weight(scoring)?,
        };
        let phrases = self
            .phrases
            .iter()
            .map(|(terms, boost)| {
                Ok((
                    terms.clone(),
                    Bm25Weight::for_terms(statistics_provider, terms)?.boost_by(*boost),
                ))
            })
            .collect::<tantivy::Result<Vec<_>>>()?;
        let exact_name = self
            .exact_name
            .as_ref()
            .map(|q| q.weight(scoring))
            .transpose()?;
        Ok(Box::new(PhraseBonusWeight {
            required,
            conjunction,
            phrases,
            exact_name,
            popularity: self.popularity.clone(),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.required.query_terms(visitor);
        for (terms, _) in &self.phrases {
            for t in terms {
                visitor(t, true);
            }
        }
        if let Some(q) = &self.exact_name {
            q.query_terms(visitor);
        }
    }
}

struct PhraseBonusWeight {
    required: Box<dyn Weight>,
    /// The required part when it is a [`TermConjunction`] (then also `required`).
    conjunction: Option<ConjunctionWeight>,
    popularity: Option<Arc<PopularityBounds>>,
    phrases: Vec<(Vec<Term>, Bm25Weight)>,
    exact_name: Option<Box<dyn Weight>>,
}

impl PhraseBonusWeight {
    fn bonus_scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<BonusScorer> {
        let mut phrases = Vec::with_capacity(self.phrases.len());
        'phrase: for (terms, bm25) in &self.phrases {
            let field = terms[0].field();
            let inverted = reader.inverted_index(field)?;
            let mut postings = Vec::with_capacity(terms.len());
            for t in terms {
                match inverted.read_postings(t, IndexRecordOption::WithFreqsAndPositions)? {
                    Some(p) => postings.push(p),
                    // A word the segment lacks: no phrase here.
                    None => continue 'phrase,
                }
            }
            let fieldnorms = reader
                .fieldnorms_readers()
                .get_field(field)?
                .unwrap_or_else(|| FieldNormReader::constant(reader.max_doc(), 1));
            let bm25 = bm25.boost_by(boost);
            phrases.push(PhraseCounter {
                terms: terms.clone(),
                postings,
                fieldnorms,
                // tf / (tf + K) rounds to at most 1, and to 1 at u32::MAX with the smallest K.
                max: bm25.score(0, u32::MAX),
                bm25,
                bound: 0.0,
                positions: Vec::new(),
                next: Vec::new(),
            });
        }
        // Highest maximum first (the order of the bounds' refinement and of the additions).
        phrases.sort_by(|a, b| b.max.total_cmp(&a.max));
        let exact_name = match &self.exact_name {
            Some(w) => Some(w.scorer(reader, boost)?),
            None => None,
        };
        Ok(BonusScorer {
            required: self.required.scorer(reader, boost)?,
            phrases,
            exact_name,
        })
    }
}

impl Weight for PhraseBonusWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(self.bonus_scorer(reader, boost)?))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut s = self.bonus_scorer(reader, 1.0)?;
        if s.seek(doc) != doc {
            return Err(TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        let mut e = Explanation::new("words, then phrase and exact-name bonuses", s.score());
        e.add_detail(self.required.explain(reader, doc)?);
        Ok(e)
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        let mut s = self.bonus_scorer(reader, 1.0)?;
        let mut visit = Visit::new(&s, threshold);
        if let (Some(c), None) = (&self.conjunction, &self.exact_name) {
            return visit.blocks(c, self.popularity.as_deref(), &mut s, reader, callback);
        }
        let mut doc = s.required.doc();
        while doc != TERMINATED {
            visit.doc(&mut s, doc, callback);
            doc = s.required.advance();
        }
        Ok(())
    }
}
