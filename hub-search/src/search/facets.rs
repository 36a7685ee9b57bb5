//! Facet counts: how many of a query's matches have each capability, keyword, kind and
//! publisher.
//!
//! Asked for with `facets=true` only, so a plain search pays nothing. The four fields are fast
//! (columnar, dictionary-encoded) string fields, so counting is one pass over the match set that
//! adds 1 to an array slot per value (the value's ordinal in the segment's dictionary) — no
//! stored document is read and no posting list of the facet fields is walked. Values are turned
//! into text once per segment, and with one segment (an index `reindex` merged) only the top
//! [`MAX_FACET_VALUES`] are: dictionary ordinals are in value order, so the top by (count
//! descending, ordinal ascending) is exactly the top by (count descending, value ascending).
//! Tantivy's terms aggregation would do the same pass but builds JSON-like intermediate results
//! and resolves every term; this collector is the part of it we need.

use std::collections::HashMap;

use index_schema::hub_api::{FacetCount, MAX_FACET_VALUES, SearchFacets};
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::StrColumn;
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

use crate::mapping::field;

/// The facet fields, in [`SearchFacets`] order.
const FIELDS: [&str; 4] = [
    field::CAPABILITY_EXACT,
    field::KEYWORD_EXACT,
    field::KIND,
    field::PUBLISHER,
];

type Counts = [Vec<(String, u64)>; 4];

/// Counts facet values over every document it is given.
pub(super) struct FacetCollector {
    /// How many segments the searcher has: with one, only the top values are resolved.
    pub(super) segments: usize,
}

pub(super) struct FacetSegment {
    columns: Vec<Option<StrColumn>>,
    counts: Vec<Vec<u32>>,
    only_top: bool,
}

impl Collector for FacetCollector {
    type Fruit = SearchFacets;
    type Child = FacetSegment;

    fn for_segment(
        &self,
        _: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<FacetSegment> {
        let fast = reader.fast_fields();
        let mut columns = Vec::with_capacity(FIELDS.len());
        let mut counts = Vec::with_capacity(FIELDS.len());
        for f in FIELDS {
            let c = fast.str(f)?;
            counts.push(vec![0u32; c.as_ref().map_or(0, |c| c.num_terms())]);
            columns.push(c);
        }
        Ok(FacetSegment {
            columns,
            counts,
            only_top: self.segments == 1,
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<Counts>) -> tantivy::Result<SearchFacets> {
        let mut merged: [HashMap<String, u64>; 4] = Default::default();
        for fruit in fruits {
            for (m, values) in merged.iter_mut().zip(fruit) {
                for (v, n) in values {
                    *m.entry(v).or_default() += n;
                }
            }
        }
        let [capability, keyword, kind, publisher] = merged.map(top);
        Ok(SearchFacets {
            capability,
            keyword,
            kind,
            publisher,
        })
    }
}

/// The most frequent values first, ties by value; at most [`MAX_FACET_VALUES`].
fn top(m: HashMap<String, u64>) -> Vec<FacetCount> {
    let mut v: Vec<FacetCount> = m
        .into_iter()
        .map(|(value, count)| FacetCount { value, count })
        .collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.value.cmp(&b.value)));
    v.truncate(MAX_FACET_VALUES);
    v
}

impl SegmentCollector for FacetSegment {
    type Fruit = Counts;

    fn collect(&mut self, doc: DocId, _: Score) {
        for (column, counts) in self.columns.iter().zip(&mut self.counts) {
            if let Some(c) = column {
                for ord in c.term_ords(doc) {
                    counts[ord as usize] += 1;
                }
            }
        }
    }

    fn harvest(self) -> Counts {
        let mut out: Counts = Default::default();
        for ((column, counts), slot) in self.columns.iter().zip(self.counts).zip(out.iter_mut()) {
            let Some(c) = column else { continue };
            let mut ords: Vec<(u64, u32)> = counts
                .into_iter()
                .enumerate()
                .filter(|(_, n)| *n > 0)
                .map(|(o, n)| (o as u64, n))
                .collect();
            if self.only_top {
                ords.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                ords.truncate(MAX_FACET_VALUES);
            }
            let mut text = String::new();
            for (ord, n) in ords {
                text.clear();
                // An ordinal from the column is always in its dictionary.
                if c.ord_to_str(ord, &mut text).unwrap_or(false) {
                    slot.push((text.clone(), u64::from(n)));
                }
            }
        }
        out
    }
}
