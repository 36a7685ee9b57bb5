//! `ofc logout [--hub URL] [--revoke]`: removes the token stored for a hub from
//! `credentials.toml`; with `--revoke` it is first revoked on the hub
//! (`DELETE /api/v1/tokens/{id}`), so that no copy of it keeps working.

use anyhow::Result;
use reqwest::StatusCode;
use serde_json::json;

use crate::config::Paths;
use crate::credentials::{self, Credentials, TOKEN_ENV, TokenSource};
use crate::hub::{self, Hub};
use crate::hub_url::HubUrl;
use crate::output::{self, ExitStatus, Output, UserError};

/// Arguments of `ofc logout`.
#[derive(Debug, clap::Args)]
pub struct LogoutArgs {
    /// Also revoke the token on the hub, so that no copy of it works any more.
    #[arg(long)]
    pub revoke: bool,
}

/// Runs the verb.
pub fn run(args: &LogoutArgs, out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    let url = HubUrl::configured()?;
    let creds = Credentials::load(&paths)?;
    let Some(stored) = creds.token_for(&url).cloned() else {
        if args.revoke {
            return Err(UserError::new(format!("no token is stored for {url}"))
                .hint("--revoke revokes the stored token; revoke others on the hub")
                .into());
        }
        if out.json {
            out.json_value(&json!({ "hub": url, "removed": false, "revoked": false }));
        } else {
            out.status(&format!("no token is stored for {url}; nothing to do"));
        }
        note_env(out);
        return Ok(ExitStatus::Success);
    };

    let mut revoked = false;
    if args.revoke {
        let hub = Hub::with_url(url.clone(), Some((stored.token.clone(), TokenSource::File)))?;
        let rt = hub::runtime()?;
        let outcome = rt.block_on(async {
            let me = hub.me().await?;
            hub.revoke_token(me.token.id).await?;
            anyhow::Ok(())
        });
        match outcome {
            Ok(()) => revoked = true,
            // A token the hub no longer accepts is as good as revoked: forget it.
            Err(e)
                if hub::hub_error(&e).is_some_and(|he| he.status == StatusCode::UNAUTHORIZED) =>
            {
                out.status(&format!(
                    "the hub at {url} no longer accepts the stored token; forgetting it"
                ));
            }
            Err(e) => {
                return Err(output::explain(
                    e,
                    UserError::new(format!(
                        "cannot revoke the token stored for {url}; it stays stored"
                    ))
                    .hint("run `ofc logout` without --revoke to only forget it on this machine"),
                ));
            }
        }
    }

    Credentials::update(&paths, |c| Ok(c.remove(&url)))?;
    if out.json {
        out.json_value(&json!({ "hub": url, "removed": true, "revoked": revoked }));
    } else {
        let who = stored
            .user
            .as_deref()
            .map(|u| format!(" ({u})"))
            .unwrap_or_default();
        out.data(&format!(
            "logged out of {url}{who}{}",
            if revoked {
                "; the token is revoked"
            } else {
                ""
            }
        ));
        out.status(&format!(
            "removed the token from {}",
            credentials::file(&paths).display()
        ));
    }
    note_env(out);
    Ok(ExitStatus::Success)
}

fn note_env(out: &mut Output) {
    if std::env::var_os(TOKEN_ENV).is_some_and(|t| !t.is_empty()) {
        out.status(&format!(
            "note: {TOKEN_ENV} is still set; ofc keeps using it until you unset it"
        ));
    }
}
