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
        let mut factors = Vec::with_capacity(max_doc);
        for doc in 0..max_doc as DocId {
            let f = popularity_factor(downloads.first(doc).unwrap_or(0));
            let b = &mut blocks[doc as usize / BOUND_BLOCK];
            *b = b.max(f);
            factors.push(rank_factor(f, deprecated.first(doc).unwrap_or(false)));
        }
        for i in (0..blocks.len().saturating_sub(1)).rev() {
            blocks[i] = blocks[i].max(blocks[i + 1]);
        }
        Ok(Self {
            blocks,
            factors,
            columns: RankColumns::open(reader)?,
        })
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
