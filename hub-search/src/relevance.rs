//! The relevance sets: hand-written agents (`agents.jsonl`), judged queries (`queries.json`)
//! and nDCG@10. Two sets: the main one (`relevance/`, 120 agents of many publishers) and a small
//! self-hosted hub (`relevance/small/`, 40 agents of one team), where a query that finds one
//! agent is a failed query. Every query belongs to the tuning half or the held-out half
//! ([`Split`]), assigned by a hash of its text when the sets were written, before any tuning:
//! ranking changes are tuned on the first and reported on both.
//!
//! A third set, the paraphrase set (`relevance/paraphrase/`, issue 34): queries written in a
//! user's own words, sharing few or no words with the right agents' text, judged over the
//! agents of both other sets (160). [`shared_words`] counts what a query and an agent share.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

use serde::Deserialize;

use crate::corpus::AgentSpec;
use crate::doc::SearchDoc;
use crate::embed::store::VectorStore;
use crate::embed::{self, Embedder};
use crate::hybrid::Semantic;
use crate::index::{SearchIndex, WriterConfig};
use crate::mapping::{TEXT_SOURCES, Value, analyzer, tokens};
use crate::query::{SearchMode, SearchQuery};
use crate::words::query_words;

/// Which half of the judged queries a query belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Used to tune ranking.
    Tune,
    /// Never looked at while tuning; the figure reported.
    Heldout,
}

impl Split {
    /// `tune` or `heldout`.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Tune => "tune",
            Split::Heldout => "heldout",
        }
    }
}

/// A judged query: grades 1 (relevant) to 3 (exactly what was asked for).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgedQuery {
    /// Free text.
    pub q: String,
    /// Optional capability filter.
    #[serde(default)]
    pub capability: Option<String>,
    /// Agent name → grade.
    pub relevant: BTreeMap<String, u8>,
    /// Its half.
    pub split: Split,
}

/// The directory of the committed main relevance set.
pub fn default_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/relevance"))
}

/// The directory of the committed small-hub relevance set.
pub fn small_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/relevance/small"))
}

/// The directory of the committed paraphrase set (its queries; its agents are the main and
/// small sets' agents together, see [`paraphrase_agents`]).
pub fn paraphrase_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/relevance/paraphrase"))
}

/// The agents the paraphrase set is judged over: the main set's and the small hub's.
pub fn paraphrase_agents() -> anyhow::Result<Vec<SearchDoc>> {
    let mut agents = load_agents(default_dir())?;
    agents.extend(load_agents(small_dir())?);
    Ok(agents)
}

/// The agents of the set in `dir`: its `agents.jsonl`, or for the paraphrase set the agents
/// of the main and small sets.
pub fn agents_of(dir: &Path) -> anyhow::Result<Vec<SearchDoc>> {
    if dir.join("agents.jsonl").exists() {
        load_agents(dir)
    } else if dir == paraphrase_dir() {
        paraphrase_agents()
    } else {
        anyhow::bail!("{}: no agents.jsonl", dir.display())
    }
}

/// English function words, left out of [`shared_words`] besides the search's own stop words:
/// sharing "our" or "into" with an agent says nothing about meaning.
const FUNCTION_WORDS: &[&str] = &[
    "about", "after", "all", "am", "any", "before", "but", "could", "did", "do", "does", "doesn",
    "don", "each", "every", "has", "have", "how", "if", "into", "its", "just", "no", "not", "our",
    "out", "over", "s", "so", "some", "t", "than", "their", "them", "then", "there", "they", "up",
    "was", "we", "were", "when", "where", "why", "will", "would", "you", "your",
];

/// The content words (stop and function words dropped, English-stemmed as the index stems its
/// text) that `query` shares with everything the index reads of `doc` (name, display name,
/// tagline, description, keywords, capabilities), sorted.
pub fn shared_words(query: &str, doc: &SearchDoc) -> Vec<String> {
    let mut agent = std::collections::BTreeSet::new();
    let mut values = Vec::new();
    for source in TEXT_SOURCES {
        (source.extract)(doc, &mut values);
    }
    for v in &values {
        if let Value::Text(t) = v {
            agent.extend(tokens(analyzer::TEXT, t));
        }
    }
    let mut out: Vec<String> = query_words(query)
        .iter()
        .filter(|w| !FUNCTION_WORDS.contains(&w.as_str()))
        .flat_map(|w| tokens(analyzer::TEXT, w))
        .filter(|stem| agent.contains(stem))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Mean nDCG@10 of the evaluated queries of `split` (all when `None`), and their count.
pub fn mean_ndcg(results: &[Evaluated], split: Option<Split>) -> (f64, usize) {
    let picked: Vec<f64> = results
        .iter()
        .filter(|r| split.is_none_or(|s| r.query.split == s))
        .map(|r| r.ndcg)
        .collect();
    if picked.is_empty() {
        return (0.0, 0);
    }
    (
        picked.iter().sum::<f64>() / picked.len() as f64,
        picked.len(),
    )
}

/// Reads the agents of the relevance set.
pub fn load_agents(dir: &Path) -> anyhow::Result<Vec<SearchDoc>> {
    let path = dir.join("agents.jsonl");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let spec: AgentSpec = serde_json::from_str(line)
            .map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), i + 1))?;
        let doc = spec
            .to_doc()
            .map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), i + 1))?;
        let problems = doc.manifest.validate();
        if !problems.is_empty() {
            anyhow::bail!(
                "{}:{}: invalid manifest: {problems:?}",
                path.display(),
                i + 1
            );
        }
        out.push(doc);
    }
    Ok(out)
}

/// Reads the judged queries.
pub fn load_queries(dir: &Path) -> anyhow::Result<Vec<JudgedQuery>> {
    let path = dir.join("queries.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Builds an in-memory index of `docs`.
pub fn index_of(docs: &[SearchDoc]) -> anyhow::Result<SearchIndex> {
    let index = SearchIndex::in_ram()?;
    let mut w = index.writer(WriterConfig {
        heap_bytes: 32 << 20,
        threads: 1,
    })?;
    w.rebuild(1, docs.iter().cloned())?;
    index.refresh()?;
    Ok(index)
}

/// nDCG@k of a ranking against graded judgments (gain `2^grade - 1`, log2 discount).
pub fn ndcg_at(k: usize, ranked: &[String], judged: &BTreeMap<String, u8>) -> f64 {
    let gain = |g: u8| f64::from((1u32 << g) - 1);
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, name)| gain(judged.get(name).copied().unwrap_or(0)) / (i as f64 + 2.0).log2())
        .sum();
    let mut ideal: Vec<u8> = judged.values().copied().collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, g)| gain(*g) / (i as f64 + 2.0).log2())
        .sum();
    if idcg == 0.0 { 0.0 } else { dcg / idcg }
}

/// One evaluated query.
#[derive(Debug, Clone)]
pub struct Evaluated {
    /// The query.
    pub query: JudgedQuery,
    /// Names returned, in order (top 10).
    pub ranked: Vec<String>,
    /// nDCG@10.
    pub ndcg: f64,
}

/// Runs every judged query and scores it (keyword search).
pub fn evaluate(index: &SearchIndex, queries: &[JudgedQuery]) -> anyhow::Result<Vec<Evaluated>> {
    evaluate_in(index, None, SearchMode::Keyword, queries)
}

/// The meaning side over `docs` for the relevance runs: each agent's text
/// ([`embed::agent_text`]) embedded with `embedder`, the vectors in a store in `dir`.
pub fn semantic_of(
    docs: &[SearchDoc],
    embedder: Arc<Embedder>,
    dir: &Path,
) -> anyhow::Result<Semantic> {
    let mut store = VectorStore::open(dir, embedder.model_id())?;
    let texts: Vec<String> = docs.iter().map(embed::agent_text).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed(&refs)?;
    for ((doc, text), v) in docs.iter().zip(&texts).zip(&vectors) {
        store.upsert(&doc.name().to_string(), embed::text_hash(text), v);
    }
    store.commit(1)?;
    Ok(Semantic::new(embedder, Arc::new(RwLock::new(store))))
}

/// Runs every judged query in `mode` (`semantic` the hub's model and vectors, needed for any
/// mode but keyword) and scores it.
pub fn evaluate_in(
    index: &SearchIndex,
    semantic: Option<&Semantic>,
    mode: SearchMode,
    queries: &[JudgedQuery],
) -> anyhow::Result<Vec<Evaluated>> {
    let mut out = Vec::new();
    for jq in queries {
        let mut q = SearchQuery::text(&jq.q);
        q.limit = 10;
        q.capabilities = jq.capability.iter().map(|c| c.to_lowercase()).collect();
        // A query of filters only has no text to embed: keyword in every mode, as the hub's
        // default mode does.
        q.mode = Some(if q.text.is_empty() {
            SearchMode::Keyword
        } else {
            mode
        });
        let ranked: Vec<String> = index
            .search_with(&q, semantic)?
            .hits
            .into_iter()
            .map(|h| h.name)
            .collect();
        out.push(Evaluated {
            ndcg: ndcg_at(10, &ranked, &jq.relevant),
            ranked,
            query: jq.clone(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::ndcg_at;

    #[test]
    fn ndcg_is_one_for_the_ideal_order_and_lower_otherwise() {
        let judged: BTreeMap<String, u8> = [("a".into(), 3), ("b".into(), 1)].into();
        let s = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!((ndcg_at(10, &s(&["a", "b"]), &judged) - 1.0).abs() < 1e-9);
        let swapped = ndcg_at(10, &s(&["b", "a"]), &judged);
        assert!(swapped < 1.0 && swapped > 0.0);
        assert_eq!(ndcg_at(10, &s(&["x", "y"]), &judged), 0.0);
    }
}
