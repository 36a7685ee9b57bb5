//! `ofc namespace trust add|list|remove`: a namespace's trusted publishers on the hub
//! (`/api/v1/namespaces/{ns}/trusted-publishers`, issue 33): an OIDC issuer, audience and
//! subject pattern (a CI's repository and workflow) whose ID tokens `ofc publish --oidc`
//! exchanges for a publish-only token valid 15 minutes. The exchange itself is
//! [`exchange_for_publish`].

use anyhow::{Result, anyhow};
use clap::Subcommand;
use index_schema::hub_api::trusted::DEFAULT_AUDIENCE;
use index_schema::hub_api::{AddTrustedPublisherRequest, ErrorCode, ExchangeRequest};
use index_schema::name::check_publisher;
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::json;

use crate::config::Paths;
use crate::credentials::TokenSource;
use crate::hub::{self, Hub};
use crate::output::{self, ExitStatus, Output, UserError};

/// The variable `ofc publish --oidc` reads a CI's ID token from.
pub const OIDC_TOKEN_ENV: &str = "OFC_OIDC_TOKEN";

/// `ofc namespace trust` verbs.
#[derive(Debug, Subcommand)]
pub enum TrustedCommand {
    /// Trust an OIDC issuer's tokens whose subject matches SUBJECT (`*` matches any run of
    /// characters, e.g. `repo:acme/coder:ref:refs/heads/*`) to publish to the namespace.
    Add(TrustAddArgs),
    /// List the namespace's trusted publishers.
    List(TrustListArgs),
    /// Stop trusting one (tokens it minted are revoked).
    Remove(TrustRemoveArgs),
}

/// Arguments of `ofc namespace trust add`.
#[derive(Debug, clap::Args)]
pub struct TrustAddArgs {
    /// The issuer, exactly as its tokens' `iss` (GitHub Actions:
    /// `https://token.actions.githubusercontent.com`).
    #[arg(value_name = "ISSUER")]
    pub issuer: String,
    /// The subject pattern.
    #[arg(value_name = "SUBJECT")]
    pub subject: String,
    /// The audience the CI asks its tokens for.
    #[arg(long, value_name = "AUD", default_value = DEFAULT_AUDIENCE)]
    pub audience: String,
    /// The namespace (default: your own, from the hub).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
}

/// Arguments of `ofc namespace trust list`.
#[derive(Debug, clap::Args)]
pub struct TrustListArgs {
    /// The namespace (default: your own, from the hub).
    #[arg(value_name = "NS")]
    pub namespace: Option<String>,
}

/// Arguments of `ofc namespace trust remove`.
#[derive(Debug, clap::Args)]
pub struct TrustRemoveArgs {
    /// The trusted publisher's id (`ofc namespace trust list`).
    #[arg(value_name = "ID")]
    pub id: i64,
    /// The namespace (default: your own, from the hub).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
}

/// Runs the verb.
pub fn run(cmd: &TrustedCommand, out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    let hub = Hub::from_env(&paths)?;
    let rt = hub::runtime()?;
    hub.require_token("managing trusted publishers")?;
    match cmd {
        TrustedCommand::Add(args) => rt.block_on(add(&hub, args, out)),
        TrustedCommand::List(args) => rt.block_on(list(&hub, args, out)),
        TrustedCommand::Remove(args) => rt.block_on(remove(&hub, args, out)),
    }
}

async fn namespace(hub: &Hub, given: Option<&str>) -> Result<String> {
    if let Some(ns) = given {
        return check_publisher(ns).map_err(|e| {
            UserError::new(format!("invalid namespace `{ns}`: {e}"))
                .hint("a namespace is a publisher name such as `acme`")
                .into()
        });
    }
    hub::default_namespace(&hub.me().await?)
}

fn owners_only(ns: &str) -> impl Fn(&hub::HubError) -> Vec<String> + '_ {
    move |he| match (he.status.as_u16(), &he.code) {
        (_, Some(ErrorCode::NamespaceNotFound)) => vec!["check the namespace's name".into()],
        (403, _) => vec![format!(
            "trusted publishers are managed by owners of `{ns}` (with the `manage-members` scope)"
        )],
        _ => Vec::new(),
    }
}

async fn add(hub: &Hub, args: &TrustAddArgs, out: &mut Output) -> Result<ExitStatus> {
    let ns = namespace(hub, args.namespace.as_deref()).await?;
    let req = AddTrustedPublisherRequest {
        issuer: args.issuer.clone(),
        subject: args.subject.clone(),
        audience: Some(args.audience.clone()),
    };
    let t = hub.add_trusted_publisher(&ns, &req).await.map_err(|e| {
        hub::refused(
            e,
            format!("cannot trust {} for `{ns}`", args.issuer),
            owners_only(&ns),
        )
    })?;
    if out.json {
        out.json_value(&t);
    } else {
        out.data(&output::clean_line(&format!(
            "trusted publisher {}: {} subject `{}` audience `{}` may publish to {ns}",
            t.id, t.issuer, t.subject, t.audience
        )));
        out.status(&format!(
            "in that CI run `ofc publish --oidc` (GitHub Actions: `permissions: id-token: write`; \
             elsewhere put the ID token, audience `{}`, in {OIDC_TOKEN_ENV})",
            t.audience
        ));
    }
    Ok(ExitStatus::Success)
}

async fn list(hub: &Hub, args: &TrustListArgs, out: &mut Output) -> Result<ExitStatus> {
    let ns = namespace(hub, args.namespace.as_deref()).await?;
    let listed = hub.trusted_publishers(&ns).await.map_err(|e| {
        hub::refused(
            e,
            format!("cannot list the trusted publishers of `{ns}`"),
            owners_only(&ns),
        )
    })?;
    if out.json {
        out.json_value(&listed);
        return Ok(ExitStatus::Success);
    }
    if listed.trusted_publishers.is_empty() {
        out.status(&format!("namespace `{ns}` trusts no publisher"));
        return Ok(ExitStatus::Success);
    }
    let rows: Vec<Vec<String>> = listed
        .trusted_publishers
        .iter()
        .map(|t| {
            vec![
                t.id.to_string(),
                t.issuer.clone(),
                t.audience.clone(),
                t.subject.clone(),
                t.added_by.clone(),
                output::format_time_ms(t.added_at),
            ]
        })
        .collect();
    for line in output::table(
        &["ID", "ISSUER", "AUDIENCE", "SUBJECT", "ADDED BY", "ADDED"],
        &rows,
    ) {
        out.data(&output::clean_line(&line));
    }
    Ok(ExitStatus::Success)
}

async fn remove(hub: &Hub, args: &TrustRemoveArgs, out: &mut Output) -> Result<ExitStatus> {
    let ns = namespace(hub, args.namespace.as_deref()).await?;
    hub.remove_trusted_publisher(&ns, args.id)
        .await
        .map_err(|e| {
            hub::refused(
                e,
                format!("cannot remove trusted publisher {} of `{ns}`", args.id),
                owners_only(&ns),
            )
        })?;
    if out.json {
        out.json_value(&json!({"namespace": ns, "id": args.id, "removed": true}));
    } else {
        out.data(&format!(
            "removed trusted publisher {} of {ns}; the tokens it minted are revoked",
            args.id
        ));
    }
    Ok(ExitStatus::Success)
}

/// The CI's ID token: `OFC_OIDC_TOKEN`, else GitHub Actions' request URL and token
/// (`ACTIONS_ID_TOKEN_REQUEST_URL` / `ACTIONS_ID_TOKEN_REQUEST_TOKEN`, with `audience`).
async fn id_token(client: &reqwest::Client, audience: &str) -> Result<SecretString> {
    if let Some(t) = std::env::var(OIDC_TOKEN_ENV)
        .ok()
        .filter(|t| !t.trim().is_empty())
    {
        return Ok(t.trim().to_string().into());
    }
    let (Ok(url), Ok(bearer)) = (
        std::env::var("ACTIONS_ID_TOKEN_REQUEST_URL"),
        std::env::var("ACTIONS_ID_TOKEN_REQUEST_TOKEN"),
    ) else {
        return Err(
            UserError::new("`ofc publish --oidc` found no OIDC ID token")
                .hint(format!(
                    "set {OIDC_TOKEN_ENV} to the CI's ID token (audience `{audience}`), or run in \
                 GitHub Actions with `permissions: id-token: write`"
                ))
                .into(),
        );
    };
    let mut u = reqwest::Url::parse(&url)
        .map_err(|e| anyhow!("ACTIONS_ID_TOKEN_REQUEST_URL is not a URL: {e}"))?;
    u.query_pairs_mut().append_pair("audience", audience);
    let resp = client
        .get(u)
        .bearer_auth(bearer)
        .timeout(std::time::Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| anyhow!("cannot ask GitHub Actions for an ID token: {e}"))?;
    if !resp.status().is_success() {
        return Err(anyhow!(
            "GitHub Actions refused an ID token ({}); does the job have `permissions: id-token: write`?",
            resp.status()
        ));
    }
    let v: serde_json::Value = resp
        .json()
        .await
        .map_err(|e| anyhow!("GitHub Actions' ID token answer: {e}"))?;
    v["value"]
        .as_str()
        .map(|s| SecretString::from(s.to_string()))
        .ok_or_else(|| anyhow!("GitHub Actions' ID token answer has no `value`"))
}

/// Trusted publishing for `ofc publish --oidc`: the CI's ID token exchanged at `hub` for a
/// token that may publish to `namespace` for 15 minutes; the hub client carrying it.
pub async fn exchange_for_publish(
    hub: &Hub,
    namespace: &str,
    audience: &str,
    out: &mut Output,
) -> Result<Hub> {
    let token = id_token(hub.http(), audience).await?;
    let req = ExchangeRequest {
        namespace: namespace.to_string(),
        token: token.expose_secret().to_string(),
    };
    let x = hub.exchange_oidc(&req).await.map_err(|e| {
        hub::refused(
            e,
            format!("trusted publishing to `{namespace}` was refused"),
            |he| match he.code {
                Some(ErrorCode::OidcTokenRefused) => vec![format!(
                    "an owner of `{namespace}` must trust this CI: `ofc namespace trust add \
                     ISSUER SUBJECT` (see `ofc namespace trust list {namespace}`)"
                )],
                _ => Vec::new(),
            },
        )
    })?;
    out.status(&output::clean_line(&format!(
        "trusted publishing: publishing to {namespace} as `{}` (issuer {})",
        x.subject, x.issuer
    )));
    Hub::with_url(
        hub.url.clone(),
        Some((SecretString::from(x.token), TokenSource::Exchanged)),
    )
}
