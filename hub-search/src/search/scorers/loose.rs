//! Typo and prefix matches: the terms of the typo field within a few edits of a word (or
//! starting with it), as one constant-scored query. The dictionary is walked once per segment
//! and search; a few matched terms are merged as they are read, more are gathered into a
//! sorted vector or a bitset.

use std::sync::{Arc, Mutex, PoisonError};

use tantivy::index::SegmentId;
use tantivy::postings::{SegmentPostings, TermInfo};
use tantivy::query::{
    BitSetDocSet, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, TantivyError, Term};
use tantivy_common::BitSet;

use crate::error::Result;
use crate::search::scorers::automaton::{Dfa, LEVENSHTEIN};
use crate::search::scorers::union::{union_advance, union_seek};

/// The terms of a field within `distance` edits of a word (transpositions count one), or
/// starting with such a string (`prefix`), as one constant-scored query: the matches and score
/// of Tantivy's `FuzzyTermQuery`. Tantivy's puts the matches in a bitset of the segment's size
/// (an allocation and a memset of `max_doc / 8` bytes per segment and query, most of a rare
/// word's search); here, when the matched terms have few documents, they go in a sorted vector.
#[derive(Clone)]
pub(in crate::search) struct LooseMatch {
    term: Term,
    /// Built once per search (the query is built per segment).
    pub(in crate::search) dfa: Arc<Dfa>,
    /// The matched terms of each segment, found once per search (walking the dictionary with
    /// the automaton is most of a typo match's cost).
    pub(in crate::search) matched: MatchedTerms,
}

/// Per segment, the dictionary entries a [`LooseMatch`] matches.
pub(in crate::search) type MatchedTerms = Arc<Mutex<Vec<(SegmentId, Arc<Vec<TermInfo>>)>>>;

/// The dictionary entries of `field` in `reader` that `dfa` accepts, from `matched` when
/// already found.
pub(in crate::search) fn matched_terms(
    matched: &MatchedTerms,
    dfa: &Dfa,
    field: Field,
    reader: &SegmentReader,
) -> tantivy::Result<Arc<Vec<TermInfo>>> {
    let id = reader.segment_id();
    let mut cache = matched.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, terms)) = cache.iter().find(|(s, _)| *s == id) {
        return Ok(terms.clone());
    }
    let inverted = reader.inverted_index(field)?;
    let mut stream = inverted.terms().search(dfa).into_stream()?;
    let mut terms = Vec::new();
    while stream.advance() {
        terms.push(stream.value().clone());
    }
    let terms = Arc::new(terms);
    cache.push((id, terms.clone()));
    Ok(terms)
}

impl std::fmt::Debug for LooseMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LooseMatch")
            .field("term", &self.term)
            .finish_non_exhaustive()
    }
}

impl LooseMatch {
    /// Within `distance` edits of the term (at most 2).
    pub(in crate::search) fn new(term: Term, distance: u8) -> Self {
        Self::build(term, distance, false)
    }

    /// Starting with the term.
    pub(in crate::search) fn new_prefix(term: Term) -> Self {
        Self::build(term, 0, true)
    }

    fn build(term: Term, distance: u8, prefix: bool) -> Self {
        let distance = distance.min(2);
        let builder = LEVENSHTEIN[usize::from(distance)]
            .get_or_init(|| levenshtein_automata::LevenshteinAutomatonBuilder::new(distance, true));
        let dfa = {
            let value = term.value();
            let text = value.as_str().unwrap_or_default();
            if prefix {
                builder.build_prefix_dfa(text)
            } else {
                builder.build_dfa(text)
            }
        };
        Self {
            term,
            dfa: Arc::new(Dfa(dfa)),
            matched: MatchedTerms::default(),
        }
    }

    /// Whether some term of the segment matches (the per-segment query leaves the match out
    /// otherwise, like an absent term).
    pub(in crate::search) fn matches_in(&self, reader: &SegmentReader) -> Result<bool> {
        Ok(!matched_terms(&self.matched, &self.dfa, self.term.field(), reader)?.is_empty())
    }
}

impl Query for LooseMatch {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(LooseWeight {
            field: self.term.field(),
            dfa: self.dfa.clone(),
            matched: self.matched.clone(),
        }))
    }
}

/// Document ids, sorted and distinct, as a [`DocSet`].
struct SortedDocs {
    docs: Vec<DocId>,
    pos: usize,
}

impl DocSet for SortedDocs {
    fn advance(&mut self) -> DocId {
        self.pos = (self.pos + 1).min(self.docs.len());
        self.doc()
    }
    fn seek(&mut self, target: DocId) -> DocId {
        self.pos += self.docs[self.pos..].partition_point(|&d| d < target);
        self.doc()
    }
    fn doc(&self) -> DocId {
        self.docs.get(self.pos).copied().unwrap_or(TERMINATED)
    }
    fn size_hint(&self) -> u32 {
        self.docs.len() as u32
    }
}

struct LooseWeight {
    field: Field,
    dfa: Arc<Dfa>,
    matched: MatchedTerms,
}

/// The union of a few posting lists, read as it goes (a typo match that stops after the first
/// documents reads only their blocks).
struct FewPostings {
    postings: Vec<SegmentPostings>,
    doc: DocId,
}

impl FewPostings {
    fn new(postings: Vec<SegmentPostings>) -> Self {
        let doc = postings.iter().map(DocSet::doc).min().unwrap_or(TERMINATED);
        Self { postings, doc }
    }
}

impl DocSet for FewPostings {
    fn advance(&mut self) -> DocId {
        union_advance(&mut self.postings, &mut self.doc)
    }
    fn seek(&mut self, target: DocId) -> DocId {
        union_seek(&mut self.postings, &mut self.doc, target)
    }
    fn doc(&self) -> DocId {
        self.doc
    }
    fn size_hint(&self) -> u32 {
        self.postings.iter().map(|p| p.size_hint()).sum()
    }
}

/// Up to this many matched terms are merged as they are read ([`FewPostings`]); more are
/// gathered first.
pub(in crate::search) const FEW_TERMS: usize = 8;

impl Weight for LooseWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let inverted = reader.inverted_index(self.field)?;
        let terms = matched_terms(&self.matched, &self.dfa, self.field, reader)?;
        if terms.len() <= FEW_TERMS {
            let postings = terms
                .iter()
                .map(|info| inverted.read_postings_from_terminfo(info, IndexRecordOption::Basic))
                .collect::<std::io::Result<Vec<_>>>()?;
            return Ok(Box::new(ConstScorer::new(
                FewPostings::new(postings),
                boost,
            )));
        }
        let postings: usize = terms.iter().map(|t| t.doc_freq as usize).sum();
        let max_doc = reader.max_doc();
        // A vector of 4-byte ids while it is smaller than the bitset.
        if postings.saturating_mul(32) <= max_doc as usize {
            let mut docs = Vec::with_capacity(postings);
            for info in terms.iter() {
                let mut block =
                    inverted.read_block_postings_from_terminfo(info, IndexRecordOption::Basic)?;
                while !block.docs().is_empty() {
                    docs.extend_from_slice(block.docs());
                    block.advance();
                }
            }
            docs.sort_unstable();
            docs.dedup();
            return Ok(Box::new(ConstScorer::new(
                SortedDocs { docs, pos: 0 },
                boost,
            )));
        }
        let mut bits = BitSet::with_max_value(max_doc);
        for info in terms.iter() {
            let mut block =
                inverted.read_block_postings_from_terminfo(info, IndexRecordOption::Basic)?;
            while !block.docs().is_empty() {
                for &doc in block.docs() {
                    bits.insert(doc);
                }
                block.advance();
            }
        }
        Ok(Box::new(ConstScorer::new(BitSetDocSet::from(bits), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut s = self.scorer(reader, 1.0)?;
        if s.seek(doc) != doc {
            return Err(TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        Ok(Explanation::new("loose match", s.score()))
    }
}
