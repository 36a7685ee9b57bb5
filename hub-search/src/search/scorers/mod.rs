//! The Tantivy queries of our own, each a query, its weight and its scorer in one file. Each
//! matches what a Tantivy query gives (same documents, same scores; a test compares them) but
//! prunes or seeks where Tantivy's would read every document:
//!
//! - [`boosted_term`]: one term, boosted, pruned block by block.
//! - [`conjunction`]: every word one term: a leapfrog intersection with block maxima.
//! - [`phrase_bonus`]: required words plus phrase and exact-name bonuses, with the loop of
//!   [`bonus_pruning`] and the scorer of [`bonus_scorer`].
//! - [`any_of`]: a union that seeks clause by clause (over the cursors of [`union`]).
//! - [`any_words`]: the any-word union (terms and loose matches), MaxScore window by window.
//! - [`at_least`]: the documents at least `m` of some queries match, by jumps (a
//!   minimum-should-match disjunction walks every posting through a heap).
//! - [`without`]: a query less another's documents, keeping the inner query's pruning.
//! - [`loose`]: typo and prefix matches, over the automaton of [`automaton`].
//! - [`word_unions`]: every word required, each a union of plain terms, scored window by
//!   window into arrays (block-max WAND re-sorts its cursors at nearly every document of a
//!   union of near-synonyms).
//! - [`window`]: what the window loops share (a term's block cursor, the heap's entry bar).

pub(super) mod any_of;
pub(super) mod any_words;
pub(super) mod at_least;
mod automaton;
mod bonus_pruning;
mod bonus_scorer;
pub(super) mod boosted_term;
pub(super) mod conjunction;
pub(super) mod loose;
pub(super) mod phrase_bonus;
mod union;
mod window;
pub(super) mod without;
pub(super) mod word_unions;
