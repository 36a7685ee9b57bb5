//! A furniture's `oauth:` block (the reference CLI's): an MCP server reached by `url` that wants
//! an OAuth bearer token, which ofc obtains and refreshes itself. Where the token comes from is
//! found by MCP authorization discovery (the server's protected-resource metadata, then its
//! authorization server's metadata), never written in the blueprint.
//!
//! ```yaml
//! furniture:
//!   - name: docs
//!     type: mcp
//!     url: https://mcp.example/mcp
//!     oauth:
//!       grant: client_credentials        # or authorization_code (the default)
//!       client_id: ofc-floor
//!       client_secret: ${DOCS_SECRET}
//!       scopes: [docs.read]
//! ```
//!
//! `client_credentials` needs `client_id` and `client_secret` (no person is involved);
//! `authorization_code` asks a person once (`ofc auth NAME`) and registers a client itself when
//! there is no `client_id`. The secret is an [`ApiKey`]: never shown.

use serde::{Deserialize, Serialize};

use super::{ApiKey, Furniture, FurnitureType};
use crate::diagnostic::{Diagnostics, FieldPath};

/// How the token is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A person consents once in a browser (PKCE); the token is kept in a file and refreshed.
    #[default]
    AuthorizationCode,
    /// ofc asks the token endpoint with the client's id and secret; the token stays in memory.
    ClientCredentials,
}

impl Grant {
    /// As written in a blueprint.
    pub fn as_str(self) -> &'static str {
        match self {
            Grant::AuthorizationCode => "authorization_code",
            Grant::ClientCredentials => "client_credentials",
        }
    }
}

/// A furniture's `oauth:` block (`oauth: {}` is authorization_code with a registered client).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuth {
    /// `authorization_code` (default, also when empty) or `client_credentials`.
    #[serde(default, deserialize_with = "grant")]
    pub grant: Grant,
    /// A client registered beforehand; none: ofc registers one (dynamic client registration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The client's secret (never shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<ApiKey>,
    /// The scopes asked for; none: what the server advertises.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

/// `grant:` — the reference's empty string means the default; anything else is refused with
/// what is accepted.
fn grant<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Grant, D::Error> {
    let s = Option::<String>::deserialize(d)?.unwrap_or_default();
    match s.as_str() {
        "" | "authorization_code" => Ok(Grant::AuthorizationCode),
        "client_credentials" => Ok(Grant::ClientCredentials),
        other => Err(serde::de::Error::custom(format!(
            "`{other}` is not a grant ofc can use: `authorization_code` (the default) or \
             `client_credentials`"
        ))),
    }
}

/// The checks of one furniture's `oauth` at `p` (the furniture's path).
pub(super) fn check(f: &Furniture, p: &FieldPath, d: &mut Diagnostics) {
    let Some(oauth) = &f.oauth else { return };
    let name = &f.name;
    if f.furniture_type != FurnitureType::Mcp || f.url.is_none() {
        d.push(
            p.key("oauth"),
            format!(
                "furniture `{name}`: `oauth` needs an MCP server reached by `url` (a token is \
                 sent over HTTP; a server ofc starts by `command` gets none)"
            ),
        );
        return;
    }
    let blank = |s: &Option<String>| s.as_deref().is_none_or(|s| s.trim().is_empty());
    if oauth.grant == Grant::ClientCredentials {
        if blank(&oauth.client_id) {
            d.push(
                p.key("oauth").key("client_id"),
                format!(
                    "furniture `{name}`: the `client_credentials` grant needs the `client_id` \
                     the authorization server knows this client by"
                ),
            );
        }
        if oauth
            .client_secret
            .as_ref()
            .is_none_or(|s| s.expose().trim().is_empty())
        {
            d.push(
                p.key("oauth").key("client_secret"),
                format!(
                    "furniture `{name}`: the `client_credentials` grant needs a `client_secret`"
                ),
            );
        }
    } else if oauth
        .client_id
        .as_deref()
        .is_some_and(|s| s.trim().is_empty())
    {
        d.push(
            p.key("oauth").key("client_id"),
            format!("furniture `{name}`: must not be empty (leave it out to register a client)"),
        );
    }
    if oauth.client_secret.is_some() && oauth.client_id.is_none() {
        d.push(
            p.key("oauth").key("client_secret"),
            format!("furniture `{name}`: a `client_secret` without the `client_id` it belongs to"),
        );
    }
    for (i, scope) in oauth.scopes.iter().enumerate() {
        // RFC 6749 §3.3: printable ASCII without space, `"` or `\`.
        let ok = |c: char| c == '!' || ('#'..='[').contains(&c) || (']'..='~').contains(&c);
        if scope.is_empty() || !scope.chars().all(ok) {
            d.push(
                p.key("oauth").key("scopes").index(i),
                format!("furniture `{name}`: not an OAuth scope (printable, without spaces)"),
            );
        }
    }
}
