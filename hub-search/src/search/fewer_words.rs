//! Fewer words: when every word together finds too few agents, the agents with only some of
//! the words follow, Typesense's way: tier by tier (those lacking one word, then two, ...),
//! each tier one conjunction per group of words less the agents with any other word, so that
//! a query with enough agents lacking one word never looks at single words. Also which words
//! a partial match lacks, for the hits whose tier does not say it.

use tantivy::query::{EnableScoring, Query};
use tantivy::{DocAddress, DocSet as _, Searcher};

use crate::error::Result;
use crate::index::SearchIndex;
use crate::query::SearchQuery;
use crate::search::collect::Part;
use crate::search::collector::RankCollector;
use crate::search::doc_freqs::DocFreqs;
use crate::search::plan::Mode;
use crate::search::rank::Ranked;
use crate::search::scorers::any_of::AnyOf;
use crate::search::scorers::at_least::AtLeast;

/// Most conjunctions (groups of the words) a query answered with fewer words may run, over all
/// its tiers; past it, the agents with even fewer words form one last tier ranked by the
/// any-word union (see [`fewer_words_tiers`]). With 24, every tier of a query of up to four
/// words is exact (14 groups), and the first two of five or six words.
const MAX_WORD_GROUPS: usize = 24;

impl SearchIndex {
    /// A page of a query whose full matches (`strict`: all of them, fewer than the threshold,
    /// names resolved; empty when the cursor is past them) are followed by agents with only
    /// some of the words, fewest dropped words first (see [`fewer_words_tiers`]): tier 0 is the
    /// full matches, tier `t` the agents lacking exactly `t` words, each tier in sort order.
    /// Returns the hits (up to `limit + 1`), each one's tier, and the words each one lacks
    /// when the tier says it (`None` in a last [`Tier::AtMost`] tier).
    pub(super) fn fewer_words(
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
                    let mut queries: Vec<Box<dyn Query>> = Vec::new();
                    for i in 0..n {
                        queries.extend(word_query(i)?);
                    }
                    let more = AtLeast {
                        queries,
                        m: size + 1,
                    };
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

    /// For each partial match (`(position, address)`), the query words it lacks.
    pub(super) fn missing_words(
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
}

/// A page answered with fewer words (see [`SearchIndex::fewer_words`]).
#[derive(Default)]
pub(super) struct FewerWordsPage {
    pub(super) hits: Vec<Ranked>,
    /// Each hit's tier (0: a full match).
    pub(super) tiers: Vec<u8>,
    /// The words each hit lacks, when its tier says it.
    pub(super) missing: Vec<Option<Vec<String>>>,
}

/// How the agents lacking some words are found, tier after tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tier {
    /// Agents with exactly this many of the words: one conjunction per group of that many
    /// words, less the agents with any other word.
    Exactly(usize),
    /// Agents with at most this many of the words, by the any-word union's score.
    AtMost(usize),
}

/// The tiers after the full matches for a query of `n` words: the agents lacking one word,
/// then two, ... while the tiers so far take at most [`MAX_WORD_GROUPS`] conjunctions in all;
/// then, if words are left to drop, one last tier of all the rest.
pub(super) fn fewer_words_tiers(n: usize) -> Vec<Tier> {
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
pub(super) fn binomial(n: usize, k: usize) -> usize {
    let k = k.min(n - k);
    let mut out: usize = 1;
    for i in 0..k {
        out = out.saturating_mul(n - i) / (i + 1);
    }
    out
}

/// Every `size`-element subset of `0..n`, each ascending, in lexicographic order.
pub(super) fn subsets(n: usize, size: usize) -> Vec<Vec<usize>> {
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
