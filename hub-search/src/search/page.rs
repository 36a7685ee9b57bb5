//! `SearchIndex::search`: one page of results. The full matches come first; when they are
//! fewer than the tuning's threshold on a first page, the fewer-words tiers follow (and the
//! cursor carries the tier, so every later page agrees). Then the facets, the hits read from
//! their stored documents with highlights, "did you mean", the words dropped and the cursor.

use index_schema::hub_api::{
    SearchHighlight as Highlight, SearchHit as Hit, SearchPage as SearchResults,
};
use tantivy::schema::Value as _;
use tantivy::{DocAddress, TantivyDocument};

use crate::error::Result;
use crate::index::SearchIndex;
use crate::mapping::field;
use crate::query::{Cursor, SearchQuery, Sort};
use crate::search::doc_freqs::DocFreqs;
use crate::search::facets::FacetCollector;
use crate::search::plan::Mode;
use crate::words::query_words;

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
                &FacetCollector {
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
                // Marked by the hub (hub-core's `domains::mark_hits`): not in the index, as a
                // proof can lapse at any re-check.
                verified_domain: None,
                score: (q.sort == Sort::Relevance).then_some(h.score),
                highlights,
                matched_by: Vec::new(),
                similarity: None,
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
                    offset: None,
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
}
