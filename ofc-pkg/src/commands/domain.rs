//! Verified namespaces, the client's side: `ofc namespace verify NS DOMAIN --method dns|https`: the namespace claims DOMAIN and the hub
//! checks the proof now — a TXT record on DOMAIN, or a line of
//! `https://DOMAIN/.well-known/ofc-namespace.txt`, saying `v=ofc1; k=ed25519; p=<base64>` for
//! one of the namespace's publisher keys (`ofc namespace record NS` prints the lines to
//! publish). The hub re-checks it periodically; a proof that disappears lapses the
//! verification. `ofc namespace show NS` shows the claim and whether it holds; `ofc namespace
//! unverify NS` drops it. Verified namespaces are marked in `ofc search` and `ofc info`.

use anyhow::Result;
use index_schema::hub_api::{ErrorCode, KeyList, NamespaceInfo, VerifyDomainRequest, path};
use index_schema::name::check_publisher;
use reqwest::Method;

use crate::config::Paths;
use crate::hub::{self, Hub};
use crate::output::{self, ExitStatus, Output, UserError};

/// The well-known file of the HTTPS proof.
const WELL_KNOWN: &str = "/.well-known/ofc-namespace.txt";

/// How the domain is proved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProofMethod {
    /// A TXT record on the domain.
    Dns,
    /// A line of https://DOMAIN/.well-known/ofc-namespace.txt.
    Https,
}

impl ProofMethod {
    fn as_str(self) -> &'static str {
        match self {
            ProofMethod::Dns => "dns",
            ProofMethod::Https => "https",
        }
    }
}

/// Arguments of `ofc namespace verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The namespace.
    #[arg(value_name = "NAMESPACE")]
    pub namespace: String,
    /// The domain it holds, e.g. `example.com`.
    #[arg(value_name = "DOMAIN")]
    pub domain: String,
    /// Where the proof is.
    #[arg(long, value_enum, value_name = "METHOD")]
    pub method: ProofMethod,
}

/// A namespace.
#[derive(Debug, clap::Args)]
pub struct NsArgs {
    /// The namespace.
    #[arg(value_name = "NAMESPACE")]
    pub namespace: String,
}

fn checked(ns: &str) -> Result<String> {
    check_publisher(ns).map_err(|e| {
        UserError::new(format!("invalid namespace `{ns}`: {e}"))
            .hint("a namespace is a publisher name such as `acme`")
            .into()
    })
}

/// Runs a verb of `ofc namespace` about the domain.
pub fn run(verb: Verb<'_>, out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    let hub = Hub::from_env(&paths)?;
    let rt = hub::runtime()?;
    match verb {
        Verb::Verify(a) => rt.block_on(verify(&hub, a, out)),
        Verb::Record(a) => rt.block_on(record(&hub, a, out)),
        Verb::Show(a) => rt.block_on(show(&hub, a, out)),
        Verb::Unverify(a) => rt.block_on(unverify(&hub, a, out)),
    }
}

/// The verbs about a namespace's domain.
#[derive(Debug, Clone, Copy)]
pub enum Verb<'a> {
    /// `ofc namespace verify`.
    Verify(&'a VerifyArgs),
    /// `ofc namespace record`.
    Record(&'a NsArgs),
    /// `ofc namespace show`.
    Show(&'a NsArgs),
    /// `ofc namespace unverify`.
    Unverify(&'a NsArgs),
}

async fn verify(hub: &Hub, a: &VerifyArgs, out: &mut Output) -> Result<ExitStatus> {
    let ns = checked(&a.namespace)?;
    let domain = a.domain.trim().trim_end_matches('.').to_ascii_lowercase();
    hub.require_token("`ofc namespace verify`")?;
    let req = VerifyDomainRequest {
        domain: domain.clone(),
        method: a.method.as_str().into(),
    };
    let body = serde_json::to_value(&req)?;
    let answer = hub
        .call(Method::PUT, &path::domain(&ns), Some(&body))
        .await
        .map_err(|e| {
            hub::refused(
                e,
                format!("cannot verify namespace `{ns}` by {domain}"),
                |he| match &he.code {
                    Some(ErrorCode::DomainProofFailed) => vec![match a.method {
                        ProofMethod::Dns => format!(
                            "check what the DNS answers with `dig +short TXT {domain}` (a new \
                             record may take the zone's TTL to show), then run this again"
                        ),
                        ProofMethod::Https => format!(
                            "check the file with `curl https://{domain}{WELL_KNOWN}` (no \
                             redirect; a certificate valid for {domain}), then run this again"
                        ),
                    }],
                    Some(ErrorCode::InvalidDomain) => {
                        vec!["give the bare domain, e.g. `example.com` (no scheme, path or port)".into()]
                    }
                    Some(ErrorCode::NamespaceNotFound) => {
                        vec![format!("check the name; `ofc key list {ns}` lists a namespace's keys")]
                    }
                    _ if he.status.as_u16() == 403 => vec![format!(
                        "claiming a domain needs the `manage-members` scope and the owner role in `{ns}`"
                    )],
                    _ => Vec::new(),
                },
            )
        })?;
    let info: NamespaceInfo = serde_json::from_value(answer)?;
    let Some(d) = &info.domain else {
        anyhow::bail!("the hub answered without the domain it verified");
    };
    if out.json {
        out.json_value(&info);
    } else {
        out.data(&format!(
            "namespace {ns} is verified: it holds {} ({} proof, key {})",
            d.domain, d.method, d.key_id
        ));
        out.status(
            "the hub re-checks the proof periodically: keep the record in place, or the \
             verification lapses",
        );
    }
    Ok(ExitStatus::Success)
}

async fn record(hub: &Hub, a: &NsArgs, out: &mut Output) -> Result<ExitStatus> {
    let ns = checked(&a.namespace)?;
    let keys: KeyList = hub
        .get_json(&path::keys(&ns))
        .await
        .map_err(|e| hub::refused(e, format!("cannot read the keys of `{ns}`"), |_| Vec::new()))?;
    let lines: Vec<String> = keys
        .keys
        .iter()
        .filter(|k| k.revoked_at.is_none())
        .map(|k| {
            format!(
                "v=ofc1; k=ed25519; p={}",
                k.public_key
                    .strip_prefix("ed25519:")
                    .unwrap_or(&k.public_key)
            )
        })
        .collect();
    if lines.is_empty() {
        return Err(
            UserError::new(format!("namespace `{ns}` has no live key to vouch for"))
                .hint(format!("register one: `ofc key register --namespace {ns}`"))
                .into(),
        );
    }
    if out.json {
        out.json_value(&serde_json::json!({ "namespace": ns, "records": lines }));
    } else {
        for l in &lines {
            out.data(l);
        }
        out.status(&format!(
            "publish one as a TXT record on your domain (`ofc namespace verify {ns} DOMAIN \
             --method dns`), or as a line of https://DOMAIN{WELL_KNOWN} (`--method https`)"
        ));
    }
    Ok(ExitStatus::Success)
}

async fn show(hub: &Hub, a: &NsArgs, out: &mut Output) -> Result<ExitStatus> {
    let ns = checked(&a.namespace)?;
    let info: NamespaceInfo = hub
        .get_json(&path::namespace(&ns))
        .await
        .map_err(|e| hub::refused(e, format!("cannot read namespace `{ns}`"), |_| Vec::new()))?;
    if out.json {
        out.json_value(&info);
        return Ok(ExitStatus::Success);
    }
    match &info.domain {
        None => out.data(&format!("namespace {ns} claims no domain (not verified)")),
        Some(d) if d.verified => out.data(&format!(
            "namespace {ns} is verified: it holds {} ({} proof, key {}; checked {})",
            d.domain,
            d.method,
            d.key_id,
            output::format_time_ms(d.checked_at)
        )),
        Some(d) => {
            out.data(&format!(
                "namespace {ns} is NOT verified: its proof of {} lapsed {}",
                d.domain,
                d.lapsed_at
                    .map(output::format_time_ms)
                    .unwrap_or_else(|| "at the last check".into())
            ));
            if let Some(why) = &d.lapse_reason {
                out.status(&output::clean_line(why));
            }
        }
    }
    Ok(ExitStatus::Success)
}

async fn unverify(hub: &Hub, a: &NsArgs, out: &mut Output) -> Result<ExitStatus> {
    let ns = checked(&a.namespace)?;
    hub.require_token("`ofc namespace unverify`")?;
    hub.call(Method::DELETE, &path::domain(&ns), None)
        .await
        .map_err(|e| {
            hub::refused(e, format!("cannot drop the domain of `{ns}`"), |_| {
                Vec::new()
            })
        })?;
    if out.json {
        out.json_value(&serde_json::json!({ "namespace": ns, "verified": false }));
    } else {
        out.data(&format!("namespace {ns} claims no domain any more"));
    }
    Ok(ExitStatus::Success)
}
