//! The cursor of a union of doc sets, shared by [`AnyOf`](super::any_of::AnyOf)'s scorer and a
//! typo match's few posting lists: a member moves only when it is on the current document
//! (advance) or before the target (seek), so each seek costs a seek per member, not a window.

use tantivy::{DocId, DocSet};

/// Moves a union of `members` (at `doc`, the least of their docs) to its next doc: the members
/// on `doc` advance, the others stay.
pub(super) fn union_advance<D: DocSet>(members: &mut [D], doc: &mut DocId) -> DocId {
    if *doc == tantivy::TERMINATED {
        return *doc;
    }
    let current = *doc;
    let mut next = tantivy::TERMINATED;
    for m in members {
        let d = if m.doc() == current {
            m.advance()
        } else {
            m.doc()
        };
        next = next.min(d);
    }
    *doc = next;
    next
}

/// Seeks a union of `members` (at `doc`) to the first doc at or past `target`: only the
/// members before `target` seek.
pub(super) fn union_seek<D: DocSet>(members: &mut [D], doc: &mut DocId, target: DocId) -> DocId {
    if target <= *doc {
        return *doc;
    }
    let mut next = tantivy::TERMINATED;
    for m in members {
        let d = if m.doc() < target {
            m.seek(target)
        } else {
            m.doc()
        };
        next = next.min(d);
    }
    *doc = next;
    next
}
