//! Running a [`SearchQuery`]: the Tantivy query is built term by term from analysed user text
//! (never through Tantivy's query parser), hits are collected in sort order after the cursor,
//! and highlights come from the stored tagline and description.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::Postings as _;
use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, ConstScorer, Occur, PhraseQuery, Query,
    TermQuery,
};
use tantivy::query::{Bm25Weight, EnableScoring, Explanation, Scorer, Weight};
use tantivy::schema::{IndexRecordOption, Value as _};
use tantivy::snippet::SnippetGenerator;
use tantivy::{
    DocAddress, DocId, DocSet, Score, Searcher, SegmentOrdinal, SegmentReader, TantivyDocument,
    Term,
};

use crate::error::{Error, Result};
use crate::index::SearchIndex;
use crate::mapping::{FieldKind, MAPPING, analyzer, field, tokens};
use crate::popularity::{PopularityBounds, RankColumns, popularity_factor, rank_factor};
use crate::query::{Cursor, SearchQuery, Sort};
use crate::words::query_words;

/// Words shorter than this get no typo tolerance (too many neighbours).
const FUZZY_MIN_CHARS: usize = 4;
/// Words at least this long may have two typos.
const FUZZY_TWO_EDITS_CHARS: usize = 8;
/// A word found in at least this many documents' short fields is taken as spelled right: no
/// fuzzy expansion (it would only add noise and cost).
const FUZZY_MAX_DOC_FREQ: u64 = 3;
/// The last word is also matched as a prefix when it has at least this many characters.
const PREFIX_MIN_CHARS: usize = 3;
/// A word at least this many documents have (in their short fields, their description or
/// their capability text) is taken as complete and spelled right: no prefix match and no typo
/// expansion. Its exact matches fill every page long before a constant-scored loose match
/// could rank; the automata over a frequent word (every document with `result`, `results`,
/// `resultant`, ...) were the costliest part of the query; and without them the query stays a
/// plain term union that Tantivy prunes with block-max WAND.
const KNOWN_WORD_DOC_FREQ: u64 = 500;
/// Weight of a typo or prefix match (constant-scored) next to exact matches.
const LOOSE_MATCH_BOOST: Score = 0.5;
/// Weight of the words found together, in order, in one part of the text (on top of each
/// word's own score); `None`: no phrase bonus. Off since the text became one BM25F field: on
/// the relevance set nDCG@10 is 0.936 with and without it (boosts 0.5, 1 and 2 tried), while
/// at 1M agents it made common two-word queries 5-10x slower ("web scraping": thousands of
/// near-equal documents each need their positions read). [`PhraseBonus`] still handles
/// phrases, tested against Tantivy's phrase queries, for when a corpus shows a need.
const PHRASE_BOOST: Option<Score> = None;
/// A synonym's matches score this fraction of the word's own.
const SYNONYM_WEIGHT: Score = 0.8;
/// Weight of an exact `publisher/agent` match: it must come first.
const EXACT_NAME_BOOST: Score = 20.0;
/// Most conjunctions (groups of the words) a query answered with fewer words may run, over all
/// its tiers; past it, the agents with even fewer words form one last tier ranked by the
/// any-word union (see [`fewer_words_tiers`]). With 24, every tier of a query of up to four
/// words is exact (14 groups), and the first two of five or six words.
const MAX_WORD_GROUPS: usize = 24;
/// A word of a conjunction with several alternatives is an [`AnyOf`] when its terms have more
/// documents than this many times (in halves) its number of alternatives times the rarest
/// word's documents, a union `BooleanQuery` otherwise: `AnyOf` costs about a seek per
/// alternative at each of the rarest word's documents, Tantivy's union about a read of each of
/// its own. At 1M agents (medians): `monitor schema` (167k documents in 2 alternatives, next
/// to 44k) 1.7 ms as `AnyOf`, 2.3 ms as a union; `sql databases` (238k in 4, next to 98k) 5.1
/// ms as `AnyOf`, 2.2 ms as a union; `web scraping` 10.1 ms with `AnyOf` for both words, 4.1
/// ms with unions.
const ANY_OF_HALF_RATIO: u64 = 3;
/// Highlight fragment length.
const HIGHLIGHT_CHARS: usize = 160;

/// A fragment of a field with the matched words marked by byte ranges.
pub use index_schema::hub_api::SearchHighlight as Highlight;
/// One hit: the agent's latest visible version (the hub API's type).
pub use index_schema::hub_api::SearchHit as Hit;
/// A page of hits.
pub use index_schema::hub_api::SearchPage as SearchResults;
pub use index_schema::hub_api::{FacetCount, SearchFacets};

mod facets;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Every word must match (somewhere, possibly with a typo).
    All,
    /// Any word may match (fallback when no agent has all the words).
    Any,
}

impl SearchIndex {
    /// Runs a search on the last visible commit.
    pub fn search(&self, q: &SearchQuery) -> Result<SearchResults> {
        let searcher = self.reader.searcher();
        let words = query_words(&q.text);
        let freqs = DocFreqs::default();
        let below = self.tuning().fewer_words_below;
        // Fewer words: when every word together finds fewer than `below` agents, agents with
        // only some of the words follow, below every full match (tier 0): those lacking one
        // word (tier 1), then two (tier 2), ... (see `fewer_words`). The first page decides;
        // its cursor carries the tier, so every page of a query agrees.
        let relaxable = words.len() > 1 && below > 0;
        // A `publisher/agent` name that finds agents is answered by them: whoever types a name
        // wants that agent, not every agent sharing one of its words.
        let is_name = index_schema::name::AgentName::parse(q.text.trim()).is_ok();
        let cursor_tier = q.cursor.as_ref().and_then(|c| c.tier);
        let mut mode = Mode::All;
        let mut tiers: Option<Vec<u8>> = None;
        // With fewer words, the words each hit lacks when its tier says it.
        let mut lacks: Vec<Option<Vec<String>>> = Vec::new();
        let mut hits = match cursor_tier {
            None => {
                let first_page = q.cursor.is_none();
                let k = if first_page && relaxable {
                    (q.limit + 1).max(below)
                } else {
                    q.limit + 1
                };
                let after = q.cursor.as_ref().map(|c| (c.key, c.name.clone()));
                let strict =
                    self.collect_k(&searcher, &freqs, q, &words, Mode::All, k, after, relaxable)?;
                if first_page
                    && relaxable
                    && strict.len() < below
                    && (!is_name || strict.is_empty())
                {
                    mode = Mode::Any;
                    let page = self.fewer_words(&searcher, &freqs, q, &words, strict)?;
                    tiers = Some(page.tiers);
                    lacks = page.missing;
                    page.hits
                } else {
                    strict
                }
            }
            Some(tier) => {
                mode = Mode::Any;
                // The full matches are needed only while the cursor is among them.
                let strict = if tier == 0 {
                    self.collect_k(&searcher, &freqs, q, &words, Mode::All, below, None, true)?
                } else {
                    Vec::new()
                };
                let page = self.fewer_words(&searcher, &freqs, q, &words, strict)?;
                tiers = Some(page.tiers);
                lacks = page.missing;
                page.hits
            }
        };
        let text = self.text_query(&searcher, &freqs, &q.text, &words, mode, None)?;
        // Over the set the pages are drawn from: every full match, or with fewer words the
        // any-word union.
        let facets = if q.facets {
            let query = self.full_query(q, text.as_deref());
            Some(searcher.search(
                query.as_ref(),
                &facets::FacetCollector {
                    segments: searcher.segment_readers().len(),
                },
            )?)
        } else {
            None
        };
        let more = hits.len() > q.limit;
        hits.truncate(q.limit);
        let highlighters = match &text {
            Some(t) if !hits.is_empty() => [field::TAGLINE, field::DESCRIPTION]
                .into_iter()
                .map(|f| Ok((f, self.highlighter(&searcher, &freqs, t.as_ref(), f)?)))
                .collect::<Result<Vec<_>>>()?,
            _ => Vec::new(),
        };
        let mut out = Vec::with_capacity(hits.len());
        let hits_keys: Vec<u64> = hits.iter().map(|h| h.key).collect();
        let hits_addrs: Vec<DocAddress> = hits.iter().map(|h| h.addr).collect();
        for h in hits {
            let doc: TantivyDocument = searcher.doc(h.addr)?;
            let s = |f: &str| {
                doc.get_first(self.fields.get(f))
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            let highlights = highlighters
                .iter()
                .filter_map(|(f, g)| {
                    let snip = g.snippet_from_doc(&doc);
                    (!snip.highlighted().is_empty()).then(|| Highlight {
                        field: (*f).to_owned(),
                        fragment: snip.fragment().to_owned(),
                        ranges: snip.highlighted().iter().cloned().map(Into::into).collect(),
                    })
                })
                .collect();
            out.push(Hit {
                name: s(field::NAME),
                version: s(field::VERSION),
                display_name: s(field::DISPLAY_NAME),
                tagline: s(field::TAGLINE),
                kind: s(field::KIND),
                downloads: doc
                    .get_first(self.fields.get(field::DOWNLOADS))
                    .and_then(|v| v.as_u64())
                    .unwrap_or(0),
                updated_at: doc
                    .get_first(self.fields.get(field::UPDATED))
                    .and_then(|v| v.as_i64())
                    .unwrap_or(0),
                deprecated: doc
                    .get_first(self.fields.get(field::DEPRECATED))
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false),
                score: (q.sort == Sort::Relevance).then_some(h.score),
                highlights,
                missing_words: Vec::new(),
            });
        }
        // Few full matches on a first page: suggest the query spelled as the index spells it.
        let full_matches = match &tiers {
            Some(t) => t.iter().filter(|x| **x == 0).count(),
            None => out.len(),
        };
        let did_you_mean = if q.cursor.is_none() && full_matches < below.max(1) {
            self.did_you_mean(&searcher, &freqs, &words)?
        } else {
            None
        };
        let mut dropped_words: Vec<String> = Vec::new();
        if let Some(t) = &tiers {
            // The words a hit lacks, from its tier or else looked up.
            let partial: Vec<(usize, DocAddress)> = hits_addrs
                .iter()
                .enumerate()
                .filter(|(i, _)| {
                    t.get(*i).is_some_and(|t| *t > 0) && lacks.get(*i).is_none_or(Option::is_none)
                })
                .map(|(i, a)| (i, *a))
                .collect();
            let mut missing = self.missing_words(&searcher, &freqs, &words, &partial)?;
            missing.extend(
                lacks
                    .iter_mut()
                    .take(out.len())
                    .enumerate()
                    .filter_map(|(i, m)| Some((i, m.take()?))),
            );
            for (i, m) in missing {
                for w in &m {
                    if !dropped_words.contains(w) {
                        dropped_words.push(w.clone());
                    }
                }
                out[i].missing_words = m;
            }
            dropped_words.sort_by_key(|w| words.iter().position(|x| x == w));
        }
        let next_cursor = match (more, hits_keys.last(), out.last()) {
            (true, Some(&key), Some(last)) => Some(
                Cursor {
                    key,
                    name: last.name.clone(),
                    query: q.digest(),
                    tier: tiers.as_ref().and_then(|t| t.get(out.len() - 1).copied()),
                }
                .encode(),
            ),
            _ => None,
        };
        Ok(SearchResults {
            hits: out,
            next_cursor,
            dropped_words,
            did_you_mean,
            facets,
        })
    }

    /// What `SnippetGenerator::create` builds for a stored field (the query's words, weighted
    /// by `1 / (1 + document frequency)`): the words are the query's terms of [`field::TEXT`],
    /// whose analyzer the stored fields' text goes through, with stems memoised and the
    /// search's document frequencies.
    fn highlighter(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        query: &dyn Query,
        name: &str,
    ) -> Result<SnippetGenerator> {
        let text = self.fields.get(field::TEXT);
        let mut terms = std::collections::BTreeSet::new();
        query.query_terms(&mut |t, _| {
            if t.field() == text {
                terms.insert(t.clone());
            }
        });
        let mut weights = std::collections::BTreeMap::new();
        for t in terms {
            let Some(word) = t.value().as_str().map(str::to_owned) else {
                continue;
            };
            let doc_freq = freqs.get(searcher, &t)?;
            if doc_freq > 0 {
                weights.insert(word, 1.0 / (1.0 + doc_freq as Score));
            }
        }
        let analyzer = crate::mapping::highlight_analyzer(analyzer::TEXT).ok_or_else(|| {
            tantivy::TantivyError::SchemaError(format!("no analyzer {}", analyzer::TEXT))
        })?;
        Ok(SnippetGenerator::new(
            weights,
            analyzer,
            self.fields.get(name),
            HIGHLIGHT_CHARS,
        ))
    }

    /// The top `k` hits of `mode` after `after`, names resolved when `names`.
    #[allow(clippy::too_many_arguments)]
    fn collect_k(
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

    /// A page of a query whose full matches (`strict`: all of them, fewer than the threshold,
    /// names resolved; empty when the cursor is past them) are followed by agents with only
    /// some of the words, fewest dropped words first (see [`fewer_words_tiers`]): tier 0 is the
    /// full matches, tier `t` the agents lacking exactly `t` words, each tier in sort order.
    /// Returns the hits (up to `limit + 1`), each one's tier, and the words each one lacks
    /// when the tier says it (`None` in a last [`Tier::AtMost`] tier).
    fn fewer_words(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        q: &SearchQuery,
        words: &[String],
        strict: Vec<Ranked>,
    ) -> Result<FewerWordsPage> {
        let want = q.limit + 1;
        let (start, cursor_tier, after) = match &q.cursor {
            None => (0, 0, None),
            Some(c) if c.tier == Some(0) => (
                strict
                    .iter()
                    .position(|r| r.key == c.key && r.name == c.name)
                    .map_or(strict.len(), |i| i + 1),
                0,
                None,
            ),
            Some(c) => (
                strict.len(),
                c.tier.unwrap_or(0),
                Some((c.key, c.name.clone())),
            ),
        };
        let mut out = FewerWordsPage::default();
        for r in strict.into_iter().skip(start).take(want) {
            out.hits.push(r);
            out.tiers.push(0);
            out.missing.push(Some(Vec::new()));
        }
        let n = words.len();
        // No words (only a hand-made cursor carries a tier to a query without words).
        let Some(last) = n.checked_sub(1) else {
            return Ok(out);
        };
        // One word's query (its alternatives as in the whole query), unscored uses only.
        let word_query = |i: usize| -> Result<Option<Box<dyn Query>>> {
            let one = std::slice::from_ref(&words[i]);
            Ok(self
                .text_query_shaped(searcher, freqs, &words[i], one, Mode::All, i == last, None)?
                .map(|(q, _)| q))
        };
        for (t, tier) in fewer_words_tiers(n).into_iter().enumerate() {
            let t = t as u8 + 1;
            if out.hits.len() >= want {
                break;
            }
            if t < cursor_tier {
                continue;
            }
            let after = if t == cursor_tier {
                after.clone()
            } else {
                None
            };
            let k = want - out.hits.len();
            let mut found: Vec<(Ranked, Option<Vec<String>>)> = Vec::new();
            match tier {
                Tier::Exactly(size) => {
                    for kept in subsets(n, size) {
                        // The agents with these words and none of the others.
                        let part_words: Vec<String> =
                            kept.iter().map(|&i| words[i].clone()).collect();
                        let dropped: Vec<usize> = (0..n).filter(|i| !kept.contains(i)).collect();
                        let dropped_words: Vec<String> =
                            dropped.iter().map(|&i| words[i].clone()).collect();
                        let mut others = Vec::with_capacity(dropped.len());
                        for &i in &dropped {
                            others.extend(word_query(i)?);
                        }
                        let without = AnyOf(others);
                        let part = Part {
                            text: &part_words.join(" "),
                            words: &part_words,
                            mode: Mode::All,
                            prefix_last: kept.contains(&last),
                            without: Some(&without),
                        };
                        let hits = self.collect_part(
                            searcher,
                            freqs,
                            q,
                            &part,
                            &RankCollector {
                                sort: q.sort,
                                k,
                                after: after.clone(),
                                prune: true,
                                names: true,
                            },
                        )?;
                        found.extend(hits.into_iter().map(|r| (r, Some(dropped_words.clone()))));
                    }
                }
                Tier::AtMost(size) => {
                    // Every agent with at most `size` of the words, by the any-word union.
                    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
                    for i in 0..n {
                        if let Some(w) = word_query(i)? {
                            clauses.push((Occur::Should, w));
                        }
                    }
                    let more = BooleanQuery::with_minimum_required_clauses(clauses, size + 1);
                    let part = Part {
                        text: &q.text,
                        words,
                        mode: Mode::Any,
                        prefix_last: true,
                        without: Some(&more),
                    };
                    let hits = self.collect_part(
                        searcher,
                        freqs,
                        q,
                        &part,
                        &RankCollector {
                            sort: q.sort,
                            k,
                            after,
                            prune: true,
                            names: true,
                        },
                    )?;
                    found.extend(hits.into_iter().map(|r| (r, None)));
                }
            }
            found.sort_by(|a, b| a.0.order(&b.0));
            for (r, missing) in found.into_iter().take(k) {
                out.hits.push(r);
                out.tiers.push(t);
                out.missing.push(missing);
            }
        }
        Ok(out)
    }

    /// The query with each word the index does not know replaced by the most common indexed
    /// word within the typo distance (1 edit from 4 characters, 2 from 8); `None` when no word
    /// changes. Only the index's own words are suggested.
    fn did_you_mean(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        words: &[String],
    ) -> Result<Option<String>> {
        let typo = self.fields.get(field::TYPO);
        let mut changed = false;
        let mut out = Vec::with_capacity(words.len());
        for w in words {
            let chars = w.chars().count();
            let exact = Term::from_field_text(typo, w);
            if chars < FUZZY_MIN_CHARS || freqs.get(searcher, &exact)? > 0 {
                out.push(w.clone());
                continue;
            }
            // The closest words first (1 edit, then 2 from 8 characters), then the most used.
            let max_edits = if chars >= FUZZY_TWO_EDITS_CHARS { 2 } else { 1 };
            let mut counts: std::collections::BTreeMap<String, u64> = Default::default();
            for edits in 1..=max_edits {
                let m = LooseMatch::new(exact.clone(), edits);
                for reader in searcher.segment_readers() {
                    let inverted = reader.inverted_index(typo)?;
                    let mut stream = inverted
                        .terms()
                        .search(m.dfa.as_ref())
                        .into_stream()
                        .map_err(|e| Error::Io("the term dictionary".into(), e))?;
                    while stream.advance() {
                        if let Ok(t) = std::str::from_utf8(stream.key()) {
                            *counts.entry(t.to_owned()).or_default() +=
                                u64::from(stream.value().doc_freq);
                        }
                    }
                }
                if !counts.is_empty() {
                    break;
                }
            }
            // Most agents first; among equals the first in byte order (deterministic).
            match counts
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            {
                Some((best, _)) if best != *w => {
                    changed = true;
                    out.push(best);
                }
                _ => out.push(w.clone()),
            }
        }
        Ok(changed.then(|| out.join(" ")))
    }

    /// For each partial match (`(position, address)`), the query words it lacks.
    fn missing_words(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        words: &[String],
        partial: &[(usize, DocAddress)],
    ) -> Result<Vec<(usize, Vec<String>)>> {
        let mut out: Vec<(usize, Vec<String>)> =
            partial.iter().map(|(i, _)| (*i, Vec::new())).collect();
        if partial.is_empty() {
            return Ok(out);
        }
        let scoring = EnableScoring::disabled_from_searcher(searcher);
        for (i, w) in words.iter().enumerate() {
            // The word's alternatives as in the whole query (only the last word is also
            // matched as a prefix).
            let one = std::slice::from_ref(w);
            let prefix = i + 1 == words.len();
            let Some((query, _)) =
                self.text_query_shaped(searcher, freqs, w, one, Mode::All, prefix, None)?
            else {
                continue;
            };
            let weight = query.weight(scoring)?;
            for ((_, addr), (_, missing)) in partial.iter().zip(out.iter_mut()) {
                let reader = searcher.segment_reader(addr.segment_ord);
                let mut scorer = weight.scorer(reader, 1.0)?;
                if scorer.doc() > addr.doc_id || scorer.seek(addr.doc_id) != addr.doc_id {
                    missing.push(w.clone());
                }
            }
        }
        Ok(out)
    }

    /// The top hits of `collector`. The query is built per segment, leaving out
    /// the terms that segment lacks: they match nothing there, and an absent term's empty
    /// postings would keep Tantivy from running block-max WAND on the union. Scores use the
    /// searcher's statistics, so they are those of the query with every term.
    fn collect_with(
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
    fn collect_part(
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
            let unfiltered = q.capabilities.is_empty()
                && q.keywords.is_empty()
                && q.kind.is_none()
                && q.publisher.is_none();
            let shape = match shaped.as_ref().map(|(_, s)| *s) {
                // With filters the query is no longer a plain union.
                Some(Shape::TermUnion) if !unfiltered => Shape::Other,
                // Filters add 0 to the score: the text query's bound holds for the full query.
                Some(s) => s,
                None => Shape::Other,
            };
            // Relevance uses the bounds; every sort uses the opened columns.
            let bounds = Some(self.bounds.get(searcher, reader)?);
            let mut text = shaped.map(|(t, _)| t);
            if let Some(p) = text.as_mut().and_then(|t| t.downcast_mut::<PhraseBonus>()) {
                // The collector below bounds thresholds with these (see `Visit::blocks`).
                p.popularity.clone_from(&bounds);
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
            let query = self.full_query(q, text.as_deref());
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

    /// Text query AND filters. (Yanked agents are never in the index: the writer deletes them
    /// instead of adding them, so no clause is needed to hide them.) Without filters the text
    /// query is run as it is, which keeps a plain term union prunable (block-max WAND).
    fn full_query(&self, q: &SearchQuery, text: Option<&dyn Query>) -> Box<dyn Query> {
        let unfiltered = q.capabilities.is_empty()
            && q.keywords.is_empty()
            && q.kind.is_none()
            && q.publisher.is_none();
        if unfiltered {
            return match text {
                Some(t) => t.box_clone(),
                None => Box::new(AllQuery),
            };
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(
            Occur::Must,
            match text {
                Some(t) => t.box_clone(),
                None => Box::new(AllQuery),
            },
        )];
        let filter = |f: &str, v: &str| -> (Occur, Box<dyn Query>) {
            (
                Occur::Must,
                Box::new(ConstScoreQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_text(self.fields.get(f), v),
                        IndexRecordOption::Basic,
                    )),
                    0.0,
                )),
            )
        };
        clauses.extend(
            q.capabilities
                .iter()
                .map(|c| filter(field::CAPABILITY_EXACT, c)),
        );
        clauses.extend(q.keywords.iter().map(|k| filter(field::KEYWORD_EXACT, k)));
        clauses.extend(q.kind.iter().map(|k| filter(field::KIND, k)));
        clauses.extend(q.publisher.iter().map(|p| filter(field::PUBLISHER, p)));
        Box::new(BooleanQuery::new(clauses))
    }

    /// The free-text part, built from analysed words; `None` when the text has no words. With
    /// `segment`, the exact terms and phrases that segment lacks are left out (same matches and
    /// scores in that segment).
    fn text_query(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        text: &str,
        words: &[String],
        mode: Mode,
        segment: Option<&SegmentReader>,
    ) -> Result<Option<Box<dyn Query>>> {
        Ok(self
            .text_query_shaped(searcher, freqs, text, words, mode, true, segment)?
            .map(|(q, _)| q))
    }

    /// [`Self::text_query`] and its [`Shape`]. The last of `words` is also matched as a
    /// prefix only with `prefix_last` (it is the query's last word: a query of some of the
    /// words keeps each word's alternatives as in the whole query).
    #[allow(clippy::too_many_arguments)]
    fn text_query_shaped(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        text: &str,
        words: &[String],
        mode: Mode,
        prefix_last: bool,
        segment: Option<&SegmentReader>,
    ) -> Result<Option<(Box<dyn Query>, Shape)>> {
        if words.is_empty() {
            return Ok(None);
        }
        // Clauses other than plain term queries (automata, phrases, the exact name).
        let mut other_clauses = 0;
        let mut term_clauses = 0;
        let single_segment = searcher.segment_readers().len() == 1;
        let present = |t: &Term| -> Result<bool> {
            Ok(match segment {
                None => true,
                // One segment: the searcher's document frequency (looked up once per search)
                // says it.
                Some(_) if single_segment => freqs.get(searcher, t)? > 0,
                Some(r) => r
                    .inverted_index(t.field())?
                    .get_term_info(t)
                    .map_err(|e| Error::Io("the term dictionary".into(), e))?
                    .is_some(),
            })
        };
        let typo = self.fields.get(field::TYPO);
        let synonyms = self.tuning().synonyms;
        let mut per_word: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        // Mode::All: each word's alternatives and how many documents its terms have (summed).
        let mut required: Vec<(Vec<Clause>, u64)> = Vec::new();
        let mut stems = Vec::new();
        // The last word's alternatives when they are one plain term (see the end).
        let mut lone_term = None;
        // Every word's alternatives when each is one plain term (a [`TermConjunction`]).
        let mut plain_terms = Some(Vec::with_capacity(words.len()));
        for (i, word) in words.iter().enumerate() {
            let stem = tokens(analyzer::TEXT, word)
                .into_iter()
                .next()
                .unwrap_or_else(|| word.clone());
            let mut alts: Vec<(Occur, Box<dyn Query>)> = Vec::new();
            let mut terms = Vec::new();
            for spec in MAPPING {
                let (Some(boost), FieldKind::Text { analyzer: a, .. }) = (spec.boost, spec.kind)
                else {
                    continue;
                };
                let t = if a == analyzer::WORD { word } else { &stem };
                let term = Term::from_field_text(self.fields.get(spec.name), t);
                if !present(&term)? {
                    continue;
                }
                terms.push((term.clone(), boost));
                alts.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(
                        Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)),
                        boost,
                    )),
                ));
            }
            // The word's synonyms (of the word as typed, or of its stem: `plots` finds what
            // `plot` does): the same fields, a little below the word itself.
            let mut syns: Vec<&String> = synonyms.of(word).iter().collect();
            if stem != *word {
                syns.extend(synonyms.of(&stem).iter().filter(|s| *s != word));
            }
            for syn in syns {
                let syn_stem = tokens(analyzer::TEXT, syn)
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| syn.clone());
                for spec in MAPPING {
                    let (Some(boost), FieldKind::Text { analyzer: a, .. }) =
                        (spec.boost, spec.kind)
                    else {
                        continue;
                    };
                    let t = if a == analyzer::WORD { syn } else { &syn_stem };
                    let term = Term::from_field_text(self.fields.get(spec.name), t);
                    if terms.iter().any(|(x, _)| *x == term) || !present(&term)? {
                        continue;
                    }
                    let boost = boost * SYNONYM_WEIGHT;
                    terms.push((term.clone(), boost));
                    alts.push((
                        Occur::Should,
                        Box::new(BoostQuery::new(
                            Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)),
                            boost,
                        )),
                    ));
                }
            }
            let chars = word.chars().count();
            let exact = Term::from_field_text(typo, word);
            let doc_freq = freqs.get(searcher, &exact)?;
            // A word this many agents use anywhere (short fields or prose) is a complete,
            // correctly spelled word: no prefix, no typo expansion.
            let known = doc_freq >= KNOWN_WORD_DOC_FREQ
                || freqs.get(
                    searcher,
                    &Term::from_field_text(self.fields.get(field::TEXT), &stem),
                )? >= KNOWN_WORD_DOC_FREQ;
            // Like absent terms, loose matches the segment has no term for are left out.
            let useful = |m: &LooseMatch| -> Result<bool> {
                match segment {
                    None => Ok(true),
                    Some(r) => m.matches_in(r),
                }
            };
            if !known && prefix_last && i + 1 == words.len() && chars >= PREFIX_MIN_CHARS {
                let m = freqs.loose(&exact, 0, true);
                if useful(&m)? {
                    alts.push(loose(m));
                }
            }
            if !known && chars >= FUZZY_MIN_CHARS && doc_freq < FUZZY_MAX_DOC_FREQ {
                let edits = if chars >= FUZZY_TWO_EDITS_CHARS { 2 } else { 1 };
                let m = freqs.loose(&exact, edits, false);
                if useful(&m)? {
                    alts.push(loose(m));
                }
            }
            term_clauses += terms.len();
            other_clauses += alts.len() - terms.len();
            let mut word_docs = 0u64;
            for (t, _) in &terms {
                word_docs += freqs.get(searcher, t)?;
            }
            lone_term = match (alts.len(), terms.pop()) {
                (1, Some(t)) => Some(t),
                _ => None,
            };
            plain_terms = match (plain_terms, &lone_term) {
                (Some(mut v), Some(t)) => {
                    v.push(t.clone());
                    Some(v)
                }
                _ => None,
            };
            match mode {
                Mode::All => required.push((alts, word_docs)),
                // Any word: the union of every word's alternatives, flat (same matches, same
                // score sum) so that a union of plain terms can use block-max WAND.
                Mode::Any => per_word.extend(alts),
            }
            stems.push(stem);
        }
        // A word with several alternatives in a conjunction: Tantivy's union suits a word that
        // leads the conjunction or has about as many documents as the one that does (it reads
        // its terms' documents window by window); a word with far more documents than the
        // rarest is only sought where the others are, which `AnyOf` does cheaply (see
        // `ANY_OF_HALF_RATIO`). One word alone stays a union Tantivy prunes with block-max WAND.
        let rarest = required.iter().map(|(_, n)| *n).min().unwrap_or(0);
        let several = required.len() > 1;
        for (alts, docs) in required {
            let any_of = several
                && alts.len() > 1
                && docs.saturating_mul(2)
                    > rarest.saturating_mul(ANY_OF_HALF_RATIO * alts.len() as u64);
            per_word.push((
                Occur::Must,
                if any_of {
                    Box::new(AnyOf(alts.into_iter().map(|(_, q)| q).collect()))
                } else {
                    Box::new(BooleanQuery::new(alts))
                },
            ));
        }
        let mut phrases: Vec<(Vec<Term>, Score)> = Vec::new();
        // No phrase bonus for the any-word union: it ranks the agents that lack a word (full
        // matches are taken from the conjunction), which cannot hold the whole phrase, and a
        // phrase clause would keep the union from block-max WAND.
        if let (true, Some(boost)) = (stems.len() > 1 && mode == Mode::All, PHRASE_BOOST) {
            for (f, boost) in [(field::TEXT, boost)] {
                let terms: Vec<Term> = stems
                    .iter()
                    .map(|s| Term::from_field_text(self.fields.get(f), s))
                    .collect();
                let mut all_present = true;
                for t in &terms {
                    all_present = all_present && present(t)?;
                }
                if !all_present {
                    continue;
                }
                other_clauses += 1;
                phrases.push((terms, boost));
            }
        }
        let exact_name = index_schema::name::AgentName::parse(text).ok().map(|name| {
            Box::new(BoostQuery::new(
                Box::new(TermQuery::new(
                    Term::from_field_text(self.fields.get(field::NAME), &name.to_string()),
                    IndexRecordOption::Basic,
                )),
                EXACT_NAME_BOOST,
            )) as Box<dyn Query>
        });
        let conjunction = plain_terms.as_ref().is_some_and(|t| t.len() > 1);
        if mode == Mode::All && (!phrases.is_empty() || conjunction) {
            // Every word required, phrases as a bonus: phrases are checked only for documents
            // that could enter the top k with them (see `PhraseBonus`).
            return Ok(Some((
                Box::new(PhraseBonus {
                    required: match plain_terms {
                        // Each word one term: the conjunction PhraseBonus prunes block by block.
                        Some(terms) => Box::new(TermConjunction { terms }),
                        None => Box::new(BooleanQuery::new(per_word)),
                    },
                    phrases,
                    exact_name,
                    popularity: None,
                }),
                Shape::Other,
            )));
        }
        // Only typo and prefix matches (every word misspelled or incomplete): each adds
        // `LOOSE_MATCH_BOOST` at most (a constant score; sums of halves are exact).
        let loose_only = (term_clauses == 0 && phrases.is_empty() && exact_name.is_none())
            .then_some(other_clauses as Score * LOOSE_MATCH_BOOST);
        for (terms, boost) in phrases {
            per_word.push((
                Occur::Should,
                Box::new(BoostQuery::new(Box::new(PhraseQuery::new(terms)), boost)),
            ));
        }
        if let Some(q) = exact_name {
            other_clauses += 1;
            per_word.push((Occur::Should, q));
        }
        if let [(Occur::Must, _)] = per_word.as_slice() {
            // One required word and nothing else: the word's alternatives are the query. A
            // top-level union of term queries is what Tantivy prunes with block-max WAND; a
            // single term is pruned block by block as a `BoostedTerm` (a union of one clause,
            // or a `BoostQuery`, would score every document).
            if let Some((term, boost)) = lone_term {
                return Ok(Some((Box::new(BoostedTerm { term, boost }), Shape::Other)));
            }
            let (_, only) = per_word.pop().expect("one clause");
            let shape = match loose_only {
                Some(max) => Shape::LooseOnly(max),
                None if other_clauses == 0 && term_clauses > 1 => Shape::TermUnion,
                None => Shape::Other,
            };
            return Ok(Some((only, shape)));
        }
        let shape = match loose_only {
            Some(max) => Shape::LooseOnly(max),
            None if mode == Mode::Any && other_clauses == 0 && term_clauses > 1 => Shape::TermUnion,
            None => Shape::Other,
        };
        Ok(Some((Box::new(BooleanQuery::new(per_word)), shape)))
    }
}

/// A clause of a `BooleanQuery`.
type Clause = (Occur, Box<dyn Query>);

/// What the pruning loop may rely on in a text query.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    /// A union of two or more plain term queries (Tantivy runs it as block-max WAND).
    TermUnion,
    /// Only constant-scored typo and prefix matches: no document scores above this.
    LooseOnly(Score),
    /// Anything else.
    Other,
}

/// A page answered with fewer words (see [`SearchIndex::fewer_words`]).
#[derive(Default)]
struct FewerWordsPage {
    hits: Vec<Ranked>,
    tiers: Vec<u8>,
    /// The words each hit lacks, when its tier says it.
    missing: Vec<Option<Vec<String>>>,
}

/// How the agents lacking some words are found, tier after tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    /// Agents with exactly this many of the words: one conjunction per group of that many
    /// words, less the agents with any other word.
    Exactly(usize),
    /// Agents with at most this many of the words, by the any-word union's score.
    AtMost(usize),
}

/// The tiers after the full matches for a query of `n` words: the agents lacking one word,
/// then two, ... while the tiers so far take at most [`MAX_WORD_GROUPS`] conjunctions in all;
/// then, if words are left to drop, one last tier of all the rest.
fn fewer_words_tiers(n: usize) -> Vec<Tier> {
    let mut out = Vec::new();
    let mut groups = 0usize;
    for size in (1..n).rev() {
        groups = groups.saturating_add(binomial(n, size));
        if groups > MAX_WORD_GROUPS {
            out.push(Tier::AtMost(size));
            break;
        }
        out.push(Tier::Exactly(size));
    }
    out
}

/// `n` choose `k` (saturating).
fn binomial(n: usize, k: usize) -> usize {
    let k = k.min(n - k);
    let mut out: usize = 1;
    for i in 0..k {
        out = out.saturating_mul(n - i) / (i + 1);
    }
    out
}

/// Every `size`-element subset of `0..n`, each ascending, in lexicographic order.
fn subsets(n: usize, size: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur: Vec<usize> = (0..size).collect();
    if size == 0 || size > n {
        return out;
    }
    loop {
        out.push(cur.clone());
        // The rightmost index that can still move right.
        let Some(i) = (0..size).rev().find(|&i| cur[i] < n - size + i) else {
            return out;
        };
        cur[i] += 1;
        for j in i + 1..size {
            cur[j] = cur[j - 1] + 1;
        }
    }
}

/// What a collection ranks: the text query of some of the query's words, less the documents
/// another query matches.
struct Part<'a> {
    /// The text the words come from (an exact `publisher/agent` name is matched against it).
    text: &'a str,
    words: &'a [String],
    mode: Mode,
    /// The last of `words` is the query's last word (it may also match as a prefix).
    prefix_last: bool,
    /// Documents left out (unscored).
    without: Option<&'a dyn Query>,
}

/// The documents of `inner` that `excluded` does not match, scored by `inner`. Pruned, it is
/// `inner`'s own loop (block-max WAND, a conjunction's block loop, ...) with the excluded
/// documents skipped as they are passed on: the threshold only comes from documents kept.
#[derive(Debug)]
struct Without {
    inner: Box<dyn Query>,
    excluded: Box<dyn Query>,
}

impl Clone for Without {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.box_clone(),
            excluded: self.excluded.box_clone(),
        }
    }
}

impl Query for Without {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let unscored = match scoring.searcher() {
            Some(s) => EnableScoring::disabled_from_searcher(s),
            None => EnableScoring::disabled_from_schema(scoring.schema()),
        };
        Ok(Box::new(WithoutWeight {
            inner: self.inner.weight(scoring)?,
            excluded: self.excluded.weight(unscored)?,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.inner.query_terms(visitor);
    }
}

struct WithoutWeight {
    inner: Box<dyn Weight>,
    excluded: Box<dyn Weight>,
}

impl Weight for WithoutWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(tantivy::query::Exclude::new(
            self.inner.scorer(reader, boost)?,
            self.excluded.scorer(reader, boost)?,
        )))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut excluded = self.excluded.scorer(reader, 1.0)?;
        if excluded.doc() <= doc && excluded.seek(doc) == doc {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        self.inner.explain(reader, doc)
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        let mut excluded = self.excluded.scorer(reader, 1.0)?;
        let mut current = threshold;
        // Documents come in increasing order.
        self.inner
            .for_each_pruning(threshold, reader, &mut |doc, score| {
                if excluded.doc() < doc {
                    excluded.seek(doc);
                }
                if excluded.doc() != doc {
                    current = callback(doc, score);
                }
                current
            })
    }
}

/// The documents of any of the queries, scored by the sum of the scores of those that match (in
/// clause order): the matches and scores of a union `BooleanQuery` of them. Tantivy's union
/// refills a window of 4096 documents on every seek, which makes a conjunction that a rarer
/// word leads cost about the whole union; here a seek moves each clause to its next document.
#[derive(Debug)]
struct AnyOf(Vec<Box<dyn Query>>);

impl Clone for AnyOf {
    fn clone(&self) -> Self {
        Self(self.0.iter().map(|q| q.box_clone()).collect())
    }
}

impl Query for AnyOf {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(AnyOfWeight(
            self.0
                .iter()
                .map(|q| q.weight(scoring))
                .collect::<tantivy::Result<_>>()?,
        )))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for q in &self.0 {
            q.query_terms(visitor);
        }
    }
}

struct AnyOfWeight(Vec<Box<dyn Weight>>);

impl Weight for AnyOfWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut scorers = Vec::with_capacity(self.0.len());
        for w in &self.0 {
            let s = w.scorer(reader, boost)?;
            if s.doc() != tantivy::TERMINATED {
                scorers.push(s);
            }
        }
        let doc = scorers
            .iter()
            .map(|s| s.doc())
            .min()
            .unwrap_or(tantivy::TERMINATED);
        Ok(Box::new(AnyOfScorer { scorers, doc }))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut s = self.scorer(reader, 1.0)?;
        if s.seek(doc) != doc {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        let mut e = Explanation::new("any of (sum)", s.score());
        for w in &self.0 {
            if let Ok(d) = w.explain(reader, doc) {
                e.add_detail(d);
            }
        }
        Ok(e)
    }
}

struct AnyOfScorer {
    scorers: Vec<Box<dyn Scorer>>,
    doc: DocId,
}

/// Moves a union of `members` (at `doc`, the least of their docs) to its next doc: the members
/// on `doc` advance, the others stay.
fn union_advance<D: DocSet>(members: &mut [D], doc: &mut DocId) -> DocId {
    if *doc == tantivy::TERMINATED {
        return *doc;
    }
    let current = *doc;
    let mut next = tantivy::TERMINATED;
    for m in members {
        let d = if m.doc() == current {
            m.advance()
        } else {
            m.doc()
        };
        next = next.min(d);
    }
    *doc = next;
    next
}

/// Seeks a union of `members` (at `doc`) to the first doc at or past `target`: only the
/// members before `target` seek.
fn union_seek<D: DocSet>(members: &mut [D], doc: &mut DocId, target: DocId) -> DocId {
    if target <= *doc {
        return *doc;
    }
    let mut next = tantivy::TERMINATED;
    for m in members {
        let d = if m.doc() < target {
            m.seek(target)
        } else {
            m.doc()
        };
        next = next.min(d);
    }
    *doc = next;
    next
}

impl DocSet for AnyOfScorer {
    fn advance(&mut self) -> DocId {
        union_advance(&mut self.scorers, &mut self.doc)
    }
    fn seek(&mut self, target: DocId) -> DocId {
        union_seek(&mut self.scorers, &mut self.doc, target)
    }
    fn doc(&self) -> DocId {
        self.doc
    }
    fn size_hint(&self) -> u32 {
        self.scorers
            .iter()
            .fold(0u32, |n, s| n.saturating_add(s.size_hint()))
    }
}

impl Scorer for AnyOfScorer {
    fn score(&mut self) -> Score {
        let doc = self.doc;
        let mut total = 0.0;
        for s in &mut self.scorers {
            if s.doc() == doc {
                total += s.score();
            }
        }
        total
    }
}

/// Document frequencies looked up during one search (each term dictionary lookup decompresses
/// a block; a search asks for the same terms several times), and the typo and prefix matches
/// built during it (a query answered with fewer words builds a word's alternatives once per
/// group of words: the automaton and its matched terms are found once).
#[derive(Default)]
struct DocFreqs {
    freqs: std::cell::RefCell<std::collections::HashMap<Term, u64>>,
    loose: std::cell::RefCell<std::collections::HashMap<(Term, u8, bool), LooseMatch>>,
}

impl DocFreqs {
    fn get(&self, searcher: &Searcher, term: &Term) -> Result<u64> {
        if let Some(n) = self.freqs.borrow().get(term) {
            return Ok(*n);
        }
        let n = searcher.doc_freq(term)?;
        self.freqs.borrow_mut().insert(term.clone(), n);
        Ok(n)
    }

    /// [`LooseMatch::new`] (`prefix`: [`LooseMatch::new_prefix`]), shared by every query of
    /// the search.
    fn loose(&self, term: &Term, distance: u8, prefix: bool) -> LooseMatch {
        self.loose
            .borrow_mut()
            .entry((term.clone(), distance, prefix))
            .or_insert_with(|| {
                if prefix {
                    LooseMatch::new_prefix(term.clone())
                } else {
                    LooseMatch::new(term.clone(), distance)
                }
            })
            .clone()
    }
}

/// A term query whose BM25 score is multiplied by `boost`, pruned with the term's block-max
/// loop. (Tantivy's `BoostQuery` has no pruning loop of its own: it scores every document.) Both
/// loops compute `term score × boost`, so pruned and exhaustive collection see equal scores.
#[derive(Debug, Clone)]
struct BoostedTerm {
    term: Term,
    boost: Score,
}

impl Query for BoostedTerm {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let inner = TermQuery::new(self.term.clone(), IndexRecordOption::WithFreqs);
        let inner = inner.weight(scoring)?;
        if !scoring.is_scoring_enabled() {
            return Ok(inner);
        }
        Ok(Box::new(BoostedTermWeight {
            inner,
            boost: self.boost,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        visitor(&self.term, false);
    }
}

struct BoostedTermWeight {
    /// Tantivy's term weight: its pruning loop is block-max on one posting list.
    inner: Box<dyn Weight>,
    boost: Score,
}

impl Weight for BoostedTermWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(ScaledScorer {
            inner: self.inner.scorer(reader, boost)?,
            factor: self.boost,
        }))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let e = self.inner.explain(reader, doc)?;
        let mut out =
            Explanation::new_with_string(format!("x{}", self.boost), e.value() * self.boost);
        out.add_detail(e);
        Ok(out)
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        let b = self.boost;
        // Thresholds are exchanged unscaled with the term's loop. Dividing may round a bound
        // down by an ulp, which only lets one more document through; callers keep a relative
        // margin far larger than that anyway.
        self.inner
            .for_each_pruning(threshold / b, reader, &mut |doc, score| {
                callback(doc, score * b) / b
            })
    }
}

/// `DocSet` for a scorer that walks the documents of one of its fields.
macro_rules! delegate_doc_set {
    ($t:ty, $field:ident) => {
        impl DocSet for $t {
            fn advance(&mut self) -> DocId {
                self.$field.advance()
            }
            fn seek(&mut self, target: DocId) -> DocId {
                self.$field.seek(target)
            }
            fn doc(&self) -> DocId {
                self.$field.doc()
            }
            fn size_hint(&self) -> u32 {
                self.$field.size_hint()
            }
        }
    };
}

/// A scorer whose scores are multiplied by `factor`.
struct ScaledScorer {
    inner: Box<dyn Scorer>,
    factor: Score,
}

delegate_doc_set!(ScaledScorer, inner);

impl Scorer for ScaledScorer {
    fn score(&mut self) -> Score {
        self.inner.score() * self.factor
    }
}

/// Every word required, each word one term of one field: a document's score is the sum of its
/// terms' BM25 scores, added in word order on every path. Used as [`PhraseBonus`]'s required
/// part, which prunes it block by block (see [`PhraseBonusWeight::for_each_pruning`]).
#[derive(Debug, Clone)]
struct TermConjunction {
    /// The words' terms (one field) and their boosts, in word order.
    terms: Vec<(Term, Score)>,
}

impl TermConjunction {
    fn conjunction_weight(
        &self,
        statistics: &dyn tantivy::query::Bm25StatisticsProvider,
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
struct ConjunctionWeight {
    terms: Vec<Term>,
    bm25: Vec<Bm25Weight>,
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
    fn block_maxima(&self, reader: &SegmentReader) -> tantivy::Result<Option<Vec<WordBlocks>>> {
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
struct WordBlocks {
    last: Vec<DocId>,
    max: Vec<Score>,
    rest: Vec<Score>,
}

impl Weight for ConjunctionWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(match self.conjunction_scorer(reader, boost)? {
            Some(s) => Box::new(s),
            None => Box::new(tantivy::query::EmptyScorer),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let Some(mut s) = self.conjunction_scorer(reader, 1.0)? else {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        };
        if s.seek(doc) != doc {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
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
struct ConjunctionScorer {
    /// In word order (the order scores are added in).
    postings: Vec<tantivy::postings::SegmentPostings>,
    /// Indexes of `postings`, rarest first.
    lead: Vec<usize>,
    bm25: Vec<Bm25Weight>,
    fieldnorms: FieldNormReader,
    doc: DocId,
}

impl ConjunctionScorer {
    /// Moves to the first document at or after `target` that has every word.
    fn align(&mut self, mut target: DocId) -> DocId {
        'candidate: while target != tantivy::TERMINATED {
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
        if self.doc == tantivy::TERMINATED {
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
struct PhraseBonus {
    required: Box<dyn Query>,
    /// Terms of one field in phrase order, and the phrase's boost.
    phrases: Vec<(Vec<Term>, Score)>,
    exact_name: Option<Box<dyn Query>>,
    /// The segment's popularity bounds, when the query is built for one segment and collected
    /// by relevance: a [`TermConjunction`] then raises the threshold as the bound of later
    /// documents falls (see [`Visit::blocks`]).
    popularity: Option<std::sync::Arc<PopularityBounds>>,
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
    popularity: Option<std::sync::Arc<PopularityBounds>>,
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
            return Err(tantivy::TantivyError::InvalidArgument(format!(
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
        while doc != tantivy::TERMINATED {
            visit.doc(&mut s, doc, callback);
            doc = s.required.advance();
        }
        Ok(())
    }
}

/// [`PhraseBonusWeight::for_each_pruning`]'s state: the threshold, and per phrase the largest
/// it may add to a document.
struct Visit {
    threshold: Score,
    max_phrases: Vec<Score>,
    parts: Vec<Score>,
}

impl Visit {
    fn new(s: &BonusScorer, threshold: Score) -> Self {
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
    fn doc(
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
    fn blocks(
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
            let mut end = tantivy::TERMINATED;
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
            if doc == tantivy::TERMINATED {
                return Ok(());
            }
            from = doc;
        }
    }
}

/// One phrase in one segment: its words' postings (with positions) and its BM25 weight.
struct PhraseCounter {
    terms: Vec<Term>,
    postings: Vec<tantivy::postings::SegmentPostings>,
    fieldnorms: FieldNormReader,
    bm25: Bm25Weight,
    /// Above any score of the phrase.
    max: Score,
    /// The last [`Self::bound`] (0 when a word is missing from the document's field).
    bound: Score,
    positions: Vec<u32>,
    next: Vec<u32>,
}

impl PhraseCounter {
    /// [`Self::bound`] from the smallest frequency of the phrase's words in the document and
    /// the document's field-length id, read elsewhere (the postings are not moved).
    fn bound_from_tf(&mut self, fieldnorm_id: u8, tf: u32) -> Score {
        self.bound = if tf == 0 {
            0.0
        } else {
            self.bm25.score(fieldnorm_id, tf)
        };
        self.bound
    }

    /// Moves every word's postings to `doc`; the phrase's score if it occurred as often as its
    /// rarest word there (0 when a word is missing).
    fn bound(&mut self, doc: DocId) -> Score {
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
    fn score(&mut self, doc: DocId) -> Score {
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

/// The scorer of [`PhraseBonus`]: the required words' documents, scored with the bonuses.
struct BonusScorer {
    required: Box<dyn Scorer>,
    phrases: Vec<PhraseCounter>,
    exact_name: Option<Box<dyn Scorer>>,
}

impl BonusScorer {
    fn name_bonus(&mut self, doc: DocId) -> Score {
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
    fn total(&mut self, doc: DocId, base: Score, name: Score) -> Score {
        let mut total = base;
        for p in &mut self.phrases {
            if p.bound(doc) > 0.0 {
                total += p.score(doc);
            }
        }
        total + name
    }
}

delegate_doc_set!(BonusScorer, required);

impl Scorer for BonusScorer {
    fn score(&mut self) -> Score {
        let doc = self.required.doc();
        let base = self.required.score();
        let name = self.name_bonus(doc);
        self.total(doc, base, name)
    }
}

fn loose(q: LooseMatch) -> (Occur, Box<dyn Query>) {
    (
        Occur::Should,
        Box::new(BoostQuery::new(Box::new(q), LOOSE_MATCH_BOOST)),
    )
}

/// The terms of a field within `distance` edits of a word (transpositions count one), or
/// starting with such a string (`prefix`), as one constant-scored query: the matches and score
/// of Tantivy's `FuzzyTermQuery`. Tantivy's puts the matches in a bitset of the segment's size
/// (an allocation and a memset of `max_doc / 8` bytes per segment and query, most of a rare
/// word's search); here, when the matched terms have few documents, they go in a sorted vector.
#[derive(Clone)]
struct LooseMatch {
    term: Term,
    /// Built once per search (the query is built per segment).
    dfa: std::sync::Arc<Dfa>,
    /// The matched terms of each segment, found once per search (walking the dictionary with
    /// the automaton is most of a typo match's cost).
    matched: MatchedTerms,
}

/// Per segment, the dictionary entries a [`LooseMatch`] matches.
type MatchedTerms = std::sync::Arc<
    std::sync::Mutex<
        Vec<(
            tantivy::index::SegmentId,
            std::sync::Arc<Vec<tantivy::postings::TermInfo>>,
        )>,
    >,
>;

/// The dictionary entries of `field` in `reader` that `dfa` accepts, from `matched` when
/// already found.
fn matched_terms(
    matched: &MatchedTerms,
    dfa: &Dfa,
    field: tantivy::schema::Field,
    reader: &SegmentReader,
) -> tantivy::Result<std::sync::Arc<Vec<tantivy::postings::TermInfo>>> {
    let id = reader.segment_id();
    let mut cache = matched
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, terms)) = cache.iter().find(|(s, _)| *s == id) {
        return Ok(terms.clone());
    }
    let inverted = reader.inverted_index(field)?;
    let mut stream = inverted.terms().search(dfa).into_stream()?;
    let mut terms = Vec::new();
    while stream.advance() {
        terms.push(stream.value().clone());
    }
    let terms = std::sync::Arc::new(terms);
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
    fn new(term: Term, distance: u8) -> Self {
        Self::build(term, distance, false)
    }

    /// Starting with the term.
    fn new_prefix(term: Term) -> Self {
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
            dfa: std::sync::Arc::new(Dfa(dfa)),
            matched: MatchedTerms::default(),
        }
    }

    /// Whether some term of the segment matches (the per-segment query leaves the match out
    /// otherwise, like an absent term).
    fn matches_in(&self, reader: &SegmentReader) -> Result<bool> {
        Ok(!matched_terms(&self.matched, &self.dfa, self.term.field(), reader)?.is_empty())
    }
}

/// Levenshtein automaton builders (expensive to build), by distance 0, 1, 2.
static LEVENSHTEIN: [std::sync::OnceLock<levenshtein_automata::LevenshteinAutomatonBuilder>; 3] =
    [const { std::sync::OnceLock::new() }; 3];

/// A Levenshtein DFA over the term dictionary's bytes.
struct Dfa(levenshtein_automata::DFA);

impl tantivy_fst::Automaton for Dfa {
    type State = u32;

    fn start(&self) -> u32 {
        self.0.initial_state()
    }

    fn is_match(&self, state: &u32) -> bool {
        matches!(
            self.0.distance(*state),
            levenshtein_automata::Distance::Exact(_)
        )
    }

    fn can_match(&self, state: &u32) -> bool {
        *state != levenshtein_automata::SINK_STATE
    }

    fn accept(&self, state: &u32, byte: u8) -> u32 {
        self.0.transition(*state, byte)
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
        self.docs
            .get(self.pos)
            .copied()
            .unwrap_or(tantivy::TERMINATED)
    }
    fn size_hint(&self) -> u32 {
        self.docs.len() as u32
    }
}

struct LooseWeight {
    field: tantivy::schema::Field,
    dfa: std::sync::Arc<Dfa>,
    matched: MatchedTerms,
}

/// The union of a few posting lists, read as it goes (a typo match that stops after the first
/// documents reads only their blocks).
struct FewPostings {
    postings: Vec<tantivy::postings::SegmentPostings>,
    doc: DocId,
}

impl FewPostings {
    fn new(postings: Vec<tantivy::postings::SegmentPostings>) -> Self {
        let doc = postings
            .iter()
            .map(DocSet::doc)
            .min()
            .unwrap_or(tantivy::TERMINATED);
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
const FEW_TERMS: usize = 8;

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
        let mut bits = tantivy_common::BitSet::with_max_value(max_doc);
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
        Ok(Box::new(ConstScorer::new(
            tantivy::query::BitSetDocSet::from(bits),
            boost,
        )))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut s = self.scorer(reader, 1.0)?;
        if s.seek(doc) != doc {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        Ok(Explanation::new("loose match", s.score()))
    }
}

/// Order-preserving u64 of a non-NaN float.
fn f32_key(f: f32) -> u64 {
    let bits = f.to_bits();
    u64::from(if bits >> 31 == 1 {
        !bits
    } else {
        bits | 1 << 31
    })
}

#[cfg(test)]
fn f32_from_key(k: u64) -> f32 {
    let bits = k as u32;
    f32::from_bits(if bits >> 31 == 1 {
        bits & !(1 << 31)
    } else {
        !bits
    })
}

/// Order-preserving u64 of an i64.
fn i64_key(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

/// A collected hit: sort key, name (tie-break), address, score.
#[derive(Debug, Clone)]
struct Ranked {
    key: u64,
    /// The name's ordinal in its segment's `name` column: within one segment, ordinals are in
    /// the names' byte order, so ties compare them without reading the name.
    ord: u64,
    /// Empty until resolved: only when hits of several segments are merged (or for tests);
    /// otherwise `search` takes it from the stored document.
    name: String,
    addr: DocAddress,
    score: f32,
}

impl Ranked {
    /// `Less` when `self` comes first in the results. Hits of different segments must have
    /// their names resolved.
    fn order(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key).then_with(|| {
            if self.addr.segment_ord == other.addr.segment_ord {
                self.ord.cmp(&other.ord)
            } else {
                self.name.cmp(&other.name)
            }
        })
    }
}

/// Heap entry whose maximum is the hit that comes last.
struct Worst(Ranked);

impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.order(&other.0)
    }
}

/// Top-k by (sort key desc, name asc), keeping only hits strictly after the cursor. Within a
/// segment, ties on the key compare the ordinals of the `name` column (in name order); names
/// themselves are read only to merge several segments' hits or on a tie with the cursor.
struct RankCollector {
    sort: Sort,
    k: usize,
    after: Option<(u64, String)>,
    /// Skip documents that cannot enter the top k (always, except in the test that checks the
    /// pruned result against the exhaustive one).
    prune: bool,
    /// Resolve every hit's name (otherwise only when hits of several segments are merged).
    names: bool,
}

struct RankSegment {
    sort: Sort,
    k: usize,
    after: Option<(u64, String)>,
    segment: SegmentOrdinal,
    cols: RankColumns,
    /// Resolve the names of the harvested hits.
    resolve_names: bool,
    /// The segment's cached rank factors, when known.
    bounds: Option<std::sync::Arc<PopularityBounds>>,
    heap: BinaryHeap<Worst>,
    buf: String,
}

impl RankCollector {
    fn segment_collector(&self, segment: SegmentOrdinal, cols: RankColumns) -> RankSegment {
        RankSegment {
            sort: self.sort,
            k: self.k,
            after: self.after.clone(),
            segment,
            cols,
            resolve_names: true,
            bounds: None,
            heap: BinaryHeap::with_capacity(self.k + 1),
            buf: String::new(),
        }
    }
}

impl Collector for RankCollector {
    type Fruit = Vec<Ranked>;
    type Child = RankSegment;

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<RankSegment> {
        Ok(self.segment_collector(segment, RankColumns::open(reader)?))
    }

    fn requires_scoring(&self) -> bool {
        self.sort == Sort::Relevance
    }

    /// Relevance: Tantivy's pruning loop (block-max WAND on a union of terms, a score filter
    /// otherwise) with a threshold that keeps the top-k exact. A document's rank key is its
    /// text score times a factor of at most `max_factor` (the segment's largest downloads; the
    /// deprecation factor only lowers it), so once the heap is full a document whose text
    /// score is at most `worst / max_factor` cannot enter it — not even on a tie, because the
    /// threshold is lowered a little below that bound and Tantivy only skips scores at or below
    /// the threshold.
    fn collect_segment(
        &self,
        weight: &dyn Weight,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<Vec<Ranked>> {
        self.collect_segment_bounded(weight, segment, reader, None, Shape::Other, true)
    }

    fn merge_fruits(&self, fruits: Vec<Vec<Ranked>>) -> tantivy::Result<Vec<Ranked>> {
        let mut all: Vec<Ranked> = fruits.into_iter().flatten().collect();
        all.sort_by(Ranked::order);
        all.truncate(self.k);
        Ok(all)
    }
}

impl RankCollector {
    /// [`Collector::collect_segment`], with the segment's [`PopularityBounds`] when known: the
    /// bound on the factor then applies to the documents after the current one only, which
    /// is lower the more popular documents come first (a rebuild writes them in that order).
    ///
    /// [`Shape::TermUnion`]: block-max WAND adds the terms' scores in an order that depends on
    /// where its cursors stand, so the same document's sum may differ in the last bit from one
    /// query to the next (a different cursor or page). A document that passes the threshold is
    /// then scored again by the query's own scorer, which always adds in clause order: ranks and
    /// cursors compare equal scores on every page. [`Shape::LooseOnly`]: the scan stops once no
    /// later document can enter.
    fn collect_segment_bounded(
        &self,
        weight: &dyn Weight,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
        bounds: Option<std::sync::Arc<PopularityBounds>>,
        shape: Shape,
        several_segments: bool,
    ) -> tantivy::Result<Vec<Ranked>> {
        let cols = match bounds.as_deref() {
            Some(b) => b.columns.clone(),
            None => RankColumns::open(reader)?,
        };
        let mut seg = self.segment_collector(segment, cols);
        seg.resolve_names = self.names || several_segments;
        seg.bounds = bounds.clone();
        let bounds = bounds.as_deref();
        let alive = reader.alive_bitset();
        let is_alive = |doc: DocId| alive.is_none_or(|a| a.is_alive(doc));
        if self.sort != Sort::Relevance {
            weight.for_each_no_score(reader, &mut |docs| {
                for &doc in docs {
                    if is_alive(doc) {
                        seg.collect(doc, 0.0);
                    }
                }
            })?;
            return Ok(seg.harvest());
        }
        if !self.prune {
            weight.for_each(reader, &mut |doc, score| {
                if is_alive(doc) {
                    seg.collect(doc, score);
                }
            })?;
            return Ok(seg.harvest());
        }
        let max_factor = popularity_factor(seg.cols.downloads.max_value());
        if let Shape::LooseOnly(max_text) = shape {
            // Tantivy's loop for such a query (score every match, pass those above the
            // threshold), stopping once the threshold reaches the query's highest possible
            // score: the threshold never falls (the heap's worst only rises, the popularity
            // bound of later documents only falls), so no later document can enter.
            let mut scorer = weight.scorer(reader, 1.0)?;
            let mut threshold = Score::MIN;
            let mut doc = scorer.doc();
            while doc != tantivy::TERMINATED && threshold < max_text {
                let score = scorer.score();
                if score > threshold && is_alive(doc) {
                    seg.collect(doc, score);
                    threshold = seg.text_threshold(bounds.map_or(max_factor, |b| b.from(doc)));
                }
                doc = scorer.advance();
            }
            return Ok(seg.harvest());
        }
        let mut exact = if shape == Shape::TermUnion {
            Some(weight.scorer(reader, 1.0)?)
        } else {
            None
        };
        weight.for_each_pruning(Score::MIN, reader, &mut |doc, score| {
            if is_alive(doc) {
                let score = match exact.as_mut() {
                    Some(s) if s.doc() <= doc => {
                        if s.seek(doc) == doc {
                            s.score()
                        } else {
                            score
                        }
                    }
                    _ => score,
                };
                seg.collect(doc, score);
            }
            seg.text_threshold(bounds.map_or(max_factor, |b| b.from(doc)))
        })?;
        Ok(seg.harvest())
    }
}

impl RankSegment {
    /// The text score a document must exceed to possibly enter the full heap (see
    /// [`RankCollector::collect_segment`]); `Score::MIN` while the heap has room.
    fn text_threshold(&self, max_factor: f32) -> Score {
        match self.heap.peek() {
            Some(worst) if self.heap.len() >= self.k && worst.0.score > 0.0 => {
                // 1e-4 relative margin: far above f32 rounding in the factor and the product.
                worst.0.score / max_factor * (1.0 - 1e-4)
            }
            _ => Score::MIN,
        }
    }

    /// The ordinal of the document's name in the segment's `name` column (names are in
    /// ordinal order). Every document has a name; `u64::MAX` would only sort a nameless one
    /// last.
    fn ord(&self, doc: DocId) -> u64 {
        self.cols.names.term_ords(doc).next().unwrap_or(u64::MAX)
    }

    /// The name of an ordinal (reads the column's dictionary: a block decompression).
    fn name(&mut self, ord: u64) -> String {
        self.buf.clear();
        // An I/O error reading the dictionary leaves the name empty; it only affects ties.
        let _ = self.cols.names.ord_to_str(ord, &mut self.buf);
        self.buf.clone()
    }
}

impl SegmentCollector for RankSegment {
    type Fruit = Vec<Ranked>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let (key, score) = match self.sort {
            Sort::Relevance => {
                let factor = match self.bounds.as_deref() {
                    Some(b) => b.factors[doc as usize],
                    None => rank_factor(
                        popularity_factor(self.cols.downloads.first(doc).unwrap_or(0)),
                        self.cols.deprecated.first(doc).unwrap_or(false),
                    ),
                };
                let s = score * factor;
                (f32_key(s), s)
            }
            Sort::Downloads => (self.cols.downloads.first(doc).unwrap_or(0), score),
            Sort::Updated => (i64_key(self.cols.updated.first(doc).unwrap_or(0)), score),
        };
        if let Some((ckey, _)) = &self.after {
            match key.cmp(ckey) {
                Ordering::Greater => return,
                Ordering::Less => {}
                Ordering::Equal => {
                    // Rare (an exact tie with the cursor's key): compare the name itself.
                    let n = self.name(self.ord(doc));
                    if n.as_str() <= self.after.as_ref().map_or("", |a| a.1.as_str()) {
                        return;
                    }
                }
            }
        }
        let ord = self.ord(doc);
        if self.heap.len() >= self.k {
            let worst = &self.heap.peek().expect("heap is full").0;
            match key.cmp(&worst.key) {
                Ordering::Less => return,
                Ordering::Greater => {}
                // Same segment: name order is ordinal order.
                Ordering::Equal if ord >= worst.ord => return,
                Ordering::Equal => {}
            }
        }
        self.heap.push(Worst(Ranked {
            key,
            ord,
            name: String::new(),
            addr: DocAddress::new(self.segment, doc),
            score,
        }));
        if self.heap.len() > self.k {
            self.heap.pop();
        }
    }

    fn harvest(mut self) -> Vec<Ranked> {
        let mut out: Vec<Ranked> = std::mem::take(&mut self.heap)
            .into_iter()
            .map(|w| w.0)
            .collect();
        if self.resolve_names {
            for r in &mut out {
                r.name = self.name(r.ord);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::TopDocs;

    /// An in-RAM index of `n` synthetic agents (corpus seed `seed`), committed as one segment.
    fn synthetic_index(seed: u64, n: u64) -> SearchIndex {
        use crate::corpus::synthetic_agent;
        use crate::follow::{Change, OutboxEntry};
        use crate::index::WriterConfig;

        let index = SearchIndex::in_ram().unwrap();
        let mut w = index.writer(WriterConfig::default()).unwrap();
        for i in 0..n {
            let doc = synthetic_agent(seed, i).to_doc().unwrap();
            w.apply(&OutboxEntry {
                seq: i + 1,
                change: Change::Upsert(Box::new(doc)),
            })
            .unwrap();
        }
        w.commit_and_refresh().unwrap();
        index
    }

    #[test]
    fn float_keys_keep_order() {
        let xs = [-3.5f32, -0.0, 0.0, 0.1, 1.0, 7.25, 1e9];
        for w in xs.windows(2) {
            assert!(f32_key(w[0]) <= f32_key(w[1]), "{w:?}");
        }
        for x in xs {
            assert_eq!(f32_from_key(f32_key(x)), x);
        }
    }

    #[test]
    fn integer_keys_keep_order() {
        assert!(i64_key(-5) < i64_key(0));
        assert!(i64_key(0) < i64_key(1_700_000_000));
        assert!(i64_key(i64::MIN) < i64_key(i64::MAX));
    }

    /// The pruned collection (block-max WAND on the text score, bounded by the popularity
    /// factor) returns exactly what scoring every match returns: same hits, same order, same
    /// keys, on every page — over several segments with deleted documents.
    #[test]
    fn pruned_top_k_equals_exhaustive_top_k() {
        use crate::corpus::synthetic_agent;
        use crate::follow::{Change, OutboxEntry};
        use crate::index::WriterConfig;

        let index = SearchIndex::in_ram().unwrap();
        let mut w = index.writer(WriterConfig::default()).unwrap();
        let mut seq = 0;
        for i in 0..3000u64 {
            seq += 1;
            let doc = synthetic_agent(7, i).to_doc().unwrap();
            w.apply(&OutboxEntry {
                seq,
                change: Change::Upsert(Box::new(doc)),
            })
            .unwrap();
            if i % 500 == 499 {
                w.commit().unwrap();
            }
        }
        // Delete every seventh agent so segments carry deleted documents.
        for i in (0..3000u64).step_by(7) {
            seq += 1;
            let name = synthetic_agent(7, i).to_doc().unwrap().name().clone();
            w.apply(&OutboxEntry {
                seq,
                change: Change::Delete(name),
            })
            .unwrap();
        }
        w.commit_and_refresh().unwrap();
        let searcher = index.reader.searcher();
        assert!(searcher.segment_readers().len() > 1);
        assert!(searcher.segment_readers().iter().any(|r| r.has_deletes()));

        // Pruned: the hub's path (per-segment queries without absent terms, block-max WAND
        // with the popularity bound). Exhaustive: one query with every term for all segments,
        // every match scored.
        let run = |text: &str, k: usize, after: Option<(u64, String)>, prune: bool| {
            let mut q = SearchQuery::text(text);
            q.limit = k - 1;
            let words = query_words(text);
            let c = RankCollector {
                sort: Sort::Relevance,
                k,
                after,
                prune,
                names: true,
            };
            let ranked = if prune {
                let ranked = index
                    .collect_with(&searcher, &DocFreqs::default(), &q, &words, Mode::All, &c)
                    .unwrap();
                // The hub's path leaves names unresolved within a segment (ties compare the
                // name column's ordinals): same hits in the same order.
                let lazy = RankCollector {
                    names: false,
                    after: c.after.clone(),
                    ..c
                };
                let unnamed = index
                    .collect_with(
                        &searcher,
                        &DocFreqs::default(),
                        &q,
                        &words,
                        Mode::All,
                        &lazy,
                    )
                    .unwrap();
                let addrs = |r: &[Ranked]| r.iter().map(|r| (r.key, r.addr)).collect::<Vec<_>>();
                assert_eq!(addrs(&unnamed), addrs(&ranked), "{text}");
                ranked
            } else {
                let t = index
                    .text_query(
                        &searcher,
                        &DocFreqs::default(),
                        text,
                        &words,
                        Mode::All,
                        None,
                    )
                    .unwrap()
                    .unwrap();
                let query = index.full_query(&q, Some(t.as_ref()));
                searcher.search(query.as_ref(), &c).unwrap()
            };
            ranked
                .into_iter()
                .map(|r| (r.key, r.name))
                .collect::<Vec<_>>()
        };
        let mut compared = 0;
        let mut misspelled = 0;
        let mut conjunctions = 0;
        for text in [
            "result",
            "floor",
            "request",
            "data",
            "report",
            "search",
            "code",
            "web scraping",
            "code review",
            "analyze dataset",
            // Last words every agent has (no prefix alternative): a `TermConjunction`.
            "web result",
            "data request",
            "code review request",
            // Misspelled: typo matches only (the loop that stops at the query's bound).
            "reveiw",
            "scrapign",
            "reveiw scrapign",
        ] {
            let exhaustive = run(text, 60, None, false);
            if exhaustive.len() < 60 {
                continue;
            }
            compared += 1;
            misspelled += usize::from(text.contains("reveiw") || text.contains("scrapign"));
            let shaped = index
                .text_query(
                    &searcher,
                    &DocFreqs::default(),
                    text,
                    &query_words(text),
                    Mode::All,
                    None,
                )
                .unwrap()
                .unwrap();
            conjunctions += usize::from(
                shaped
                    .downcast_ref::<PhraseBonus>()
                    .is_some_and(|p| p.required.downcast_ref::<TermConjunction>().is_some()),
            );
            assert_eq!(run(text, 60, None, true), exhaustive, "{text}");
            // Pages of 7 after a cursor give the same sequence.
            let mut paged = Vec::new();
            let mut after = None;
            while paged.len() < 60 {
                let page = run(text, 7, after.clone(), true);
                assert_eq!(page, run(text, 7, after, false), "{text}");
                after = page.last().cloned();
                paged.extend(page);
            }
            paged.truncate(60);
            assert_eq!(paged, exhaustive, "{text}");
        }
        assert!(compared >= 3, "too few frequent words to compare");
        assert!(misspelled >= 2, "too few misspelled queries to compare");
        // Plain multi-word queries: `TermConjunction`'s block loop with popularity-raised
        // thresholds.
        assert!(conjunctions >= 2, "too few multi-word queries to compare");
    }

    /// [`PhraseBonus`] matches the documents and gives the scores of the Tantivy query it
    /// replaces (the words required, each phrase and the exact name as optional clauses).
    #[test]
    fn phrase_bonus_scores_like_optional_phrase_queries() {
        let index = synthetic_index(3, 2000);
        // Plain words (synonyms would make each word several terms, never a conjunction).
        index.set_tuning(crate::Tuning {
            synonyms: std::sync::Arc::new(crate::Synonyms::none()),
            ..crate::Tuning::default()
        });
        let searcher = index.reader.searcher();
        let mut with_phrases = 0;
        let mut compared = 0;
        let mut conjunctions = 0;
        for text in [
            "web scraping",
            "code review",
            "data analysis report",
            "customer support",
            "analyze dataset",
        ] {
            let words = query_words(text);
            let t = index
                .text_query(
                    &searcher,
                    &DocFreqs::default(),
                    text,
                    &words,
                    Mode::All,
                    None,
                )
                .unwrap()
                .unwrap();
            // Words every agent of this small index may not have get prefix and typo
            // alternatives: the query is then not a conjunction of plain terms.
            let required = match t.downcast_ref::<PhraseBonus>() {
                Some(found) => {
                    conjunctions +=
                        usize::from(found.required.downcast_ref::<TermConjunction>().is_some());
                    found.required.box_clone()
                }
                None => t.box_clone(),
            };
            // Phrases are off in the hub's queries (`PHRASE_BOOST`); the machinery is tested
            // with one phrase of the words, boosted 2.
            let phrase: Vec<Term> = words
                .iter()
                .map(|w| {
                    Term::from_field_text(
                        index.fields.get(field::TEXT),
                        &tokens(analyzer::TEXT, w)[0],
                    )
                })
                .collect();
            let pb = &PhraseBonus {
                required,
                phrases: vec![(phrase, 2.0)],
                exact_name: None,
                popularity: None,
            };
            let mut clauses: Vec<(Occur, Box<dyn Query>)> =
                vec![(Occur::Must, pb.required.box_clone())];
            for (terms, boost) in &pb.phrases {
                clauses.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(
                        Box::new(PhraseQuery::new(terms.clone())),
                        *boost,
                    )),
                ));
            }
            let classic = BooleanQuery::new(clauses);
            let all = TopDocs::with_limit(10_000);
            let mut ours = searcher.search(pb, &all).unwrap();
            let mut theirs = searcher.search(&classic, &all).unwrap();
            if theirs.is_empty() {
                assert!(ours.is_empty(), "{text}");
                continue;
            }
            compared += 1;
            ours.sort_by_key(|x| x.1);
            theirs.sort_by_key(|x| x.1);
            assert_eq!(ours.len(), theirs.len(), "{text}");
            for ((a, da), (b, db)) in ours.iter().zip(&theirs) {
                assert_eq!(da, db, "{text}");
                assert!((a - b).abs() <= 1e-5 * b.abs(), "{text}: {a} vs {b}");
            }
            // Some documents have a phrase (their score is above the required words' alone).
            let required = searcher.search(pb.required.as_ref(), &all).unwrap();
            let base: std::collections::HashMap<_, _> =
                required.into_iter().map(|(s, d)| (d, s)).collect();
            with_phrases += ours.iter().filter(|(s, d)| *s > base[d] * 1.001).count();
        }
        assert!(compared >= 3, "too few queries with matches");
        assert!(with_phrases > 10, "too few phrase matches: {with_phrases}");
        assert!(
            conjunctions >= 1,
            "no TermConjunction among the required parts"
        );
    }

    #[test]
    fn word_groups_and_tiers() {
        assert_eq!(subsets(3, 2), [vec![0, 1], vec![0, 2], vec![1, 2]]);
        assert_eq!(subsets(3, 1), [vec![0], vec![1], vec![2]]);
        assert_eq!(subsets(2, 2), [vec![0, 1]]);
        assert!(subsets(2, 0).is_empty() && subsets(2, 3).is_empty());
        for (n, k) in [(4, 2), (6, 3), (7, 5), (16, 8)] {
            assert_eq!(subsets(n, k).len(), binomial(n, k), "{n} choose {k}");
        }
        assert_eq!(binomial(16, 8), 12_870);
        use Tier::{AtMost, Exactly};
        assert_eq!(fewer_words_tiers(2), [Exactly(1)]);
        assert_eq!(fewer_words_tiers(3), [Exactly(2), Exactly(1)]);
        // 4 + 6 + 4 groups.
        assert_eq!(fewer_words_tiers(4), [Exactly(3), Exactly(2), Exactly(1)]);
        // 5 + 10, then 10 more would pass 24.
        assert_eq!(fewer_words_tiers(5), [Exactly(4), Exactly(3), AtMost(2)]);
        assert_eq!(fewer_words_tiers(7), [Exactly(6), AtMost(5)]);
        assert_eq!(fewer_words_tiers(16), [Exactly(15), AtMost(14)]);
    }

    /// [`AnyOf`] matches the documents and gives the scores of a union `BooleanQuery` of the
    /// same clauses, alone and as a required clause of a conjunction.
    #[test]
    fn any_of_scores_like_a_union() {
        let index = synthetic_index(3, 2000);
        let searcher = index.reader.searcher();
        let text = index.fields.get(field::TEXT);
        let term = |w: &str| Term::from_field_text(text, &tokens(analyzer::TEXT, w)[0]);
        let alts = |words: &[&str]| -> Vec<Box<dyn Query>> {
            words
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    Box::new(BoostQuery::new(
                        Box::new(TermQuery::new(term(w), IndexRecordOption::WithFreqs)),
                        1.0 - 0.1 * i as Score,
                    )) as Box<dyn Query>
                })
                .collect()
        };
        let union = |q: Vec<Box<dyn Query>>| {
            BooleanQuery::new(q.into_iter().map(|q| (Occur::Should, q)).collect())
        };
        let all = TopDocs::with_limit(100_000);
        let same = |ours: &dyn Query, theirs: &dyn Query, what: &str| {
            let mut a = searcher.search(ours, &all).unwrap();
            let mut b = searcher.search(theirs, &all).unwrap();
            assert!(!b.is_empty(), "{what}");
            a.sort_by_key(|x| x.1);
            b.sort_by_key(|x| x.1);
            assert_eq!(a.len(), b.len(), "{what}");
            for ((x, dx), (y, dy)) in a.iter().zip(&b) {
                assert_eq!(dx, dy, "{what}");
                assert!((x - y).abs() <= 1e-5 * y.abs(), "{what}: {x} vs {y}");
            }
            a.len()
        };
        let scraping = ["scraping", "scrape", "crawl", "web"];
        same(&AnyOf(alts(&scraping)), &union(alts(&scraping)), "alone");
        let led = |first: Box<dyn Query>| {
            BooleanQuery::new(vec![
                (Occur::Must, first),
                (
                    Occur::Must,
                    Box::new(TermQuery::new(term("data"), IndexRecordOption::WithFreqs)),
                ),
            ])
        };
        let n = same(
            &led(Box::new(AnyOf(alts(&scraping)))),
            &led(Box::new(union(alts(&scraping)))),
            "in a conjunction",
        );
        assert!(n > 0);
    }

    /// A word with several alternatives is an [`AnyOf`] in a conjunction where another word is
    /// far rarer, and stays a union where the words have about as many documents.
    #[test]
    fn a_word_is_any_of_only_next_to_a_far_rarer_word() {
        let spec = |name: &str, tagline: &str| -> crate::SearchDoc {
            let spec: crate::corpus::AgentSpec = serde_json::from_value(serde_json::json!({
                "name": name,
                "displayName": name.split('/').nth(1).unwrap(),
                "tagline": tagline,
                "description": tagline,
                "kind": "remote",
            }))
            .unwrap();
            spec.to_doc().unwrap()
        };
        let mut docs: Vec<crate::SearchDoc> = (0..30)
            .map(|i| spec(&format!("a/tool-{i}"), "scrape and crawl any web site"))
            .collect();
        docs.push(spec("b/frames", "scrape a web site into pandas"));
        let index = crate::relevance::index_of(&docs).unwrap();
        let searcher = index.reader.searcher();
        let kinds = |text: &str| -> Vec<bool> {
            let q = index
                .text_query(
                    &searcher,
                    &DocFreqs::default(),
                    text,
                    &query_words(text),
                    Mode::All,
                    None,
                )
                .unwrap()
                .unwrap();
            let b = q.downcast_ref::<BooleanQuery>().expect("a BooleanQuery");
            b.clauses()
                .iter()
                .map(|(_, c)| c.downcast_ref::<AnyOf>().is_some())
                .collect()
        };
        // `scraping` (scrape, crawl, ...) has 31 agents, `pandas` 1.
        assert_eq!(kinds("scraping pandas"), [true, false]);
        // `scraping` and `website` (web, site, ...) have 31 each.
        assert_eq!(kinds("scraping website"), [false, false]);
    }

    /// [`Without`]: the pruned collection (the inner query's loop, excluded documents skipped)
    /// equals the exhaustive one (Tantivy's `Exclude` scorer), and no hit has an excluded word.
    #[test]
    fn without_prunes_like_the_exhaustive_exclusion() {
        let index = synthetic_index(5, 3000);
        let searcher = index.reader.searcher();
        let freqs = DocFreqs::default();
        let mut compared = 0;
        for (kept, dropped) in [
            ("data", "report"),
            ("code review", "request"),
            ("web scraping", "data"),
            ("analyze", "dataset code"),
        ] {
            let kept_words = query_words(kept);
            let dropped_words = query_words(dropped);
            let excluded = index
                .text_query(&searcher, &freqs, dropped, &dropped_words, Mode::Any, None)
                .unwrap()
                .unwrap();
            let q = SearchQuery::text(kept);
            let run = |prune: bool, k: usize, after: Option<(u64, String)>| {
                let part = Part {
                    text: kept,
                    words: &kept_words,
                    mode: Mode::All,
                    prefix_last: true,
                    without: Some(excluded.as_ref()),
                };
                let c = RankCollector {
                    sort: Sort::Relevance,
                    k,
                    after,
                    prune,
                    names: true,
                };
                index
                    .collect_part(&searcher, &freqs, &q, &part, &c)
                    .unwrap()
                    .into_iter()
                    .map(|r| (r.key, r.name, r.addr))
                    .collect::<Vec<_>>()
            };
            let exhaustive = run(false, 40, None);
            if exhaustive.len() < 40 {
                continue;
            }
            compared += 1;
            let pruned = run(true, 40, None);
            assert_eq!(pruned, exhaustive, "{kept} without {dropped}");
            let after = Some((pruned[19].0, pruned[19].1.clone()));
            assert_eq!(
                run(true, 20, after.clone()),
                run(false, 20, after),
                "{kept}"
            );
            // No hit has a dropped word.
            let weight = excluded
                .weight(EnableScoring::disabled_from_searcher(&searcher))
                .unwrap();
            for (_, name, addr) in &pruned {
                let mut s = weight
                    .scorer(searcher.segment_reader(addr.segment_ord), 1.0)
                    .unwrap();
                assert!(
                    s.doc() > addr.doc_id || s.seek(addr.doc_id) != addr.doc_id,
                    "{name} has a word of {dropped}"
                );
            }
        }
        assert!(compared >= 2, "too few queries to compare");
    }

    /// [`LooseMatch`] matches what Tantivy's `FuzzyTermQuery` matches, with the same constant
    /// score, whether its documents go in a vector (few) or a bitset (many).
    #[test]
    fn loose_match_equals_fuzzy_term_query() {
        use tantivy::query::FuzzyTermQuery;

        let index = synthetic_index(5, 2000);
        let searcher = index.reader.searcher();
        let max_doc = searcher.segment_reader(0).max_doc() as usize;
        let typo = index.fields.get(field::TYPO);
        let all = TopDocs::with_limit(10_000);
        let (mut lazy, mut few, mut many) = (0, 0, 0);
        for (word, distance, prefix) in [
            ("reveiw", 1, false),
            ("scrapign", 2, false),
            ("dat", 0, true),
            ("analy", 0, true),
            ("zzzzq", 1, false),
            ("summarise", 2, false),
            ("cod", 0, true),
            // Many words, many agents.
            ("re", 0, true),
            ("co", 0, true),
            // Publishers' numbered names: a few agents each.
            ("tools31", 0, true),
            ("labs315", 1, false),
            ("hq3151", 2, false),
        ] {
            let term = Term::from_field_text(typo, word);
            let (ours, theirs) = if prefix {
                (
                    LooseMatch::new_prefix(term.clone()),
                    FuzzyTermQuery::new_prefix(term, distance, true),
                )
            } else {
                (
                    LooseMatch::new(term.clone(), distance),
                    FuzzyTermQuery::new(term, distance, true),
                )
            };
            // The query builder asks for prefixes without typos only.
            assert!(prefix == (distance == 0));
            let mut a = searcher
                .search(&BoostQuery::new(Box::new(ours), LOOSE_MATCH_BOOST), &all)
                .unwrap();
            let mut b = searcher
                .search(&BoostQuery::new(Box::new(theirs), LOOSE_MATCH_BOOST), &all)
                .unwrap();
            a.sort_by_key(|x| x.1);
            b.sort_by_key(|x| x.1);
            assert_eq!(a.len(), b.len(), "{word}");
            assert!(a == b, "{word}");
            // Which of `LooseWeight::scorer`'s three ways this match took.
            let m = if prefix {
                LooseMatch::new_prefix(Term::from_field_text(typo, word))
            } else {
                LooseMatch::new(Term::from_field_text(typo, word), distance)
            };
            let terms = matched_terms(&m.matched, &m.dfa, typo, searcher.segment_reader(0))
                .unwrap()
                .len();
            if terms <= FEW_TERMS {
                lazy += usize::from(!a.is_empty());
            } else if a.len() * 32 <= max_doc {
                few += 1;
            } else {
                many += 1;
            }
        }
        assert!(
            lazy >= 1 && few >= 1 && many >= 1,
            "lazy {lazy}, few {few}, many {many}"
        );
    }

    #[test]
    fn stop_words_drop_unless_alone() {
        assert_eq!(
            query_words("an agent for Data Analysis"),
            ["data", "analysis"]
        );
        assert_eq!(query_words("the"), ["the"]);
        assert_eq!(query_words("sql sql SQL"), ["sql"]);
    }
}
