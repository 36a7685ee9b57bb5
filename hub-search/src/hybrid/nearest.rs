//! The agents whose embeddings are nearest a query's: an exact scan of the vector store, and an
//! inverted-file index ([`Ivf`]) over `i8` vectors for large stores.
//!
//! **Why IVF over `i8`, of our own, rather than HNSW.** The store already holds every vector as
//! 384 `i8` codes and a scale (388 bytes, see [`crate::embed::store`]). An IVF index is those
//! vectors regrouped by their nearest of a few hundred centroids (k-means on a sample): a query
//! compares itself with the centroids, then scans the vectors of the closest lists exactly
//! (integer dot products, sequential memory). Its cost is one more copy of the codes grouped by
//! list and 4 bytes a vector; its build at a million vectors is one assignment pass (seconds on
//! 2 cores). An HNSW graph (`hnsw_rs`, `instant-distance`) wants f32 vectors (4× the memory:
//! 1.5 GB at 1M) plus its links, and its build at 1M with 384 dimensions takes many minutes on
//! 2 cores; deletions and updates are awkward in both crates. The recall of IVF is tuned by the
//! lists probed; [`Ivf::search`] results are re-scored against the live store, so an updated
//! vector counts as it is now and a removed agent is never returned.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::embed::Embedder;
use crate::embed::store::{VectorStore, quantize};

const DIM: usize = Embedder::DIM;

/// A candidate: similarity and name, ordered so that a `BinaryHeap` of it is a min-heap on
/// similarity (the worst kept candidate on top).
#[derive(Debug, Clone, PartialEq)]
struct Scored(f32, String);

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .0
            .total_cmp(&self.0)
            .then_with(|| self.1.cmp(&other.1))
    }
}

/// The best `k` of a stream of (similarity, name), best first.
pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<Scored>,
}

impl TopK {
    pub(crate) fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    /// The similarity a new candidate must beat (−∞ until `k` are kept).
    fn floor(&self) -> f32 {
        if self.heap.len() < self.k {
            f32::NEG_INFINITY
        } else {
            self.heap.peek().map_or(f32::NEG_INFINITY, |s| s.0)
        }
    }

    pub(crate) fn push(&mut self, similarity: f32, name: &str) {
        if self.k == 0 || similarity <= self.floor() {
            return;
        }
        self.heap.push(Scored(similarity, name.to_owned()));
        if self.heap.len() > self.k {
            self.heap.pop();
        }
    }

    /// Best first (ties by name).
    pub(crate) fn into_sorted(self) -> Vec<(String, f32)> {
        let mut v: Vec<Scored> = self.heap.into_vec();
        v.sort();
        v.into_iter().map(|s| (s.1, s.0)).collect()
    }
}

/// The query quantised like the stored vectors, for integer dot products.
pub(crate) struct QueryCodes {
    codes: Vec<i8>,
    scale: f32,
}

impl QueryCodes {
    pub(crate) fn new(query: &[f32]) -> Self {
        let (codes, scale) = quantize(query);
        Self { codes, scale }
    }

    /// Cosine similarity with a stored vector (both unit length), from the codes.
    #[inline]
    pub(crate) fn similarity(&self, codes: &[i8], scale: f32) -> f32 {
        #[allow(clippy::cast_precision_loss)] // |sum| ≤ 384 × 127², exact in f32's range
        let dot = dot_i8(&self.codes, codes) as f32;
        dot * self.scale * scale
    }
}

/// Integer dot product of two code vectors (the compiler vectorises the 16-wide chunks).
#[inline]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    let mut acc = [0i32; 16];
    for (ca, cb) in a.chunks_exact(16).zip(b.chunks_exact(16)) {
        for i in 0..16 {
            acc[i] += i32::from(ca[i]) * i32::from(cb[i]);
        }
    }
    let mut sum: i32 = acc.iter().sum();
    let tail = a.len() - a.len() % 16;
    for i in tail..a.len().min(b.len()) {
        sum += i32::from(a[i]) * i32::from(b[i]);
    }
    sum
}

/// The `k` agents of `store` nearest `query` (a unit vector), by exact scan; best first.
pub fn exact(store: &VectorStore, query: &[f32], k: usize) -> Vec<(String, f32)> {
    let q = QueryCodes::new(query);
    let mut top = TopK::new(k);
    for (name, v) in store.iter() {
        top.push(q.similarity(v.codes, v.scale), name);
    }
    top.into_sorted()
}

/// An inverted-file index over a snapshot of the store's vectors (see the module
/// documentation).
#[derive(Debug)]
pub struct Ivf {
    /// `lists × DIM` unit centroids.
    centroids: Vec<f32>,
    /// Entries of list `l`: `starts[l]..starts[l + 1]`.
    starts: Vec<usize>,
    names: Vec<String>,
    scales: Vec<f32>,
    codes: Vec<i8>,
    /// The store's sequence when the snapshot was taken.
    pub seq: u64,
    /// The store's [`VectorStore::generation`] when the snapshot was taken.
    pub generation: u64,
}

/// How an [`Ivf`] is built and searched.
#[derive(Debug, Clone, Copy)]
pub struct IvfParams {
    /// Lists (centroids); 0: about √n / 4, between 16 and 256.
    pub lists: usize,
    /// Lists scanned per query; 0: a sixteenth of the lists, at least 4 (15 of 250 at 1M
    /// agents).
    pub probe: usize,
    /// k-means rounds on the sample.
    pub rounds: usize,
    /// Vectors the centroids are trained on (at most).
    pub sample: usize,
    /// Threads for the assignment pass.
    pub threads: usize,
}

impl Default for IvfParams {
    fn default() -> Self {
        Self {
            lists: 0,
            probe: 0,
            rounds: 8,
            sample: 40_000,
            threads: 2,
        }
    }
}

fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The index of the centroid nearest `v`.
fn nearest_centroid(centroids: &[f32], v: &[f32]) -> usize {
    let mut best = (f32::NEG_INFINITY, 0);
    for (i, c) in centroids.chunks_exact(DIM).enumerate() {
        let d = dot_f32(c, v);
        if d > best.0 {
            best = (d, i);
        }
    }
    best.1
}

impl Ivf {
    /// Lists in use.
    pub fn lists(&self) -> usize {
        self.starts.len() - 1
    }

    /// Vectors indexed.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Bytes held (codes, scales, names, centroids, list offsets).
    pub fn heap_bytes(&self) -> usize {
        self.codes.len()
            + self.scales.len() * 4
            + self.names.iter().map(|n| n.len() + 24).sum::<usize>()
            + self.centroids.len() * 4
            + self.starts.len() * 8
    }

    /// Builds the index from the store's vectors: spherical k-means on an evenly spread
    /// sample, then every vector assigned to its nearest centroid.
    pub fn build(store: &VectorStore, params: IvfParams) -> Self {
        let all: Vec<(&str, &[i8], f32)> =
            store.iter().map(|(n, v)| (n, v.codes, v.scale)).collect();
        let n = all.len();
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let lists = if params.lists > 0 {
            params.lists
        } else {
            ((n as f64).sqrt() / 4.0) as usize
        }
        .clamp(1, 256)
        .min(n.max(1));
        let decode = |codes: &[i8], scale: f32| -> Vec<f32> {
            codes.iter().map(|&c| f32::from(c) * scale).collect()
        };
        // The sample: every (n / sample)-th vector.
        let step = (n / params.sample.max(1)).max(1);
        let sample: Vec<Vec<f32>> = all
            .iter()
            .step_by(step)
            .map(|(_, c, s)| decode(c, *s))
            .collect();
        // Initial centroids spread over the sample.
        let mut centroids: Vec<f32> = Vec::with_capacity(lists * DIM);
        let init_step = (sample.len() / lists.max(1)).max(1);
        for v in sample.iter().step_by(init_step).take(lists) {
            centroids.extend_from_slice(v);
        }
        let lists = centroids.len() / DIM;
        for _ in 0..params.rounds {
            let mut sums = vec![0f32; lists * DIM];
            let mut counts = vec![0usize; lists];
            for v in &sample {
                let c = nearest_centroid(&centroids, v);
                counts[c] += 1;
                for (s, x) in sums[c * DIM..(c + 1) * DIM].iter_mut().zip(v) {
                    *s += x;
                }
            }
            for (c, count) in counts.iter().enumerate() {
                let row = &mut sums[c * DIM..(c + 1) * DIM];
                if *count == 0 {
                    // An empty list keeps its centroid.
                    row.copy_from_slice(&centroids[c * DIM..(c + 1) * DIM]);
                }
                crate::embed::normalize(row);
            }
            centroids = sums;
        }
        // Assignment, split over threads.
        let threads = params.threads.max(1);
        let chunk = n.div_ceil(threads).max(1);
        let assigned: Vec<usize> = std::thread::scope(|scope| {
            let handles: Vec<_> = all
                .chunks(chunk)
                .map(|part| {
                    let centroids = &centroids;
                    scope.spawn(move || {
                        part.iter()
                            .map(|(_, c, s)| nearest_centroid(centroids, &decode(c, *s)))
                            .collect::<Vec<usize>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("assignment thread"))
                .collect()
        });
        let mut counts = vec![0usize; lists];
        for &l in &assigned {
            counts[l] += 1;
        }
        let mut starts = Vec::with_capacity(lists + 1);
        starts.push(0);
        for c in &counts {
            starts.push(starts.last().copied().unwrap_or(0) + c);
        }
        let mut fill = starts.clone();
        let mut order = vec![0usize; n];
        for (i, &l) in assigned.iter().enumerate() {
            order[fill[l]] = i;
            fill[l] += 1;
        }
        let mut names = Vec::with_capacity(n);
        let mut scales = Vec::with_capacity(n);
        let mut codes = Vec::with_capacity(n * DIM);
        for i in order {
            let (name, c, s) = all[i];
            names.push(name.to_owned());
            scales.push(s);
            codes.extend_from_slice(c);
        }
        Self {
            centroids,
            starts,
            names,
            scales,
            codes,
            seq: store.seq(),
            generation: store.generation(),
        }
    }

    /// The `k` nearest of the snapshot, scanning the `probe` lists whose centroids are nearest
    /// (0: [`IvfParams::probe`]'s default); best first.
    pub fn search(&self, query: &[f32], k: usize, probe: usize) -> Vec<(String, f32)> {
        let lists = self.lists();
        let probe = if probe > 0 {
            probe
        } else {
            (lists / 16).max(4)
        }
        .min(lists);
        let mut nearest_lists: Vec<(f32, usize)> = self
            .centroids
            .chunks_exact(DIM)
            .enumerate()
            .map(|(i, c)| (dot_f32(c, query), i))
            .collect();
        nearest_lists.sort_by(|a, b| b.0.total_cmp(&a.0));
        let q = QueryCodes::new(query);
        let mut top = TopK::new(k);
        // The scan is bound by reading the codes (15 lists of 1M agents: ~23 MB), not by the
        // dot products: compiled for AVX2 (pulp dispatch) it measured the same.
        for &(_, l) in nearest_lists.iter().take(probe) {
            for i in self.starts[l]..self.starts[l + 1] {
                let sim = q.similarity(&self.codes[i * DIM..(i + 1) * DIM], self.scales[i]);
                top.push(sim, &self.names[i]);
            }
        }
        top.into_sorted()
    }
}

#[cfg(test)]
mod tests {
    use super::{DIM, Ivf, IvfParams, exact};
    use crate::embed::normalize;
    use crate::embed::store::VectorStore;

    /// Unit vectors around `clusters` random centres (a deterministic generator).
    fn vectors(n: usize, clusters: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut s = seed;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            #[allow(clippy::cast_precision_loss)]
            let u = (s >> 40) as f32 / (1u64 << 24) as f32;
            u - 0.5
        };
        let centres: Vec<Vec<f32>> = (0..clusters)
            .map(|_| (0..DIM).map(|_| next()).collect())
            .collect();
        (0..n)
            .map(|i| {
                let mut v: Vec<f32> = centres[i % clusters]
                    .iter()
                    .map(|c| c + 0.3 * next())
                    .collect();
                normalize(&mut v);
                v
            })
            .collect()
    }

    #[test]
    fn probing_every_list_is_the_exact_scan_and_fewer_lists_keep_most_neighbours() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = VectorStore::open(dir.path(), "test-model").unwrap();
        for (i, v) in vectors(3000, 40, 7).iter().enumerate() {
            store.upsert(&format!("p/a{i}"), 0, v);
        }
        let ivf = Ivf::build(
            &store,
            IvfParams {
                lists: 16,
                ..IvfParams::default()
            },
        );
        assert_eq!((ivf.lists(), ivf.len()), (16, 3000));
        let (mut four, mut eight) = (0, 0);
        let queries = vectors(30, 40, 99);
        for q in &queries {
            let want = exact(&store, q, 10);
            assert_eq!(ivf.search(q, 10, 16), want);
            four += ivf
                .search(q, 10, 4)
                .iter()
                .filter(|s| want.contains(s))
                .count();
            eight += ivf
                .search(q, 10, 8)
                .iter()
                .filter(|s| want.contains(s))
                .count();
        }
        // Of the 300 true neighbours: most with a quarter of the lists, more with half.
        assert!(four >= 210 && eight > four, "recall {four}, {eight} of 300");
    }

    #[test]
    fn the_exact_scan_returns_the_best_first_by_the_quantised_cosine() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = VectorStore::open(dir.path(), "test-model").unwrap();
        let vs = vectors(200, 5, 3);
        for (i, v) in vs.iter().enumerate() {
            store.upsert(&format!("p/a{i}"), 0, v);
        }
        let top = exact(&store, &vs[17], 3);
        assert_eq!(top[0].0, "p/a17");
        assert!((top[0].1 - 1.0).abs() < 0.01, "{top:?}");
        assert!(top[0].1 >= top[1].1 && top[1].1 >= top[2].1);
        store.remove("p/a17");
        assert!(exact(&store, &vs[17], 3).iter().all(|(n, _)| n != "p/a17"));
    }
}
