//! Verified namespaces (issue 33, point 3): a namespace claims a domain and proves it, and
//! the proof is re-checked.
//!
//! **The proof** is a line, `v=ofc1; k=ed25519; p=<base64 of a 32-byte ed25519 public key>`,
//! naming one of the namespace's publisher keys — the domain's owner vouches for that key, so
//! what the key signs comes from the domain. It is published either
//!
//! - as a TXT record on the domain itself (`--method dns`), the form of the MCP Registry's
//!   domain proofs with ofc's own version tag, or
//! - as a line of the file `https://DOMAIN/.well-known/ofc-namespace.txt` (`--method https`),
//!   fetched over TLS with a certificate valid for DOMAIN.
//!
//! Records or lines not starting with `v=ofc1` are ignored (a domain has SPF and other TXT
//! records); a `v=ofc1` one that does not parse is reported. Any record naming a live key of
//! the namespace proves the claim; one naming only other keys (or revoked ones) is refused
//! saying so.
//!
//! **One domain a namespace**: a new proved claim replaces the old. **Re-checks**: every
//! `verify_recheck_secs` (24 h by default) the hub fetches each proof again (the hub-server
//! task calls [`recheck_due`], on the one replica holding [`RECHECK_LEASE`]); a failure
//! *lapses* the verification (the time of the first failure and why are kept and shown)
//! until a later re-check passes. A revoked key ends the
//! verification at once (the read joins the key). Verification is not in the search index:
//! it can change without any change to the agents, so search asks the store for the verified
//! publishers ([`prepare_query`], [`mark_hits`]).
//!
//! Fetching is the adapter's ([`ProofSource`]: hub-server's HTTPS client and DNS resolver,
//! pointed by the settings `verify_ca_file`, `verify_dns_server` and `verify_https_port`);
//! the rules — what a proof must say, who may claim, when it lapses — are here.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;

use index_schema::envelope::PublicKey;
use index_schema::hub_api::{ErrorCode, NamespaceInfo, SearchHit};

use crate::accounts::actor;
use crate::auth::{Principal, Scope};
use crate::error::{CoreError, CoreResult};
use crate::hub::Hub;
use crate::namespaces::{authorize, find, info};
use crate::store::{KeyRow, now_ms};

/// Where the HTTPS proof lives on a domain.
pub const WELL_KNOWN_PATH: &str = "/.well-known/ofc-namespace.txt";

/// The lease of the re-checks (a PostgreSQL advisory lock key: `ofc-doms` in ASCII): one
/// replica among those sharing a database re-checks the proofs (hub-server's task).
pub const RECHECK_LEASE: i64 = 0x6f66_632d_646f_6d73;

/// The version tag every proof record starts with.
pub const RECORD_TAG: &str = "v=ofc1";

/// How a domain is proved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `https://DOMAIN/.well-known/ofc-namespace.txt`.
    Https,
    /// A TXT record on DOMAIN.
    Dns,
}

impl Method {
    /// `https` or `dns`.
    pub fn parse(s: &str) -> CoreResult<Method> {
        match s.trim().to_ascii_lowercase().as_str() {
            "https" => Ok(Method::Https),
            "dns" => Ok(Method::Dns),
            other => Err(CoreError::invalid(
                ErrorCode::InvalidParameter,
                format!(
                    "unknown proof method `{}`; expected `https` or `dns`",
                    other.chars().take(40).collect::<String>()
                ),
            )),
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Https => "https",
            Method::Dns => "dns",
        }
    }

    /// Where the proof is, for messages.
    pub fn place(self, domain: &str) -> String {
        match self {
            Method::Https => format!("https://{domain}{WELL_KNOWN_PATH}"),
            Method::Dns => format!("the TXT records of {domain}"),
        }
    }
}

/// Why a proof could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The place answered that there is nothing there (NXDOMAIN, no TXT record, HTTP 404).
    Missing(String),
    /// It could not be asked (no answer, a TLS failure, a server error, too large…).
    Failed(String),
    /// The outbound address policy ([`crate::outbound`]) refused every address the domain
    /// resolves to: the hub does not connect there (the message names them).
    Refused(String),
}

/// The future of a [`ProofSource`] fetch.
pub type Fetching<'a> = Pin<Box<dyn Future<Output = Result<Vec<String>, FetchError>> + Send + 'a>>;

/// Reads a domain's proof records: its TXT records, or the lines of its well-known file.
pub trait ProofSource: Send + Sync + std::fmt::Debug {
    /// The records (TXT strings of a record joined, or non-empty lines of the file).
    fn records<'a>(&'a self, domain: &'a str, method: Method) -> Fetching<'a>;
}

/// Checks a domain name: ASCII letters, digits and `-` in labels of 1 to 63, at least two
/// labels, at most 253 characters; lowercased, one trailing dot dropped. IP addresses are
/// refused (a proof is about a name).
pub fn check_domain(s: &str) -> CoreResult<String> {
    let bad = |why: &str| {
        CoreError::invalid(
            ErrorCode::InvalidDomain,
            format!(
                "`{}` is not a domain name: {why}",
                s.chars().take(80).collect::<String>()
            ),
        )
    };
    let d = s.trim().trim_end_matches('.').to_ascii_lowercase();
    if d.is_empty() {
        return Err(bad("it is empty"));
    }
    if d.len() > 253 {
        return Err(bad("longer than 253 characters"));
    }
    let labels: Vec<&str> = d.split('.').collect();
    if labels.len() < 2 {
        return Err(bad("it needs at least two labels (e.g. `example.com`)"));
    }
    for l in &labels {
        if l.is_empty() || l.len() > 63 {
            return Err(bad("each label has 1 to 63 characters"));
        }
        if !l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(bad(
                "only letters, digits, `-` and `.` (an internationalised name in its \
                 `xn--` form)",
            ));
        }
        if l.starts_with('-') || l.ends_with('-') {
            return Err(bad("a label starts or ends with `-`"));
        }
    }
    if labels
        .last()
        .is_some_and(|t| t.chars().all(|c| c.is_ascii_digit()))
    {
        return Err(bad("an IP address, not a name"));
    }
    Ok(d)
}

/// The record that proves `key` (`ed25519:<base64>`).
pub fn record_for(key: &str) -> String {
    format!(
        "{RECORD_TAG}; k=ed25519; p={}",
        key.strip_prefix("ed25519:").unwrap_or(key)
    )
}

/// A `v=ofc1` record's key, or why it does not parse; `None` for other records.
fn parse_record(record: &str) -> Option<Result<PublicKey, String>> {
    let mut fields = record.split(';').map(str::trim);
    if fields.next()? != RECORD_TAG {
        return None;
    }
    let (mut k, mut p) = (None, None);
    for f in fields.filter(|f| !f.is_empty()) {
        match f.split_once('=') {
            Some(("k", v)) => k = Some(v.trim()),
            Some(("p", v)) => p = Some(v.trim()),
            // Fields of later versions of the form are ignored.
            _ => {}
        }
    }
    Some(match (k, p) {
        (Some("ed25519"), Some(p)) => {
            PublicKey::parse(&format!("ed25519:{p}")).map_err(|e| format!("its `p=`: {e}"))
        }
        (Some("ed25519"), None) => Err("no `p=` field".into()),
        (Some(other), _) => Err(format!("`k={other}`: only `k=ed25519` is known")),
        (None, _) => Err("no `k=` field".into()),
    })
}

/// What the records prove for a namespace with `keys`: the key id of a live key they name, or
/// why not (a message with the records to publish).
pub fn judge(
    namespace: &str,
    domain: &str,
    method: Method,
    fetched: Result<Vec<String>, FetchError>,
    keys: &[KeyRow],
) -> Result<String, String> {
    let live: Vec<&KeyRow> = keys.iter().filter(|k| k.revoked_at.is_none()).collect();
    let place = method.place(domain);
    let publish = || {
        let mut s = match method {
            Method::Dns => format!("publish a TXT record on {domain} with"),
            Method::Https => format!("serve at https://{domain}{WELL_KNOWN_PATH} a line"),
        };
        s.push_str(if live.len() > 1 { " one of:" } else { ":" });
        for k in &live {
            let _ = write!(s, "\n  {}", record_for(&k.public_key));
        }
        s
    };
    if live.is_empty() {
        return Err(format!(
            "namespace `{namespace}` has no live publisher key for {domain} to vouch for; \
             register one first (`ofc key register --namespace {namespace}`)"
        ));
    }
    let records = match fetched {
        Ok(r) => r,
        Err(FetchError::Missing(why)) => {
            return Err(format!("no proof at {place} ({why}); {}", publish()));
        }
        Err(FetchError::Failed(why)) => {
            return Err(format!(
                "could not read {place}: {why}; once it answers, it must hold the proof — {}",
                publish()
            ));
        }
        Err(FetchError::Refused(why)) => {
            return Err(format!(
                "the hub does not fetch {place}: {why}; a DNS proof (`--method dns`) does not \
                 connect to the domain"
            ));
        }
    };
    let mut malformed = Vec::new();
    let mut others = Vec::new();
    for r in &records {
        match parse_record(r) {
            None => {}
            Some(Err(why)) => malformed.push(format!("`{}`: {why}", shown(r))),
            Some(Ok(key)) => {
                let text = key.to_string();
                match keys.iter().find(|k| k.public_key == text) {
                    Some(k) if k.revoked_at.is_none() => return Ok(k.key_id.clone()),
                    Some(k) => others.push(format!("{} (revoked)", k.key_id)),
                    None => others.push(format!("{} (not a key of `{namespace}`)", key.key_id())),
                }
            }
        }
    }
    let mut why = if !others.is_empty() {
        format!(
            "the proof at {place} names the key {} and no live key of namespace `{namespace}`",
            others.join(", ")
        )
    } else if !malformed.is_empty() {
        format!("the `{RECORD_TAG}` record at {place} does not parse")
    } else {
        format!(
            "no `{RECORD_TAG}` record at {place} ({} other record{})",
            records.len(),
            if records.len() == 1 { "" } else { "s" }
        )
    };
    for m in &malformed {
        let _ = write!(why, "; {m}");
    }
    Err(format!("{why}; {}", publish()))
}

fn shown(s: &str) -> String {
    let mut out: String = s.chars().take(100).collect();
    if s.chars().count() > 100 {
        out.push('…');
    }
    out
}

/// Claims `domain` for `namespace` and proves it now by `method`: the namespace as it is
/// then. Owners only (the `manage_members` scope). Refused with `domain_proof_failed` and the
/// record to publish when the proof is missing or names no live key of the namespace.
pub async fn verify(
    hub: &Hub,
    p: &Principal,
    source: &dyn ProofSource,
    namespace: &str,
    domain: &str,
    method: &str,
) -> CoreResult<NamespaceInfo> {
    let ns = find(hub, namespace).await?;
    authorize(hub, p, Scope::ManageMembers, &ns).await?;
    let domain = check_domain(domain)?;
    let method = Method::parse(method)?;
    let keys = hub.store.keys(ns.id).await?;
    let fetched = source.records(&domain, method).await;
    let key_id = judge(&ns.name, &domain, method, fetched, &keys)
        .map_err(|m| CoreError::invalid(ErrorCode::DomainProofFailed, m))?;
    hub.store
        .set_domain(&actor(p), &ns, &domain, method.as_str(), &key_id, now_ms())
        .await?;
    tracing::info!(namespace = %ns.name, %domain, method = method.as_str(), key = %key_id,
        "namespace verified");
    info(hub, &ns.name).await
}

/// Drops the claimed domain of `namespace` (owners only); 404 when it has none.
pub async fn remove(hub: &Hub, p: &Principal, namespace: &str) -> CoreResult<()> {
    let ns = find(hub, namespace).await?;
    authorize(hub, p, Scope::ManageMembers, &ns).await?;
    if hub.store.remove_domain(&actor(p), &ns, now_ms()).await? {
        Ok(())
    } else {
        Err(CoreError::not_found(
            ErrorCode::NotFound,
            format!("namespace `{}` claims no domain", ns.name),
        ))
    }
}

/// What a round of re-checks did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rechecked {
    /// Proofs fetched.
    pub checked: usize,
    /// Verifications that lapsed in this round.
    pub lapsed: usize,
    /// Lapsed verifications whose proof holds again.
    pub restored: usize,
}

/// Re-checks the claims not checked for `verify_recheck_secs`, at most `limit` of them, one
/// after another.
pub async fn recheck_due(hub: &Hub, source: &dyn ProofSource, limit: i64) -> CoreResult<Rechecked> {
    let interval = i64::try_from(hub.config.verify_recheck_secs.max(1).saturating_mul(1000))
        .unwrap_or(i64::MAX);
    let due = hub
        .store
        .domains_due(now_ms().saturating_sub(interval), limit)
        .await?;
    let mut done = Rechecked::default();
    for d in due {
        let Ok(method) = Method::parse(&d.method) else {
            continue;
        };
        let keys = hub.store.keys(d.namespace_id).await?;
        let fetched = source.records(&d.domain, method).await;
        let outcome = judge(&d.namespace, &d.domain, method, fetched, &keys);
        let changed = hub
            .store
            .record_domain_check(
                d.namespace_id,
                &d.domain,
                outcome.as_deref().map_err(String::as_str),
                now_ms(),
            )
            .await?;
        done.checked += 1;
        match (&outcome, changed) {
            (Err(why), true) => {
                done.lapsed += 1;
                tracing::warn!(namespace = %d.namespace, domain = %d.domain, %why,
                    "namespace verification lapsed");
            }
            (Ok(_), true) => {
                done.restored += 1;
                tracing::info!(namespace = %d.namespace, domain = %d.domain,
                    "namespace verification holds again");
            }
            _ => {}
        }
    }
    Ok(done)
}

/// The verified namespaces and their domains.
pub async fn verified(hub: &Hub) -> CoreResult<HashMap<String, String>> {
    Ok(hub.store.verified_domains().await?.into_iter().collect())
}

/// Fills the verified publishers of a `verified=true` search.
pub async fn prepare_query(hub: &Hub, q: &mut hub_search::SearchQuery) -> CoreResult<()> {
    if q.verified {
        q.verified_publishers = verified(hub).await?.into_keys().collect();
    }
    Ok(())
}

/// Marks the hits of verified namespaces with their domain.
pub async fn mark_hits(hub: &Hub, hits: &mut [SearchHit]) -> CoreResult<()> {
    if hits.is_empty() {
        return Ok(());
    }
    let verified = verified(hub).await?;
    for h in hits {
        let publisher = h.name.split('/').next().unwrap_or_default();
        h.verified_domain = verified.get(publisher).cloned();
    }
    Ok(())
}

#[cfg(test)]
#[path = "domains_tests.rs"]
mod tests;
