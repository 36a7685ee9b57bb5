//! Running a query in its mode: keyword as before, or the meaning side alone, or both fused.

use std::collections::HashMap;
use std::sync::PoisonError;

use super::{HybridError, MAX_DEPTH, Semantic};
use crate::index::SearchIndex;
use crate::query::{Cursor, QueryError, SearchMode, SearchQuery, Sort};
use crate::search::{Hit, SearchResults};

fn bad(field: &'static str, message: impl Into<String>) -> QueryError {
    QueryError {
        field,
        message: message.into(),
    }
}

/// The mode `q` runs in on a hub with (`has_model`) or without an embedding model: the one
/// asked for, or by default hybrid with a model for a text query ranked by relevance, keyword
/// otherwise. A mode the hub cannot run, or one that cannot honour the other parameters, is
/// refused naming the parameter.
pub fn resolve_mode(q: &SearchQuery, has_model: bool) -> Result<SearchMode, QueryError> {
    let Some(mode) = q.mode else {
        let hybrid = has_model && !q.text.is_empty() && q.sort == Sort::Relevance;
        return Ok(if hybrid {
            SearchMode::Hybrid
        } else {
            SearchMode::Keyword
        });
    };
    if mode == SearchMode::Keyword {
        return Ok(mode);
    }
    if !has_model {
        return Err(bad(
            "mode",
            format!(
                "`{}` needs an embedding model and this hub has none (its search_model_dir \
                 is not set); use mode=keyword",
                mode.as_str()
            ),
        ));
    }
    if q.text.is_empty() {
        return Err(bad(
            "mode",
            format!("`{}` needs words to search for in q", mode.as_str()),
        ));
    }
    if q.sort != Sort::Relevance {
        return Err(bad(
            "sort",
            format!("mode={} ranks by relevance only", mode.as_str()),
        ));
    }
    if mode == SearchMode::Semantic && q.facets {
        return Err(bad(
            "facets",
            "facets count keyword matches; not with mode=semantic",
        ));
    }
    Ok(mode)
}

impl SearchIndex {
    /// Runs `q` in its mode ([`resolve_mode`]); `semantic` is the hub's model and vectors, when
    /// it has one. In keyword mode this is [`SearchIndex::search`], unchanged.
    pub fn search_with(
        &self,
        q: &SearchQuery,
        semantic: Option<&Semantic>,
    ) -> Result<SearchResults, HybridError> {
        let mode = resolve_mode(q, semantic.is_some())?;
        let offset = q.cursor.as_ref().and_then(|c| c.offset);
        match (mode, semantic) {
            (SearchMode::Semantic | SearchMode::Hybrid, Some(s)) => {
                let offset = match (&q.cursor, offset) {
                    (None, _) => 0,
                    (Some(_), Some(o)) => o as usize,
                    (Some(_), None) => return Err(another_mode().into()),
                };
                self.fused(q, mode, s, offset)
            }
            _ if offset.is_some() => Err(another_mode().into()),
            _ => Ok(self.search(q)?),
        }
    }

    /// The query's vector and the agents nearest it that pass the filters, nearest first, at
    /// most `depth`. A selective filter leaves few of the nearest: it asks for more, once.
    fn meaning_side(
        &self,
        q: &SearchQuery,
        s: &Semantic,
        depth: usize,
    ) -> Result<(Vec<f32>, Ranking), HybridError> {
        let query_vector = s.embedder().embed_one(&q.text)?;
        let mut meaning: Vec<(String, f32)> = Vec::new();
        for factor in [4, 32] {
            let k = depth * factor;
            let candidates = s.nearest(&query_vector, k);
            let exhausted = candidates.len() < k;
            let candidates: Vec<(String, f32)> = candidates
                .into_iter()
                .filter(|(_, sim)| *sim >= s.fusion.min_similarity)
                .collect();
            let names: Vec<String> = candidates.iter().map(|(n, _)| n.clone()).collect();
            let passing = self.passing_filters(q, &names)?;
            meaning = candidates
                .into_iter()
                .filter(|(n, _)| passing.contains(n))
                .take(depth)
                .collect();
            if meaning.len() >= depth || exhausted {
                break;
            }
        }
        Ok((query_vector, meaning))
    }

    fn fused(
        &self,
        q: &SearchQuery,
        mode: SearchMode,
        s: &Semantic,
        offset: usize,
    ) -> Result<SearchResults, HybridError> {
        let fusion = s.fusion;
        let depth = fusion.depth.max(offset + q.limit + 1).min(MAX_DEPTH + 1);
        // The keyword side (the search as it is, its first `depth` hits) on another thread
        // while this one runs the whole meaning side (embedding, nearest, filters): the two
        // take similar time, and a hub has cores. Its facets, counted over every keyword
        // match, are the page's on every page (`SearchPage::facets`), as in keyword mode.
        let kq = SearchQuery {
            cursor: None,
            limit: depth,
            mode: None,
            ..q.clone()
        };
        let (keyword, meaning) = std::thread::scope(|scope| {
            let keyword = (mode == SearchMode::Hybrid).then(|| scope.spawn(|| self.search(&kq)));
            let meaning = self.meaning_side(q, s, depth);
            let keyword = keyword.map(|h| h.join().expect("the keyword search thread"));
            (keyword, meaning)
        });
        let keyword = keyword.transpose()?;
        let (query_vector, meaning) = meaning?;
        // Reciprocal rank fusion.
        let rrf = |weight: f32, rank: usize| {
            #[allow(clippy::cast_precision_loss)] // ranks ≤ MAX_DEPTH
            let r = rank as f32;
            weight / (fusion.rrf_k + r + 1.0)
        };
        let mut fused: HashMap<&str, (f32, bool, bool)> = HashMap::new();
        if let Some(k) = &keyword {
            for (rank, h) in k.hits.iter().enumerate() {
                let e = fused.entry(h.name.as_str()).or_default();
                let weight = if h.missing_words.is_empty() {
                    fusion.keyword_weight
                } else {
                    fusion.keyword_weight * fusion.partial_factor
                };
                e.0 += rrf(weight, rank);
                e.1 = true;
            }
        }
        for (rank, (name, _)) in meaning.iter().enumerate() {
            let e = fused.entry(name.as_str()).or_default();
            e.0 += rrf(fusion.semantic_weight, rank);
            e.2 = true;
        }
        let mut order: Vec<(&str, (f32, bool, bool))> = fused.into_iter().collect();
        order.sort_by(|a, b| b.1.0.total_cmp(&a.1.0).then_with(|| a.0.cmp(b.0)));
        order.truncate(MAX_DEPTH);
        let end = (offset + q.limit).min(order.len());
        let page = order.get(offset..end).unwrap_or_default();
        let more = order.len() > end;
        // Hits: the keyword side's (with highlights) when it found them, else read from the
        // index (the same filters, restricted to these agents).
        let mut by_name: HashMap<String, Hit> = keyword
            .as_ref()
            .map(|k| k.hits.iter().map(|h| (h.name.clone(), h.clone())).collect())
            .unwrap_or_default();
        let unseen: Vec<String> = page
            .iter()
            .filter(|(n, _)| !by_name.contains_key(*n))
            .map(|(n, _)| (*n).to_owned())
            .collect();
        if !unseen.is_empty() {
            let rq = SearchQuery {
                text: String::new(),
                only_names: unseen.clone(),
                limit: unseen.len(),
                cursor: None,
                facets: false,
                mode: None,
                sort: Sort::Relevance,
                ..q.clone()
            };
            for h in self.search(&rq)?.hits {
                by_name.insert(h.name.clone(), h);
            }
        }
        let similarity: HashMap<&str, f32> =
            meaning.iter().map(|(n, sim)| (n.as_str(), *sim)).collect();
        let store = s.vectors().read().unwrap_or_else(PoisonError::into_inner);
        let mut hits = Vec::with_capacity(page.len());
        for (name, (score, by_words, by_meaning)) in page {
            let Some(mut hit) = by_name.remove(*name) else {
                continue;
            };
            hit.score = Some(*score);
            hit.similarity = similarity
                .get(name)
                .copied()
                .or_else(|| store.get(name).map(|v| v.dot(&query_vector)));
            hit.matched_by = [(*by_words, "words"), (*by_meaning, "meaning")]
                .into_iter()
                .filter(|(b, _)| *b)
                .map(|(_, w)| w.to_owned())
                .collect();
            hits.push(hit);
        }
        drop(store);
        let next_cursor = match (more, hits.last()) {
            (true, Some(last)) => Some(
                Cursor {
                    key: 0,
                    name: last.name.clone(),
                    query: q.digest(),
                    tier: None,
                    offset: Some(u32::try_from(end).unwrap_or(u32::MAX)),
                }
                .encode(),
            ),
            _ => None,
        };
        Ok(match keyword {
            Some(mut k) => {
                if offset > 0 {
                    k.dropped_words.clear();
                    k.did_you_mean = None;
                }
                k.hits = hits;
                k.next_cursor = next_cursor;
                k
            }
            None => SearchResults {
                hits,
                next_cursor,
                dropped_words: Vec::new(),
                did_you_mean: None,
                facets: None,
            },
        })
    }
}

/// Agent names with their similarity, best first.
type Ranking = Vec<(String, f32)>;

fn another_mode() -> QueryError {
    bad(
        "cursor",
        "the cursor belongs to a search in another mode; start over without it",
    )
}
