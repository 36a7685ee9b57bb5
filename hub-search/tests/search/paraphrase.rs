//! The paraphrase relevance set (issue 34): its shape, its committed split, and that its
//! queries really are paraphrases (few or no content words shared with the right agents).

use std::collections::BTreeSet;

use hub_search::relevance::{self, Split};
use sha2::{Digest as _, Sha256};

#[test]
fn the_paraphrase_set_has_enough_queries_and_agents_and_names_only_real_agents() {
    let dir = relevance::paraphrase_dir();
    let agents = relevance::agents_of(dir).unwrap();
    let names: BTreeSet<String> = agents.iter().map(|a| a.name().to_string()).collect();
    assert_eq!(names.len(), agents.len(), "agent names repeat");
    assert!(agents.len() >= 150, "{} agents", agents.len());
    let queries = relevance::load_queries(dir).unwrap();
    assert!(queries.len() >= 80, "{} queries", queries.len());
    let mut texts = BTreeSet::new();
    for q in &queries {
        assert!(texts.insert(q.q.clone()), "{:?} twice", q.q);
        assert!(
            q.relevant.values().any(|g| *g == 3),
            "{:?} has no agent graded 3",
            q.q
        );
        for (name, grade) in &q.relevant {
            assert!(
                names.contains(name),
                "{:?} judges unknown agent {name}",
                q.q
            );
            assert!((1..=3).contains(grade), "{:?}: grade {grade}", q.q);
        }
    }
}

#[test]
fn each_query_is_in_the_half_its_hash_says() {
    // The rule of the earlier sets: sha256 of the query's text, first byte even → tune.
    for q in relevance::load_queries(relevance::paraphrase_dir()).unwrap() {
        let even = Sha256::digest(q.q.as_bytes())[0] % 2 == 0;
        let expected = if even { Split::Tune } else { Split::Heldout };
        assert_eq!(q.split, expected, "{:?}", q.q);
    }
}

#[test]
fn paraphrase_queries_share_at_most_one_content_word_with_the_right_agents() {
    let dir = relevance::paraphrase_dir();
    let agents = relevance::agents_of(dir).unwrap();
    let queries = relevance::load_queries(dir).unwrap();
    let mut none = 0;
    for q in &queries {
        let most = q
            .relevant
            .iter()
            .filter(|(_, g)| **g == 3)
            .map(|(name, _)| {
                let agent = agents
                    .iter()
                    .find(|a| a.name().to_string() == *name)
                    .unwrap();
                relevance::shared_words(&q.q, agent)
            })
            .max_by_key(Vec::len)
            .unwrap();
        assert!(most.len() <= 1, "{:?} shares {most:?}", q.q);
        none += usize::from(most.is_empty());
    }
    // Most share nothing at all.
    assert!(
        none * 3 >= queries.len() * 2,
        "{none} of {} share nothing",
        queries.len()
    );
}

#[test]
fn shared_words_stems_both_sides_and_ignores_function_words() {
    let agents = relevance::paraphrase_agents().unwrap();
    let reader = agents
        .iter()
        .find(|a| a.name().to_string() == "ledger/invoice-reader")
        .unwrap();
    // "invoices" in the agent's text and "invoice" in the query share a stem; "our" is not
    // content; "spreadsheet" is not in the agent's text.
    assert_eq!(
        relevance::shared_words("our invoice into a spreadsheet", reader),
        ["invoic"]
    );
}
