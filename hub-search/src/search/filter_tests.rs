//! The filters folded into a word union's window loop (see `WordUnions::filters`) give exactly
//! what the intersection with the filters' constant-scored clauses gives, scored exhaustively;
//! so does a lone term's query with filters, run as a one-term word union times its boost.

use std::collections::BTreeMap;

use crate::corpus::synthetic_agent;
use crate::query::{DeprecatedFilter, SearchQuery};
use crate::search::plan::Mode;
use crate::search::scorers::boosted_term::BoostedTerm;
use crate::search::scorers::word_unions::WordUnions;
use crate::search::tests::{ranked_by_relevance, synthetic_index, text_query_of};
use crate::words::query_words;

/// Sets one kind of filter on a query.
type SetFilter<'a> = Box<dyn Fn(&mut SearchQuery) + 'a>;

/// Filters of every kind next to queries of words with synonyms: the window loop's hits, keys
/// and order are the exhaustive ones, on every page.
#[test]
fn filtered_word_unions_equal_the_exhaustive_intersection() {
    let (seed, n) = (3, 2000);
    let index = synthetic_index(seed, n);
    let searcher = index.reader.searcher();
    // The corpus's most frequent capability, keyword, kind and publisher.
    let mut counts: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for i in 0..n {
        let a = synthetic_agent(seed, i);
        for c in &a.capabilities {
            *counts.entry(("capability", c.name.clone())).or_default() += 1;
        }
        for k in &a.keywords {
            *counts.entry(("keyword", k.clone())).or_default() += 1;
        }
        *counts.entry(("kind", a.kind.clone())).or_default() += 1;
        let publisher = a.name.split('/').next().unwrap_or_default().to_owned();
        *counts.entry(("publisher", publisher)).or_default() += 1;
    }
    let most = |what: &str| {
        counts
            .iter()
            .filter(|((w, _), _)| *w == what)
            .max_by_key(|(_, n)| **n)
            .map(|((_, v), _)| v.clone())
            .unwrap()
    };
    let filters: Vec<(&str, SetFilter<'_>)> = vec![
        (
            "capability",
            Box::new(|q| q.capabilities = vec![most("capability")]),
        ),
        ("keyword", Box::new(|q| q.keywords = vec![most("keyword")])),
        ("kind", Box::new(|q| q.kind = Some(most("kind")))),
        (
            "capability and kind",
            Box::new(|q| {
                q.capabilities = vec![most("capability")];
                q.kind = Some(most("kind"));
            }),
        ),
        (
            "publisher",
            Box::new(|q| q.publisher = Some(most("publisher"))),
        ),
        (
            "not deprecated",
            Box::new(|q| q.deprecated = DeprecatedFilter::Exclude),
        ),
        (
            "verified, two publishers",
            Box::new(|q| {
                q.verified = true;
                q.verified_publishers = vec![most("publisher"), "nobody-here".into()];
            }),
        ),
        (
            "verified, none",
            Box::new(|q| {
                q.verified = true;
                q.verified_publishers = Vec::new();
            }),
        ),
    ];
    let mut compared = 0;
    let mut folded = 0;
    let mut lone = 0;
    for text in [
        "scraping",
        "crawl web",
        "scraping result",
        "sql data",
        "monitor request",
        // One term each (no synonym in the default set): a `BoostedTerm`, folded as a
        // one-term word union times its boost.
        "result",
        "html",
        "review",
        "floor",
    ] {
        let words = query_words(text);
        let shaped = text_query_of(&index, &searcher, text, Mode::All);
        folded += usize::from(shaped.downcast_ref::<WordUnions>().is_some());
        lone += usize::from(shaped.downcast_ref::<BoostedTerm>().is_some());
        for (what, set) in &filters {
            let mut q = SearchQuery::text(text);
            set(&mut q);
            let run = |k: usize, after: Option<(u64, String)>, prune: bool| {
                let shaped = shaped.as_ref();
                let mode = Mode::All;
                ranked_by_relevance(
                    &index, &searcher, &q, &words, mode, shaped, k, after, prune, true,
                )
                .into_iter()
                .map(|r| (r.key, r.name))
                .collect::<Vec<_>>()
            };
            let exhaustive = run(40, None, false);
            assert_eq!(run(40, None, true), exhaustive, "{text}, {what}");
            let mut paged = Vec::new();
            let mut after = None;
            while paged.len() < exhaustive.len() {
                let page = run(9, after.clone(), true);
                assert!(!page.is_empty(), "{text}, {what}");
                after = page.last().cloned();
                paged.extend(page);
            }
            paged.truncate(exhaustive.len());
            assert_eq!(paged, exhaustive, "{text}, {what}");
            compared += usize::from(exhaustive.len() >= 5);
            if *what == "verified, none" {
                assert!(exhaustive.is_empty(), "{text}");
            }
        }
    }
    assert!(folded >= 3, "too few word unions ({folded})");
    // Both ways of bounding a window ran: scouted cells, and the cursors' blocks while the
    // scouts paused.
    use crate::search::scorers::word_unions::{DEAD_CELLS, PAUSED_WINDOWS};
    assert!(
        DEAD_CELLS.with(std::cell::Cell::get) > 0,
        "no scouted cell ruled out"
    );
    assert!(
        PAUSED_WINDOWS.with(std::cell::Cell::get) > 0,
        "the scouts never paused"
    );
    assert!(lone >= 2, "too few lone terms ({lone})");
    assert!(
        compared >= 15,
        "too few filtered queries with hits ({compared})"
    );
}
