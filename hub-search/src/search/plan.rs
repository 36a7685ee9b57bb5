//! The query plan: from the query's words to a Tantivy query. Each word becomes its
//! alternatives (its exact terms, its synonyms' terms a little lower, a prefix match for the
//! last word and a typo match for a rare one, both constant-scored); the words then combine as
//! a conjunction ([`WordUnions`] when every alternative is a plain term, a [`TermConjunction`]
//! next to an exact name, `AnyOf` for a word far more common than the rarest) or a union, with
//! the exact-name bonus. The plan also says its
//! [`Shape`], what the collector's pruning loop may rely on.

use tantivy::query::{BooleanQuery, BoostQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{Score, Searcher, SegmentReader, Term};

use crate::error::{Error, Result};
use crate::index::SearchIndex;
use crate::mapping::{FieldKind, MAPPING, analyzer, field, tokens};
use crate::search::doc_freqs::DocFreqs;
use crate::search::scorers::any_of::AnyOf;
use crate::search::scorers::any_words::{AnyClause, AnyWords, SumOrder};
use crate::search::scorers::boosted_term::BoostedTerm;
use crate::search::scorers::conjunction::TermConjunction;
use crate::search::scorers::loose::LooseMatch;
use crate::search::scorers::phrase_bonus::PhraseBonus;
use crate::search::scorers::word_unions::WordUnions;

/// Words shorter than this get no typo tolerance (too many neighbours).
pub(super) const FUZZY_MIN_CHARS: usize = 4;
/// Words at least this long may have two typos.
pub(super) const FUZZY_TWO_EDITS_CHARS: usize = 8;
/// A word found in at least this many documents' short fields is taken as spelled right: no
/// fuzzy expansion (it would only add noise and cost).
const FUZZY_MAX_DOC_FREQ: u64 = 3;
/// The last word is also matched as a prefix when it has at least this many characters.
const PREFIX_MIN_CHARS: usize = 3;
/// A word at least this many documents have (in their short fields, their description or
/// their capability text) is taken as complete and spelled right: no prefix match and no typo
/// expansion. Its exact matches fill every page long before a constant-scored loose match
/// could rank; the automata over a frequent word (every document with `result`, `results`,
/// `resultant`, ...) were the costliest part of the query; and without them the query stays a
/// plain term union that Tantivy prunes with block-max WAND.
const KNOWN_WORD_DOC_FREQ: u64 = 500;
/// Weight of a typo or prefix match (constant-scored) next to exact matches.
pub(super) const LOOSE_MATCH_BOOST: Score = 0.5;
/// Weight of the words found together, in order, in one part of the text (on top of each
/// word's own score); `None`: no phrase bonus. Off since the text became one BM25F field: on
/// the relevance set nDCG@10 is 0.936 with and without it (boosts 0.5, 1 and 2 tried), while
/// at 1M agents it made common two-word queries 5-10x slower ("web scraping": thousands of
/// near-equal documents each need their positions read). [`PhraseBonus`] still handles
/// phrases, tested against Tantivy's phrase queries, for when a corpus shows a need.
const PHRASE_BOOST: Option<Score> = None;
// Phrases need the text field's positions, which the mapping indexes only when told to.
const _: () = assert!(PHRASE_BOOST.is_none() || crate::mapping::TEXT_POSITIONS);
/// A synonym's matches score this fraction of the word's own.
const SYNONYM_WEIGHT: Score = 0.8;
/// Weight of an exact `publisher/agent` match: it must come first.
const EXACT_NAME_BOOST: Score = 20.0;
/// A word of a conjunction with several alternatives is an [`AnyOf`] when its terms have more
/// documents than this many times (in halves) its number of alternatives times the rarest
/// word's documents, a union `BooleanQuery` otherwise: `AnyOf` costs about a seek per
/// alternative at each of the rarest word's documents, Tantivy's union about a read of each of
/// its own. At 1M agents (medians): `monitor schema` (167k documents in 2 alternatives, next
/// to 44k) 1.7 ms as `AnyOf`, 2.3 ms as a union; `sql databases` (238k in 4, next to 98k) 5.1
/// ms as `AnyOf`, 2.2 ms as a union; `web scraping` 10.1 ms with `AnyOf` for both words, 4.1
/// ms with unions.
const ANY_OF_HALF_RATIO: u64 = 3;

/// How the words of a text query combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Every word must match (somewhere, possibly with a typo).
    All,
    /// Any word may match (fallback when no agent has all the words).
    Any,
}

impl SearchIndex {
    /// The free-text part, built from analysed words; `None` when the text has no words. With
    /// `segment`, the exact terms and phrases that segment lacks are left out (same matches and
    /// scores in that segment).
    pub(super) fn text_query(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        text: &str,
        words: &[String],
        mode: Mode,
        segment: Option<&SegmentReader>,
    ) -> Result<Option<Box<dyn Query>>> {
        Ok(self
            .text_query_shaped(searcher, freqs, text, words, mode, true, segment)?
            .map(|(q, _)| q))
    }

    /// [`Self::text_query`] and its [`Shape`]. The last of `words` is also matched as a
    /// prefix only with `prefix_last` (it is the query's last word: a query of some of the
    /// words keeps each word's alternatives as in the whole query).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn text_query_shaped(
        &self,
        searcher: &Searcher,
        freqs: &DocFreqs,
        text: &str,
        words: &[String],
        mode: Mode,
        prefix_last: bool,
        segment: Option<&SegmentReader>,
    ) -> Result<Option<(Box<dyn Query>, Shape)>> {
        if words.is_empty() {
            return Ok(None);
        }
        // Clauses other than plain term queries (automata, phrases, the exact name).
        let mut other_clauses = 0;
        let mut term_clauses = 0;
        let single_segment = searcher.segment_readers().len() == 1;
        let present = |t: &Term| -> Result<bool> {
            Ok(match segment {
                None => true,
                // One segment: the searcher's document frequency (looked up once per search)
                // says it.
                Some(_) if single_segment => freqs.get(searcher, t)? > 0,
                Some(r) => r
                    .inverted_index(t.field())?
                    .get_term_info(t)
                    .map_err(|e| Error::Io("the term dictionary".into(), e))?
                    .is_some(),
            })
        };
        let typo = self.fields.get(field::TYPO);
        let synonyms = self.tuning().synonyms;
        let mut per_word: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        // Mode::All: each word's alternatives and how many documents its terms have (summed).
        let mut required: Vec<(Vec<Clause>, u64)> = Vec::new();
        let mut stems = Vec::new();
        // The last word's alternatives when they are one plain term (see the end).
        let mut lone_term = None;
        // Every word's alternatives when each is one plain term (a [`TermConjunction`]).
        let mut plain_terms = Some(Vec::with_capacity(words.len()));
        // Every word's alternatives when each word's are plain terms only (a [`WordUnions`]).
        let mut plain_words: Option<Vec<Vec<(Term, Score)>>> =
            Some(Vec::with_capacity(words.len()));
        // Mode::Any: every word's alternatives, in clause order (an [`AnyWords`]).
        let mut any_clauses: Vec<AnyClause> = Vec::new();
        for (i, word) in words.iter().enumerate() {
            let stem = tokens(analyzer::TEXT, word)
                .into_iter()
                .next()
                .unwrap_or_else(|| word.clone());
            let mut alts: Vec<(Occur, Box<dyn Query>)> = Vec::new();
            let mut terms = Vec::new();
            for spec in MAPPING {
                let (Some(boost), FieldKind::Text { analyzer: a, .. }) = (spec.boost, spec.kind)
                else {
                    continue;
                };
                let t = if a == analyzer::WORD { word } else { &stem };
                let term = Term::from_field_text(self.fields.get(spec.name), t);
                if !present(&term)? {
                    continue;
                }
                terms.push((term.clone(), boost));
                alts.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(
                        Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)),
                        boost,
                    )),
                ));
            }
            // The word's synonyms (of the word as typed, or of its stem: `plots` finds what
            // `plot` does): the same fields, a little below the word itself.
            let mut syns: Vec<&String> = synonyms.of(word).iter().collect();
            if stem != *word {
                syns.extend(synonyms.of(&stem).iter().filter(|s| *s != word));
            }
            for syn in syns {
                let syn_stem = tokens(analyzer::TEXT, syn)
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| syn.clone());
                for spec in MAPPING {
                    let (Some(boost), FieldKind::Text { analyzer: a, .. }) =
                        (spec.boost, spec.kind)
                    else {
                        continue;
                    };
                    let t = if a == analyzer::WORD { syn } else { &syn_stem };
                    let term = Term::from_field_text(self.fields.get(spec.name), t);
                    if terms.iter().any(|(x, _)| *x == term) || !present(&term)? {
                        continue;
                    }
                    let boost = boost * SYNONYM_WEIGHT;
                    terms.push((term.clone(), boost));
                    alts.push((
                        Occur::Should,
                        Box::new(BoostQuery::new(
                            Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)),
                            boost,
                        )),
                    ));
                }
            }
            let chars = word.chars().count();
            let exact = Term::from_field_text(typo, word);
            let doc_freq = freqs.get(searcher, &exact)?;
            // A word this many agents use anywhere (short fields or prose) is a complete,
            // correctly spelled word: no prefix, no typo expansion.
            let known = doc_freq >= KNOWN_WORD_DOC_FREQ
                || freqs.get(
                    searcher,
                    &Term::from_field_text(self.fields.get(field::TEXT), &stem),
                )? >= KNOWN_WORD_DOC_FREQ;
            // Like absent terms, loose matches the segment has no term for are left out.
            let useful = |m: &LooseMatch| -> Result<bool> {
                match segment {
                    None => Ok(true),
                    Some(r) => m.matches_in(r),
                }
            };
            let mut loose_matches = Vec::new();
            if !known && prefix_last && i + 1 == words.len() && chars >= PREFIX_MIN_CHARS {
                let m = freqs.loose(&exact, 0, true);
                if useful(&m)? {
                    loose_matches.push(m);
                }
            }
            if !known && chars >= FUZZY_MIN_CHARS && doc_freq < FUZZY_MAX_DOC_FREQ {
                let edits = if chars >= FUZZY_TWO_EDITS_CHARS { 2 } else { 1 };
                let m = freqs.loose(&exact, edits, false);
                if useful(&m)? {
                    loose_matches.push(m);
                }
            }
            if mode == Mode::Any {
                // The word's alternatives in the order of `alts`: its terms, then its loose
                // matches.
                any_clauses.extend(terms.iter().map(|(t, b)| AnyClause::Term(t.clone(), *b)));
                any_clauses.extend(
                    loose_matches
                        .iter()
                        .map(|m| AnyClause::Loose(m.clone(), LOOSE_MATCH_BOOST)),
                );
            }
            alts.extend(loose_matches.into_iter().map(loose));
            term_clauses += terms.len();
            other_clauses += alts.len() - terms.len();
            let mut word_docs = 0u64;
            for (t, _) in &terms {
                word_docs += freqs.get(searcher, t)?;
            }
            plain_words = match plain_words {
                // A word without terms (none in this segment): a conjunction matches
                // nothing, an any-word union goes on without it.
                Some(mut v) if alts.len() == terms.len() => {
                    v.push(terms.clone());
                    Some(v)
                }
                _ => None,
            };
            lone_term = match (alts.len(), terms.pop()) {
                (1, Some(t)) => Some(t),
                _ => None,
            };
            plain_terms = match (plain_terms, &lone_term) {
                (Some(mut v), Some(t)) => {
                    v.push(t.clone());
                    Some(v)
                }
                _ => None,
            };
            match mode {
                Mode::All => required.push((alts, word_docs)),
                // Any word: the union of every word's alternatives, flat (same matches, same
                // score sum): an `AnyWords` (below) unless it is one clause or only loose
                // matches.
                Mode::Any => per_word.extend(alts),
            }
            stems.push(stem);
        }
        // A word with several alternatives in a conjunction: Tantivy's union suits a word that
        // leads the conjunction or has about as many documents as the one that does (it reads
        // its terms' documents window by window); a word with far more documents than the
        // rarest is only sought where the others are, which `AnyOf` does cheaply (see
        // `ANY_OF_HALF_RATIO`). One word alone stays a union Tantivy prunes with block-max WAND.
        let rarest = required.iter().map(|(_, n)| *n).min().unwrap_or(0);
        let several = required.len() > 1;
        for (alts, docs) in required {
            let any_of = several
                && alts.len() > 1
                && docs.saturating_mul(2)
                    > rarest.saturating_mul(ANY_OF_HALF_RATIO * alts.len() as u64);
            per_word.push((
                Occur::Must,
                if any_of {
                    Box::new(AnyOf(alts.into_iter().map(|(_, q)| q).collect()))
                } else {
                    Box::new(BooleanQuery::new(alts))
                },
            ));
        }
        let mut phrases: Vec<(Vec<Term>, Score)> = Vec::new();
        // No phrase bonus for the any-word union: it ranks the agents that lack a word (full
        // matches are taken from the conjunction), which cannot hold the whole phrase, and a
        // phrase clause would keep the union from block-max WAND.
        if let (true, Some(boost)) = (stems.len() > 1 && mode == Mode::All, PHRASE_BOOST) {
            for (f, boost) in [(field::TEXT, boost)] {
                let terms: Vec<Term> = stems
                    .iter()
                    .map(|s| Term::from_field_text(self.fields.get(f), s))
                    .collect();
                let mut all_present = true;
                for t in &terms {
                    all_present = all_present && present(t)?;
                }
                if !all_present {
                    continue;
                }
                other_clauses += 1;
                phrases.push((terms, boost));
            }
        }
        let exact_name = index_schema::name::AgentName::parse(text).ok().map(|name| {
            Box::new(BoostQuery::new(
                Box::new(TermQuery::new(
                    Term::from_field_text(self.fields.get(field::NAME), &name.to_string()),
                    IndexRecordOption::Basic,
                )),
                EXACT_NAME_BOOST,
            )) as Box<dyn Query>
        });
        let conjunction = plain_terms.as_ref().is_some_and(|t| t.len() > 1);
        // Words of plain terms (a single term stays a `BoostedTerm`): scored window by window.
        // One term a word too: at 1M agents the window loop took plain multi-word queries from
        // a `TermConjunction`'s 0.42 to 0.28 ms at the median, the fewer-words tiers' from
        // 0.84 to 0.65 (same scores, added in word order by both).
        if let (Mode::All, Some(words), None, true) =
            (mode, &mut plain_words, &exact_name, phrases.is_empty())
            && (words.len() > 1 || words.iter().any(|w| w.len() > 1))
        {
            return Ok(Some((
                Box::new(WordUnions {
                    words: std::mem::take(words),
                    popularity: None,
                    filters: Vec::new(),
                }),
                Shape::Other,
            )));
        }
        // Any word, with some term among several clauses: pruned window by window, each
        // document's clause scores added in the order of the query it stands for — clause
        // order for plain terms (a term two words share counts twice, as in the flat union),
        // Tantivy's union's with a loose match. (The `WordUnions` of one word of every term
        // and the union `BooleanQuery` ranked these before, with these sums.)
        if mode == Mode::Any && exact_name.is_none() && term_clauses > 0 && any_clauses.len() > 1 {
            let order = if any_clauses.iter().all(|c| matches!(c, AnyClause::Term(..))) {
                SumOrder::Listed
            } else {
                SumOrder::Union
            };
            return Ok(Some((
                Box::new(AnyWords {
                    clauses: any_clauses,
                    order,
                    popularity: None,
                }),
                Shape::Other,
            )));
        }
        if mode == Mode::All && (!phrases.is_empty() || conjunction) {
            // Every word required, phrases as a bonus: phrases are checked only for documents
            // that could enter the top k with them (see `PhraseBonus`).
            return Ok(Some((
                Box::new(PhraseBonus {
                    required: match plain_terms {
                        // Each word one term: the conjunction PhraseBonus prunes block by block.
                        Some(terms) => Box::new(TermConjunction { terms }),
                        None => Box::new(BooleanQuery::new(per_word)),
                    },
                    phrases,
                    exact_name,
                    popularity: None,
                }),
                Shape::Other,
            )));
        }
        // Only typo and prefix matches (every word misspelled or incomplete): each adds
        // `LOOSE_MATCH_BOOST` at most (a constant score; sums of halves are exact).
        let loose_only = (term_clauses == 0 && phrases.is_empty() && exact_name.is_none())
            .then_some(other_clauses as Score * LOOSE_MATCH_BOOST);
        for (terms, boost) in phrases {
            per_word.push((
                Occur::Should,
                Box::new(BoostQuery::new(Box::new(PhraseQuery::new(terms)), boost)),
            ));
        }
        if let Some(q) = exact_name {
            per_word.push((Occur::Should, q));
        }
        if let [(Occur::Must, _)] = per_word.as_slice() {
            // One required word and nothing else: the word's alternatives are the query (a
            // union of plain terms is a `WordUnions`, above); a single term is pruned block by
            // block as a `BoostedTerm` (a union of one clause, or a `BoostQuery`, would score
            // every document).
            if let Some((term, boost)) = lone_term {
                return Ok(Some((Box::new(BoostedTerm { term, boost }), Shape::Other)));
            }
            let (_, only) = per_word.pop().expect("one clause");
            let shape = loose_only.map_or(Shape::Other, Shape::LooseOnly);
            return Ok(Some((only, shape)));
        }
        let shape = loose_only.map_or(Shape::Other, Shape::LooseOnly);
        Ok(Some((Box::new(BooleanQuery::new(per_word)), shape)))
    }
}

/// A clause of a `BooleanQuery`.
type Clause = (Occur, Box<dyn Query>);

/// What the pruning loop may rely on in a text query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Shape {
    /// Only constant-scored typo and prefix matches: no document scores above this.
    LooseOnly(Score),
    /// Anything else.
    Other,
}

fn loose(q: LooseMatch) -> (Occur, Box<dyn Query>) {
    (
        Occur::Should,
        Box::new(BoostQuery::new(Box::new(q), LOOSE_MATCH_BOOST)),
    )
}
