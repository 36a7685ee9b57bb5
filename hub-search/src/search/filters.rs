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
        let filter = |f: &str, v: &str| -> (Occur, Box<dyn Query>) {
            (
                Occur::Must,
                Box::new(ConstScoreQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_text(self.fields.get(f), v),
                        IndexRecordOption::Basic,
                    )),
                    0.0,
                )),
            )
        };
        clauses.extend(
            q.capabilities
                .iter()
                .map(|c| filter(field::CAPABILITY_EXACT, c)),
        );
        clauses.extend(q.keywords.iter().map(|k| filter(field::KEYWORD_EXACT, k)));
        clauses.extend(q.kind.iter().map(|k| filter(field::KIND, k)));
        clauses.extend(q.publisher.iter().map(|p| filter(field::PUBLISHER, p)));
        let deprecated = match q.deprecated {
            DeprecatedFilter::Include => None,
            DeprecatedFilter::Exclude => Some(false),
            DeprecatedFilter::Only => Some(true),
        };
        clauses.extend(deprecated.map(|d| -> (Occur, Box<dyn Query>) {
            (
                Occur::Must,
                Box::new(ConstScoreQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_bool(self.fields.get(field::DEPRECATED), d),
                        IndexRecordOption::Basic,
                    )),
                    0.0,
                )),
            )
        }));
        if q.verified {
            // One of the verified publishers (none verified: a clause nothing matches).
            let any: Vec<(Occur, Box<dyn Query>)> = q
                .verified_publishers
                .iter()
                .map(|p| -> (Occur, Box<dyn Query>) {
                    (
                        Occur::Should,
                        Box::new(TermQuery::new(
                            Term::from_field_text(self.fields.get(field::PUBLISHER), p),
                            IndexRecordOption::Basic,
                        )),
                    )
                })
                .collect();
            let any: Box<dyn Query> = if any.is_empty() {
                Box::new(EmptyQuery)
            } else {
                Box::new(BooleanQuery::new(any))
            };
            clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(any, 0.0))));
        }
        Box::new(BooleanQuery::new(clauses))
    }
}
