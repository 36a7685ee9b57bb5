//! Tests of the search internals: each of our scorers against the Tantivy query it replaces,
//! pruned collection against exhaustive collection, and the fewer-words tiers.

use tantivy::Term;
use tantivy::collector::TopDocs;
use tantivy::query::{
    BooleanQuery, BoostQuery, EnableScoring, Occur, PhraseQuery, Query, TermQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet as _, Score, Searcher};

use crate::index::SearchIndex;
use crate::mapping::{analyzer, field, tokens};
use crate::query::{SearchQuery, Sort};
use crate::search::collect::Part;
use crate::search::collector::RankCollector;
use crate::search::doc_freqs::DocFreqs;
use crate::search::fewer_words::{Tier, binomial, fewer_words_tiers, subsets};
use crate::search::plan::{LOOSE_MATCH_BOOST, Mode};
use crate::search::rank::{Ranked, f32_from_key, f32_key, i64_key};
use crate::search::scorers::any_of::AnyOf;
use crate::search::scorers::any_words::{AnyWords, SumOrder};
use crate::search::scorers::conjunction::TermConjunction;
use crate::search::scorers::loose::{FEW_TERMS, LooseMatch, matched_terms};
use crate::search::scorers::phrase_bonus::PhraseBonus;
use crate::search::scorers::word_unions::WordUnions;
use crate::words::query_words;

/// The text query of `text` (its words as the hub analyses them) over every segment.
pub(super) fn text_query_of(
    index: &SearchIndex,
    searcher: &Searcher,
    text: &str,
    mode: Mode,
) -> Box<dyn Query> {
    index
        .text_query(
            searcher,
            &DocFreqs::default(),
            text,
            &query_words(text),
            mode,
            None,
        )
        .unwrap()
        .unwrap()
}

/// An in-RAM index of `n` synthetic agents (corpus seed `seed`), committed as one segment.
pub(super) fn synthetic_index(seed: u64, n: u64) -> SearchIndex {
    synthetic_agents_in(SearchIndex::in_ram().unwrap(), seed, n)
}

/// A page of `q` (its filters; `words` its text's, combined by `mode`) ranked by relevance:
/// the hub's pruned path (`collect_with`, per segment), or with `prune` false the exhaustive
/// one (`shaped`, the text query over every segment, every match scored).
#[allow(clippy::too_many_arguments)]
pub(super) fn ranked_by_relevance(
    index: &SearchIndex,
    searcher: &Searcher,
    q: &SearchQuery,
    words: &[String],
    mode: Mode,
    shaped: &dyn Query,
    k: usize,
    after: Option<(u64, String)>,
    prune: bool,
    names: bool,
) -> Vec<Ranked> {
    let c = RankCollector {
        sort: Sort::Relevance,
        k,
        after,
        prune,
        names,
    };
    if prune {
        let freqs = DocFreqs::default();
        index
            .collect_with(searcher, &freqs, q, words, mode, &c)
            .unwrap()
    } else {
        let query = index.full_query(q, Some(shaped));
        searcher.search(query.as_ref(), &c).unwrap()
    }
}

/// `index` with the first `n` agents of the synthetic corpus of `seed`.
fn synthetic_agents_in(index: SearchIndex, seed: u64, n: u64) -> SearchIndex {
    use crate::corpus::synthetic_agent;
    use crate::index::WriterConfig;
    use crate::outbox::{Change, OutboxEntry};

    let mut w = index.writer(WriterConfig::default()).unwrap();
    for i in 0..n {
        let doc = synthetic_agent(seed, i).to_doc().unwrap();
        w.apply(&OutboxEntry {
            seq: i + 1,
            change: Change::Upsert(Box::new(doc)),
        })
        .unwrap();
    }
    w.commit_and_refresh().unwrap();
    index
}

#[test]
fn float_keys_keep_order() {
    let xs = [-3.5f32, -0.0, 0.0, 0.1, 1.0, 7.25, 1e9];
    for w in xs.windows(2) {
        assert!(f32_key(w[0]) <= f32_key(w[1]), "{w:?}");
    }
    for x in xs {
        assert_eq!(f32_from_key(f32_key(x)), x);
    }
}

#[test]
fn integer_keys_keep_order() {
    assert!(i64_key(-5) < i64_key(0));
    assert!(i64_key(0) < i64_key(1_700_000_000));
    assert!(i64_key(i64::MIN) < i64_key(i64::MAX));
}

/// The pruned collection (block-max WAND on the text score, bounded by the popularity
/// factor) returns exactly what scoring every match returns: same hits, same order, same
/// keys, on every page — over several segments with deleted documents.
#[test]
fn pruned_top_k_equals_exhaustive_top_k() {
    use crate::corpus::synthetic_agent;
    use crate::index::WriterConfig;
    use crate::outbox::{Change, OutboxEntry};

    let index = SearchIndex::in_ram().unwrap();
    let mut w = index.writer(WriterConfig::default()).unwrap();
    let mut seq = 0;
    for i in 0..3000u64 {
        seq += 1;
        let doc = synthetic_agent(7, i).to_doc().unwrap();
        w.apply(&OutboxEntry {
            seq,
            change: Change::Upsert(Box::new(doc)),
        })
        .unwrap();
        if i % 500 == 499 {
            w.commit().unwrap();
        }
    }
    // Delete every seventh agent so segments carry deleted documents.
    for i in (0..3000u64).step_by(7) {
        seq += 1;
        let name = synthetic_agent(7, i).to_doc().unwrap().name().clone();
        w.apply(&OutboxEntry {
            seq,
            change: Change::Delete(name),
        })
        .unwrap();
    }
    w.commit_and_refresh().unwrap();
    let searcher = index.reader.searcher();
    assert!(searcher.segment_readers().len() > 1);
    assert!(searcher.segment_readers().iter().any(|r| r.has_deletes()));

    // Pruned: the hub's path (per-segment queries without absent terms, block-max WAND
    // with the popularity bound). Exhaustive: one query with every term for all segments,
    // every match scored.
    let run_in = |mode: Mode, text: &str, k: usize, after: Option<(u64, String)>, prune: bool| {
        let mut q = SearchQuery::text(text);
        q.limit = k - 1;
        let words = query_words(text);
        let t = text_query_of(&index, &searcher, text, mode);
        let run = |after: Option<(u64, String)>, names: bool| {
            let shaped = t.as_ref();
            ranked_by_relevance(
                &index, &searcher, &q, &words, mode, shaped, k, after, prune, names,
            )
        };
        let ranked = run(after.clone(), true);
        if prune {
            // The hub's path leaves names unresolved within a segment (ties compare the
            // name column's ordinals): same hits in the same order.
            let unnamed = run(after, false);
            let addrs = |r: &[Ranked]| r.iter().map(|r| (r.key, r.addr)).collect::<Vec<_>>();
            assert_eq!(addrs(&unnamed), addrs(&ranked), "{text}");
        }
        ranked
            .into_iter()
            .map(|r| (r.key, r.name))
            .collect::<Vec<_>>()
    };
    let mut compared = 0;
    let mut misspelled = 0;
    let mut conjunctions = 0;
    let mut unions = 0;
    let mut any_unions = 0;
    let all = [
        "result",
        "floor",
        "request",
        "data",
        "report",
        "search",
        "code",
        "web scraping",
        "code review",
        "analyze dataset",
        // Words with synonyms and a last word every agent has (no prefix alternative):
        // `WordUnions`.
        "scraping result",
        "monitor request",
        "database result",
        "crawl web",
        "sql data",
        // Last words every agent has (no prefix alternative), one term each: a `WordUnions`
        // of one term a word.
        "web result",
        "data request",
        "code review request",
        // Misspelled: typo matches only (the loop that stops at the query's bound).
        "reveiw",
        "scrapign",
        "reveiw scrapign",
    ]
    .map(|t| (Mode::All, t));
    // Any word (the fallback tier): a flat union of every word's terms.
    let any = [
        "scraping web",
        "code review request",
        "monitor data request",
    ]
    .map(|t| (Mode::Any, t));
    for (mode, text) in all.into_iter().chain(any) {
        let run = |text: &str, k: usize, after: Option<(u64, String)>, prune: bool| {
            run_in(mode, text, k, after, prune)
        };
        let exhaustive = run(text, 60, None, false);
        if exhaustive.len() < 60 {
            continue;
        }
        compared += 1;
        misspelled += usize::from(text.contains("reveiw") || text.contains("scrapign"));
        let shaped = text_query_of(&index, &searcher, text, mode);
        conjunctions += usize::from(
            shaped
                .downcast_ref::<WordUnions>()
                .is_some_and(|w| w.words.len() > 1 && w.words.iter().all(|w| w.len() == 1)),
        );
        unions += usize::from(shaped.downcast_ref::<WordUnions>().is_some());
        any_unions += usize::from(shaped.downcast_ref::<AnyWords>().is_some());
        assert_eq!(run(text, 60, None, true), exhaustive, "{text}");
        // Pages of 7 after a cursor give the same sequence.
        let mut paged = Vec::new();
        let mut after = None;
        while paged.len() < 60 {
            let page = run(text, 7, after.clone(), true);
            assert_eq!(page, run(text, 7, after, false), "{text}");
            after = page.last().cloned();
            paged.extend(page);
        }
        paged.truncate(60);
        assert_eq!(paged, exhaustive, "{text}");
    }
    assert!(compared >= 3, "too few frequent words to compare");
    // The word unions' cell bounds left documents out (and the results above are still the
    // exhaustive ones).
    assert!(
        crate::search::scorers::word_unions::DEAD_CELLS.with(std::cell::Cell::get) > 0,
        "no window of a word union had a cell below the bar"
    );
    assert!(misspelled >= 2, "too few misspelled queries to compare");
    // Words with synonyms: `WordUnions`' window loop; any word: `AnyWords`'.
    assert!(
        unions >= 3,
        "too few queries of word unions to compare ({unions})"
    );
    assert!(
        any_unions >= 2,
        "too few any-word unions to compare ({any_unions})"
    );
    // Plain multi-word queries (one term a word): the window loop with popularity-raised
    // bars.
    assert!(conjunctions >= 2, "too few multi-word queries to compare");
}

/// [`PhraseBonus`] matches the documents and gives the scores of the Tantivy query it
/// replaces (the words required, each phrase and the exact name as optional clauses).
#[test]
fn phrase_bonus_scores_like_optional_phrase_queries() {
    // The hub's text field has no positions (phrases are off); this index has them.
    let index = synthetic_agents_in(SearchIndex::in_ram_with_positions().unwrap(), 3, 2000);
    // Plain words (synonyms would make each word several terms, never a conjunction).
    index.set_tuning(crate::index::Tuning {
        synonyms: std::sync::Arc::new(crate::synonyms::Synonyms::none()),
        ..crate::index::Tuning::default()
    });
    let searcher = index.reader.searcher();
    let mut with_phrases = 0;
    let mut compared = 0;
    let mut conjunctions = 0;
    for text in [
        "web scraping",
        "code review",
        "data analysis report",
        "customer support",
        "analyze dataset",
    ] {
        let words = query_words(text);
        let t = text_query_of(&index, &searcher, text, Mode::All);
        // Words every agent of this small index may not have get prefix and typo
        // alternatives: the query is then not a conjunction of plain terms. A conjunction of
        // plain terms is a `WordUnions` in the hub's plan (a `TermConjunction` only next to an
        // exact name): here it is the `TermConjunction` of the same terms.
        let required: Box<dyn Query> = match t.downcast_ref::<WordUnions>() {
            Some(w) if w.words.iter().all(|w| w.len() == 1) => {
                conjunctions += 1;
                Box::new(TermConjunction {
                    terms: w.words.iter().map(|w| w[0].clone()).collect(),
                })
            }
            _ => t.box_clone(),
        };
        // Phrases are off in the hub's queries (`PHRASE_BOOST`); the machinery is tested
        // with one phrase of the words, boosted 2.
        let phrase: Vec<Term> = words
            .iter()
            .map(|w| {
                Term::from_field_text(index.fields.get(field::TEXT), &tokens(analyzer::TEXT, w)[0])
            })
            .collect();
        let pb = &PhraseBonus {
            required,
            phrases: vec![(phrase, 2.0)],
            exact_name: None,
            popularity: None,
        };
        let mut clauses: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Must, pb.required.box_clone())];
        for (terms, boost) in &pb.phrases {
            clauses.push((
                Occur::Should,
                Box::new(BoostQuery::new(
                    Box::new(PhraseQuery::new(terms.clone())),
                    *boost,
                )),
            ));
        }
        let classic = BooleanQuery::new(clauses);
        let all = TopDocs::with_limit(10_000);
        let mut ours = searcher.search(pb, &all).unwrap();
        let mut theirs = searcher.search(&classic, &all).unwrap();
        if theirs.is_empty() {
            assert!(ours.is_empty(), "{text}");
            continue;
        }
        compared += 1;
        ours.sort_by_key(|x| x.1);
        theirs.sort_by_key(|x| x.1);
        assert_eq!(ours.len(), theirs.len(), "{text}");
        for ((a, da), (b, db)) in ours.iter().zip(&theirs) {
            assert_eq!(da, db, "{text}");
            assert!((a - b).abs() <= 1e-5 * b.abs(), "{text}: {a} vs {b}");
        }
        // Some documents have a phrase (their score is above the required words' alone).
        let required = searcher.search(pb.required.as_ref(), &all).unwrap();
        let base: std::collections::HashMap<_, _> =
            required.into_iter().map(|(s, d)| (d, s)).collect();
        with_phrases += ours.iter().filter(|(s, d)| *s > base[d] * 1.001).count();
    }
    assert!(compared >= 3, "too few queries with matches");
    assert!(with_phrases > 10, "too few phrase matches: {with_phrases}");
    assert!(
        conjunctions >= 1,
        "no TermConjunction among the required parts"
    );
}

#[test]
fn word_groups_and_tiers() {
    assert_eq!(subsets(3, 2), [vec![0, 1], vec![0, 2], vec![1, 2]]);
    assert_eq!(subsets(3, 1), [vec![0], vec![1], vec![2]]);
    assert_eq!(subsets(2, 2), [vec![0, 1]]);
    assert!(subsets(2, 0).is_empty() && subsets(2, 3).is_empty());
    for (n, k) in [(4, 2), (6, 3), (7, 5), (16, 8)] {
        assert_eq!(subsets(n, k).len(), binomial(n, k), "{n} choose {k}");
    }
    assert_eq!(binomial(16, 8), 12_870);
    use Tier::{AtMost, Exactly};
    assert_eq!(fewer_words_tiers(2), [Exactly(1)]);
    assert_eq!(fewer_words_tiers(3), [Exactly(2), Exactly(1)]);
    // 4 + 6 + 4 groups.
    assert_eq!(fewer_words_tiers(4), [Exactly(3), Exactly(2), Exactly(1)]);
    // 5 + 10, then 10 more would pass 24.
    assert_eq!(fewer_words_tiers(5), [Exactly(4), Exactly(3), AtMost(2)]);
    assert_eq!(fewer_words_tiers(7), [Exactly(6), AtMost(5)]);
    assert_eq!(fewer_words_tiers(16), [Exactly(15), AtMost(14)]);
}

/// Asserts that `ours` matches the documents of `theirs` (some) with the same scores (up to
/// float rounding); the number of matches.
fn same_matches(searcher: &Searcher, ours: &dyn Query, theirs: &dyn Query, what: &str) -> usize {
    let all = TopDocs::with_limit(100_000);
    let mut a = searcher.search(ours, &all).unwrap();
    let mut b = searcher.search(theirs, &all).unwrap();
    assert!(!b.is_empty(), "{what}");
    a.sort_by_key(|x| x.1);
    b.sort_by_key(|x| x.1);
    assert_eq!(a.len(), b.len(), "{what}");
    for ((x, dx), (y, dy)) in a.iter().zip(&b) {
        assert_eq!(dx, dy, "{what}");
        assert!((x - y).abs() <= 1e-5 * y.abs(), "{what}: {x} vs {y}");
    }
    a.len()
}

/// [`AnyOf`] matches the documents and gives the scores of a union `BooleanQuery` of the
/// same clauses, alone and as a required clause of a conjunction.
#[test]
fn any_of_scores_like_a_union() {
    let index = synthetic_index(3, 2000);
    let searcher = index.reader.searcher();
    let text = index.fields.get(field::TEXT);
    let term = |w: &str| Term::from_field_text(text, &tokens(analyzer::TEXT, w)[0]);
    let alts = |words: &[&str]| -> Vec<Box<dyn Query>> {
        words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                Box::new(BoostQuery::new(
                    Box::new(TermQuery::new(term(w), IndexRecordOption::WithFreqs)),
                    1.0 - 0.1 * i as Score,
                )) as Box<dyn Query>
            })
            .collect()
    };
    let union = |q: Vec<Box<dyn Query>>| {
        BooleanQuery::new(q.into_iter().map(|q| (Occur::Should, q)).collect())
    };
    let same = |ours: &dyn Query, theirs: &dyn Query, what: &str| {
        same_matches(&searcher, ours, theirs, what)
    };
    let scraping = ["scraping", "scrape", "crawl", "web"];
    same(&AnyOf(alts(&scraping)), &union(alts(&scraping)), "alone");
    let led = |first: Box<dyn Query>| {
        BooleanQuery::new(vec![
            (Occur::Must, first),
            (
                Occur::Must,
                Box::new(TermQuery::new(term("data"), IndexRecordOption::WithFreqs)),
            ),
        ])
    };
    let n = same(
        &led(Box::new(AnyOf(alts(&scraping)))),
        &led(Box::new(union(alts(&scraping)))),
        "in a conjunction",
    );
    assert!(n > 0);
}

/// [`WordUnions`] matches the documents and gives the scores of the Tantivy query it replaces
/// (a `BooleanQuery` of required unions of boosted term queries): one word, several words, and
/// as a required clause next to a filter term (its scorer's seeks).
#[test]
fn word_unions_score_like_required_unions() {
    let index = synthetic_index(3, 2000);
    let searcher = index.reader.searcher();
    let text = index.fields.get(field::TEXT);
    let term = |w: &str| Term::from_field_text(text, &tokens(analyzer::TEXT, w)[0]);
    let word = |ws: &[&str]| -> Vec<(Term, Score)> {
        ws.iter()
            .enumerate()
            .map(|(i, w)| (term(w), 1.0 - 0.2 * i as Score))
            .collect()
    };
    let theirs = |words: &[Vec<(Term, Score)>]| -> Box<dyn Query> {
        Box::new(BooleanQuery::new(
            words
                .iter()
                .map(|terms| {
                    let union = terms
                        .iter()
                        .map(|(t, b)| {
                            (
                                Occur::Should,
                                Box::new(BoostQuery::new(
                                    Box::new(TermQuery::new(
                                        t.clone(),
                                        IndexRecordOption::WithFreqs,
                                    )),
                                    *b,
                                )) as Box<dyn Query>,
                            )
                        })
                        .collect();
                    (
                        Occur::Must,
                        Box::new(BooleanQuery::new(union)) as Box<dyn Query>,
                    )
                })
                .collect(),
        ))
    };
    let ours = |words: &[Vec<(Term, Score)>]| -> Box<dyn Query> {
        Box::new(WordUnions {
            words: words.to_vec(),
            popularity: None,
            filters: Vec::new(),
        })
    };
    let same = |ours: &dyn Query, theirs: &dyn Query, what: &str| {
        same_matches(&searcher, ours, theirs, what)
    };
    let one = [word(&["scraping", "scrape", "crawl", "web"])];
    same(ours(&one).as_ref(), theirs(&one).as_ref(), "one word");
    let two = [
        word(&["scraping", "crawl"]),
        word(&["data", "dataset", "table"]),
    ];
    let n = same(ours(&two).as_ref(), theirs(&two).as_ref(), "two words");
    assert!(n > 0);
    let filtered = |q: Box<dyn Query>| {
        BooleanQuery::new(vec![
            (Occur::Must, q),
            (
                Occur::Must,
                Box::new(TermQuery::new(term("html"), IndexRecordOption::Basic)) as Box<dyn Query>,
            ),
        ])
    };
    same(
        &filtered(ours(&one)),
        &filtered(theirs(&one)),
        "next to another term",
    );
    // The pruning loop with no threshold passes on every match with the scorer's score,
    // bit for bit.
    let weight = ours(&two)
        .weight(EnableScoring::enabled_from_searcher(&searcher))
        .unwrap();
    for reader in searcher.segment_readers() {
        let mut pruned = Vec::new();
        weight
            .for_each_pruning(Score::MIN, reader, &mut |d, s| {
                pruned.push((d, s.to_bits()));
                Score::MIN
            })
            .unwrap();
        let mut scored = Vec::new();
        weight
            .for_each(reader, &mut |d, s| scored.push((d, s.to_bits())))
            .unwrap();
        assert_eq!(pruned, scored);
        assert!(!pruned.is_empty());
    }
}

/// A word with several alternatives is an [`AnyOf`] in a conjunction where another word is
/// far rarer, and stays a union where the words have about as many documents.
#[test]
fn a_word_is_any_of_only_next_to_a_far_rarer_word() {
    let spec = |name: &str, tagline: &str| -> crate::doc::SearchDoc {
        let spec: crate::corpus::AgentSpec = serde_json::from_value(serde_json::json!({
            "name": name,
            "displayName": name.split('/').nth(1).unwrap(),
            "tagline": tagline,
            "description": tagline,
            "kind": "remote",
        }))
        .unwrap();
        spec.to_doc().unwrap()
    };
    let mut docs: Vec<crate::doc::SearchDoc> = (0..30)
        .map(|i| spec(&format!("a/tool-{i}"), "scrape and crawl any web site"))
        .collect();
    docs.push(spec("b/frames", "scrape a web site into pandas"));
    let index = crate::relevance::index_of(&docs).unwrap();
    let searcher = index.reader.searcher();
    let kinds = |text: &str| -> Vec<bool> {
        let q = text_query_of(&index, &searcher, text, Mode::All);
        let b = q.downcast_ref::<BooleanQuery>().expect("a BooleanQuery");
        b.clauses()
            .iter()
            .map(|(_, c)| c.downcast_ref::<AnyOf>().is_some())
            .collect()
    };
    // `scraping` (scrape, crawl, ...) has 31 agents, `pandas` 1.
    assert_eq!(kinds("scraping pandas"), [true, false]);
    // `scraping` and `website` (web, site, ...) have 31 each.
    assert_eq!(kinds("scraping website"), [false, false]);
}

/// [`Without`]: the pruned collection (the inner query's loop, excluded documents skipped)
/// equals the exhaustive one (Tantivy's `Exclude` scorer), and no hit has an excluded word.
#[test]
fn without_prunes_like_the_exhaustive_exclusion() {
    let index = synthetic_index(5, 3000);
    let searcher = index.reader.searcher();
    let freqs = DocFreqs::default();
    let mut compared = 0;
    for (kept, dropped) in [
        ("data", "report"),
        ("code review", "request"),
        ("web scraping", "data"),
        ("analyze", "dataset code"),
    ] {
        let kept_words = query_words(kept);
        let dropped_words = query_words(dropped);
        let excluded = index
            .text_query(&searcher, &freqs, dropped, &dropped_words, Mode::Any, None)
            .unwrap()
            .unwrap();
        let q = SearchQuery::text(kept);
        let run = |prune: bool, k: usize, after: Option<(u64, String)>| {
            let part = Part {
                text: kept,
                words: &kept_words,
                mode: Mode::All,
                prefix_last: true,
                without: Some(excluded.as_ref()),
            };
            let c = RankCollector {
                sort: Sort::Relevance,
                k,
                after,
                prune,
                names: true,
            };
            index
                .collect_part(&searcher, &freqs, &q, &part, &c)
                .unwrap()
                .into_iter()
                .map(|r| (r.key, r.name, r.addr))
                .collect::<Vec<_>>()
        };
        let exhaustive = run(false, 40, None);
        if exhaustive.len() < 40 {
            continue;
        }
        compared += 1;
        let pruned = run(true, 40, None);
        assert_eq!(pruned, exhaustive, "{kept} without {dropped}");
        let after = Some((pruned[19].0, pruned[19].1.clone()));
        assert_eq!(
            run(true, 20, after.clone()),
            run(false, 20, after),
            "{kept}"
        );
        // No hit has a dropped word.
        let weight = excluded
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .unwrap();
        for (_, name, addr) in &pruned {
            let mut s = weight
                .scorer(searcher.segment_reader(addr.segment_ord), 1.0)
                .unwrap();
            assert!(
                s.doc() > addr.doc_id || s.seek(addr.doc_id) != addr.doc_id,
                "{name} has a word of {dropped}"
            );
        }
    }
    assert!(compared >= 2, "too few queries to compare");
}

/// [`LooseMatch`] matches what Tantivy's `FuzzyTermQuery` matches, with the same constant
/// score, whether its documents go in a vector (few) or a bitset (many).
#[test]
fn loose_match_equals_fuzzy_term_query() {
    use tantivy::query::FuzzyTermQuery;

    let index = synthetic_index(5, 2000);
    let searcher = index.reader.searcher();
    let max_doc = searcher.segment_reader(0).max_doc() as usize;
    let typo = index.fields.get(field::TYPO);
    let all = TopDocs::with_limit(10_000);
    let (mut lazy, mut few, mut many) = (0, 0, 0);
    for (word, distance, prefix) in [
        ("reveiw", 1, false),
        ("scrapign", 2, false),
        ("dat", 0, true),
        ("analy", 0, true),
        ("zzzzq", 1, false),
        ("summarise", 2, false),
        ("cod", 0, true),
        // Many words, many agents.
        ("re", 0, true),
        ("co", 0, true),
        // Publishers' numbered names: a few agents each.
        ("tools31", 0, true),
        ("labs315", 1, false),
        ("hq3151", 2, false),
    ] {
        let term = Term::from_field_text(typo, word);
        let (ours, theirs) = if prefix {
            (
                LooseMatch::new_prefix(term.clone()),
                FuzzyTermQuery::new_prefix(term, distance, true),
            )
        } else {
            (
                LooseMatch::new(term.clone(), distance),
                FuzzyTermQuery::new(term, distance, true),
            )
        };
        // The query builder asks for prefixes without typos only.
        assert!(prefix == (distance == 0));
        let mut a = searcher
            .search(&BoostQuery::new(Box::new(ours), LOOSE_MATCH_BOOST), &all)
            .unwrap();
        let mut b = searcher
            .search(&BoostQuery::new(Box::new(theirs), LOOSE_MATCH_BOOST), &all)
            .unwrap();
        a.sort_by_key(|x| x.1);
        b.sort_by_key(|x| x.1);
        assert_eq!(a.len(), b.len(), "{word}");
        assert!(a == b, "{word}");
        // Which of `LooseWeight::scorer`'s three ways this match took.
        let m = if prefix {
            LooseMatch::new_prefix(Term::from_field_text(typo, word))
        } else {
            LooseMatch::new(Term::from_field_text(typo, word), distance)
        };
        let terms = matched_terms(&m.matched, &m.dfa, typo, searcher.segment_reader(0))
            .unwrap()
            .len();
        if terms <= FEW_TERMS {
            lazy += usize::from(!a.is_empty());
        } else if a.len() * 32 <= max_doc {
            few += 1;
        } else {
            many += 1;
        }
    }
    assert!(
        lazy >= 1 && few >= 1 && many >= 1,
        "lazy {lazy}, few {few}, many {many}"
    );
}

#[test]
fn stop_words_drop_unless_alone() {
    assert_eq!(
        query_words("an agent for Data Analysis"),
        ["data", "analysis"]
    );
    assert_eq!(query_words("the"), ["the"]);
    assert_eq!(query_words("sql sql SQL"), ["sql"]);
}

/// [`AtLeast`] matches the documents of Tantivy's minimum-should-match `BooleanQuery` of the
/// same queries, for every `m` from 1 to past their number, alone and as what a union
/// leaves out (`Without`, as the last fewer-words tier uses it).
#[test]
fn at_least_matches_like_minimum_should_match() {
    use crate::search::scorers::at_least::AtLeast;
    use crate::search::scorers::without::Without;
    use tantivy::collector::DocSetCollector;
    use tantivy::query::ConstScoreQuery;

    let index = synthetic_index(3, 2000);
    let searcher = index.reader.searcher();
    let text = index.fields.get(field::TEXT);
    let term = |w: &str| Term::from_field_text(text, &tokens(analyzer::TEXT, w)[0]);
    let words = ["data", "web", "sql", "scrape", "report", "query"];
    let queries = || -> Vec<Box<dyn Query>> {
        words
            .iter()
            .map(|w| Box::new(TermQuery::new(term(w), IndexRecordOption::Basic)) as Box<dyn Query>)
            .collect()
    };
    let docs = |q: &dyn Query| {
        let mut d: Vec<_> = searcher
            .search(q, &DocSetCollector)
            .unwrap()
            .into_iter()
            .collect();
        d.sort();
        d
    };
    let mut nonempty = 0;
    for m in 1..=words.len() + 1 {
        let ours = AtLeast {
            queries: queries(),
            m,
        };
        let theirs = BooleanQuery::with_minimum_required_clauses(
            queries().into_iter().map(|q| (Occur::Should, q)).collect(),
            m,
        );
        let (a, b) = (docs(&ours), docs(&theirs));
        assert_eq!(a, b, "at least {m}");
        nonempty += usize::from(!a.is_empty());
        // As the excluded side of `Without` (seeks only), under a union of all the words.
        let union =
            || BooleanQuery::new(queries().into_iter().map(|q| (Occur::Should, q)).collect());
        let ours = Without {
            inner: Box::new(union()),
            excluded: Box::new(AtLeast {
                queries: queries(),
                m,
            }),
        };
        let theirs = BooleanQuery::new(vec![
            (Occur::Must, Box::new(union()) as Box<dyn Query>),
            (
                Occur::MustNot,
                Box::new(ConstScoreQuery::new(
                    Box::new(BooleanQuery::with_minimum_required_clauses(
                        queries().into_iter().map(|q| (Occur::Should, q)).collect(),
                        m,
                    )),
                    0.0,
                )),
            ),
        ]);
        if m > 1 {
            same_matches(&searcher, &ours, &theirs, &format!("without at least {m}"));
        }
    }
    assert!(nonempty >= 3, "the words should overlap: {nonempty}");
}

/// [`AnyWords`], the last fewer-words tier's any-word union: its pruning loop gives, bit for
/// bit, the matches and scores of the query it stands for (Tantivy's union of the clauses when
/// one is a typo or prefix match, whose order of adding changes where a clause's postings end;
/// an `AnyOf` of plain terms otherwise), over several windows; with a threshold it holds back
/// documents yet keeps the top k; and the tier's pruned collection (popularity bounds, the
/// agents with more of the words left out) equals the exhaustive one on every page.
#[test]
fn any_words_prune_like_the_exhaustive_union() {
    use crate::search::scorers::at_least::AtLeast;

    let index = synthetic_index(11, 12_000);
    let searcher = index.reader.searcher();
    let freqs = DocFreqs::default();
    let reader = &searcher.segment_readers()[0];
    assert!(reader.max_doc() > 2 * 4096, "several windows");
    let scoring = EnableScoring::enabled_from_searcher(&searcher);
    let by_score = |a: &(u32, u32), b: &(u32, u32)| {
        f32::from_bits(b.1)
            .total_cmp(&f32::from_bits(a.1))
            .then(a.0.cmp(&b.0))
    };
    let mut orders = [0usize; 2];
    let mut held_back = 0;
    for text in [
        "scrape the product listing of a website and plot a chart of the trend",
        "clean a spreadsheet and summarize the statistics for our reveiw",
        "monitor changes on a sitemap then extract tables from html and fetch each link",
        "produce a wrapper package for our web service from its machine-readable description",
        "a wall monitor showing our key numbers updating all day",
        "fill in firm size and sector for people in our pipeline of scrapign",
        "crawl every website and parse the html into a dataframe of outliers",
    ] {
        let words = query_words(text);
        let shaped = index
            .text_query(&searcher, &freqs, text, &words, Mode::Any, Some(reader))
            .unwrap()
            .unwrap();
        let any = shaped.downcast_ref::<AnyWords>().expect(text);
        orders[usize::from(any.order == SumOrder::Union)] += 1;
        let weight = shaped.weight(scoring).unwrap();
        let reference = any.exhaustive(any.order).weight(scoring).unwrap();
        let mut all = Vec::new();
        reference
            .for_each(reader, &mut |d, s| all.push((d, s.to_bits())))
            .unwrap();
        let mut pruned = Vec::new();
        weight
            .for_each_pruning(Score::MIN, reader, &mut |d, s| {
                pruned.push((d, s.to_bits()));
                Score::MIN
            })
            .unwrap();
        assert_eq!(pruned, all, "{text}");
        // A top 10 by score, the threshold just below the 10th score (ties pass).
        let k = 10;
        let mut top: Vec<(u32, u32)> = Vec::new();
        let mut passed = 0;
        weight
            .for_each_pruning(Score::MIN, reader, &mut |d, s| {
                passed += 1;
                top.push((d, s.to_bits()));
                top.sort_by(by_score);
                top.truncate(k);
                match top.get(k - 1) {
                    Some(w) => f32::from_bits(w.1) * (1.0 - 1e-4),
                    None => Score::MIN,
                }
            })
            .unwrap();
        all.sort_by(by_score);
        all.truncate(k);
        assert_eq!(top, all, "{text}");
        held_back += usize::from(passed < pruned.len());

        // The tier's path: the agents with at most two of the words.
        let mut queries: Vec<Box<dyn Query>> = Vec::new();
        for (i, w) in words.iter().enumerate() {
            let one = std::slice::from_ref(w);
            let last = i + 1 == words.len();
            queries.extend(
                index
                    .text_query_shaped(&searcher, &freqs, w, one, Mode::All, last, None)
                    .unwrap()
                    .map(|(q, _)| q),
            );
        }
        let more = AtLeast { queries, m: 3 };
        let q = SearchQuery::text(text);
        let run = |prune: bool, k: usize, after: Option<(u64, String)>| {
            let part = Part {
                text,
                words: &words,
                mode: Mode::Any,
                prefix_last: true,
                without: Some(&more),
            };
            let c = RankCollector {
                sort: Sort::Relevance,
                k,
                after,
                prune,
                names: true,
            };
            index
                .collect_part(&searcher, &freqs, &q, &part, &c)
                .unwrap()
                .into_iter()
                .map(|r| (r.key, r.name, r.score.to_bits()))
                .collect::<Vec<_>>()
        };
        let exhaustive = run(false, 40, None);
        assert_eq!(exhaustive.len(), 40, "{text}");
        assert_eq!(run(true, 40, None), exhaustive, "{text}");
        let mut paged = Vec::new();
        let mut after = None;
        while paged.len() < 40 {
            let page = run(true, 8, after.clone());
            assert_eq!(page, run(false, 8, after), "{text}");
            after = page.last().map(|r| (r.0, r.1.clone()));
            paged.extend(page);
        }
        assert_eq!(paged, exhaustive, "{text}");
    }
    assert!(
        orders[1] >= 2,
        "too few unions with a loose match ({orders:?})"
    );
    assert!(orders[0] >= 1, "too few unions of plain terms ({orders:?})");
    assert!(
        held_back >= 4,
        "the threshold held back too little ({held_back})"
    );
}
