//! `ofc search [QUERY] [--capability C]… [--keyword K]… [--kind K] [--publisher P] [--sort S]
//! [--limit N] [--facets] [--deprecated include|exclude|only] [--verified]`: asks the hub (`GET /api/v1/search`) and prints a table NAME VERSION
//! DOWNLOADS TAGLINE, best hit first, then with `--facets` one line per facet (`kind: remote 12,
//! bundle 3`); `--json` prints the hub's answer as is (with `facets` when asked).

use anyhow::Result;
use index_schema::hub_api::{FacetCount, SearchFacets, SearchHit as Hit, SearchParams};

use crate::config::Paths;
use crate::hub::{self, Hub};
use crate::output::{self, ExitStatus, Output, UserError};

/// How search hits are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SearchSort {
    /// Best match first.
    Relevance,
    /// Most downloaded first.
    Downloads,
    /// Most recently updated first.
    Updated,
}

/// Which deprecated agents to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeprecatedShown {
    /// Shown, marked `[deprecated]`, ranked lower.
    Include,
    /// Hidden.
    Exclude,
    /// Only deprecated agents.
    Only,
}

impl SearchSort {
    /// The hub's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Relevance => "relevance",
            Self::Downloads => "downloads",
            Self::Updated => "updated",
        }
    }
}

/// How the hub matches the query (`--mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SearchModeArg {
    /// By the words (and their synonyms and misspellings).
    Keyword,
    /// By meaning: agents whose description is closest to the query's (the hub's model).
    Semantic,
    /// Both, fused: the hub's default when it has an embedding model.
    Hybrid,
}

/// Arguments of `ofc search`.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// Free text: words of the name, tagline, description, keywords or capabilities.
    #[arg(value_name = "QUERY")]
    pub query: Option<String>,

    /// Only agents offering this capability (repeat for several: all required).
    #[arg(long, value_name = "NAME")]
    pub capability: Vec<String>,

    /// Only agents with this keyword (repeat for several: all required).
    #[arg(long, value_name = "WORD")]
    pub keyword: Vec<String>,

    /// Only agents with this source kind (bundle, pip, npm, docker, remote).
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,

    /// Only agents of this publisher.
    #[arg(long, value_name = "PUBLISHER")]
    pub publisher: Option<String>,

    /// Order of the hits.
    #[arg(long, value_enum, default_value_t = SearchSort::Relevance)]
    pub sort: SearchSort,

    /// How the hub matches the query: by the words, by meaning, or both (the default of a
    /// hub with an embedding model; `keyword` on one without, which refuses the others).
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<SearchModeArg>,

    /// How many hits to show (1 to 100).
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub limit: u32,

    /// Also show how many matching agents have each capability, keyword, kind and publisher
    /// (over every match, the most frequent ten of each; `--json` carries them too).
    #[arg(long)]
    pub facets: bool,

    /// Deprecated agents (marked `[deprecated]`): shown (`include`, the default), hidden
    /// (`exclude`) or alone (`only`).
    #[arg(long, value_enum, value_name = "WHICH", default_value_t = DeprecatedShown::Include)]
    pub deprecated: DeprecatedShown,

    /// Only agents of verified namespaces (a domain proved with `ofc namespace verify`); their
    /// hits are marked `[verified: DOMAIN]` either way.
    #[arg(long)]
    pub verified: bool,
}

/// Tagline width when stdout is not a terminal: fixed, so captured output is the same anywhere.
const PIPED_TAGLINE_WIDTH: usize = 60;

/// Narrowest tagline column on a terminal.
const MIN_TAGLINE_WIDTH: usize = 20;

/// Runs the verb.
pub fn run(args: &SearchArgs, out: &mut Output) -> Result<ExitStatus> {
    let params = query_params(args)?;
    let paths = Paths::from_env()?;
    let hub = Hub::from_env(&paths)?;
    let rt = hub::runtime()?;
    let page = rt.block_on(hub.search(&params)).map_err(|e| {
        hub::refused(
            e,
            format!("the hub at {} refused the search", hub.url),
            |he| match he.status.as_u16() {
                400 => vec!["check the flags the message names (`ofc search --help`)".into()],
                503 => vec!["this hub has search turned off; ask its operator".into()],
                _ => Vec::new(),
            },
        )
    })?;
    if out.json {
        out.json_value(&page);
        return Ok(ExitStatus::Success);
    }
    // The hub's spelling of the query, as a command to copy (cleaned: it came from the hub).
    let suggestion = page.did_you_mean.as_deref().map(|d| {
        format!(
            "did you mean `ofc search \"{}\"`?",
            output::truncate(&output::clean_line(d), 200).replace('"', "")
        )
    });
    if page.hits.is_empty() {
        out.status(&no_match_message(args));
        if let Some(s) = &suggestion {
            out.hints(&[s.as_str()]);
            return Ok(ExitStatus::Success);
        }
        out.hints(&[if has_filters(args) {
            "try fewer words, or drop a filter"
        } else {
            "try fewer or other words"
        }]);
        return Ok(ExitStatus::Success);
    }
    for line in render(&page.hits, output::stdout_width()) {
        out.data(&line);
    }
    if let Some(f) = &page.facets {
        for line in facet_lines(f) {
            out.data(&line);
        }
    }
    if let Some(note) = fewer_words_note(&page.hits, &page.dropped_words) {
        out.status(&note);
    }
    if let Some(s) = &suggestion {
        out.hints(&[s.as_str()]);
    }
    if page.next_cursor.is_some() {
        out.status(&format!(
            "showing the first {}; narrow the query or raise --limit (at most 100) to see more",
            page.hits.len()
        ));
    }
    Ok(ExitStatus::Success)
}

/// One line per non-empty facet: `capability: summarize 4, translate 2` (values from the hub,
/// cleaned for the terminal).
fn facet_lines(f: &SearchFacets) -> Vec<String> {
    let line = |name: &str, values: &[FacetCount]| {
        (!values.is_empty()).then(|| {
            let v: Vec<String> = values
                .iter()
                .map(|c| {
                    format!(
                        "{} {}",
                        output::truncate(&output::clean_line(&c.value), 40),
                        c.count
                    )
                })
                .collect();
            format!("{name}: {}", v.join(", "))
        })
    };
    [
        line("capability", &f.capability),
        line("keyword", &f.keyword),
        line("kind", &f.kind),
        line("publisher", &f.publisher),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// When the hub added agents with only some of the words: how many have them all, and which
/// words the others lack (the hub's words, cleaned for the terminal).
fn fewer_words_note(hits: &[Hit], dropped: &[String]) -> Option<String> {
    if dropped.is_empty() {
        return None;
    }
    let full = hits.iter().filter(|h| h.missing_words.is_empty()).count();
    let words: Vec<String> = dropped
        .iter()
        .map(|w| format!("\"{}\"", output::truncate(&output::clean_line(w), 40)))
        .collect();
    Some(format!(
        "{full} of these have every word; the rest lack {} (partial matches, listed after the full ones)",
        words.join(" or ")
    ))
}

/// The query string, checked enough that a mistake is named here rather than by the hub.
fn query_params(args: &SearchArgs) -> Result<SearchParams> {
    let mut params = SearchParams::default();
    if let Some(q) = args
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        if q.len() > 1024 {
            return Err(UserError::new(format!(
                "the query is {} bytes long; the hub takes at most 1024",
                q.len()
            ))
            .into());
        }
        params.q = Some(q.to_string());
    }
    for (flag, param, values) in [
        ("--capability", &mut params.capability, &args.capability),
        ("--keyword", &mut params.keyword, &args.keyword),
    ] {
        if values.is_empty() {
            continue;
        }
        for v in values {
            if v.trim().is_empty() || v.contains(',') {
                return Err(UserError::new(format!(
                    "invalid {flag} `{v}`: give one non-empty value per flag"
                ))
                .hint(format!("repeat the flag for several: `{flag} a {flag} b`"))
                .into());
            }
        }
        let joined: Vec<&str> = values.iter().map(|v| v.trim()).collect();
        *param = Some(joined.join(","));
    }
    if let Some(k) = &args.kind {
        params.kind = Some(k.trim().to_string());
    }
    if let Some(p) = &args.publisher {
        params.publisher = Some(p.trim().to_string());
    }
    params.sort = Some(args.sort.as_str().to_string());
    params.mode = args.mode.map(|m| {
        match m {
            SearchModeArg::Keyword => "keyword",
            SearchModeArg::Semantic => "semantic",
            SearchModeArg::Hybrid => "hybrid",
        }
        .to_string()
    });
    params.limit = Some(args.limit.to_string());
    params.deprecated = match args.deprecated {
        DeprecatedShown::Include => None,
        DeprecatedShown::Exclude => Some("exclude".into()),
        DeprecatedShown::Only => Some("only".into()),
    };
    if args.facets {
        params.facets = Some("true".into());
    }
    if args.verified {
        params.verified = Some("true".into());
    }
    Ok(params)
}

fn has_filters(args: &SearchArgs) -> bool {
    !args.capability.is_empty()
        || !args.keyword.is_empty()
        || args.kind.is_some()
        || args.publisher.is_some()
        || args.verified
}

fn no_match_message(args: &SearchArgs) -> String {
    let mut what = Vec::new();
    if let Some(q) = args
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        what.push(format!("\"{q}\""));
    }
    for c in &args.capability {
        what.push(format!("capability {c}"));
    }
    for k in &args.keyword {
        what.push(format!("keyword {k}"));
    }
    if let Some(k) = &args.kind {
        what.push(format!("kind {k}"));
    }
    if let Some(p) = &args.publisher {
        what.push(format!("publisher {p}"));
    }
    if args.verified {
        what.push("of a verified namespace".into());
    }
    if what.is_empty() {
        "the hub has no agents yet".into()
    } else {
        format!("no agents match {}", what.join(", "))
    }
}

/// The table; the tagline is cut to what fits `width` (or to a fixed width off a terminal).
fn render(hits: &[Hit], width: Option<usize>) -> Vec<String> {
    let name_w = hits
        .iter()
        .map(|h| h.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let version_w = hits
        .iter()
        .map(|h| h.version.chars().count())
        .max()
        .unwrap_or(0)
        .max(7);
    let downloads_w = hits
        .iter()
        .map(|h| h.downloads.to_string().len())
        .max()
        .unwrap_or(0)
        .max(9);
    // A hub searching by meaning says why each hit matched: a column of its own.
    let whys: Option<Vec<String>> = hits
        .iter()
        .any(|h| !h.matched_by.is_empty())
        .then(|| hits.iter().map(why_matched).collect());
    let why_w = whys.as_ref().map_or(0, |w| {
        w.iter()
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
            .max(7)
            + 2
    });
    let tagline_w = match width {
        Some(w) => w
            .saturating_sub(name_w + version_w + downloads_w + 6 + why_w)
            .max(MIN_TAGLINE_WIDTH),
        None => PIPED_TAGLINE_WIDTH,
    };
    let rows: Vec<Vec<String>> = hits
        .iter()
        .map(|h| {
            let mut tagline = if h.deprecated {
                format!("[deprecated] {}", h.tagline)
            } else {
                h.tagline.clone()
            };
            if let Some(d) = &h.verified_domain {
                // The hub's text, cleaned for the terminal.
                tagline = format!(
                    "[verified: {}] {tagline}",
                    output::truncate(&output::clean_line(d), 80)
                );
            }
            vec![
                h.name.clone(),
                h.version.clone(),
                h.downloads.to_string(),
                output::truncate(&tagline, tagline_w),
            ]
        })
        .collect();
    match whys {
        Some(whys) => {
            let rows: Vec<Vec<String>> = rows
                .into_iter()
                .zip(whys)
                .map(|(mut r, w)| {
                    r.push(w);
                    r
                })
                .collect();
            output::table(
                &["NAME", "VERSION", "DOWNLOADS", "TAGLINE", "MATCHED"],
                &rows,
            )
        }
        None => output::table(&["NAME", "VERSION", "DOWNLOADS", "TAGLINE"], &rows),
    }
}

/// Why a hit matched, from what the hub says: `words "invoice"` (the highlighted words, at most
/// three), `meaning 0.71` (the cosine similarity), or both. The hub's text, cleaned.
fn why_matched(h: &Hit) -> String {
    let mut parts = Vec::new();
    if h.matched_by.iter().any(|m| m == "words") {
        let mut words: Vec<String> = Vec::new();
        for hl in &h.highlights {
            for r in &hl.ranges {
                let (start, end) = (r.start, r.end);
                if let Some(w) = hl.fragment.get(start..end) {
                    let w = output::truncate(&output::clean_line(&w.to_lowercase()), 24);
                    if !words.contains(&w) {
                        words.push(w);
                    }
                }
            }
        }
        words.truncate(3);
        parts.push(if words.is_empty() {
            "words".to_owned()
        } else {
            let quoted: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
            format!("words {}", quoted.join(" "))
        });
    }
    if h.matched_by.iter().any(|m| m == "meaning") {
        parts.push(match h.similarity {
            Some(s) => format!("meaning {s:.2}"),
            None => "meaning".to_owned(),
        });
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facets_print_one_line_per_facet_in_the_hubs_order_cleaned() {
        let c = |v: &str, n: u64| FacetCount {
            value: v.into(),
            count: n,
        };
        let f = SearchFacets {
            capability: vec![c("summarize", 4), c("translate", 2)],
            keyword: Vec::new(),
            kind: vec![c("remote", 5)],
            publisher: vec![c("evil\u{1b}]52;x", 1)],
        };
        assert_eq!(
            facet_lines(&f),
            [
                "capability: summarize 4, translate 2",
                "kind: remote 5",
                "publisher: evil ]52;x 1",
            ]
        );
    }

    fn hit(name: &str, tagline: &str, downloads: u64) -> Hit {
        Hit {
            name: name.into(),
            version: "1.0.0".into(),
            display_name: String::new(),
            tagline: tagline.into(),
            kind: "bundle".into(),
            downloads,
            updated_at: 0,
            deprecated: false,
            verified_domain: None,
            score: None,
            highlights: Vec::new(),
            matched_by: Vec::new(),
            similarity: None,
            missing_words: Vec::new(),
        }
    }

    #[test]
    fn a_hub_searching_by_meaning_gets_a_column_saying_why_each_hit_matched() {
        use index_schema::hub_api::{ByteRange, SearchHighlight};
        let plain = [hit("a/b", "reads invoices", 1)];
        assert!(!render(&plain, None)[0].contains("MATCHED"));
        let mut words = hit("a/invoices", "reads invoices", 1);
        words.matched_by = vec!["words".into(), "meaning".into()];
        words.similarity = Some(0.712);
        words.highlights = vec![SearchHighlight {
            field: "tagline".into(),
            fragment: "reads Invoices".into(),
            ranges: vec![ByteRange { start: 6, end: 14 }],
        }];
        let mut meaning = hit("b/bookkeeper", "reconciles your books", 1);
        meaning.matched_by = vec!["meaning".into()];
        meaning.similarity = Some(0.4449);
        let lines = render(&[words, meaning], None);
        assert!(lines[0].ends_with("MATCHED"), "{lines:?}");
        assert!(
            lines[1].ends_with("words \"invoices\", meaning 0.71"),
            "{lines:?}"
        );
        assert!(lines[2].ends_with("meaning 0.44"), "{lines:?}");
    }

    #[test]
    fn partial_matches_are_announced() {
        let mut a = hit("a/b", "x", 1);
        let mut b = hit("c/d", "y", 1);
        assert_eq!(fewer_words_note(&[a.clone(), b.clone()], &[]), None);
        b.missing_words = vec!["web".into()];
        a.missing_words = Vec::new();
        let note = fewer_words_note(&[a, b], &["web".into(), "monitor".into()]).unwrap();
        assert!(note.starts_with("1 of these have every word"), "{note}");
        assert!(note.contains("\"web\" or \"monitor\""), "{note}");
    }

    #[test]
    fn taglines_fit_the_terminal_or_a_fixed_width() {
        let long = "word ".repeat(40);
        let hits = [hit("a/b", &long, 3), hit("acme/data", "short", 12345)];
        let piped = render(&hits, None);
        assert_eq!(piped[0], "NAME       VERSION  DOWNLOADS  TAGLINE");
        assert_eq!(piped[1].chars().count(), 11 + 9 + 11 + PIPED_TAGLINE_WIDTH);
        assert!(piped[1].ends_with('…'));
        let term = render(&hits, Some(80));
        assert!(term.iter().all(|l| l.chars().count() <= 80), "{term:#?}");
        let narrow = render(&hits, Some(10));
        assert!(narrow[1].ends_with('…'));
        assert_eq!(narrow[2], "acme/data  1.0.0    12345      short");
    }
}
