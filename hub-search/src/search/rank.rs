//! The order of hits: every sort is one `u64` key (descending) and the name (ascending), which
//! is also what a cursor holds, so a page continues exactly where the previous one stopped.

use std::cmp::Ordering;

use tantivy::DocAddress;

/// Order-preserving u64 of a non-NaN float.
pub(super) fn f32_key(f: f32) -> u64 {
    let bits = f.to_bits();
    u64::from(if bits >> 31 == 1 {
        !bits
    } else {
        bits | 1 << 31
    })
}

/// The float of an [`f32_key`] (tests).
#[cfg(test)]
pub(super) fn f32_from_key(k: u64) -> f32 {
    let bits = k as u32;
    f32::from_bits(if bits >> 31 == 1 {
        bits & !(1 << 31)
    } else {
        !bits
    })
}

/// Order-preserving u64 of an i64.
pub(super) fn i64_key(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

/// A collected hit: sort key, name (tie-break), address, score.
#[derive(Debug, Clone)]
pub(super) struct Ranked {
    /// The sort key (see [`f32_key`], [`i64_key`]).
    pub(super) key: u64,
    /// The name's ordinal in its segment's `name` column: within one segment, ordinals are in
    /// the names' byte order, so ties compare them without reading the name.
    pub(super) ord: u64,
    /// Empty until resolved: only when hits of several segments are merged (or for tests);
    /// otherwise `search` takes it from the stored document.
    pub(super) name: String,
    pub(super) addr: DocAddress,
    /// The text score (times the rank factor with relevance).
    pub(super) score: f32,
}

impl Ranked {
    /// `Less` when `self` comes first in the results. Hits of different segments must have
    /// their names resolved.
    pub(super) fn order(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key).then_with(|| {
            if self.addr.segment_ord == other.addr.segment_ord {
                self.ord.cmp(&other.ord)
            } else {
                self.name.cmp(&other.name)
            }
        })
    }
}

/// Heap entry whose maximum is the hit that comes last.
pub(super) struct Worst(pub(super) Ranked);

impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.order(&other.0)
    }
}
