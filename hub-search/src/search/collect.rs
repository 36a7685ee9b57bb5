//! Running a text query, less the documents another query matches, with the filters, segment by
//! segment into a [`RankCollector`]. The query is built per segment, without the terms that
//! segment lacks (so a plain term union stays prunable there), and each segment's popularity
//! bounds are handed to the collector and to a [`PhraseBonus`].

use tantivy::collector::Collector as _;
use tantivy::query::{EnableScoring, Query};
use tantivy::{Searcher, SegmentOrdinal};

use crate::error::Result;
use crate::index::SearchIndex;
use crate::query::SearchQuery;
use crate::search::collector::RankCollector;
use crate::search::doc_freqs::DocFreqs;
use crate::search::plan::{Mode, Shape};
use crate::search::rank::Ranked;
use crate::search::scorers::any_words::AnyWords;
use crate::search::scorers::boosted_term::{BoostedTerm, Scaled};
use crate::search::scorers::phrase_bonus::PhraseBonus;
use crate::search::scorers::without::Without;
use crate::search::scorers::word_unions::WordUnions;

/// What a collection ranks: the text query of some of the query's words, less the documents
/// another query matches.
pub(super) struct Part<'a> {
    /// The text the words come from (an exact `publisher/agent` name is matched against it).
    pub(super) text: &'a str,
    /// The words ranked (some of the query's).
    pub(super) words: &'a [String],
    pub(super) mode: Mode,
    /// The last of `words` is the query's last word (it may also match as a prefix).
    pub(super) prefix_last: bool,
    /// Documents left out (unscored).
    pub(super) without: Option<&'a dyn Query>,
}

impl SearchIndex {
    /// The top `k` hits of `mode` after `after`, names resolved when `names`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn collect_k(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        q: &SearchQuery,
        words: &[String],
        mode: Mode,
        k: usize,
        after: Option<(u64, String)>,
        names: bool,
    ) -> Result<Vec<Ranked>> {
        let collector = RankCollector {
            sort: q.sort,
            k,
            after,
            prune: true,
            names,
        };
        self.collect_with(searcher, freqs, q, words, mode, &collector)
    }

    /// The top hits of `collector`. The query is built per segment, leaving out
    /// the terms that segment lacks: they match nothing there, and an absent term's empty
    /// postings would keep Tantivy from running block-max WAND on the union. Scores use the
    /// searcher's statistics, so they are those of the query with every term.
    pub(super) fn collect_with(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        q: &SearchQuery,
        words: &[String],
        mode: Mode,
        collector: &RankCollector,
    ) -> Result<Vec<Ranked>> {
        let part = Part {
            text: &q.text,
            words,
            mode,
            prefix_last: true,
            without: None,
        };
        self.collect_part(searcher, freqs, q, &part, collector)
    }

    /// [`Self::collect_with`] for the text query of `part` (some of the query's words, less
    /// the documents `part.without` matches).
    pub(super) fn collect_part(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        q: &SearchQuery,
        part: &Part<'_>,
        collector: &RankCollector,
    ) -> Result<Vec<Ranked>> {
        let scoring = if collector.requires_scoring() {
            EnableScoring::enabled_from_searcher(searcher)
        } else {
            EnableScoring::disabled_from_searcher(searcher)
        };
        let mut fruits = Vec::with_capacity(searcher.segment_readers().len());
        for (ord, reader) in searcher.segment_readers().iter().enumerate() {
            let shaped = self.text_query_shaped(
                searcher,
                freqs,
                part.text,
                part.words,
                part.mode,
                part.prefix_last,
                Some(reader),
            )?;
            // Filters add 0 to the score: the text query's bound holds for the full query.
            let shape = shaped.as_ref().map_or(Shape::Other, |(_, s)| *s);
            // Relevance uses the bounds; every sort uses the opened columns.
            let bounds = Some(self.bounds.get(searcher, reader)?);
            let mut text = shaped.map(|(t, _)| t);
            if let Some(p) = text.as_mut().and_then(|t| t.downcast_mut::<PhraseBonus>()) {
                // The collector below bounds thresholds with these (see `Visit::blocks`).
                p.popularity.clone_from(&bounds);
            }
            // With filters, a word union narrows by them in its window loop (instead of an
            // intersection that scores every filtered match); a lone term becomes a one-term
            // word union times its boost, which scores exactly as the `BoostedTerm`.
            let fold = q.only_names.is_empty() && self.has_filters(q) && part.without.is_none();
            if fold && let Some(b) = text.as_ref().and_then(|t| t.downcast_ref::<BoostedTerm>()) {
                text = Some(Box::new(Scaled {
                    inner: Box::new(WordUnions {
                        words: vec![vec![(b.term.clone(), 1.0)]],
                        popularity: None,
                        filters: Vec::new(),
                    }),
                    factor: b.boost,
                }));
            }
            let mut folded = false;
            let unions = match text.as_mut() {
                Some(t) if t.is::<Scaled>() => t
                    .downcast_mut::<Scaled>()
                    .and_then(|s| s.inner.downcast_mut::<WordUnions>()),
                Some(t) => t.downcast_mut::<WordUnions>(),
                None => None,
            };
            if let Some(w) = unions {
                // Likewise for the window loop (see `WordUnions`).
                w.popularity.clone_from(&bounds);
                if fold {
                    w.filters = self.filter_terms(q);
                    folded = true;
                }
            }
            if let Some(w) = text.as_mut().and_then(|t| t.downcast_mut::<AnyWords>()) {
                // And for the any-word union's.
                w.popularity.clone_from(&bounds);
            }
            if let Some(without) = part.without {
                // The excluded documents are skipped as the text query's loop passes them
                // on: its own pruning stays.
                text = text.map(|inner| {
                    Box::new(Without {
                        inner,
                        excluded: without.box_clone(),
                    }) as Box<dyn Query>
                });
            }
            let query = match text {
                Some(t) if folded => t,
                _ => self.full_query(q, text.as_deref()),
            };
            let weight = query.weight(scoring)?;
            fruits.push(collector.collect_segment_bounded(
                weight.as_ref(),
                ord as SegmentOrdinal,
                reader,
                bounds,
                shape,
                searcher.segment_readers().len() > 1,
            )?);
        }
        Ok(collector.merge_fruits(fruits)?)
    }
}
