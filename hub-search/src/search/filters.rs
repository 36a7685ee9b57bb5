//! The filters (capability, keyword, kind, publisher, deprecated, verified) around a text query: constant-scored
//! term clauses that add nothing to the score, so the text query's bounds hold for the whole.

use tantivy::Term;
use tantivy::query::TermSetQuery;
use tantivy::query::{
    AllQuery, BooleanQuery, ConstScoreQuery, EmptyQuery, Occur, Query, TermQuery,
};
use tantivy::schema::IndexRecordOption;

use crate::index::SearchIndex;
use crate::mapping::field;
use crate::query::{DeprecatedFilter, SearchQuery};

impl SearchIndex {
    /// Whether `q` restricts the agents beyond its text (`only_names` aside).
    pub(super) fn has_filters(&self, q: &SearchQuery) -> bool {
        !(q.capabilities.is_empty()
            && q.keywords.is_empty()
            && q.kind.is_none()
            && q.publisher.is_none()
            && q.deprecated == DeprecatedFilter::Include
            && !q.verified)
    }

    /// Text query AND filters. (Yanked agents are never in the index: the writer deletes them
    /// instead of adding them, so no clause is needed to hide them.) Without filters the text
    /// query is run as it is, which keeps a plain term union prunable (block-max WAND).
    pub(super) fn full_query(&self, q: &SearchQuery, text: Option<&dyn Query>) -> Box<dyn Query> {
        if !q.only_names.is_empty() {
            // The hybrid search's vector side: these agents, if they pass the filters.
            let names = q
                .only_names
                .iter()
                .map(|n| Term::from_field_text(self.fields.get(field::NAME), n));
            let rest = SearchQuery {
                only_names: Vec::new(),
                ..q.clone()
            };
            return Box::new(BooleanQuery::new(vec![
                (Occur::Must, self.full_query(&rest, text)),
                (
                    Occur::Must,
                    Box::new(ConstScoreQuery::new(
                        Box::new(TermSetQuery::new(names)),
                        0.0,
                    )),
                ),
            ]));
        }
        if !self.has_filters(q) {
            return match text {
                Some(t) => t.box_clone(),
                None => Box::new(AllQuery),
            };
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(
            Occur::Must,
            match text {
                Some(t) => t.box_clone(),
                None => Box::new(AllQuery),
            },
        )];
        clauses.extend(self.filter_terms(q).into_iter().map(|any| {
            (
                Occur::Must,
                Box::new(ConstScoreQuery::new(any_term(any), 0.0)) as Box<dyn Query>,
            )
        }));
        Box::new(BooleanQuery::new(clauses))
    }

    /// The filters of `q` (`only_names` aside), each as the terms of which a document must
    /// have one (one term, but several for `verified`: one of the verified publishers; none
    /// when no publisher is verified, which nothing matches).
    pub(super) fn filter_terms(&self, q: &SearchQuery) -> Vec<Vec<Term>> {
        let text = |f: &str, v: &str| vec![Term::from_field_text(self.fields.get(f), v)];
        let mut filters: Vec<Vec<Term>> = Vec::new();
        filters.extend(
            q.capabilities
                .iter()
                .map(|c| text(field::CAPABILITY_EXACT, c)),
        );
        filters.extend(q.keywords.iter().map(|k| text(field::KEYWORD_EXACT, k)));
        filters.extend(q.kind.iter().map(|k| text(field::KIND, k)));
        filters.extend(q.publisher.iter().map(|p| text(field::PUBLISHER, p)));
        let deprecated = match q.deprecated {
            DeprecatedFilter::Include => None,
            DeprecatedFilter::Exclude => Some(false),
            DeprecatedFilter::Only => Some(true),
        };
        filters.extend(
            deprecated.map(|d| vec![Term::from_field_bool(self.fields.get(field::DEPRECATED), d)]),
        );
        if q.verified {
            filters.push(
                q.verified_publishers
                    .iter()
                    .map(|p| Term::from_field_text(self.fields.get(field::PUBLISHER), p))
                    .collect(),
            );
        }
        filters
    }
}

/// A document with any of `terms` (none: no document).
pub(super) fn any_term(terms: Vec<Term>) -> Box<dyn Query> {
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = terms
        .into_iter()
        .map(|t| -> (Occur, Box<dyn Query>) {
            (
                Occur::Should,
                Box::new(TermQuery::new(t, IndexRecordOption::Basic)),
            )
        })
        .collect();
    match clauses.len() {
        0 => Box::new(EmptyQuery),
        1 => clauses.pop().expect("one clause").1,
        _ => Box::new(BooleanQuery::new(clauses)),
    }
}
