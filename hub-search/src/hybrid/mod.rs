//! Hybrid search (issue 34): the keyword search fused with the nearest agents by meaning.
//!
//! - The **keyword side** is [`SearchIndex::search`] as it is (BM25F, tiers, synonyms, typos,
//!   filters), asked for its top [`Fusion::depth`].
//! - The **meaning side** embeds the query with the hub's model ([`Embedder`]) and takes the
//!   agents whose vectors are nearest ([`nearest`]: an exact scan, or the [`nearest::Ivf`]
//!   index from [`ANN_FROM`] vectors on). Its candidates go through the same filters as the
//!   keyword side ([`SearchIndex::passing_filters`]): a hit found by meaning is never one the
//!   filters exclude.
//! - **Fusion** is reciprocal rank fusion: an agent scores `w / (k + rank)` on each side that
//!   found it, summed ([`Fusion`], tuned on the tune half of the paraphrase set). Ranks, not
//!   scores, so BM25's unbounded scores and cosine similarities need no common scale.
//!
//! `mode=semantic` is the meaning side alone; `mode=keyword` the keyword search unchanged. With
//! no model, only `keyword` exists and a query asking for another is refused
//! ([`HybridError::NoModel`]). Pages of a semantic or hybrid query are numbered by offset (the
//! cursor carries it) up to [`MAX_DEPTH`] hits.

mod fuse;
pub mod nearest;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

pub use fuse::resolve_mode;
use nearest::{Ivf, IvfParams};

use crate::embed::store::SharedVectors;
use crate::embed::{EmbedError, Embedder};
use crate::query::{QueryError, SearchMode};

/// From this many vectors on, the meaning side uses the IVF index instead of an exact scan.
pub const ANN_FROM: usize = 200_000;
/// An IVF index older than this is rebuilt (in the background) once the store changed.
pub const ANN_REBUILD_AFTER: Duration = Duration::from_secs(600);
/// Deepest hit a semantic or hybrid query pages to.
pub const MAX_DEPTH: usize = 200;

/// How the two rankings are fused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// RRF's `k`: how fast a lower rank stops counting.
    pub rrf_k: f32,
    /// Weight of the keyword ranking.
    pub keyword_weight: f32,
    /// Weight of the meaning ranking.
    pub semantic_weight: f32,
    /// Factor on the keyword weight for a hit that lacks some of the words (a fewer-words
    /// match): a query in the user's own words matches agents only partly, and then the
    /// keyword ranking says less.
    pub partial_factor: f32,
    /// Hits taken from each side.
    pub depth: usize,
    /// A meaning candidate below this cosine similarity is left out.
    pub min_similarity: f32,
}

/// Chosen on the tune halves only (paraphrase set and judged set, `ofc-relevance --mode hybrid`
/// with the fusion flags; the grid is in BENCHMARKS.md): the best paraphrase figure whose judged
/// figure stays within 0.005 of keyword search's.
impl Default for Fusion {
    fn default() -> Self {
        Self {
            rrf_k: 30.0,
            keyword_weight: 1.0,
            semantic_weight: 1.0,
            partial_factor: 0.5,
            depth: 50,
            min_similarity: 0.0,
        }
    }
}

impl Fusion {
    /// The largest fused score a hit can have in `mode`: first on every side that runs (the
    /// keyword side at its full weight). A hit's fused score over this is in (0, 1], ordered as
    /// the hits are — what the hub's ARD search reports as its relevance score. `None` in
    /// keyword mode, where nothing is fused.
    pub fn best_possible(&self, mode: SearchMode) -> Option<f32> {
        let first = |weight: f32| weight / (self.rrf_k + 1.0);
        match mode {
            SearchMode::Keyword => None,
            SearchMode::Semantic => Some(first(self.semantic_weight)),
            SearchMode::Hybrid => Some(first(self.keyword_weight) + first(self.semantic_weight)),
        }
    }
}

/// Why a semantic or hybrid search could not run.
#[derive(Debug, thiserror::Error)]
pub enum HybridError {
    /// A bad parameter (the hub answers 400 with it).
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The keyword side failed.
    #[error(transparent)]
    Search(#[from] crate::Error),
    /// Embedding the query failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

/// An IVF index and when it was built.
type Built = (Arc<Ivf>, Instant);

/// The meaning side: the model, the agents' vectors, and the IVF index over them once large.
pub struct Semantic {
    embedder: Arc<Embedder>,
    vectors: SharedVectors,
    ann: Arc<RwLock<Option<Built>>>,
    building: Arc<AtomicBool>,
    ann_params: IvfParams,
    /// The fusion settings in use.
    pub fusion: Fusion,
}

impl std::fmt::Debug for Semantic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semantic")
            .field("fusion", &self.fusion)
            .finish_non_exhaustive()
    }
}

impl Semantic {
    /// The meaning side over `vectors` (kept up to date by the follower) with `embedder`.
    pub fn new(embedder: Arc<Embedder>, vectors: SharedVectors) -> Self {
        Self {
            embedder,
            vectors,
            ann: Arc::new(RwLock::new(None)),
            building: Arc::new(AtomicBool::new(false)),
            ann_params: IvfParams::default(),
            fusion: Fusion::default(),
        }
    }

    /// The model.
    pub fn embedder(&self) -> &Arc<Embedder> {
        &self.embedder
    }

    /// The agents' vectors.
    pub fn vectors(&self) -> &SharedVectors {
        &self.vectors
    }

    /// Builds the IVF index now, in this thread (benchmarks, tests); searches use it from then
    /// on whatever the store's size.
    pub fn build_ann(&self, params: IvfParams) -> Arc<Ivf> {
        let ivf = {
            let store = self.vectors.read().unwrap_or_else(PoisonError::into_inner);
            Arc::new(Ivf::build(&store, params))
        };
        *self.ann.write().unwrap_or_else(PoisonError::into_inner) =
            Some((Arc::clone(&ivf), Instant::now()));
        ivf
    }

    /// The `k` agents nearest `query` (a unit vector): from the IVF index when the store is
    /// large (re-scored against the live store), else by exact scan; best first.
    pub fn nearest(&self, query: &[f32], k: usize) -> Vec<(String, f32)> {
        let ann = self
            .ann
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let store = self.vectors.read().unwrap_or_else(PoisonError::into_inner);
        let large = store.len() >= ANN_FROM;
        let stale = ann
            .as_ref()
            .is_none_or(|(ivf, at)| ivf.seq != store.seq() && at.elapsed() > ANN_REBUILD_AFTER);
        if large && stale {
            self.rebuild_in_background();
        }
        let Some((ivf, _)) = ann else {
            return nearest::exact(&store, query, k);
        };
        if ivf.generation == store.generation() {
            // The snapshot holds exactly the store's vectors: its scores are the store's.
            return ivf.search(query, k, self.ann_params.probe);
        }
        // Candidates from the snapshot, scored as the store holds them now: an agent removed
        // since is dropped, an updated one counts as it is.
        let q = nearest::QueryCodes::new(query);
        let mut top = nearest::TopK::new(k);
        for (name, _) in ivf.search(query, k * 2, self.ann_params.probe) {
            if let Some(v) = store.get(&name) {
                top.push(q.similarity(v.codes, v.scale), &name);
            }
        }
        top.into_sorted()
    }

    fn rebuild_in_background(&self) {
        if self.building.swap(true, Ordering::AcqRel) {
            return;
        }
        let vectors = Arc::clone(&self.vectors);
        let building = Arc::clone(&self.building);
        let slot = Arc::clone(&self.ann);
        let params = self.ann_params;
        std::thread::spawn(move || {
            let ivf = {
                let store = vectors.read().unwrap_or_else(PoisonError::into_inner);
                Arc::new(Ivf::build(&store, params))
            };
            *slot.write().unwrap_or_else(PoisonError::into_inner) = Some((ivf, Instant::now()));
            building.store(false, Ordering::Release);
        });
    }
}
