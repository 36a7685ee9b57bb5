//! What ranking reads per segment, computed once per segment and kept by the index: every
//! document's rank factor (downloads lift a text score, deprecation lowers it), bounds on the
//! factor of later documents for pruning, and the segment's opened fast-field columns.
//!
//! It sits below `index`, whose `SearchIndex` holds the cache ([`PopularityCache`]), and is
//! read by the search's collector.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tantivy::columnar::{Column, StrColumn};
use tantivy::index::SegmentId;
use tantivy::{DocId, Searcher, SegmentReader, TantivyError};

use crate::error::Result;
use crate::mapping::field;

/// How much downloads lift the text score: `score * (1 + POPULARITY * ln(1 + downloads))`.
const POPULARITY: f32 = 0.03;
/// Deprecated agents keep this fraction of their score.
const DEPRECATED_FACTOR: f32 = 0.5;

/// How much downloads lift a text score (at least 1).
pub(crate) fn popularity_factor(downloads: u64) -> f32 {
    1.0 + POPULARITY * (downloads as f32).ln_1p()
}

/// Documents per entry of [`PopularityBounds`].
const BOUND_BLOCK: usize = 64;

/// Per segment: for every block of [`BOUND_BLOCK`] documents, the largest popularity factor of
/// that block and all later ones. A segment never changes (deletes only hide documents), so
/// this is computed once per segment and cached by `SearchIndex` ([`PopularityCache`]).
///
/// It also keeps every document's rank factor (popularity factor, times the deprecation factor
/// when deprecated; 4 bytes a document, read instead of two fast fields and a logarithm for
/// every collected document), and the segment's opened [`RankColumns`].
pub(crate) struct PopularityBounds {
    blocks: Vec<f32>,
    /// Per block of [`BOUND_BLOCK`] documents, the largest rank factor of its own documents:
    /// 64 times smaller than `factors`, so it stays in the CPU's cache where a loop that rules
    /// out most of its candidates reads it first.
    pub(crate) block_factors: Vec<f32>,
    /// Every document's rank factor ([`rank_factor`]).
    pub(crate) factors: Vec<f32>,
    pub(crate) columns: RankColumns,
}

impl std::fmt::Debug for PopularityBounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PopularityBounds")
            .field("blocks", &self.blocks.len())
            .finish_non_exhaustive()
    }
}

impl PopularityBounds {
    /// Reads the segment's downloads and deprecation columns once.
    fn of(reader: &SegmentReader) -> tantivy::Result<Self> {
        let downloads = reader.fast_fields().u64(field::DOWNLOADS)?;
        let deprecated = reader.fast_fields().bool(field::DEPRECATED)?;
        let max_doc = reader.max_doc() as usize;
        let mut blocks = vec![1.0f32; max_doc.div_ceil(BOUND_BLOCK)];
        let mut block_factors = vec![0.0f32; max_doc.div_ceil(BOUND_BLOCK)];
        let mut factors = Vec::with_capacity(max_doc);
        for doc in 0..max_doc as DocId {
            let f = popularity_factor(downloads.first(doc).unwrap_or(0));
            let b = &mut blocks[doc as usize / BOUND_BLOCK];
            *b = b.max(f);
            let r = rank_factor(f, deprecated.first(doc).unwrap_or(false));
            let l = &mut block_factors[doc as usize / BOUND_BLOCK];
            *l = l.max(r);
            factors.push(r);
        }
        for i in (0..blocks.len().saturating_sub(1)).rev() {
            blocks[i] = blocks[i].max(blocks[i + 1]);
        }
        Ok(Self {
            blocks,
            block_factors,
            factors,
            columns: RankColumns::open(reader)?,
        })
    }

    /// The largest rank factor of `doc`'s block of documents: `factors[doc]` is at most this.
    #[inline]
    pub(crate) fn block_factor(&self, doc: DocId) -> f32 {
        self.block_factors[doc as usize / BOUND_BLOCK]
    }

    /// The largest factor of `doc` and every later document.
    pub(crate) fn from(&self, doc: DocId) -> f32 {
        self.blocks
            .get(doc as usize / BOUND_BLOCK)
            .copied()
            .unwrap_or(1.0)
    }
}

/// The factor a text score is multiplied by to rank. Multiplying by [`DEPRECATED_FACTOR`] (a
/// power of two) is exact, so `score * rank_factor(..)` equals `score * popularity * 0.5`.
pub(crate) fn rank_factor(popularity: f32, deprecated: bool) -> f32 {
    if deprecated {
        popularity * DEPRECATED_FACTOR
    } else {
        popularity
    }
}

/// The [`PopularityBounds`] of the segments searched so far, shared by every clone of a
/// `SearchIndex`.
#[derive(Default)]
pub(crate) struct PopularityCache(Mutex<HashMap<SegmentId, Arc<PopularityBounds>>>);

impl PopularityCache {
    /// The cached [`PopularityBounds`] of a segment, computed on first use; entries of
    /// segments the searcher no longer has are dropped then.
    pub(crate) fn get(
        &self,
        searcher: &Searcher,
        reader: &SegmentReader,
    ) -> Result<Arc<PopularityBounds>> {
        let id = reader.segment_id();
        let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(b) = cache.get(&id) {
            return Ok(b.clone());
        }
        let b = Arc::new(PopularityBounds::of(reader)?);
        let live: Vec<_> = searcher
            .segment_readers()
            .iter()
            .map(SegmentReader::segment_id)
            .collect();
        cache.retain(|k, _| live.contains(k));
        cache.insert(id, b.clone());
        Ok(b)
    }
}

/// The fast fields ranking reads. Opening a column decodes its header (the downloads column's
/// block table is thousands of entries at a million documents), so the hub's path keeps them
/// opened per segment in [`PopularityBounds`].
#[derive(Clone)]
pub(crate) struct RankColumns {
    pub(crate) downloads: Column<u64>,
    pub(crate) updated: Column<i64>,
    pub(crate) deprecated: Column<bool>,
    pub(crate) names: StrColumn,
}

impl RankColumns {
    pub(crate) fn open(reader: &SegmentReader) -> tantivy::Result<Self> {
        let ff = reader.fast_fields();
        Ok(Self {
            downloads: ff.u64(field::DOWNLOADS)?,
            updated: ff.i64(field::UPDATED)?,
            deprecated: ff.bool(field::DEPRECATED)?,
            names: ff
                .str(field::NAME)?
                .ok_or_else(|| TantivyError::SchemaError("`name` is not a fast field".into()))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::corpus::synthetic_agent;
    use crate::index::{SearchIndex, WriterConfig};
    use crate::outbox::{Change, OutboxEntry};

    use super::{BOUND_BLOCK, PopularityBounds};

    /// Each block's factor is the largest rank factor of its own documents: at least every
    /// one of them (pruning by it first never drops a document its own factor keeps) and
    /// reached by one of them.
    #[test]
    fn block_factors_are_their_documents_largest() {
        let index = SearchIndex::in_ram().unwrap();
        let mut w = index.writer(WriterConfig::default()).unwrap();
        // Enough agents for several blocks and some deprecated ones (1 in 50).
        for i in 0..400 {
            let doc = synthetic_agent(7, i).to_doc().unwrap();
            let change = Change::Upsert(Box::new(doc));
            w.apply(&OutboxEntry { seq: i + 1, change }).unwrap();
        }
        w.commit_and_refresh().unwrap();
        let searcher = index.reader.searcher();
        let mut blocks = 0;
        for reader in searcher.segment_readers() {
            let b = PopularityBounds::of(reader).unwrap();
            assert_eq!(b.block_factors.len(), b.factors.len().div_ceil(BOUND_BLOCK));
            for (k, chunk) in b.factors.chunks(BOUND_BLOCK).enumerate() {
                let first = (k * BOUND_BLOCK) as u32;
                let largest = chunk.iter().copied().fold(f32::MIN, f32::max);
                assert_eq!(b.block_factor(first), largest, "block {k}");
                for (j, f) in chunk.iter().enumerate() {
                    assert!(
                        *f <= b.block_factor(first + j as u32),
                        "doc {}",
                        first as usize + j
                    );
                }
                blocks += 1;
            }
            // Deprecated documents' factors are below their popularity.
            assert!(
                b.factors.iter().any(|&f| f < 1.0),
                "some agent is deprecated"
            );
        }
        assert!(blocks >= 6, "{blocks} blocks");
    }
}
