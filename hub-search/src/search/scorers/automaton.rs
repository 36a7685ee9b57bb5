//! The typo automaton: Levenshtein DFAs (transpositions count one edit) over the term
//! dictionary's bytes, from builders made once per distance (they are expensive to build).

use std::sync::OnceLock;

use levenshtein_automata::{DFA, Distance, LevenshteinAutomatonBuilder, SINK_STATE};

/// Levenshtein automaton builders (expensive to build), by distance 0, 1, 2.
pub(super) static LEVENSHTEIN: [OnceLock<LevenshteinAutomatonBuilder>; 3] =
    [const { OnceLock::new() }; 3];

/// A Levenshtein DFA over the term dictionary's bytes.
pub(in crate::search) struct Dfa(pub(super) DFA);

impl tantivy_fst::Automaton for Dfa {
    type State = u32;

    fn start(&self) -> u32 {
        self.0.initial_state()
    }

    fn is_match(&self, state: &u32) -> bool {
        matches!(self.0.distance(*state), Distance::Exact(_))
    }

    fn can_match(&self, state: &u32) -> bool {
        *state != SINK_STATE
    }

    fn accept(&self, state: &u32, byte: u8) -> u32 {
        self.0.transition(*state, byte)
    }
}
