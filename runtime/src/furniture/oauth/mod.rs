//! OAuth for MCP servers reached by `url` (a furniture's `oauth:` block): ofc obtains the
//! bearer token, keeps it fresh and sends it with every request; the blueprint never names an
//! endpoint (they come from [`discovery`]).
//!
//! - `client_credentials`: the token is asked for with the blueprint's client id and secret,
//!   kept in memory, asked for again when it has expired (a little early) and once when the
//!   server answers `401` to it.
//! - `authorization_code`: a person consents once ([`consent`]: PKCE S256, a registered client
//!   when the blueprint has no `client_id`, a loopback callback); the token is kept in a file
//!   ([`store`], shared by processes under a lock) and refreshed with its refresh token. With
//!   nobody there to consent (`ofc run` without a terminal on stdin, or with `--json`) a
//!   missing or refused token is the error "not authorized: run `ofc auth NAME` to authorize".
//!
//! A token is never logged, written to a session or transcript, or put in an error message.

mod client;
mod consent;
mod discovery;
mod http;
mod store;
mod token;

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use index_schema::blueprint::{Grant, OAuth};

use self::discovery::Endpoints;
use self::http::Http;
use self::store::{Stored, TokenFile};
use self::token::{Client, Refused, Token};

pub(crate) use client::OAuthClient;
pub(crate) use consent::CONSENT_WAIT;

/// Whether a person can be asked to consent, and how.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Consent {
    /// Nobody: a missing token is an error naming `ofc auth`.
    #[default]
    Nobody,
    /// A person at this terminal: the URL on stderr, the code at the loopback callback.
    Person,
    /// As `Person`, and a callback address pasted on stdin is taken too (`ofc auth`).
    PersonPasting,
}

/// How a floor's furniture gets its OAuth tokens.
#[derive(Debug, Clone, Default)]
pub struct OAuthSettings {
    /// The floor's name: token files are kept under `<dir>/<floor>/`.
    pub floor: String,
    /// Where token files are kept (`$OFC_OAUTH_DIR`, else `~/.ofc/oauth`: the caller decides);
    /// none: an `authorization_code` furniture cannot be used.
    pub dir: Option<PathBuf>,
    /// Whether a person can consent.
    pub consent: Consent,
    /// Ask anew even when a token is stored (`ofc auth --force`).
    pub force: bool,
}

/// What [`Authorizer::outcome`] says after a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// A person consented during it.
    pub consented: bool,
    /// The token file, for `authorization_code`.
    pub token_file: Option<PathBuf>,
}

#[derive(Default)]
struct AuthState {
    endpoints: Option<Endpoints>,
    /// `client_credentials`: the token in memory.
    token: Option<Token>,
    /// `--force` done: the stored token counts again.
    forced: bool,
}

/// One furniture's token source, shared by its HTTP client.
pub(crate) struct Authorizer {
    name: String,
    resource: String,
    grant: Grant,
    client: Option<Client>,
    scopes: Vec<String>,
    consent: Consent,
    force: bool,
    file: Option<TokenFile>,
    http: Http,
    state: tokio::sync::Mutex<AuthState>,
    /// Why getting a token last failed (what the start error says, rather than the
    /// transport's wrapping of it).
    failure: Mutex<Option<String>>,
    /// An authorization (consent, or nobody to give it) failed: it is not asked again.
    refused: AtomicBool,
    consented: AtomicBool,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("name", &self.name)
            .field("grant", &self.grant)
            .finish_non_exhaustive()
    }
}

impl Authorizer {
    /// The token source of furniture `name` at `resource` with the blueprint's `oauth`.
    pub(crate) fn new(
        name: &str,
        resource: &str,
        oauth: &OAuth,
        settings: &OAuthSettings,
    ) -> Result<Authorizer, String> {
        let file = match (oauth.grant, &settings.dir) {
            (Grant::ClientCredentials, _) => None,
            (Grant::AuthorizationCode, Some(dir)) => {
                Some(TokenFile::new(dir, &settings.floor, name))
            }
            (Grant::AuthorizationCode, None) => {
                return Err("no directory for OAuth token files (set OFC_OAUTH_DIR)".to_owned());
            }
        };
        Ok(Authorizer {
            name: name.to_owned(),
            resource: resource.to_owned(),
            grant: oauth.grant,
            client: oauth.client_id.as_ref().map(|id| Client {
                id: id.clone(),
                secret: oauth.client_secret.as_ref().map(|s| s.expose().to_owned()),
            }),
            scopes: oauth.scopes.clone(),
            consent: settings.consent,
            force: settings.force,
            file,
            http: Http::new()?,
            state: tokio::sync::Mutex::new(AuthState::default()),
            failure: Mutex::new(None),
            refused: AtomicBool::new(false),
            consented: AtomicBool::new(false),
        })
    }

    /// Why getting a token failed, if it did.
    pub(crate) fn failure(&self) -> Option<String> {
        lock(&self.failure).clone()
    }

    /// What happened: consent, and where the token is kept.
    pub(crate) fn outcome(&self) -> Outcome {
        Outcome {
            consented: self.consented.load(Ordering::SeqCst),
            token_file: self.file.as_ref().map(|f| f.path().to_owned()),
        }
    }

    fn fail(&self, m: String) -> String {
        *lock(&self.failure) = Some(m.clone());
        m
    }

    fn scopes<'a>(&'a self, ep: &'a Endpoints) -> &'a [String] {
        if self.scopes.is_empty() {
            &ep.scopes
        } else {
            &self.scopes
        }
    }

    /// The token to send now (none: not known yet; the server's challenge will say where to
    /// get one).
    pub(crate) async fn token(&self) -> Result<Option<String>, String> {
        let mut st = self.state.lock().await;
        match self.grant {
            Grant::ClientCredentials => {
                if let Some(t) = st.token.as_ref().filter(|t| !t.expired()) {
                    return Ok(Some(t.access_token.clone()));
                }
                let Some(ep) = st.endpoints.clone() else {
                    return Ok(None);
                };
                let t = self.client_credentials(&ep).await?;
                let access = t.access_token.clone();
                st.token = Some(t);
                Ok(Some(access))
            }
            Grant::AuthorizationCode => {
                if self.force && !st.forced {
                    return Ok(None);
                }
                self.stored(None).await
            }
        }
    }

    async fn client_credentials(&self, ep: &Endpoints) -> Result<Token, String> {
        let Some(client) = &self.client else {
            return Err(self.fail("the client_credentials grant needs a client_id".to_owned()));
        };
        token::client_credentials(
            &self.http,
            &ep.token_endpoint,
            client,
            self.scopes(ep),
            &self.resource,
        )
        .await
        .map_err(|e| self.fail(e.to_string()))
    }

    /// The stored token, refreshed under the file's lock when it has expired or is `refused`
    /// (the one the server just refused); none when there is none usable.
    async fn stored(&self, refused: Option<&str>) -> Result<Option<String>, String> {
        let Some(file) = &self.file else {
            return Ok(None);
        };
        let locked = file.lock().await.map_err(|e| self.fail(e))?;
        let Some(mut stored) = locked.read().map_err(|e| self.fail(e))? else {
            return Ok(None);
        };
        if stored.resource != self.resource {
            return Ok(None);
        }
        let stale = stored.token.expired() || refused == Some(stored.token.access_token.as_str());
        if !stale {
            return Ok(Some(stored.token.access_token.clone()));
        }
        let Some(refresh) = stored.token.refresh_token.clone() else {
            return Ok(None);
        };
        let client = Client {
            id: stored.client_id.clone(),
            secret: stored.client_secret.clone(),
        };
        match token::refresh(
            &self.http,
            &stored.token_url,
            &client,
            &refresh,
            &self.resource,
        )
        .await
        {
            Ok(t) => {
                stored.token = t;
                locked.write(&stored).map_err(|e| self.fail(e))?;
                Ok(Some(stored.token.access_token.clone()))
            }
            // The grant is no good any more: the stored authorization counts as none.
            Err(Refused::OAuth(m)) => {
                tracing::info!(furniture = %self.name, "the stored OAuth token could not be refreshed: {m}");
                locked.remove();
                Ok(None)
            }
            Err(Refused::Other(m)) => Err(self.fail(m)),
        }
    }

    /// The server answered `401` with `challenge` to `sent`: a token to send again with.
    pub(crate) async fn unauthorized(
        &self,
        challenge: &str,
        sent: Option<&str>,
    ) -> Result<String, String> {
        if self.refused.load(Ordering::SeqCst)
            && let Some(m) = self.failure()
        {
            return Err(m);
        }
        let mut st = self.state.lock().await;
        if st.endpoints.is_none() {
            let ep = discovery::discover(&self.http, &self.resource, Some(challenge))
                .await
                .map_err(|e| self.fail(format!("OAuth discovery: {e}")))?;
            st.endpoints = Some(ep);
        }
        let Some(ep) = st.endpoints.clone() else {
            return Err(self.fail("OAuth discovery found nothing".to_owned()));
        };
        match self.grant {
            Grant::ClientCredentials => {
                // Another request may have got a new one meanwhile.
                if let Some(t) = st
                    .token
                    .as_ref()
                    .filter(|t| !t.expired() && Some(t.access_token.as_str()) != sent)
                {
                    return Ok(t.access_token.clone());
                }
                let t = self.client_credentials(&ep).await?;
                let access = t.access_token.clone();
                st.token = Some(t);
                Ok(access)
            }
            Grant::AuthorizationCode => {
                if !self.force || st.forced {
                    let again = self.stored(sent).await?;
                    if let Some(t) = again.filter(|t| Some(t.as_str()) != sent) {
                        return Ok(t);
                    }
                }
                if self.consent == Consent::Nobody {
                    self.refused.store(true, Ordering::SeqCst);
                    return Err(self.fail(format!(
                        "not authorized: run `ofc auth {}` to authorize",
                        self.name
                    )));
                }
                let got = consent::consent(
                    &self.http,
                    &self.name,
                    &ep,
                    self.client.clone(),
                    self.scopes(&ep),
                    &self.resource,
                    self.consent == Consent::PersonPasting,
                )
                .await
                .map_err(|e| {
                    self.refused.store(true, Ordering::SeqCst);
                    self.fail(format!("authorization failed: {e}"))
                })?;
                let stored = Stored {
                    client_id: got.client.id,
                    client_secret: got.client.secret,
                    auth_url: ep.authorization_endpoint.clone(),
                    token_url: ep.token_endpoint.clone(),
                    scopes: self.scopes(&ep).to_vec(),
                    resource: self.resource.clone(),
                    token: got.token,
                };
                if let Some(file) = &self.file {
                    let locked = file.lock().await.map_err(|e| self.fail(e))?;
                    locked.write(&stored).map_err(|e| self.fail(e))?;
                }
                st.forced = true;
                self.consented.store(true, Ordering::SeqCst);
                Ok(stored.token.access_token)
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
