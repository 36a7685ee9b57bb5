//! Discovery documents other tools read: the AI catalog (`/.well-known/ai-catalog.json`) and
//! the `POST /search` of the Agentic Resource Discovery draft (ARD v0.9,
//! github.com/ards-project/ard-spec), and the signatures of the A2A cards the hub serves (A2A
//! §8.4) with the JWK Set that holds their key. HTTP lives in hub-server; the rules are here.
//!
//! **Entries.** Every agent the search index shows is one catalog entry: identifier
//! `urn:air:<registry_host>:<publisher>:<agent>`; a `remote` agent is an A2A agent
//! (`application/a2a-agent-card+json`, `url` its signed card), any other an ofc agent
//! ([`OFC_AGENT_TYPE`], `url` its record in the JSON API, which `ofc pull` installs from).
//! Description is the tagline, `tags` the keywords, `capabilities` the capability names,
//! `representativeQueries` the manifest's examples when it has 2 to 5.
//!
//! **The card key** is derived from the log key ([`LogSigner::derived_key`]): replicas share
//! the log key already (and check it against the database), so they sign cards alike without
//! another secret to distribute, and no signature of one key verifies under the other.
//!
//! [`LogSigner::derived_key`]: index_schema::tlog::LogSigner::derived_key

use std::collections::BTreeMap;

use index_schema::a2a_sign::CardSigner;
use index_schema::hub_api::{SearchHit, SearchParams};
use index_schema::name::AgentName;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use crate::error::{CoreError, CoreResult, ErrorCode};
use crate::hub::Hub;
use crate::{agents, search};

/// Where the AI catalog is served.
pub const CATALOG_PATH: &str = "/.well-known/ai-catalog.json";
/// Where the JWK Set of the card key is served.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";
/// The ARD registry's base: its `POST /search` is `{ARD_BASE}/search`.
pub const ARD_BASE: &str = "/api/v1/ard";
/// What the card key is derived for.
pub const CARD_KEY_PURPOSE: &str = "a2a-card-signing";

/// The entry type of an A2A agent (its card).
pub const A2A_CARD_TYPE: &str = "application/a2a-agent-card+json";
/// The entry type of an ofc agent: its record, `GET /api/v1/agents/{publisher}/{agent}`.
pub const OFC_AGENT_TYPE: &str = "application/vnd.ofc.agent+json";
/// The entry type of an ARD registry (this hub's search).
pub const REGISTRY_TYPE: &str = "application/ai-registry+json";
/// The entry type of a nested catalog (the catalog's next page).
pub const CATALOG_TYPE: &str = "application/ai-catalog+json";

/// Results per page of `POST /search` when `pageSize` is absent, and the most (ARD §7.2).
pub const DEFAULT_PAGE_SIZE: u32 = 10;
/// The most results of a `POST /search` page.
pub const MAX_PAGE_SIZE: u32 = 100;
/// Agents per page of the catalog (each further page is a nested catalog entry).
pub const CATALOG_PAGE: u32 = 100;

/// The hub's card signer.
pub fn card_signer(hub: &Hub) -> CardSigner {
    CardSigner::new(hub.log.derived_key(CARD_KEY_PURPOSE))
}

/// The A2A card of a remote agent ([`agents::agent_card`]) with the hub's signature.
pub async fn signed_agent_card(
    hub: &Hub,
    publisher: &str,
    agent: &str,
) -> CoreResult<Map<String, Value>> {
    let mut card = agents::agent_card(hub, publisher, agent).await?;
    card_signer(hub).sign(&mut card);
    Ok(card)
}

/// A `POST /search` body (ARD §7.1-7.2). Unknown members are refused.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SearchRequest {
    /// What is searched for.
    pub query: Query,
    /// `auto` (default), `referrals` or `none`.
    #[serde(default)]
    pub federation: Option<String>,
    /// Results per page, 1 to 100 (10 by default).
    #[serde(default)]
    pub page_size: Option<i64>,
    /// The `pageToken` of the previous page.
    #[serde(default)]
    pub page_token: Option<String>,
}

/// The query object of ARD §7.1.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Query {
    /// Natural-language text (required by Search).
    pub text: String,
    /// Field path → one value or an array of values.
    #[serde(default)]
    pub filter: Option<BTreeMap<String, Value>>,
}

/// Where the hub is reached and what it is called, for the documents' addresses.
#[derive(Debug, Clone)]
pub struct Site {
    /// `scheme://host[:port]` of the request, no trailing slash.
    pub origin: String,
    /// The URN publisher: `registry_host` without a port, lowercase.
    pub host: String,
}

impl Site {
    /// The site of a request to `origin` on `hub`.
    pub fn new(hub: &Hub, origin: String) -> Self {
        let h = &hub.config.registry_host;
        let host = h.rsplit_once(':').map_or(h.as_str(), |(h, _)| h);
        Site {
            origin,
            host: host.to_ascii_lowercase(),
        }
    }

    fn registry_url(&self) -> String {
        format!("{}{ARD_BASE}", self.origin)
    }
}

fn invalid(code: ErrorCode, message: impl Into<String>) -> CoreError {
    CoreError::invalid(code, message)
}

/// The values of one filter key: a string or an array of strings (ARD §7.1).
fn filter_values(key: &str, v: &Value) -> CoreResult<Vec<String>> {
    let bad = || {
        invalid(
            ErrorCode::InvalidParameter,
            format!("filter `{key}` takes a string or an array of strings"),
        )
    };
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) if !a.is_empty() => a
            .iter()
            .map(|x| x.as_str().map(str::to_string).ok_or_else(bad))
            .collect(),
        _ => Err(bad()),
    }
}

/// One value of a key this hub's index filters on one value at a time.
fn single(key: &str, values: Vec<String>, field: &str) -> CoreResult<String> {
    match <[String; 1]>::try_from(values) {
        // The index reads a comma as "and another": one literal value holds none (no
        // keyword or capability name has one).
        Ok([v]) if v.contains(',') => Err(invalid(
            ErrorCode::InvalidParameter,
            format!(
                "filter `{key}`: {v:?} holds a comma, which no {field} of this hub has (one \
                 {field} per query)"
            ),
        )),
        Ok([v]) => Ok(v),
        Err(_) => Err(invalid(
            ErrorCode::InvalidParameter,
            format!(
                "filter `{key}` takes one value on this hub (ARD ORs several; the index filters \
                 on one {field} per query)"
            ),
        )),
    }
}

/// The search parameters a query stands for, or `None` when its filter matches no entry of
/// this hub (a type or publisher it has none of).
fn params_of(req: &SearchRequest, site: &Site, limit: u32) -> CoreResult<Option<SearchParams>> {
    let mut p = SearchParams {
        q: Some(req.query.text.clone()),
        limit: Some(limit.to_string()),
        cursor: req.page_token.clone(),
        ..SearchParams::default()
    };
    for (key, v) in req.query.filter.iter().flatten() {
        let values = filter_values(key, v)?;
        match key.as_str() {
            "type" => {
                let a2a = values.iter().any(|t| t == A2A_CARD_TYPE);
                let ofc = values.iter().any(|t| t == OFC_AGENT_TYPE);
                match (a2a, ofc) {
                    (true, true) => {}
                    (true, false) => p.kind = Some("remote".into()),
                    (false, false) => return Ok(None),
                    (false, true) => {
                        return Err(invalid(
                            ErrorCode::InvalidParameter,
                            format!(
                                "filter `type` [{OFC_AGENT_TYPE}] alone is not supported: the \
                                 index filters on one source kind; leave `type` out, or ask \
                                 for {A2A_CARD_TYPE}"
                            ),
                        ));
                    }
                }
            }
            "tags" => p.keyword = Some(single(key, values, "keyword")?),
            "capabilities" => p.capability = Some(single(key, values, "capability")?),
            "publisher" => {
                if !values.iter().any(|v| v.eq_ignore_ascii_case(&site.host)) {
                    return Ok(None);
                }
            }
            other => {
                return Err(invalid(
                    ErrorCode::InvalidParameter,
                    format!(
                        "filter `{other}` is not supported here; this hub filters on type, \
                         tags, capabilities and publisher"
                    ),
                ));
            }
        }
    }
    Ok(Some(p))
}

/// Answers a `POST /search` (ARD §7.2) from the hub's search index.
pub async fn search(hub: &Hub, req: SearchRequest, site: &Site) -> CoreResult<Value> {
    let limit = match req.page_size {
        None => DEFAULT_PAGE_SIZE,
        Some(n) if (1..=i64::from(MAX_PAGE_SIZE)).contains(&n) => n as u32,
        Some(n) => {
            return Err(invalid(
                ErrorCode::InvalidLimit,
                format!("pageSize is 1 to {MAX_PAGE_SIZE}, not {n}"),
            ));
        }
    };
    match req.federation.as_deref() {
        // This hub knows no other registry: every mode answers from its own index (and
        // `referrals` has none to give).
        None | Some("auto" | "none" | "referrals") => {}
        Some(other) => {
            return Err(invalid(
                ErrorCode::InvalidParameter,
                format!("federation is auto, referrals or none, not `{other}`"),
            ));
        }
    }
    // The page token: the cap of the previous page (its last score) and the index's cursor.
    let (cap, cursor) = match req.page_token.as_deref() {
        None => (100, None),
        Some(t) => {
            let (cap, cursor) = split_token(t)?;
            (cap, Some(cursor.to_string()))
        }
    };
    let req = SearchRequest {
        page_token: cursor,
        ..req
    };
    let Some(params) = params_of(&req, site, limit)? else {
        return Ok(json!({ "results": [] }));
    };
    let ranked = run(hub, &params).await?;
    let words = hub_search::words::query_words(&req.query.text).len();
    let mut cap = cap;
    let mut results = Vec::with_capacity(ranked.page.hits.len());
    for hit in &ranked.page.hits {
        // Ordered as the hits are: never above the one before, on this page or the last.
        cap = cap.min(score(hit, words, ranked.best));
        let Some(mut entry) = entry_of(hub, hit, site).await? else {
            continue;
        };
        entry.insert("score".into(), json!(cap));
        entry.insert("source".into(), json!(site.registry_url()));
        let meta = entry
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("metadata is an object");
        meta.insert("searchMode".into(), json!(ranked.mode.as_str()));
        if !hit.matched_by.is_empty() {
            meta.insert("matchedBy".into(), json!(hit.matched_by.join(",")));
        }
        if let Some(sim) = hit.similarity.filter(|s| s.is_finite()) {
            meta.insert(
                "similarity".into(),
                json!((f64::from(sim) * 1000.0).round() / 1000.0),
            );
        }
        results.push(Value::Object(entry));
    }
    let mut out = json!({ "results": results });
    if let Some(next) = ranked.page.next_cursor {
        out["pageToken"] = json!(format!("{cap}.{next}"));
    }
    Ok(out)
}

/// A `pageToken` this hub gave: `<cap>.<cursor>`, the score of the previous page's last
/// result (0-100) and the index's cursor.
fn split_token(token: &str) -> CoreResult<(u8, &str)> {
    token
        .split_once('.')
        .and_then(|(cap, cursor)| {
            let cap = cap.parse::<u8>().ok().filter(|c| *c <= 100)?;
            (!cursor.is_empty()).then_some((cap, cursor))
        })
        .ok_or_else(|| {
            invalid(
                ErrorCode::InvalidCursor,
                "pageToken is not one this hub gave (pass the `pageToken` of the previous page \
                 unchanged)",
            )
        })
}

/// The ARD relevance score (0-100) of a hit; ARD calls it informational (not trust), and the
/// order is the index's. `best` is the largest fused score of the mode the query ran in
/// ([`hub_search::hybrid::Fusion::best_possible`]); `None` in keyword mode.
///
/// - **Hybrid** (a model, a text query): the hit's fused score over the best possible one, so
///   100 is an agent first both by its words and by meaning, about 50 one first on one side
///   and absent from the other, and the scores fall as the ranks do, across pages too.
/// - **Keyword**: of a query of `words` words, a hit lacking m of them scores
///   `(words - m + s/(s+5)) / (words + 1)`, s the index's score (BM25 with its boosts): each
///   word found is worth a share, and the strength of the match fills the last share; full
///   matches score above every partial one, as they rank. Without text (nothing to be relevant
///   to) every hit scores 100.
fn score(hit: &SearchHit, words: usize, best: Option<f32>) -> u8 {
    let s = hit
        .score
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(f64::from);
    let relevance = match (best, s) {
        (Some(best), Some(s)) if best > 0.0 => s / f64::from(best),
        (Some(_), _) => 0.0,
        (None, _) if words == 0 => 1.0,
        (None, None) => 0.0,
        (None, Some(s)) => {
            let have = words.saturating_sub(hit.missing_words.len());
            (have as f64 + s / (s + 5.0)) / (words as f64 + 1.0)
        }
    };
    (100.0 * relevance).round().clamp(0.0, 100.0) as u8
}

/// A page of hits, the mode it ran in, and that mode's best fused score.
struct Ranked {
    page: hub_search::SearchResults,
    mode: hub_search::SearchMode,
    best: Option<f32>,
}

/// Runs `params` in the mode the hub's search gives it: hybrid with a model and a text query
/// ranked by relevance, keyword otherwise (ARD's body has no `mode`).
async fn run(hub: &Hub, params: &SearchParams) -> CoreResult<Ranked> {
    let search = search_of(hub)?;
    let q = hub_search::SearchQuery::parse(params).map_err(|e| bad_query(&e))?;
    let fusion = search.semantic().map(|s| s.fusion);
    let mode = hub_search::hybrid::resolve_mode(&q, fusion.is_some()).map_err(|e| bad_query(&e))?;
    let page = tokio::task::spawn_blocking(move || search.run(&q))
        .await
        .map_err(CoreError::internal)?
        .map_err(|e| match e {
            hub_search::hybrid::HybridError::Query(e) => bad_query(&e),
            e => CoreError::internal(e),
        })?;
    Ok(Ranked {
        page,
        mode,
        best: fusion.and_then(|f| f.best_possible(mode)),
    })
}

/// A query parameter the index refused, named as ARD's body names it.
fn bad_query(e: &hub_search::QueryError) -> CoreError {
    let field = match e.field {
        "q" => "query.text",
        "cursor" => "pageToken",
        "capability" => "filter.capabilities",
        "keyword" => "filter.tags",
        other => other,
    };
    let code = if e.field == "cursor" {
        ErrorCode::InvalidCursor
    } else {
        ErrorCode::InvalidParameter
    };
    invalid(code, format!("{field}: {}", e.message))
}

fn search_of(hub: &Hub) -> CoreResult<std::sync::Arc<search::Search>> {
    hub.search.clone().ok_or_else(|| {
        CoreError::unavailable(
            ErrorCode::SearchUnavailable,
            "search is not enabled on this hub, and the discovery documents are read from it",
        )
    })
}

/// The catalog entry of a hit (`None` when the agent or the hit's version went away since it
/// was indexed: a removed version is never listed, even in the moment before the index
/// learns of it).
async fn entry_of(
    hub: &Hub,
    hit: &SearchHit,
    site: &Site,
) -> CoreResult<Option<Map<String, Value>>> {
    let Ok(name) = AgentName::parse(&hit.name) else {
        return Ok(None);
    };
    let (publisher, agent) = (name.publisher(), name.agent());
    let manifest = match agents::agent(hub, &name).await {
        Ok(a) => match agents::version(hub, &a, &hit.version).await {
            Ok(v) => agents::manifest_of(&v)?,
            Err(e) if e.kind == crate::Kind::NotFound || e.kind == crate::Kind::Gone => {
                return Ok(None);
            }
            Err(e) => return Err(e),
        },
        Err(e) if e.kind == crate::Kind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let api = format!("{}/api/v1/agents/{publisher}/{agent}", site.origin);
    let (kind, url) = if hit.kind == "remote" {
        (A2A_CARD_TYPE, format!("{api}/agent-card.json"))
    } else {
        (OFC_AGENT_TYPE, api)
    };
    let mut e = Map::new();
    e.insert(
        "identifier".into(),
        json!(format!("urn:air:{}:{publisher}:{agent}", site.host)),
    );
    let display = if hit.display_name.is_empty() {
        hit.name.clone()
    } else {
        hit.display_name.clone()
    };
    e.insert("displayName".into(), json!(display));
    e.insert("type".into(), json!(kind));
    e.insert("url".into(), json!(url));
    if !hit.tagline.is_empty() {
        e.insert("description".into(), json!(hit.tagline));
    }
    if !manifest.keywords.is_empty() {
        e.insert("tags".into(), json!(manifest.keywords));
    }
    let caps: Vec<&str> = manifest
        .capabilities
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    if !caps.is_empty() {
        e.insert("capabilities".into(), json!(caps));
    }
    if (2..=5).contains(&manifest.examples.len()) {
        e.insert("representativeQueries".into(), json!(manifest.examples));
    }
    e.insert("version".into(), json!(hit.version));
    if let Some(t) = rfc3339(hit.updated_at) {
        e.insert("updatedAt".into(), json!(t));
    }
    if hit.deprecated {
        e.insert("metadata".into(), json!({"deprecated": true}));
    }
    Ok(Some(e))
}

fn rfc3339(unix_secs: i64) -> Option<String> {
    time::OffsetDateTime::from_unix_timestamp(unix_secs)
        .ok()?
        .format(&time::format_description::well_known::Rfc3339)
        .ok()
}

/// The AI catalog: the hub's registry (its `POST /search`) first, then its agents, most
/// recently changed first, [`CATALOG_PAGE`] per page; a further page is a nested catalog entry
/// at the end (`CATALOG_PATH?pageToken=…`). `page_token` is that token.
pub async fn catalog(hub: &Hub, site: &Site, page_token: Option<&str>) -> CoreResult<Value> {
    let params = SearchParams {
        sort: Some("updated".into()),
        limit: Some(CATALOG_PAGE.to_string()),
        cursor: page_token.map(str::to_string),
        ..SearchParams::default()
    };
    let page = run(hub, &params).await?.page;
    let mut entries = Vec::new();
    if page_token.is_none() {
        entries.push(json!({
            "identifier": format!("urn:air:{}:registry:search", site.host),
            "displayName": format!("{} agent search", site.host),
            "type": REGISTRY_TYPE,
            "url": site.registry_url(),
            "description": "Search this hub's agents: ARD POST /search under this URL.",
        }));
    }
    for hit in &page.hits {
        if let Some(e) = entry_of(hub, hit, site).await? {
            entries.push(Value::Object(e));
        }
    }
    if let Some(next) = &page.next_cursor {
        let id = hex::encode(&Sha256::digest(next.as_bytes())[..8]);
        entries.push(json!({
            "identifier": format!("urn:air:{}:catalog:page-{id}", site.host),
            "displayName": format!("{} agents, next page", site.host),
            "type": CATALOG_TYPE,
            "url": format!("{}{CATALOG_PATH}?pageToken={}", site.origin, percent(next)),
        }));
    }
    Ok(json!({
        "specVersion": "1.0",
        "host": {
            "displayName": site.host,
            "identifier": site.host,
        },
        "entries": entries,
    }))
}

/// `s` with every byte but unreserved ones percent-encoded (RFC 3986), for a query value.
fn percent(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
