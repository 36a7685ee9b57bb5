//! The top-k collector of every search: hits by (sort key, name) after the cursor. With
//! relevance it prunes: a document's rank key is its text score times its rank factor, so once
//! the heap is full, a text score below `worst / largest factor still to come` cannot enter,
//! and that threshold is handed to the query's own pruning loop.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::query::Weight;
use tantivy::{DocAddress, DocId, DocSet as _, Score, SegmentOrdinal, SegmentReader};

use crate::popularity::{PopularityBounds, RankColumns, popularity_factor, rank_factor};
use crate::query::Sort;
use crate::search::plan::Shape;
use crate::search::rank::{Ranked, Worst, f32_key, i64_key};

/// Top-k by (sort key desc, name asc), keeping only hits strictly after the cursor. Within a
/// segment, ties on the key compare the ordinals of the `name` column (in name order); names
/// themselves are read only to merge several segments' hits or on a tie with the cursor.
pub(super) struct RankCollector {
    pub(super) sort: Sort,
    /// How many hits to keep.
    pub(super) k: usize,
    /// The cursor's key and name.
    pub(super) after: Option<(u64, String)>,
    /// Skip documents that cannot enter the top k (always, except in the test that checks the
    /// pruned result against the exhaustive one).
    pub(super) prune: bool,
    /// Resolve every hit's name (otherwise only when hits of several segments are merged).
    pub(super) names: bool,
}

/// [`RankCollector`] in one segment.
pub(super) struct RankSegment {
    sort: Sort,
    k: usize,
    after: Option<(u64, String)>,
    segment: SegmentOrdinal,
    cols: RankColumns,
    /// Resolve the names of the harvested hits.
    resolve_names: bool,
    /// The segment's cached rank factors, when known.
    bounds: Option<Arc<PopularityBounds>>,
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
    /// [`Shape::LooseOnly`]: the scan stops once no later document can enter. Every other
    /// query's own pruning loop adds a document's scores in the order its scorer does, so ranks
    /// and cursors compare equal scores on every page.
    pub(super) fn collect_segment_bounded(
        &self,
        weight: &dyn Weight,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
        bounds: Option<Arc<PopularityBounds>>,
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
        weight.for_each_pruning(Score::MIN, reader, &mut |doc, score| {
            if is_alive(doc) {
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
