//! What one search memoises: document frequencies (each lookup decompresses a dictionary
//! block) and typo and prefix matches (their automata and matched terms), shared by every
//! query the search builds.

use std::cell::RefCell;
use std::collections::HashMap;

use tantivy::{Searcher, Term};

use crate::error::Result;
use crate::search::scorers::loose::LooseMatch;

/// Document frequencies looked up during one search (each term dictionary lookup decompresses
/// a block; a search asks for the same terms several times), and the typo and prefix matches
/// built during it (a query answered with fewer words builds a word's alternatives once per
/// group of words: the automaton and its matched terms are found once).
#[derive(Default)]
pub(super) struct DocFreqs {
    freqs: RefCell<HashMap<Term, u64>>,
    loose: RefCell<HashMap<(Term, u8, bool), LooseMatch>>,
}

impl DocFreqs {
    /// The searcher's document frequency of `term`.
    pub(super) fn get(&self, searcher: &Searcher, term: &Term) -> Result<u64> {
        if let Some(n) = self.freqs.borrow().get(term) {
            return Ok(*n);
        }
        let n = searcher.doc_freq(term)?;
        self.freqs.borrow_mut().insert(term.clone(), n);
        Ok(n)
    }

    /// [`LooseMatch::new`] (`prefix`: [`LooseMatch::new_prefix`]), shared by every query of
    /// the search.
    pub(super) fn loose(&self, term: &Term, distance: u8, prefix: bool) -> LooseMatch {
        self.loose
            .borrow_mut()
            .entry((term.clone(), distance, prefix))
            .or_insert_with(|| {
                if prefix {
                    LooseMatch::new_prefix(term.clone())
                } else {
                    LooseMatch::new(term.clone(), distance)
                }
            })
            .clone()
    }
}
