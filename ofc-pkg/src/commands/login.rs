//! `ofc login [--hub URL] [--token-stdin | --token T | --username U --password-stdin]`: checks a
//! token with the hub (`GET /api/v1/me`) and stores it for that hub in `credentials.toml` (mode
//! 0600). With a user name and password, the hub mints the token (`POST /api/v1/login`). The
//! token is never printed.

use std::io::{IsTerminal as _, Read as _};

use anyhow::{Context as _, Result, bail};
use index_schema::hub_api::{LoginRequest, Me};
use reqwest::StatusCode;
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::json;

use crate::config::Paths;
use crate::credentials::{self, Credentials, HubCredentials, TOKEN_ENV, TokenSource};
use crate::hub::{self, Hub};
use crate::hub_url::HubUrl;
use crate::output::{ExitStatus, Output, UserError};

/// Arguments of `ofc login`.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("secret").args(["token", "token_stdin", "username"])))]
pub struct LoginArgs {
    /// The API token. Prefer --token-stdin: arguments show in the process list and shell
    /// history. Without any of --token, --token-stdin and --username, a token piped on
    /// standard input is read.
    #[arg(long, value_name = "TOKEN", value_parser = secret_arg)]
    pub token: Option<SecretString>,

    /// Read the API token from standard input.
    #[arg(long)]
    pub token_stdin: bool,

    /// Log in with a user name and password instead; the hub mints a token for ofc.
    #[arg(long, value_name = "USER", requires = "password_stdin")]
    pub username: Option<String>,

    /// Read the password from standard input (with --username).
    #[arg(long, requires = "username")]
    pub password_stdin: bool,
}

/// A secret given as an argument, held as one from the moment it is parsed.
fn secret_arg(text: &str) -> Result<SecretString, std::convert::Infallible> {
    Ok(SecretString::from(text))
}

impl std::fmt::Debug for LoginArgs {
    /// Never the token: a stray `{:?}` must not leak it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginArgs")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("token_stdin", &self.token_stdin)
            .field("username", &self.username)
            .field("password_stdin", &self.password_stdin)
            .finish()
    }
}

/// Runs the verb.
pub fn run(args: &LoginArgs, out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    let url = HubUrl::configured()?;
    let anonymous = Hub::with_url(url.clone(), None)?;

    let rt = hub::runtime()?;
    let token = match (&args.token, args.token_stdin, &args.username) {
        (Some(t), _, _) => SecretString::from(t.expose_secret().trim()),
        (None, true, _) => read_stdin("the API token")?,
        (None, false, Some(user)) => {
            let password = read_stdin("the password")?;
            rt.block_on(mint_token(&anonymous, user, password.expose_secret()))?
        }
        (None, false, None) => {
            if std::io::stdin().is_terminal() {
                return Err(UserError::new("no API token given")
                    .hint("pipe it in: `ofc login --token-stdin < token-file`")
                    .hint("or log in with `ofc login --username NAME --password-stdin`")
                    .into());
            }
            // Say so: a pipe that never closes would otherwise look like a hang.
            eprintln!("reading the API token from standard input…");
            read_stdin("the API token")?
        }
    };
    credentials::check_token_shape(token.expose_secret())?;

    // The token is checked before it is stored: a typo never lands in the file.
    let hub = Hub::with_url(url.clone(), Some((token.clone(), TokenSource::File)))?;
    let me: Me = rt
        .block_on(hub.me())
        .map_err(|e| match hub::hub_error(&e) {
            Some(he) if he.status == StatusCode::UNAUTHORIZED => anyhow::Error::new(he.clone())
                .context(
                    UserError::new(format!("the hub at {url} does not accept this token"))
                        .hint("check that you copied the whole token and that it is for this hub")
                        .hint(
                            "tokens can expire or be revoked; create a new one, or log in with \
                         `--username NAME --password-stdin`",
                        ),
                ),
            _ => e,
        })?;

    Credentials::update(&paths, |creds| {
        creds.set(
            &url,
            HubCredentials {
                token,
                user: Some(me.user.clone()),
            },
        );
        Ok(())
    })?;

    if out.json {
        out.json_value(&json!({
            "hub": url,
            "user": me.user,
            "admin": me.is_admin,
            "namespaces": me.namespaces.iter()
                .map(|n| json!({"name": n.name, "role": n.role}))
                .collect::<Vec<_>>(),
            "tokenId": me.token.id,
            "tokenName": me.token.name,
            "scopes": me.token.scopes,
            "credentialsFile": credentials::file(&paths).display().to_string(),
        }));
    } else {
        out.data(&format!(
            "logged in to {url} as {}{}",
            me.user,
            if me.is_admin {
                " (hub administrator)"
            } else {
                ""
            }
        ));
        if !me.namespaces.is_empty() {
            let list: Vec<String> = me
                .namespaces
                .iter()
                .map(|n| format!("{} ({})", n.name, n.role))
                .collect();
            out.data(&format!("namespaces: {}", list.join(", ")));
        }
        out.status(&format!(
            "token saved in {}",
            credentials::file(&paths).display()
        ));
    }
    if std::env::var_os(TOKEN_ENV).is_some_and(|t| !t.is_empty()) {
        out.status(&format!(
            "note: {TOKEN_ENV} is set and is used instead of the stored token until you unset it"
        ));
    }
    Ok(ExitStatus::Success)
}

/// Exchanges a user name and password for a new token.
async fn mint_token(hub: &Hub, user: &str, password: &str) -> Result<SecretString> {
    let req = LoginRequest {
        username: user.to_string(),
        password: password.to_string(),
        ..LoginRequest::default()
    };
    let t = hub.login(&req).await.map_err(|e| {
        hub::refused(
            e,
            format!("cannot log in to {} as `{user}`", hub.url),
            |he| match he.status.as_u16() {
                401 => vec!["check the user name and password".to_string()],
                _ => Vec::new(),
            },
        )
    })?;
    // Zeroed when dropped from here on.
    Ok(SecretString::from(t.token))
}

/// Reads a secret from standard input: everything up to EOF, without the final line break.
fn read_stdin(what: &str) -> Result<SecretString> {
    let mut buf = String::new();
    let got = std::io::stdin().take(64 * 1024).read_to_string(&mut buf);
    // A secret from here on, read whole or not: zeroed when dropped.
    let read = SecretString::from(buf);
    got.with_context(|| format!("cannot read {what} from standard input"))?;
    let s = SecretString::from(read.expose_secret().trim_end_matches(['\n', '\r']));
    if s.expose_secret().is_empty() {
        bail!(UserError::new(format!(
            "standard input held no {}",
            what.trim_start_matches("the ")
        )));
    }
    Ok(s)
}
