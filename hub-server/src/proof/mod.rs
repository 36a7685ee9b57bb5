//! Fetching the domain proofs of verified namespaces (hub-core `domains` holds the rules):
//! the HTTPS file `https://DOMAIN/.well-known/ofc-namespace.txt` and the domain's DNS TXT
//! records, as the settings point them — `verify_ca_file` (the CAs trusted for the HTTPS
//! proof instead of the built-in web roots), `verify_dns_server` (the DNS server asked for TXT
//! records and, by the HTTPS proof, for the domain's address) and `verify_https_port` — and
//! the task that re-checks them every `verify_recheck_secs` (on one replica: the holder of
//! an advisory-lock lease, [`start_rechecks`]).
//!
//! The HTTPS proof follows no redirect (the proof is at that URL of that domain, or not at
//! all), uses no proxy, reads at most 64 KiB and waits at most 10 s, as does a DNS question.
//! It connects only to the addresses the outbound address policy takes ([`crate::outbound`]):
//! a domain resolving only to loopback, private, link-local… addresses is refused at each
//! fetch — the claim and every re-check — naming the address, unless the hub setting
//! `outbound_allow_private` is on. (The DNS proof asks the configured resolver, not the
//! domain.)

pub mod dns;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use hub_core::Hub;
use hub_core::config::Config;
use hub_core::domains::{
    FetchError, Fetching, Method, ProofSource, RECHECK_LEASE, WELL_KNOWN_PATH,
};
use hub_core::store::db::Lease;

use dns::{Dns, DnsError};

use crate::outbound::{self, Lookup, SystemLookup};

/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest proof file read.
const MAX_FILE_BYTES: usize = 64 * 1024;

/// The hub's proof fetcher.
#[derive(Debug, Clone)]
pub struct Prover {
    http: reqwest::Client,
    dns: Option<Dns>,
    https_port: u16,
    allow_private: bool,
}

/// Resolves the HTTPS proof's domain through `verify_dns_server` (its A records).
#[derive(Debug)]
struct DnsLookup(Dns);

impl Lookup for DnsLookup {
    fn addrs<'a>(
        &'a self,
        host: &'a str,
    ) -> hub_core::trusted::BoxFuture<'a, Result<Vec<IpAddr>, String>> {
        Box::pin(async move {
            let ips = self.0.a(host).await.map_err(|e| match e {
                DnsError::NoRecords(m) | DnsError::Failed(m) => m,
            })?;
            Ok(ips.into_iter().map(IpAddr::V4).collect())
        })
    }
}

impl Prover {
    /// The fetcher the settings describe; an unreadable or empty `verify_ca_file` is an error.
    pub fn from_config(config: &Config) -> anyhow::Result<Self> {
        let dns = config
            .verify_dns_server
            .map(|server| Dns::new(server, FETCH_TIMEOUT));
        let lookup: Arc<dyn Lookup> = match &dns {
            Some(d) => Arc::new(DnsLookup(d.clone())),
            None => Arc::new(SystemLookup),
        };
        let mut http = outbound::client_builder(lookup, config.outbound_allow_private)
            .use_rustls_tls()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(FETCH_TIMEOUT)
            .user_agent(concat!(
                "ofc-hub/",
                env!("CARGO_PKG_VERSION"),
                " (domain proof)"
            ));
        if let Some(file) = &config.verify_ca_file {
            let pem = std::fs::read(file)
                .with_context(|| format!("verify_ca_file: cannot read {}", file.display()))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .with_context(|| format!("verify_ca_file: {} is not PEM", file.display()))?;
            if certs.is_empty() {
                anyhow::bail!(
                    "verify_ca_file: {} holds no certificate (expected PEM `CERTIFICATE` blocks)",
                    file.display()
                );
            }
            http = http.tls_built_in_root_certs(false);
            for c in certs {
                http = http.add_root_certificate(c);
            }
        }
        Ok(Prover {
            http: http
                .build()
                .context("cannot build the domain-proof HTTP client")?,
            dns,
            https_port: config.verify_https_port,
            allow_private: config.outbound_allow_private,
        })
    }

    async fn https(&self, domain: &str) -> Result<Vec<String>, FetchError> {
        let url = if self.https_port == 443 {
            format!("https://{domain}{WELL_KNOWN_PATH}")
        } else {
            format!("https://{domain}:{}{WELL_KNOWN_PATH}", self.https_port)
        };
        outbound::check_url(&url, self.allow_private).map_err(|r| FetchError::Refused(r.0))?;
        let mut resp =
            self.http
                .get(&url)
                .send()
                .await
                .map_err(|e| match outbound::refused(&e) {
                    Some(r) => FetchError::Refused(r.0.clone()),
                    None => FetchError::Failed(chain(&e)),
                })?;
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_FOUND || status == reqwest::StatusCode::GONE {
            return Err(FetchError::Missing(format!("HTTP {status}")));
        }
        if !status.is_success() {
            return Err(FetchError::Failed(format!(
                "HTTP {status}{}",
                if status.is_redirection() {
                    " (redirects are not followed: serve the file at that URL)"
                } else {
                    ""
                }
            )));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| FetchError::Failed(chain(&e)))?
        {
            if body.len() + chunk.len() > MAX_FILE_BYTES {
                return Err(FetchError::Failed(format!(
                    "the file is larger than {MAX_FILE_BYTES} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&body);
        Ok(text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_owned)
            .collect())
    }

    async fn txt(&self, domain: &str) -> Result<Vec<String>, FetchError> {
        let dns = match &self.dns {
            Some(d) => d.clone(),
            None => Dns::system(FETCH_TIMEOUT).map_err(|e| FetchError::Failed(e.to_string()))?,
        };
        dns.txt(domain).await.map_err(|e| match e {
            DnsError::NoRecords(m) => FetchError::Missing(m),
            DnsError::Failed(m) => FetchError::Failed(m),
        })
    }
}

impl ProofSource for Prover {
    fn records<'a>(&'a self, domain: &'a str, method: Method) -> Fetching<'a> {
        Box::pin(async move {
            match method {
                Method::Https => self.https(domain).await,
                Method::Dns => self.txt(domain).await,
            }
        })
    }
}

/// An error with its causes (`error sending request: … invalid peer certificate: UnknownIssuer`).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(c) = source {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        source = c.source();
    }
    s
}

/// How often a replica that is not the re-checker asks for the lease (and the holder checks
/// it still holds it).
const LEASE_ASK: Duration = Duration::from_secs(2);

/// Re-checks the due proofs every `verify_recheck_secs` (looking at most once a minute, and
/// at least once a `verify_recheck_secs`), until the process ends — on one replica among
/// those sharing a database: the holder of [`RECHECK_LEASE`] (a PostgreSQL session advisory
/// lock, see [`hub_core::store::db::Lease`]). The others ask for it every 2 s, so when the
/// holder dies another takes over within seconds (what is due is in the database: nothing is
/// lost). Failures to reach the database are logged and retried at the next round.
pub fn start_rechecks(hub: Hub, prover: Arc<Prover>) {
    let every = Duration::from_secs(hub.config.verify_recheck_secs.clamp(1, 60));
    tokio::spawn(async move {
        let mut lease: Option<Lease> = None;
        let mut next = tokio::time::Instant::now() + every;
        loop {
            let held = match &mut lease {
                Some(l) => l.still_held().await,
                None => false,
            };
            if !held {
                if lease.take().is_some() {
                    tracing::warn!(
                        "lost the domain re-check lease (the database connection broke)"
                    );
                }
                match hub.store.db().try_lease(RECHECK_LEASE).await {
                    Ok(Some(l)) => {
                        tracing::info!("this replica now re-checks the namespaces' domain proofs");
                        lease = Some(l);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot ask for the domain re-check lease")
                    }
                }
            }
            if lease.is_some() && tokio::time::Instant::now() >= next {
                next = tokio::time::Instant::now() + every;
                match hub_core::domains::recheck_due(&hub, prover.as_ref(), 100).await {
                    Ok(r) if r.checked > 0 => tracing::debug!(?r, "domain proofs re-checked"),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "domain proof re-check failed"),
                }
            }
            tokio::time::sleep(
                LEASE_ASK.min(
                    next.saturating_duration_since(tokio::time::Instant::now())
                        .max(Duration::from_millis(100)),
                ),
            )
            .await;
        }
    });
}
