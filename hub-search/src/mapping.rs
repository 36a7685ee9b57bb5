//! The index definition, in one place: which Tantivy field each part of a manifest becomes, how
//! its text is analysed, how much a match in it weighs, and how a [`SearchDoc`] turns into a
//! Tantivy document.
//!
//! Everything else (the writer, the query builder, the checker) reads this table instead of
//! naming fields on its own, so adding a field is one row here.

use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RawTokenizer, RemoveLongFilter, SimpleTokenizer, TextAnalyzer,
    Token, TokenFilter, TokenStream, Tokenizer, TokenizerManager,
};
use tantivy::{Index, TantivyDocument};

use crate::doc::SearchDoc;

/// Field names, defined once.
pub mod field {
    /// `publisher/agent`, exact (the document's identity: updates delete by this term).
    pub const NAME: &str = "name";
    /// The publisher, exact.
    pub const PUBLISHER: &str = "publisher";
    /// All the free text, each part repeated by its weight (see [`super::TEXT_SOURCES`]):
    /// what a search's words are matched against and scored on (BM25F).
    pub const TEXT: &str = "text";
    /// The version the document shows (the agent's latest non-yanked version).
    pub const VERSION: &str = "version";
    /// Display name (stored: shown in hits).
    pub const DISPLAY_NAME: &str = "display_name";
    /// Tagline (stored: shown and highlighted).
    pub const TAGLINE: &str = "tagline";
    /// Description (stored: highlighted).
    pub const DESCRIPTION: &str = "description";
    /// Keywords, exact (lowercase): the `keyword=` filter.
    pub const KEYWORD_EXACT: &str = "keyword_exact";
    /// Capability names, exact (lowercase): the `capability=` filter.
    pub const CAPABILITY_EXACT: &str = "capability_exact";
    /// Unstemmed words of the short fields (name, display name, tagline, keywords, capability
    /// names): what typo-tolerant and prefix matching run against.
    pub const TYPO: &str = "typo";
    /// Source kind: `bundle`, `pip`, `npm`, `docker` or `remote`.
    pub const KIND: &str = "kind";
    /// `mention` or `always`.
    pub const ACTIVATION: &str = "activation";
    /// Total downloads (all versions).
    pub const DOWNLOADS: &str = "downloads";
    /// Last update, Unix seconds.
    pub const UPDATED: &str = "updated";
    /// Every version is yanked: never shown.
    pub const YANKED: &str = "yanked";
    /// The publisher deprecated the agent: shown, ranked lower.
    pub const DEPRECATED: &str = "deprecated";
    /// Digest of everything indexed for the document; the checker compares it (stored only:
    /// nothing searches it).
    pub const FINGERPRINT: &str = "fingerprint";
}

/// Analyzer names registered on the index.
pub mod analyzer {
    /// Words, lowercase, ASCII-folded, English-stemmed: prose fields.
    pub const TEXT: &str = "ofc_text";
    /// Words, lowercase, ASCII-folded, not stemmed: names, and the typo/prefix field.
    pub const WORD: &str = "ofc_word";
    /// The whole value, lowercase: exact filters.
    pub const EXACT: &str = "ofc_exact";
}

/// Longest token kept; longer ones are noise (hashes, base64) and would bloat the dictionary.
const MAX_TOKEN_BYTES: usize = 40;

/// Builds one of the index's analyzers by name. Stems are Tantivy's English `Stemmer`'s,
/// memoised per thread ([`MemoStemmer`]): the stemmer was most of a highlight's time and a
/// sixth of an index build's, over prose that repeats the same words.
pub fn text_analyzer(name: &str) -> Option<TextAnalyzer> {
    Some(match name {
        analyzer::TEXT => TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
            .filter(LowerCaser)
            .filter(AsciiFoldingFilter)
            .filter(MemoStemmer)
            .build(),
        analyzer::WORD => TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
            .filter(LowerCaser)
            .filter(AsciiFoldingFilter)
            .build(),
        analyzer::EXACT => TextAnalyzer::builder(RawTokenizer::default())
            .filter(LowerCaser)
            .build(),
        _ => return None,
    })
}

/// The analyzer `name` for highlighting: the index's.
pub(crate) fn highlight_analyzer(name: &str) -> Option<TextAnalyzer> {
    text_analyzer(name)
}

/// Entries kept by [`MemoStemmer`] per thread before it starts over.
const STEM_MEMO_ENTRIES: usize = 20_000;

thread_local! {
    static STEMS: std::cell::RefCell<(rust_stemmers::Stemmer, std::collections::HashMap<String, String>)> =
        std::cell::RefCell::new((
            rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English),
            std::collections::HashMap::new(),
        ));
}

/// Tantivy's English `Stemmer` filter with a per-thread memo (bounded: cleared when full). A
/// stem depends only on the word, so the tokens are the same.
#[derive(Clone, Copy)]
struct MemoStemmer;

impl TokenFilter for MemoStemmer {
    type Tokenizer<T: Tokenizer> = MemoStemmerFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> MemoStemmerFilter<T> {
        MemoStemmerFilter(tokenizer)
    }
}

#[derive(Clone)]
struct MemoStemmerFilter<T>(T);

impl<T: Tokenizer> Tokenizer for MemoStemmerFilter<T> {
    type TokenStream<'a> = MemoStemmerStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        MemoStemmerStream(self.0.token_stream(text))
    }
}

struct MemoStemmerStream<T>(T);

impl<T: TokenStream> TokenStream for MemoStemmerStream<T> {
    fn advance(&mut self) -> bool {
        if !self.0.advance() {
            return false;
        }
        let token = self.0.token_mut();
        STEMS.with(|memo| {
            let (stemmer, stems) = &mut *memo.borrow_mut();
            if let Some(stem) = stems.get(&token.text) {
                token.text.clear();
                token.text.push_str(stem);
                return;
            }
            let stem = stemmer.stem(&token.text).into_owned();
            if stems.len() >= STEM_MEMO_ENTRIES {
                stems.clear();
            }
            stems.insert(std::mem::replace(&mut token.text, stem.clone()), stem);
        });
        true
    }

    fn token(&self) -> &Token {
        self.0.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.0.token_mut()
    }
}

fn register_analyzers(tokenizers: &TokenizerManager) {
    for name in [analyzer::TEXT, analyzer::WORD, analyzer::EXACT] {
        tokenizers.register(name, text_analyzer(name).expect("known analyzer"));
    }
}

/// How a field is indexed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldKind {
    /// Analysed text. `positions` enables phrase queries on it.
    Text {
        /// Analyzer name (see [`analyzer`]).
        analyzer: &'static str,
        /// Index positions (phrase matching).
        positions: bool,
    },
    /// Text kept in the document store only, never indexed: shown in hits, highlighted (its
    /// words are searched through [`field::TEXT`]) or compared by the checker.
    Stored,
    /// One untokenized value, matched exactly; a fast field when `fast` (sorting, tie-breaks).
    Exact,
    /// Unsigned integer, fast (sort key), not indexed.
    U64,
    /// Signed integer, fast (sort key), not indexed.
    I64,
    /// Boolean, indexed and fast (filters, ranking).
    Bool,
}

/// A value extracted from a [`SearchDoc`] for one field.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// Text (possibly several per field: keywords, capabilities).
    Text(std::borrow::Cow<'a, str>),
    /// Unsigned integer.
    U64(u64),
    /// Signed integer.
    I64(i64),
    /// Boolean.
    Bool(bool),
}

/// One row of the mapping.
#[derive(Debug, Clone, Copy)]
pub struct FieldSpec {
    /// The field's name (one of [`field`]).
    pub name: &'static str,
    /// How it is indexed.
    pub kind: FieldKind,
    /// Kept in the document store (returned in hits, used for highlights and checks).
    pub stored: bool,
    /// Also a fast (columnar) field.
    pub fast: bool,
    /// Weight of a full-text match in this field; `None` when free text never searches it.
    pub boost: Option<f32>,
    /// Where the values come from.
    pub extract: for<'a> fn(&'a SearchDoc, &mut Vec<Value<'a>>),
}

fn text<'a>(out: &mut Vec<Value<'a>>, s: &'a str) {
    out.push(Value::Text(s.into()));
}

/// One part of an agent's free text and its weight in [`field::TEXT`].
#[derive(Debug, Clone, Copy)]
pub struct TextSource {
    /// What the part is (documentation, explanations).
    pub name: &'static str,
    /// How many times the part is indexed in [`field::TEXT`].
    pub weight: u32,
    /// Where the values come from.
    pub extract: for<'a> fn(&'a SearchDoc, &mut Vec<Value<'a>>),
}

/// The parts of the free text and their weights, chosen on the relevance set
/// (`hub-search/relevance/`): a word in the name or display name says more about what an agent
/// is than the same word in its description.
///
/// Every part goes into the one field [`field::TEXT`], repeated `weight` times: a word's
/// frequency there is the weighted sum of its frequencies in the parts, and the document's
/// length the weighted sum of their lengths. BM25 on that field is BM25F (Robertson, Zaragoza
/// and Taylor, "Simple BM25 extension to multiple weighted fields", 2004), which they show
/// ranks better than adding up one BM25 score per field (each field saturating on its own
/// overstates a word found in several fields). It is also what makes multi-word queries fast:
/// one posting list per word instead of one per word and field. Repeated values are separate
/// values of the field, so a phrase never spans two parts (Tantivy leaves a position gap
/// between values) and a phrase in a part weighs what the part weighs.
pub const TEXT_SOURCES: &[TextSource] = &[
    TextSource {
        name: "name (publisher and agent)",
        weight: 4,
        extract: |d, o| {
            text(o, d.manifest.name.publisher());
            text(o, d.manifest.name.agent());
        },
    },
    TextSource {
        name: "display name",
        weight: 4,
        extract: |d, o| text(o, &d.manifest.display_name),
    },
    TextSource {
        name: "tagline",
        weight: 2,
        extract: |d, o| text(o, &d.manifest.tagline),
    },
    TextSource {
        name: "description",
        weight: 1,
        extract: |d, o| text(o, &d.manifest.description),
    },
    TextSource {
        name: "keywords",
        weight: 3,
        extract: |d, o| d.manifest.keywords.iter().for_each(|k| text(o, k)),
    },
    TextSource {
        name: "capability names",
        weight: 2,
        extract: |d, o| {
            d.manifest
                .capabilities
                .iter()
                .for_each(|c| text(o, &c.name))
        },
    },
    TextSource {
        name: "capability descriptions and keywords",
        weight: 1,
        extract: |d, o| {
            for c in &d.manifest.capabilities {
                text(o, &c.description);
                c.keywords.iter().for_each(|k| text(o, k));
            }
        },
    },
];

/// The mapping from a manifest (and its hub statistics) to the index.
pub const MAPPING: &[FieldSpec] = &[
    FieldSpec {
        name: field::NAME,
        kind: FieldKind::Exact,
        stored: true,
        fast: true,
        boost: None,
        extract: |d, o| o.push(Value::Text(d.manifest.name.to_string().into())),
    },
    FieldSpec {
        name: field::PUBLISHER,
        kind: FieldKind::Exact,
        stored: false,
        fast: true,
        boost: None,
        extract: |d, o| text(o, d.manifest.name.publisher()),
    },
    FieldSpec {
        name: field::TEXT,
        kind: FieldKind::Text {
            analyzer: analyzer::TEXT,
            positions: TEXT_POSITIONS,
        },
        stored: false,
        fast: false,
        boost: Some(1.0),
        extract: |d, o| {
            let mut part = Vec::new();
            for source in TEXT_SOURCES {
                part.clear();
                (source.extract)(d, &mut part);
                for _ in 0..source.weight {
                    o.extend(part.iter().cloned());
                }
            }
        },
    },
    FieldSpec {
        name: field::VERSION,
        kind: FieldKind::Exact,
        stored: true,
        fast: false,
        boost: None,
        extract: |d, o| o.push(Value::Text(d.manifest.version.to_string().into())),
    },
    FieldSpec {
        name: field::DISPLAY_NAME,
        kind: FieldKind::Stored,
        stored: true,
        fast: false,
        boost: None,
        extract: |d, o| text(o, &d.manifest.display_name),
    },
    FieldSpec {
        name: field::TAGLINE,
        kind: FieldKind::Stored,
        stored: true,
        fast: false,
        boost: None,
        extract: |d, o| text(o, &d.manifest.tagline),
    },
    FieldSpec {
        name: field::DESCRIPTION,
        kind: FieldKind::Stored,
        stored: true,
        fast: false,
        boost: None,
        extract: |d, o| text(o, &d.manifest.description),
    },
    FieldSpec {
        name: field::KEYWORD_EXACT,
        kind: FieldKind::Exact,
        stored: false,
        fast: true,
        boost: None,
        extract: |d, o| {
            d.manifest
                .keywords
                .iter()
                .for_each(|k| o.push(Value::Text(k.to_lowercase().into())))
        },
    },
    FieldSpec {
        name: field::CAPABILITY_EXACT,
        kind: FieldKind::Exact,
        stored: false,
        fast: true,
        boost: None,
        extract: |d, o| {
            d.manifest
                .capabilities
                .iter()
                .for_each(|c| o.push(Value::Text(c.name.to_lowercase().into())))
        },
    },
    FieldSpec {
        name: field::TYPO,
        kind: FieldKind::Text {
            analyzer: analyzer::WORD,
            positions: false,
        },
        stored: false,
        fast: false,
        boost: None,
        extract: |d, o| {
            let m = &d.manifest;
            text(o, m.name.publisher());
            text(o, m.name.agent());
            text(o, &m.display_name);
            text(o, &m.tagline);
            m.keywords.iter().for_each(|k| text(o, k));
            m.capabilities.iter().for_each(|c| text(o, &c.name));
        },
    },
    FieldSpec {
        name: field::KIND,
        kind: FieldKind::Exact,
        stored: true,
        fast: true,
        boost: None,
        extract: |d, o| text(o, d.manifest.source.kind()),
    },
    FieldSpec {
        name: field::ACTIVATION,
        kind: FieldKind::Exact,
        stored: true,
        fast: false,
        boost: None,
        extract: |d, o| {
            text(
                o,
                match d.manifest.activation {
                    index_schema::manifest::Activation::Mention => "mention",
                    index_schema::manifest::Activation::Always => "always",
                },
            )
        },
    },
    FieldSpec {
        name: field::DOWNLOADS,
        kind: FieldKind::U64,
        stored: true,
        fast: true,
        boost: None,
        extract: |d, o| o.push(Value::U64(d.stats.downloads)),
    },
    FieldSpec {
        name: field::UPDATED,
        kind: FieldKind::I64,
        stored: true,
        fast: true,
        boost: None,
        extract: |d, o| o.push(Value::I64(d.stats.updated_at)),
    },
    FieldSpec {
        name: field::YANKED,
        kind: FieldKind::Bool,
        stored: false,
        fast: false,
        boost: None,
        extract: |d, o| o.push(Value::Bool(d.stats.yanked)),
    },
    FieldSpec {
        name: field::DEPRECATED,
        kind: FieldKind::Bool,
        stored: true,
        fast: true,
        boost: None,
        extract: |d, o| o.push(Value::Bool(d.stats.deprecated)),
    },
    FieldSpec {
        name: field::FINGERPRINT,
        // Read back from the stored document only (the checker). As an indexed term it was a
        // million unique 64-character terms at a million agents, nothing ever looked up, and
        // about a third of the index build's time (term dictionary built, then merged).
        kind: FieldKind::Stored,
        stored: true,
        fast: false,
        boost: None,
        extract: |d, o| o.push(Value::Text(d.fingerprint().into())),
    },
];

/// The mapping row of a field.
pub fn spec(name: &str) -> &'static FieldSpec {
    MAPPING
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("field `{name}` is not in the mapping"))
}

/// Whether [`field::TEXT`] indexes positions. No query of the hub reads them: phrases are off
/// (`search::plan`'s `PHRASE_BOOST`, which cannot be turned on while this is false), and
/// they were a fifth of the index (97 of 457 MiB at a million agents) and of its build.
pub(crate) const TEXT_POSITIONS: bool = false;

/// Builds the Tantivy schema from [`MAPPING`].
pub fn schema() -> Schema {
    schema_of(|positions| positions)
}

/// [`schema`] with positions on every text field (tests of the phrase machinery).
#[cfg(test)]
pub(crate) fn schema_with_positions() -> Schema {
    schema_of(|_| true)
}

/// The schema, with `positions` deciding each text field's positions from the mapping's.
fn schema_of(positions_of: impl Fn(bool) -> bool) -> Schema {
    let mut b = Schema::builder();
    for spec in MAPPING {
        match spec.kind {
            FieldKind::Text {
                analyzer,
                positions,
            } => {
                let positions = positions_of(positions);
                let record = if positions {
                    IndexRecordOption::WithFreqsAndPositions
                } else {
                    IndexRecordOption::WithFreqs
                };
                let mut opts = TextOptions::default().set_indexing_options(
                    TextFieldIndexing::default()
                        .set_tokenizer(analyzer)
                        .set_index_option(record),
                );
                if spec.stored {
                    opts = opts.set_stored();
                }
                b.add_text_field(spec.name, opts);
            }
            FieldKind::Stored => {
                b.add_text_field(spec.name, STORED);
            }
            FieldKind::Exact => {
                let mut opts = TextOptions::default().set_indexing_options(
                    TextFieldIndexing::default()
                        .set_tokenizer("raw")
                        .set_index_option(IndexRecordOption::Basic),
                );
                if spec.stored {
                    opts = opts.set_stored();
                }
                if spec.fast {
                    opts = opts.set_fast(None);
                }
                b.add_text_field(spec.name, opts);
            }
            // Sort keys are read from their columns only: no term of theirs is ever looked up
            // (indexed, `updated` alone was a million unique terms at a million agents).
            FieldKind::U64 => {
                let mut opts = tantivy::schema::NumericOptions::from(FAST);
                if spec.stored {
                    opts = opts.set_stored();
                }
                b.add_u64_field(spec.name, opts);
            }
            FieldKind::I64 => {
                let mut opts = tantivy::schema::NumericOptions::from(FAST);
                if spec.stored {
                    opts = opts.set_stored();
                }
                b.add_i64_field(spec.name, opts);
            }
            FieldKind::Bool => {
                let mut opts = tantivy::schema::NumericOptions::from(INDEXED);
                if spec.fast {
                    opts = opts | FAST;
                }
                if spec.stored {
                    opts = opts | STORED;
                }
                b.add_bool_field(spec.name, opts);
            }
        }
    }
    b.build()
}

/// Registers the analyzers on an index (needed after every open: they are not persisted).
pub fn prepare(index: &Index) {
    register_analyzers(index.tokenizers());
}

/// Resolved field handles, looked up once per index.
#[derive(Debug, Clone)]
pub struct Fields {
    fields: Vec<(&'static str, Field)>,
}

impl Fields {
    /// Resolves every mapped field in `schema`.
    pub fn new(schema: &Schema) -> Self {
        Self {
            fields: MAPPING
                .iter()
                .map(|s| {
                    (
                        s.name,
                        schema
                            .get_field(s.name)
                            .expect("schema built from the mapping"),
                    )
                })
                .collect(),
        }
    }

    /// The handle of a mapped field.
    pub fn get(&self, name: &str) -> Field {
        self.fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
            .unwrap_or_else(|| panic!("field `{name}` is not in the mapping"))
    }

    /// Turns a search document into a Tantivy document, following [`MAPPING`].
    pub fn document(&self, doc: &SearchDoc) -> TantivyDocument {
        let mut out = TantivyDocument::new();
        let mut values = Vec::new();
        for (spec, (_, f)) in MAPPING.iter().zip(&self.fields) {
            values.clear();
            (spec.extract)(doc, &mut values);
            for v in values.drain(..) {
                match v {
                    Value::Text(s) => out.add_text(*f, s.as_ref()),
                    Value::U64(n) => out.add_u64(*f, n),
                    Value::I64(n) => out.add_i64(*f, n),
                    Value::Bool(b) => out.add_bool(*f, b),
                }
            }
        }
        out
    }
}

/// Analyses `text` with one of the index's analyzers.
pub fn tokens(analyzer_name: &str, text: &str) -> Vec<String> {
    let mut a = text_analyzer(analyzer_name).expect("known analyzer");
    let mut stream = a.token_stream(text);
    let mut out = Vec::new();
    while let Some(t) = stream.next() {
        out.push(t.text.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use tantivy::tokenizer::{
        AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
        TextAnalyzer,
    };

    use super::{MAPPING, MAX_TOKEN_BYTES, analyzer, schema, text_analyzer, tokens};

    /// The memoised stemmer gives the tokens (text, offsets, positions) of Tantivy's `Stemmer`.
    #[test]
    fn memoised_stems_equal_the_stemmers() {
        let all = |a: &mut TextAnalyzer, text: &str| {
            let mut stream = a.token_stream(text);
            let mut out = Vec::new();
            while let Some(t) = stream.next() {
                out.push(t.clone());
            }
            out
        };
        let mut texts: Vec<String> = (0..300)
            .flat_map(|i| {
                let a = crate::corpus::synthetic_agent(11, i);
                [a.tagline, a.description, a.display_name]
            })
            .collect();
        texts.push("Ünïcödé naïve café running libraries happily studies flies".into());
        let mut memo = text_analyzer(analyzer::TEXT).unwrap();
        let mut reference = TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
            .filter(LowerCaser)
            .filter(AsciiFoldingFilter)
            .filter(Stemmer::new(Language::English))
            .build();
        // Twice: memo misses, then hits.
        for _ in 0..2 {
            for text in &texts {
                assert_eq!(all(&mut memo, text), all(&mut reference, text), "{text}");
            }
        }
    }

    #[test]
    fn every_mapped_field_is_in_the_schema_once() {
        let schema = schema();
        for spec in MAPPING {
            assert!(schema.get_field(spec.name).is_ok(), "{}", spec.name);
            assert_eq!(
                MAPPING.iter().filter(|s| s.name == spec.name).count(),
                1,
                "{} twice",
                spec.name
            );
        }
        assert_eq!(schema.fields().count(), MAPPING.len());
    }

    #[test]
    fn text_analyzer_lowercases_folds_and_stems() {
        assert_eq!(
            tokens(analyzer::TEXT, "Analyzing Café Scrapers"),
            ["analyz", "cafe", "scraper"]
        );
        assert_eq!(
            tokens(analyzer::WORD, "acme/Data-Analyst find_price_v2"),
            ["acme", "data", "analyst", "find", "price", "v2"]
        );
        assert_eq!(tokens(analyzer::EXACT, "SQL Helper"), ["sql helper"]);
    }

    #[test]
    fn overlong_tokens_are_dropped() {
        let long = "x".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(tokens(analyzer::TEXT, &format!("ok {long}")), ["ok"]);
    }
}
