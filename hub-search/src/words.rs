//! How a query's text becomes the words that take part in matching.
//!
//! Its own module, below both the search and the synonym sets: a synonym file is checked by
//! reading each entry the way a query is read, so that an entry is exactly one search word.

use crate::mapping::{analyzer, tokens};
use crate::query::MAX_QUERY_WORDS;

/// Words that carry no meaning in a search box. Dropped unless the query is only these.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "i", "in", "is", "it", "me",
    "my", "of", "on", "or", "that", "the", "this", "to", "with", "which", "what", "who", "can",
    "agent", "agents",
];

/// The words of `q` that take part in matching: analysed without stemming, stop words dropped
/// (unless nothing else is left), duplicates dropped, at most [`MAX_QUERY_WORDS`].
pub fn query_words(text: &str) -> Vec<String> {
    let all = tokens(analyzer::WORD, text);
    let mut words: Vec<String> = Vec::new();
    let meaningful = all.iter().any(|w| !STOP_WORDS.contains(&w.as_str()));
    for w in all {
        if meaningful && STOP_WORDS.contains(&w.as_str()) {
            continue;
        }
        if !words.contains(&w) {
            words.push(w);
        }
        if words.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    words
}
