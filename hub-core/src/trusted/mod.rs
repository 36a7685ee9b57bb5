//! Trusted publishing (issue 33, point 4): a namespace's owner trusts an OIDC issuer, an
//! audience and a subject pattern — a CI's repository and workflow — and the CI exchanges its
//! ID token for a hub token that may publish to that namespace for 15 minutes, and do nothing
//! else. No long-lived token has to live in the CI's secrets.
//!
//! **Registering** (`ofc namespace trust add`): owners only (the `manage-members` right). The
//! issuer is an `https://` URL exactly as its tokens' `iss` says it (plain
//! `http://127.0.0.1` only with the hub setting `oidc_allow_http_loopback`, for tests), and
//! one naming an IP address must pass the outbound address policy ([`crate::outbound`]). The
//! audience defaults to `ofc` ([`DEFAULT_AUDIENCE`]): like crates.io's `crates.io` and PyPI's
//! `pypi`, one fixed value a CI asks its identity provider for; an owner publishing to several
//! hubs that trust the same subject should give each its own audience, so a token minted for
//! one hub is refused by the others (each hub remembers only its own exchanges). The subject
//! pattern is matched against the whole `sub`; `*` (any run of characters) is its only
//! wildcard, and it must start with literal text: a pattern of `*` alone would let every
//! repository of a public CI publish.
//!
//! **Exchanging** ([`exchange`], no hub token needed): the token is parsed, its `iss` must be
//! exactly the issuer of one of the namespace's trusted publishers (so the hub only ever fetches
//! keys of issuers an owner registered), its `alg` asymmetric and its signature valid under the
//! issuer's key named by `kid` (`jwt.rs`, keys from `jwks.rs`); `exp` not passed, `nbf` and
//! `iat` not in the future, with [`LEEWAY_SECS`] of clock skew, and at most
//! [`MAX_LIFETIME_SECS`] between `iat` and `exp`; `aud` must name the publisher's audience and
//! `sub` match its pattern. A token is exchanged once: its `jti` (or, without one, the whole
//! token) is remembered until it expires. The new token belongs to the owner who registered the
//! publisher (who must still be an owner or maintainer), carries the publish scopes for the one
//! namespace only and the ID token's issuer and subject: [`crate::auth::Principal::authorize`]
//! refuses it anything but publishing, and removing the publisher revokes it.
//!
//! **Publishing** with it records the issuer and subject on the version
//! (`VersionInfo.trusted_publishing`) and in the log, as a `trusted-publish` entry right after
//! the version's `publish` entry (`index_schema::tlog`).
//!
//! Every refusal names the check that failed, and is logged (the namespace, the issuer, the
//! check — never the token).

mod jwks;
mod jwt;
mod refusal;
#[cfg(test)]
mod tests;

pub use jwks::{BoxFuture, FetchError, Jwks, OidcFetch, REFETCH_MIN, TTL, UrlRules, check_url};
pub use jwt::MAX_TOKEN_BYTES;
pub use refusal::Refusal;

use index_schema::hub_api::trusted::{DEFAULT_AUDIENCE, EXCHANGED_TOKEN_SECS};
use index_schema::hub_api::{
    AddTrustedPublisherRequest, ExchangeRequest, ExchangeResponse, TrustedPublisher,
    TrustedPublisherList,
};
use sha2::{Digest as _, Sha256};

use crate::accounts::actor;
use crate::auth::{
    Principal, Role, Scope, TOKEN_PREFIX, TrustedOrigin, generate_token, hash_token,
};
use crate::error::{CoreError, CoreResult, ErrorCode};
use crate::hub::Hub;
use crate::namespaces::{authorize, find};
use crate::store::{NewExchange, TrustedPublisherRow, now_ms};

/// Clock skew allowed on `exp`, `nbf` and `iat`, in seconds.
pub const LEEWAY_SECS: i64 = 60;
/// Longest ID token lifetime taken (`exp - iat`), in seconds: CI tokens live minutes.
pub const MAX_LIFETIME_SECS: i64 = 24 * 3600;

/// Checks a subject pattern: 1 to 255 characters, no control characters, starting with
/// literal text (not `*`).
pub fn check_subject_pattern(p: &str) -> Result<(), String> {
    if p.is_empty() || p.chars().count() > 255 || p.chars().any(char::is_control) {
        return Err("a subject pattern is 1 to 255 characters without control characters".into());
    }
    if p.starts_with('*') {
        return Err(format!(
            "subject pattern `{p}` starts with `*`: it must start with literal text (e.g. \
             `repo:ORG/REPO:`), or any subject of the issuer could publish"
        ));
    }
    Ok(())
}

/// Whether `subject` matches `pattern` as a whole; `*` matches any run of characters
/// (including none), every other character itself.
pub fn subject_matches(pattern: &str, subject: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pattern.chars().collect(), subject.chars().collect());
    let (mut pi, mut si) = (0, 0);
    // The position of the last `*` and the subject position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, si));
            pi += 1;
        } else if pi < p.len() && p[pi] == s[si] {
            pi += 1;
            si += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

fn check_audience(a: &str) -> Result<(), String> {
    if a.is_empty() || a.len() > 255 || a.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Err(format!(
            "audience `{a}` must be 1 to 255 characters without spaces or control characters"
        ))
    } else {
        Ok(())
    }
}

fn invalid(m: String) -> CoreError {
    CoreError::invalid(ErrorCode::InvalidTrustedPublisher, m)
}

fn info(namespace: &str, r: TrustedPublisherRow) -> TrustedPublisher {
    TrustedPublisher {
        id: r.id,
        namespace: namespace.to_string(),
        issuer: r.issuer,
        audience: r.audience,
        subject: r.subject,
        added_by: r.created_by_name,
        added_at: r.created_at,
    }
}

/// Registers a trusted publisher of `namespace` (owners only).
pub async fn add(
    hub: &Hub,
    p: &Principal,
    namespace: &str,
    req: &AddTrustedPublisherRequest,
) -> CoreResult<TrustedPublisher> {
    let ns = find(hub, namespace).await?;
    authorize(hub, p, Scope::ManageMembers, &ns).await?;
    check_url(&req.issuer, UrlRules::of(&hub.config))
        .map_err(|m| invalid(format!("issuer: {m}")))?;
    let audience = req.audience.as_deref().unwrap_or(DEFAULT_AUDIENCE);
    check_audience(audience).map_err(invalid)?;
    check_subject_pattern(&req.subject).map_err(invalid)?;
    let id = hub
        .store
        .add_trusted_publisher(
            &actor(p),
            ns.id,
            &ns.name,
            &req.issuer,
            audience,
            &req.subject,
        )
        .await?;
    tracing::info!(namespace = %ns.name, issuer = %req.issuer, subject = %req.subject, id,
        "trusted publisher added");
    let row = hub
        .store
        .trusted_publishers(ns.id)
        .await?
        .into_iter()
        .find(|r| r.id == id)
        .ok_or_else(|| CoreError::internal("the trusted publisher just added vanished"))?;
    Ok(info(&ns.name, row))
}

/// The trusted publishers of `namespace` (owners only: they are its publishing policy).
pub async fn list(hub: &Hub, p: &Principal, namespace: &str) -> CoreResult<TrustedPublisherList> {
    let ns = find(hub, namespace).await?;
    authorize(hub, p, Scope::ManageMembers, &ns).await?;
    let rows = hub.store.trusted_publishers(ns.id).await?;
    Ok(TrustedPublisherList {
        trusted_publishers: rows.into_iter().map(|r| info(&ns.name, r)).collect(),
    })
}

/// Removes trusted publisher `id` of `namespace` (owners only); the tokens minted for it are
/// revoked.
pub async fn remove(hub: &Hub, p: &Principal, namespace: &str, id: i64) -> CoreResult<()> {
    let ns = find(hub, namespace).await?;
    authorize(hub, p, Scope::ManageMembers, &ns).await?;
    if hub
        .store
        .remove_trusted_publisher(&actor(p), ns.id, &ns.name, id)
        .await?
    {
        tracing::info!(namespace = %ns.name, id, "trusted publisher removed");
        Ok(())
    } else {
        Err(CoreError::not_found(
            ErrorCode::TrustedPublisherNotFound,
            format!("namespace `{}` has no trusted publisher {id}", ns.name),
        ))
    }
}

/// Exchanges a CI's ID token for a publish-only token of `req.namespace` (see the module
/// documentation). Every refusal is logged without the token.
pub async fn exchange(
    hub: &Hub,
    keys: &Jwks,
    req: &ExchangeRequest,
) -> CoreResult<ExchangeResponse> {
    let ns = find(hub, &req.namespace).await?;
    match exchange_checked(hub, keys, &ns.name, ns.id, &req.token).await {
        Ok(r) => {
            tracing::info!(namespace = %ns.name, issuer = %r.issuer, subject = %r.subject,
                "trusted publishing: token exchanged");
            Ok(r)
        }
        Err((r, issuer)) => {
            hub.counters.auth_failure();
            tracing::warn!(namespace = %ns.name, issuer = %issuer.as_deref().unwrap_or("-"),
                check = r.check(), reason = %r.message(), "trusted publishing refused");
            Err(r.into())
        }
    }
}

type Refused = (Refusal, Option<String>);

async fn exchange_checked(
    hub: &Hub,
    keys: &Jwks,
    namespace: &str,
    namespace_id: i64,
    token: &str,
) -> Result<ExchangeResponse, Refused> {
    let t = jwt::parse(token).map_err(|r| (r, None))?;
    let Some(iss) = t.claims.iss.clone() else {
        return Err((
            Refusal::Issuer("the ID token has no `iss` claim".into()),
            None,
        ));
    };
    let fail = |r: Refusal| (r, Some(iss.clone()));
    let db = |e: crate::store::StoreError| {
        fail(Refusal::IssuerUnavailable(format!(
            "the hub's database: {e}"
        )))
    };
    let trusted: Vec<TrustedPublisherRow> = hub
        .store
        .trusted_publishers(namespace_id)
        .await
        .map_err(db)?
        .into_iter()
        .filter(|p| p.issuer == iss)
        .collect();
    if trusted.is_empty() {
        return Err(fail(Refusal::Issuer(format!(
            "namespace `{namespace}` trusts no publisher with issuer `{iss}` (the `iss` claim \
             must be exactly a registered issuer)"
        ))));
    }
    jwt::check_alg(&t.header.alg).map_err(fail)?;
    if t.header.crit.is_some() {
        return Err(fail(Refusal::Malformed(
            "the ID token's header has `crit` extensions, which the hub does not understand".into(),
        )));
    }
    let Some(kid) = t.header.kid.as_deref() else {
        return Err(fail(Refusal::Kid(
            "the ID token's header has no `kid`".into(),
        )));
    };
    let key = keys.key(&iss, kid).await.map_err(fail)?;
    jwt::verify(&t, &key).map_err(fail)?;

    let now = now_ms() / 1000;
    let c = &t.claims;
    let Some(exp) = c.exp else {
        return Err(fail(Refusal::Expired(
            "the ID token has no `exp` claim".into(),
        )));
    };
    if exp + LEEWAY_SECS <= now {
        return Err(fail(Refusal::Expired(format!(
            "the ID token expired (exp) {} s ago",
            now - exp
        ))));
    }
    if let Some(nbf) = c.nbf
        && nbf - LEEWAY_SECS > now
    {
        return Err(fail(Refusal::NotYetValid(format!(
            "the ID token is not valid for another {} s (nbf)",
            nbf - now
        ))));
    }
    let Some(iat) = c.iat else {
        return Err(fail(Refusal::IssuedAt(
            "the ID token has no `iat` claim".into(),
        )));
    };
    if iat - LEEWAY_SECS > now {
        return Err(fail(Refusal::IssuedAt(format!(
            "the ID token says it was issued (iat) {} s in the future",
            iat - now
        ))));
    }
    if exp - iat > MAX_LIFETIME_SECS {
        return Err(fail(Refusal::IssuedAt(format!(
            "the ID token lives {} s from iat to exp, more than {MAX_LIFETIME_SECS}",
            exp - iat
        ))));
    }
    let Some(aud) = c.aud.as_ref() else {
        return Err(fail(Refusal::Audience(
            "the ID token has no `aud` claim".into(),
        )));
    };
    let by_aud: Vec<&TrustedPublisherRow> = trusted
        .iter()
        .filter(|p| aud.contains(&p.audience))
        .collect();
    if by_aud.is_empty() {
        let want: Vec<String> = trusted
            .iter()
            .map(|p| format!("`{}`", p.audience))
            .collect();
        return Err(fail(Refusal::Audience(format!(
            "the ID token's aud is {}, not {} as namespace `{namespace}` expects from this issuer",
            aud.describe(),
            want.join(" or ")
        ))));
    }
    let Some(sub) = c.sub.clone() else {
        return Err(fail(Refusal::Subject(
            "the ID token has no `sub` claim".into(),
        )));
    };
    let Some(publisher) = by_aud
        .into_iter()
        .find(|p| subject_matches(&p.subject, &sub))
    else {
        return Err(fail(Refusal::Subject(format!(
            "subject (sub) `{sub}` matches no subject pattern namespace `{namespace}` trusts \
             for this issuer and audience"
        ))));
    };
    // The minted token acts as the owner who registered the publisher: they must still be
    // allowed to publish there.
    let role = hub
        .store
        .role(namespace_id, publisher.created_by)
        .await
        .map_err(db)?
        .and_then(|r| Role::parse(&r));
    if !role.is_some_and(|r| r.grants(Scope::PublishNew)) {
        return Err(fail(Refusal::Owner(format!(
            "`{}`, who registered this trusted publisher, may no longer publish to `{namespace}`: \
             an owner must register it again",
            publisher.created_by_name
        ))));
    }
    let replay_key = match c.jti.as_deref() {
        Some(jti) => hex::encode(Sha256::digest(format!("jti\0{iss}\0{jti}").as_bytes())),
        None => hex::encode(Sha256::digest(format!("token\0{token}").as_bytes())),
    };
    let origin = TrustedOrigin {
        issuer: iss.clone(),
        subject: sub.clone(),
    };
    let secret = generate_token(TOKEN_PREFIX);
    let label: String = format!("trusted publishing: {sub}")
        .chars()
        .take(100)
        .collect();
    let expires_at = now_ms() + EXCHANGED_TOKEN_SECS * 1000;
    let minted = hub
        .store
        .record_exchange(&NewExchange {
            publisher,
            replay_key: &replay_key,
            id_token_expires_at: (exp + LEEWAY_SECS) * 1000,
            name: &label,
            token_hash: &hash_token(secret.expose()),
            namespace,
            expires_at,
            origin: &origin,
        })
        .await
        .map_err(db)?;
    if minted.is_none() {
        return Err(fail(Refusal::Replayed(format!(
            "this ID token{} was exchanged before; each is exchanged once — ask the CI for a \
             new one",
            c.jti
                .as_deref()
                .map(|j| format!(" (jti `{j}`)"))
                .unwrap_or_default()
        ))));
    }
    Ok(ExchangeResponse {
        token: secret.expose().to_string(),
        namespace: namespace.to_string(),
        expires_at,
        issuer: iss,
        subject: sub,
    })
}
