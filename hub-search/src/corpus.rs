//! Agents for tests and benchmarks: [`AgentSpec`] (the compact form the relevance fixtures are
//! written in) and a deterministic synthetic corpus of any size with a query set of several
//! classes.

use index_schema::manifest::{
    Activation, BundleSource, Capability, DockerSource, Manifest, NpmSource, PipSource,
    RemoteSource, SCHEMA_VERSION, Source,
};
use index_schema::name::{AgentHandle, AgentName, Digest};
use serde::{Deserialize, Serialize};

use crate::doc::{AgentStats, SearchDoc};
use crate::synonyms::Synonyms;

/// One capability of an [`AgentSpec`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CapabilitySpec {
    /// Capability name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Discovery keywords.
    #[serde(default)]
    pub keywords: Vec<String>,
}

/// An agent in compact form: the searchable parts of a manifest plus hub statistics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentSpec {
    /// `publisher/agent`.
    pub name: String,
    /// Version (default `1.0.0`).
    #[serde(default = "default_version")]
    pub version: String,
    /// Display name.
    pub display_name: String,
    /// Tagline.
    pub tagline: String,
    /// Description.
    pub description: String,
    /// Keywords.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Capabilities.
    #[serde(default)]
    pub capabilities: Vec<CapabilitySpec>,
    /// Source kind.
    pub kind: String,
    /// Downloads.
    #[serde(default)]
    pub downloads: u64,
    /// Last update, Unix seconds.
    #[serde(default = "default_updated")]
    pub updated_at: i64,
    /// Deprecated.
    #[serde(default)]
    pub deprecated: bool,
    /// Wakes on every message.
    #[serde(default)]
    pub always: bool,
}

fn default_version() -> String {
    "1.0.0".into()
}

fn default_updated() -> i64 {
    1_750_000_000
}

impl AgentSpec {
    /// The full manifest (a plausible source of the given kind) with its statistics.
    pub fn to_doc(&self) -> Result<SearchDoc, String> {
        let name = AgentName::parse(&self.name).map_err(|e| e.to_string())?;
        let version = semver::Version::parse(&self.version).map_err(|e| e.to_string())?;
        let (publisher, agent) = (name.publisher().to_owned(), name.agent().to_owned());
        let source = match self.kind.as_str() {
            "bundle" => Source::Bundle(BundleSource {
                digest: Digest::of(self.name.as_bytes()),
                size: 4096,
                media_type: index_schema::media_types::AGENT_BUNDLE_V1.into(),
                entrypoint: "agent.yaml".into(),
            }),
            "pip" => Source::Pip(PipSource {
                package: format!("{publisher}-{agent}"),
                version: self.version.clone(),
                index: None,
                entry_point: format!("{}.server:main", agent.replace('-', "_")),
                sha256: None,
            }),
            "npm" => Source::Npm(NpmSource {
                package: format!("@{publisher}/{agent}"),
                version: version.clone(),
                registry: None,
                bin: agent.clone(),
                integrity: None,
            }),
            "docker" => Source::Docker(DockerSource {
                image: format!(
                    "ghcr.io/{publisher}/{agent}:{}@sha256:{}",
                    self.version,
                    Digest::of(self.name.as_bytes()).hex()
                ),
                port: 8080,
            }),
            "remote" => Source::Remote(RemoteSource {
                endpoint: format!("https://{agent}.{publisher}.example.com/ofc"),
            }),
            other => return Err(format!("unknown kind `{other}`")),
        };
        let object = serde_json::json!({"type": "object"});
        let manifest = Manifest {
            schema_version: SCHEMA_VERSION,
            id: AgentHandle::new(&agent).map_err(|e| e.to_string())?,
            name,
            version,
            display_name: self.display_name.clone(),
            tagline: self.tagline.clone(),
            description: self.description.clone(),
            readme: None,
            license: Some("MIT".into()),
            homepage: None,
            repository: None,
            keywords: self.keywords.clone(),
            examples: Vec::new(),
            activation: if self.always {
                Activation::Always
            } else {
                Activation::Mention
            },
            capabilities: self
                .capabilities
                .iter()
                .map(|c| Capability {
                    name: c.name.clone(),
                    description: c.description.clone(),
                    input_schema: object.clone(),
                    output_schema: object.clone(),
                    keywords: c.keywords.clone(),
                    authorized_requesters: None,
                })
                .collect(),
            provides_mcp: None,
            requires: None,
            pricing: None,
            source,
            origin: None,
        };
        Ok(SearchDoc::new(
            manifest,
            AgentStats {
                downloads: self.downloads,
                updated_at: self.updated_at,
                yanked: false,
                deprecated: self.deprecated,
            },
        ))
    }
}

/// SplitMix64: tiny, fast, and its sequence never changes with a dependency upgrade, so a seed
/// names the same corpus forever.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize
    }

    /// Zipf-like pick: low indexes are much more frequent (popular domains, big publishers).
    pub fn skewed(&mut self, n: usize) -> usize {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (((n + 1) as f64).powf(u) - 1.0).min((n - 1) as f64) as usize
    }

    /// One element.
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// A domain: what a family of agents is about.
struct Domain {
    topic: &'static str,
    nouns: &'static [&'static str],
    verbs: &'static [&'static str],
    capabilities: &'static [&'static str],
    keywords: &'static [&'static str],
}

const DOMAINS: &[Domain] = &[
    Domain {
        topic: "data analysis",
        nouns: &[
            "dataset",
            "spreadsheet",
            "csv file",
            "dataframe",
            "chart",
            "statistics",
            "trend",
            "outlier",
        ],
        verbs: &[
            "analyze",
            "summarize",
            "plot",
            "clean",
            "aggregate",
            "explore",
        ],
        capabilities: &[
            "analyze_dataset",
            "plot_chart",
            "describe_statistics",
            "clean_data",
            "detect_outliers",
        ],
        keywords: &["data", "analysis", "pandas", "csv", "statistics", "charts"],
    },
    Domain {
        topic: "web scraping",
        nouns: &[
            "web page",
            "website",
            "html",
            "table",
            "sitemap",
            "product listing",
            "link",
        ],
        verbs: &["scrape", "crawl", "extract", "fetch", "parse", "monitor"],
        capabilities: &[
            "scrape_page",
            "crawl_site",
            "extract_tables",
            "fetch_url",
            "monitor_changes",
        ],
        keywords: &["scraping", "web", "crawler", "html", "extraction"],
    },
    Domain {
        topic: "code review",
        nouns: &[
            "pull request",
            "diff",
            "repository",
            "function",
            "bug",
            "test suite",
            "commit",
        ],
        verbs: &["review", "refactor", "lint", "explain", "test", "fix"],
        capabilities: &[
            "review_diff",
            "suggest_refactor",
            "find_bugs",
            "write_tests",
            "explain_code",
        ],
        keywords: &["code", "review", "github", "refactoring", "linting"],
    },
    Domain {
        topic: "sql databases",
        nouns: &[
            "sql query",
            "database",
            "schema",
            "table",
            "index",
            "migration",
            "join",
        ],
        verbs: &["write", "optimize", "explain", "migrate", "query", "tune"],
        capabilities: &[
            "write_sql",
            "explain_query",
            "optimize_query",
            "design_schema",
            "run_sql",
        ],
        keywords: &["sql", "postgres", "mysql", "database", "sqlite"],
    },
    Domain {
        topic: "customer support",
        nouns: &[
            "ticket",
            "customer",
            "refund",
            "faq",
            "complaint",
            "chat",
            "knowledge base",
        ],
        verbs: &["answer", "triage", "route", "escalate", "draft", "resolve"],
        capabilities: &[
            "triage_ticket",
            "draft_reply",
            "search_faq",
            "escalate_issue",
        ],
        keywords: &["support", "helpdesk", "tickets", "customer", "zendesk"],
    },
    Domain {
        topic: "translation",
        nouns: &[
            "document",
            "sentence",
            "subtitle",
            "language",
            "glossary",
            "website copy",
        ],
        verbs: &["translate", "localize", "proofread", "detect"],
        capabilities: &[
            "translate_text",
            "detect_language",
            "localize_strings",
            "proofread_text",
        ],
        keywords: &["translation", "languages", "localization", "i18n"],
    },
    Domain {
        topic: "finance",
        nouns: &[
            "invoice",
            "expense",
            "budget",
            "stock",
            "portfolio",
            "transaction",
            "tax return",
        ],
        verbs: &["reconcile", "forecast", "categorize", "track", "audit"],
        capabilities: &[
            "categorize_expenses",
            "forecast_budget",
            "reconcile_accounts",
            "track_portfolio",
        ],
        keywords: &["finance", "accounting", "invoices", "budget", "stocks"],
    },
    Domain {
        topic: "devops",
        nouns: &[
            "kubernetes cluster",
            "deployment",
            "pipeline",
            "log",
            "incident",
            "dockerfile",
            "terraform plan",
        ],
        verbs: &[
            "deploy",
            "monitor",
            "diagnose",
            "scale",
            "rollback",
            "provision",
        ],
        capabilities: &[
            "deploy_service",
            "read_logs",
            "diagnose_incident",
            "scale_cluster",
            "review_terraform",
        ],
        keywords: &[
            "devops",
            "kubernetes",
            "docker",
            "ci",
            "terraform",
            "monitoring",
        ],
    },
    Domain {
        topic: "writing",
        nouns: &[
            "blog post",
            "email",
            "essay",
            "headline",
            "newsletter",
            "press release",
            "outline",
        ],
        verbs: &[
            "write",
            "edit",
            "rewrite",
            "shorten",
            "proofread",
            "summarize",
        ],
        capabilities: &[
            "draft_post",
            "edit_text",
            "summarize_text",
            "write_headline",
        ],
        keywords: &["writing", "copywriting", "editing", "content", "blog"],
    },
    Domain {
        topic: "research",
        nouns: &[
            "paper",
            "citation",
            "literature review",
            "abstract",
            "source",
            "patent",
        ],
        verbs: &["search", "summarize", "compare", "cite", "find"],
        capabilities: &[
            "search_papers",
            "summarize_paper",
            "format_citations",
            "compare_sources",
        ],
        keywords: &["research", "papers", "arxiv", "citations", "science"],
    },
    Domain {
        topic: "travel planning",
        nouns: &["flight", "hotel", "itinerary", "visa", "trip", "restaurant"],
        verbs: &["plan", "book", "compare", "find", "schedule"],
        capabilities: &[
            "search_flights",
            "plan_itinerary",
            "find_hotels",
            "check_visa",
        ],
        keywords: &["travel", "flights", "hotels", "trips"],
    },
    Domain {
        topic: "security",
        nouns: &[
            "vulnerability",
            "dependency",
            "secret",
            "firewall rule",
            "cve",
            "audit log",
        ],
        verbs: &["scan", "audit", "detect", "patch", "harden"],
        capabilities: &[
            "scan_dependencies",
            "detect_secrets",
            "audit_permissions",
            "triage_cve",
        ],
        keywords: &["security", "vulnerabilities", "cve", "audit", "secrets"],
    },
    Domain {
        topic: "e-commerce",
        nouns: &[
            "product",
            "price",
            "catalog",
            "order",
            "inventory",
            "review",
        ],
        verbs: &["compare", "track", "recommend", "price", "list"],
        capabilities: &[
            "find_cheapest_price",
            "track_order",
            "recommend_products",
            "update_inventory",
        ],
        keywords: &["shopping", "ecommerce", "prices", "products", "shopify"],
    },
    Domain {
        topic: "image generation",
        nouns: &[
            "image",
            "logo",
            "illustration",
            "photo",
            "thumbnail",
            "diagram",
        ],
        verbs: &["generate", "edit", "upscale", "caption", "describe"],
        capabilities: &[
            "generate_image",
            "caption_image",
            "upscale_image",
            "remove_background",
        ],
        keywords: &["images", "design", "art", "vision", "diffusion"],
    },
    Domain {
        topic: "scheduling",
        nouns: &[
            "meeting", "calendar", "reminder", "deadline", "timezone", "agenda",
        ],
        verbs: &["schedule", "remind", "reschedule", "plan", "summarize"],
        capabilities: &[
            "schedule_meeting",
            "find_free_slot",
            "send_reminder",
            "draft_agenda",
        ],
        keywords: &["calendar", "meetings", "scheduling", "productivity"],
    },
    Domain {
        topic: "legal documents",
        nouns: &[
            "contract",
            "clause",
            "nda",
            "policy",
            "terms of service",
            "compliance checklist",
        ],
        verbs: &["review", "draft", "summarize", "compare", "flag"],
        capabilities: &[
            "review_contract",
            "draft_nda",
            "flag_risky_clauses",
            "check_compliance",
        ],
        keywords: &["legal", "contracts", "compliance", "gdpr"],
    },
];

const PUBLISHER_STEMS: &[&str] = &[
    "acme",
    "globex",
    "initech",
    "umbrella",
    "hooli",
    "stark",
    "wayne",
    "cyberdyne",
    "tyrell",
    "soylent",
    "wonka",
    "vandelay",
    "aperture",
    "blackmesa",
    "oscorp",
    "massive",
    "pied",
    "dunder",
    "gringotts",
    "monarch",
    "nakatomi",
    "octan",
    "paper",
    "quantum",
    "rekall",
    "sirius",
    "tessier",
    "virtucon",
    "weyland",
    "yoyodyne",
    "zorg",
    "lumen",
    "northwind",
    "contoso",
    "fabrikam",
    "adatum",
    "tailspin",
    "wingtip",
    "proseware",
    "litware",
];

const PUBLISHER_SUFFIXES: &[&str] = &["", "-labs", "-ai", "-dev", "-io", "-hq", "-tools", "-oss"];

const ADJECTIVES: &[&str] = &[
    "fast", "smart", "tiny", "open", "auto", "deep", "quick", "simple", "pro", "lite", "turbo",
    "precise", "friendly", "local", "private", "robust",
];

const ROLES: &[&str] = &[
    "assistant",
    "helper",
    "bot",
    "expert",
    "pilot",
    "analyst",
    "runner",
    "wizard",
    "buddy",
    "engine",
    "copilot",
    "worker",
];

const FILLER: &[&str] = &[
    "It runs locally or on the hub and answers in a few seconds.",
    "Send it a request in plain English and it replies with a structured result.",
    "Works well with other agents on the same floor.",
    "Built on an open model; no data leaves your machine unless you allow it.",
    "Handles large inputs by splitting them into chunks.",
    "Asks a clarifying question when the request is ambiguous.",
    "Supports English, German, French and Spanish.",
    "Keeps a short memory of the conversation on the floor.",
    "Returns JSON that other agents can consume.",
    "Maintained by a small team; issues welcome.",
];

/// The `n` agents of the synthetic corpus with `seed` as `ofc-hub reindex` writes an index:
/// most downloaded first, ties by number. The order needs every agent's downloads first (the
/// hub sorts what it read from the database): they are drawn without writing the agents' text
/// ([`Draws`]); each document is then generated in full, which is part of what a benchmark's
/// build costs.
pub fn synthetic_docs_in_reindex_order(seed: u64, n: u64) -> impl Iterator<Item = SearchDoc> {
    let mut order: Vec<(u64, u64)> = (0..n).map(|i| (Draws::new(seed, i).downloads, i)).collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    order.into_iter().map(move |(_, i)| {
        synthetic_agent(seed, i)
            .to_doc()
            .expect("a synthetic agent is valid")
    })
}

/// The synthetic agent number `i` of the corpus with `seed` (each agent depends only on
/// `(seed, i)`, so any slice can be generated independently).
pub fn synthetic_agent(seed: u64, i: u64) -> AgentSpec {
    Draws::new(seed, i).agent(i)
}

/// Every random choice of one synthetic agent, drawn in the one order that defines the corpus;
/// [`Draws::agent`] writes the agent from them without drawing again.
struct Draws {
    domain: &'static Domain,
    second: &'static Domain,
    publisher: (&'static str, &'static str, usize),
    adjective: &'static str,
    role: &'static str,
    verb: &'static str,
    noun: &'static str,
    /// The description's second verb and noun.
    verb2: &'static str,
    noun2: &'static str,
    /// "It also helps with" the second domain: its verb and noun.
    also: Option<(&'static str, &'static str)>,
    fillers: Vec<&'static str>,
    codename: Option<usize>,
    keywords: Vec<&'static str>,
    /// Capability names and each one's keyword.
    capabilities: Vec<(&'static str, &'static str)>,
    kind: &'static str,
    version: (usize, usize, usize),
    downloads: u64,
    updated_at: i64,
    deprecated: bool,
    always: bool,
}

impl Draws {
    fn new(seed: u64, i: u64) -> Self {
        let mut r = Rng::new(seed ^ i.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        let domain = &DOMAINS[r.skewed(DOMAINS.len())];
        let second = &DOMAINS[r.below(DOMAINS.len())];
        let publisher = (
            PUBLISHER_STEMS[r.skewed(PUBLISHER_STEMS.len())],
            r.pick(PUBLISHER_SUFFIXES),
            r.below(400),
        );
        let adjective = r.pick(ADJECTIVES);
        let role = r.pick(ROLES);
        let verb = r.pick(domain.verbs);
        let noun = r.pick(domain.nouns);
        let verb2 = r.pick(domain.verbs);
        let noun2 = r.pick(domain.nouns);
        let also = (r.below(3) == 0).then(|| (r.pick(second.verbs), r.pick(second.nouns)));
        let fillers = (0..1 + r.below(3)).map(|_| r.pick(FILLER)).collect();
        // A rare word now and then, for the rare-term query class.
        let codename = (r.below(1000) == 0).then(|| r.below(100));
        let mut keywords = Vec::with_capacity(4);
        for _ in 0..1 + r.below(4) {
            let k = r.pick(domain.keywords);
            if !keywords.contains(&k) {
                keywords.push(k);
            }
        }
        let mut capabilities: Vec<(&str, &str)> = Vec::with_capacity(3);
        for _ in 0..1 + r.below(3) {
            let name = r.pick(domain.capabilities);
            if capabilities.iter().any(|c| c.0 == name) {
                continue;
            }
            capabilities.push((name, r.pick(domain.keywords)));
        }
        let kind = ["remote", "docker", "pip", "npm", "bundle"][r.skewed(5)];
        let version = (r.below(3), r.below(20), r.below(10));
        // Heavy-tailed: most agents are rarely downloaded, a few a lot.
        let downloads = (r.next_u64() % 1000).pow(3) / 1000 + r.below(50) as u64;
        Self {
            domain,
            second,
            publisher,
            adjective,
            role,
            verb,
            noun,
            verb2,
            noun2,
            also,
            fillers,
            codename,
            keywords,
            capabilities,
            kind,
            version,
            downloads,
            updated_at: 1_600_000_000 + r.below(150_000_000) as i64,
            deprecated: r.below(50) == 0,
            always: r.below(10) == 0,
        }
    }

    /// The agent number `i` these choices describe.
    fn agent(self, i: u64) -> AgentSpec {
        let d = self.domain;
        let (stem, suffix, number) = self.publisher;
        let publisher = format!("{stem}{suffix}{number}");
        let (adjective, role, verb, noun) = (self.adjective, self.role, self.verb, self.noun);
        let topic_word = d.topic.split(' ').next().unwrap_or(d.topic);
        // The agent part carries the index so names are unique across the corpus.
        let agent = format!("{adjective}-{topic_word}-{role}-{i}");
        let display_name = format!(
            "{} {} {}",
            capitalize(adjective),
            capitalize_words(d.topic),
            capitalize(role)
        );
        let tagline = format!("Send me a {noun} and I will {verb} it");
        let mut description = format!(
            "An agent for {}: it can {} a {} and {} the {}. ",
            d.topic, verb, noun, self.verb2, self.noun2
        );
        if let Some((verb, noun)) = self.also {
            description.push_str(&format!(
                "It also helps with {}: {} {}. ",
                self.second.topic, verb, noun
            ));
        }
        for filler in &self.fillers {
            description.push_str(filler);
            description.push(' ');
        }
        if let Some(n) = self.codename {
            description.push_str(&format!("Codename zyx{n}. "));
        }
        let (major, minor, patch) = self.version;
        AgentSpec {
            name: format!("{publisher}/{agent}"),
            version: format!("{major}.{minor}.{patch}"),
            display_name,
            tagline,
            description: description.trim_end().to_owned(),
            keywords: self.keywords.iter().map(|k| (*k).to_owned()).collect(),
            capabilities: self
                .capabilities
                .iter()
                .map(|(name, keyword)| CapabilitySpec {
                    name: (*name).to_owned(),
                    description: format!("{} a {} and return the result", capitalize(verb), noun),
                    keywords: vec![(*keyword).to_owned()],
                })
                .collect(),
            kind: self.kind.to_owned(),
            downloads: self.downloads,
            updated_at: self.updated_at,
            deprecated: self.deprecated,
            always: self.always,
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn capitalize_words(s: &str) -> String {
    s.split(' ').map(capitalize).collect::<Vec<_>>().join(" ")
}

/// A benchmark query class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueryClass {
    /// One word.
    SingleWord,
    /// Two or three words.
    MultiWord,
    /// `publisher/agent`.
    ExactName,
    /// A word with a typo.
    Misspelling,
    /// Text plus a capability filter.
    CapabilityFilter,
    /// A word few agents contain.
    RareTerm,
    /// A word most agents contain.
    CommonTerm,
    /// Words from two domains and a rare word: fewer than ten agents have them all, so the
    /// search falls back to matches of fewer words (ranked after the full ones).
    FewerWords,
    /// A word with synonyms in the hub's default synonym set (the query becomes the word or
    /// its synonyms).
    Synonym,
}

impl QueryClass {
    /// Every class.
    pub const ALL: [QueryClass; 9] = [
        Self::SingleWord,
        Self::MultiWord,
        Self::ExactName,
        Self::Misspelling,
        Self::CapabilityFilter,
        Self::RareTerm,
        Self::CommonTerm,
        Self::FewerWords,
        Self::Synonym,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Self::SingleWord => "single-word",
            Self::MultiWord => "multi-word",
            Self::ExactName => "exact-name",
            Self::Misspelling => "misspelling",
            Self::CapabilityFilter => "capability-filter",
            Self::RareTerm => "rare-term",
            Self::CommonTerm => "common-term",
            Self::FewerWords => "fewer-words",
            Self::Synonym => "synonym",
        }
    }
}

/// One benchmark query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BenchQuery {
    /// Its class.
    pub class: QueryClass,
    /// Free text.
    pub q: String,
    /// Capability filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
}

/// Swaps two neighbouring letters (a realistic typo).
fn misspell(word: &str, r: &mut Rng) -> String {
    let mut c: Vec<char> = word.chars().collect();
    if c.len() >= 4 {
        let i = 1 + r.below(c.len() - 2);
        c.swap(i, i + 1);
    }
    c.into_iter().collect()
}

/// `per_class` queries of every class for the corpus of `n` agents with `seed`.
pub fn query_set(seed: u64, n: u64, per_class: usize) -> Vec<BenchQuery> {
    let mut r = Rng::new(seed.wrapping_add(0x5EED));
    let mut out = Vec::new();
    // The corpus's words that the default synonym set expands.
    let synonyms = Synonyms::default_set();
    let mut with_synonyms: Vec<&'static str> = DOMAINS
        .iter()
        .flat_map(|d| d.keywords.iter().chain(d.nouns).chain(d.verbs))
        .copied()
        .filter(|w| !w.contains(' ') && !synonyms.of(w).is_empty())
        .collect();
    with_synonyms.sort_unstable();
    with_synonyms.dedup();
    assert!(
        !with_synonyms.is_empty(),
        "no word of the corpus has synonyms in the default set"
    );
    for class in QueryClass::ALL {
        for _ in 0..per_class {
            let d = &DOMAINS[r.below(DOMAINS.len())];
            let (q, capability) = match class {
                QueryClass::SingleWord => (r.pick(d.keywords).to_owned(), None),
                QueryClass::MultiWord => {
                    if r.below(2) == 0 {
                        (d.topic.to_owned(), None)
                    } else {
                        (format!("{} {}", r.pick(d.verbs), r.pick(d.nouns)), None)
                    }
                }
                QueryClass::ExactName => {
                    (synthetic_agent(seed, r.next_u64() % n.max(1)).name, None)
                }
                QueryClass::Misspelling => {
                    let w = d
                        .keywords
                        .iter()
                        .chain(d.verbs)
                        .copied()
                        .filter(|w| w.len() >= 5)
                        .collect::<Vec<_>>();
                    let w = if w.is_empty() { d.topic } else { r.pick(&w) };
                    (misspell(w, &mut r), None)
                }
                QueryClass::CapabilityFilter => (
                    r.pick(d.verbs).to_owned(),
                    Some(r.pick(d.capabilities).to_owned()),
                ),
                QueryClass::RareTerm => (format!("zyx{}", r.below(100)), None),
                QueryClass::CommonTerm => (
                    r.pick(&["result", "agent", "request", "floor"]).to_owned(),
                    None,
                ),
                QueryClass::FewerWords => {
                    let other = &DOMAINS[r.below(DOMAINS.len())];
                    (
                        format!(
                            "{} {} zyx{}",
                            r.pick(d.verbs),
                            r.pick(other.nouns),
                            r.below(100)
                        ),
                        None,
                    )
                }
                QueryClass::Synonym => (r.pick(&with_synonyms).to_owned(), None),
            };
            out.push(BenchQuery {
                class,
                q,
                capability,
            });
        }
    }
    out
}

#[cfg(test)]
#[path = "corpus_tests.rs"]
mod tests;
