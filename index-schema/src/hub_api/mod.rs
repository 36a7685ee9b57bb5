//! The hub's JSON API (`/api/v1/…`, `/healthz`, `/readyz`): one definition of every request and
//! response body, of the error codes and of the paths, used by the hub (`ofc-hub`, which
//! serializes them and derives its OpenAPI document from them with the `openapi` feature) and by
//! the client (`ofc`, which deserializes them). Neither side mirrors the other by hand.
//!
//! - [`accounts`]: login, `me`, API tokens;
//! - [`agents`]: publish, agents and versions, yank and deprecation, outbox and audit;
//! - [`namespaces`]: namespaces, members and publisher keys;
//! - [`search`]: `GET /api/v1/search`;
//! - [`ops`]: health and readiness;
//! - [`error`]: the error body and its [`ErrorCode`]s;
//! - [`route`] (the server's route templates) and [`path`] (the client's concrete paths).
//!
//! Conventions: times are Unix milliseconds (`i64`) unless a field says otherwise; requests
//! refuse unknown fields (a typo is an error, not a silently ignored option); responses accept
//! them (a newer hub may add fields) and default lists and flags a hub may leave out.
//!
//! Errors carry an [`ErrorCode`], an open enum (a code from a newer hub is kept as `Other`),
//! matched as a value on both sides. Envelopes travel as [`EnvelopeJson`]: the JSON text verbatim
//! (`serde_json::RawValue`), parsed once with every check, never turned into a `Value` and back.
//! The client's typed calls (`me`, `login`, `agent`, `version`, `publish`, `yank`, `keys`,
//! `search`, …) are methods of `ofc`'s hub client, each building its path with [`path`], which
//! fills the very templates the hub's router declares ([`route`]).

pub mod accounts;
pub mod agents;
pub mod error;
pub mod log;
pub mod namespaces;
pub mod ops;
pub mod search;
pub mod trust;
pub mod trusted;

pub use accounts::{
    CreateTokenRequest, LoginRequest, Me, MyNamespace, NewToken, TokenInfo, TokenList,
};
pub use agents::{
    AgentInfo, AgentList, AgentSummary, AuditEntry, AuditPage, AuditQuery, BundleInfo,
    DeprecateRequest, EnvelopeJson, ListQuery, OutboxEntry, OutboxPage, OutboxQuery,
    PublishRequest, PublishResponse, SigningKey, VersionInfo, VersionSummary, YankRequest,
};
pub use error::{ErrorBody, ErrorCode, Removed};
pub use log::{LogEntries, LogEntriesQuery, LogEntryInfo, LogInclusion, LogInfo, LogQuery};
pub use namespaces::{
    AddKeyRequest, CreateNamespaceRequest, DomainInfo, Key, KeyList, Member, NamespaceInfo,
    SetMemberRequest, VerifyDomainRequest,
};
pub use ops::{Health, NotReady, Ready};
pub use search::{
    ByteRange, FacetCount, MAX_FACET_VALUES, SearchFacets, SearchHighlight, SearchHit, SearchPage,
    SearchParams,
};
pub use trusted::{
    AddTrustedPublisherRequest, ExchangeRequest, ExchangeResponse, TrustedPublisher,
    TrustedPublisherList, TrustedPublishing,
};

/// Route templates as the hub's router declares them (`{name}` segments), relative to
/// [`route::API`] unless they start with `/`.
pub mod route {
    /// Where the JSON API is mounted.
    pub const API: &str = "/api/v1";
    /// `POST`: log in.
    pub const LOGIN: &str = "/login";
    /// `GET`: who the token belongs to.
    pub const ME: &str = "/me";
    /// `GET` list, `POST` create.
    pub const TOKENS: &str = "/tokens";
    /// `DELETE`: revoke.
    pub const TOKEN: &str = "/tokens/{id}";
    /// `POST`: create a namespace.
    pub const NAMESPACES: &str = "/namespaces";
    /// `GET`: a namespace with members and keys.
    pub const NAMESPACE: &str = "/namespaces/{namespace}";
    /// `PUT` set, `DELETE` remove.
    pub const MEMBER: &str = "/namespaces/{namespace}/members/{user}";
    /// `GET` list, `POST` register.
    pub const KEYS: &str = "/namespaces/{namespace}/keys";
    /// `DELETE`: revoke.
    pub const KEY: &str = "/namespaces/{namespace}/keys/{key_id}";
    /// `PUT`: claim a domain and prove it now; `DELETE`: drop the claim (issue 33).
    pub const DOMAIN: &str = "/namespaces/{namespace}/domain";
    /// `GET` and `POST`: a namespace's trusted publishers (issue 33).
    pub const TRUSTED_PUBLISHERS: &str = "/namespaces/{namespace}/trusted-publishers";
    /// `DELETE`: one trusted publisher.
    pub const TRUSTED_PUBLISHER: &str = "/namespaces/{namespace}/trusted-publishers/{id}";
    /// `POST`: an OIDC ID token exchanged for a publish-only token.
    pub const TRUSTED_EXCHANGE: &str = "/trusted-publishing/exchange";
    /// `GET`: every agent, paged.
    pub const AGENTS: &str = "/agents";
    /// `GET`, `DELETE` (administrators).
    pub const AGENT: &str = "/agents/{publisher}/{agent}";
    /// The A2A agent card of a `remote` agent's latest version.
    pub const AGENT_CARD: &str = "/agents/{publisher}/{agent}/agent-card.json";
    /// `PUT` publish, `GET`, `DELETE` (administrators).
    pub const VERSION: &str = "/agents/{publisher}/{agent}/versions/{version}";
    /// `PUT` yank, `DELETE` unyank.
    pub const YANK: &str = "/agents/{publisher}/{agent}/versions/{version}/yank";
    /// `PUT` deprecate, `DELETE` undeprecate.
    pub const DEPRECATION: &str = "/agents/{publisher}/{agent}/versions/{version}/deprecation";
    /// `POST`: the publisher unpublishes the version (within the hub's window and download
    /// limit), leaving a tombstone.
    pub const UNPUBLISH: &str = "/agents/{publisher}/{agent}/versions/{version}/unpublish";
    /// `GET`: the bundle's bytes (absolute: served outside the request-time limit).
    pub const BUNDLE: &str = "/api/v1/agents/{publisher}/{agent}/versions/{version}/bundle";
    /// `GET`: search.
    pub const SEARCH: &str = "/search";
    /// `GET`: the change feed.
    pub const OUTBOX: &str = "/outbox";
    /// `GET`: the audit log (administrators).
    pub const AUDIT: &str = "/audit";
    /// `GET`: liveness (absolute).
    pub const HEALTHZ: &str = "/healthz";
    /// `GET`: readiness (absolute).
    pub const READYZ: &str = "/readyz";
    /// `GET`: the transparency log's key and head ([`super::LogInfo`]).
    pub const LOG: &str = "/log";
    /// `GET`: a publisher's log entries ([`super::LogEntries`]).
    pub const LOG_PUBLISHER: &str = "/log/publishers/{publisher}";
    /// C2SP `tlog-tiles`: the signed checkpoint (served outside `/api/v1`).
    pub const TLOG_CHECKPOINT: &str = "/log/checkpoint";
    /// C2SP `tlog-tiles`: every tile below this prefix (`tile/<L>/<N>[.p/<W>]`,
    /// `tile/entries/<N>[.p/<W>]`).
    pub const TLOG_TILE: &str = "/log/tile/{*tile}";
}

/// Concrete paths for a client, from the [`route`] templates. Names and versions are what the
/// client validated ([`crate::name::AgentName`], exact versions), so no segment needs escaping;
/// key ids and user names are escaped anyway.
pub mod path {
    use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

    use super::route;
    use crate::name::AgentName;

    /// Escaped in a path segment: everything but RFC 3986's unreserved characters.
    const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');

    fn fill(template: &str, values: &[(&str, &str)]) -> String {
        let mut out = String::with_capacity(route::API.len() + template.len() + 32);
        if !template.starts_with(route::API) && !matches!(template, route::HEALTHZ | route::READYZ)
        {
            out.push_str(route::API);
        }
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let close = open + rest[open..].find('}').expect("route templates close `{`");
            let key = &rest[open + 1..close];
            let value = values
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
                .expect("every template segment has a value");
            out.extend(utf8_percent_encode(value, SEGMENT));
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        out
    }

    fn versioned(template: &str, name: &AgentName, version: &str) -> String {
        fill(
            template,
            &[
                ("publisher", name.publisher()),
                ("agent", name.agent()),
                ("version", version),
            ],
        )
    }

    /// `POST /api/v1/login`.
    pub fn login() -> String {
        fill(route::LOGIN, &[])
    }
    /// `GET /api/v1/me`.
    pub fn me() -> String {
        fill(route::ME, &[])
    }
    /// `/api/v1/tokens`.
    pub fn tokens() -> String {
        fill(route::TOKENS, &[])
    }
    /// `/api/v1/tokens/{id}`.
    pub fn token(id: i64) -> String {
        fill(route::TOKEN, &[("id", &id.to_string())])
    }
    /// `/api/v1/namespaces`.
    pub fn namespaces() -> String {
        fill(route::NAMESPACES, &[])
    }
    /// `/api/v1/namespaces/{namespace}`.
    pub fn namespace(ns: &str) -> String {
        fill(route::NAMESPACE, &[("namespace", ns)])
    }
    /// `/api/v1/namespaces/{namespace}/members/{user}`.
    pub fn member(ns: &str, user: &str) -> String {
        fill(route::MEMBER, &[("namespace", ns), ("user", user)])
    }
    /// `/api/v1/namespaces/{namespace}/keys`.
    pub fn keys(ns: &str) -> String {
        fill(route::KEYS, &[("namespace", ns)])
    }
    /// `/api/v1/namespaces/{namespace}/keys/{key_id}`.
    pub fn key(ns: &str, key_id: &str) -> String {
        fill(route::KEY, &[("namespace", ns), ("key_id", key_id)])
    }
    /// `/api/v1/namespaces/{namespace}/domain`.
    pub fn domain(ns: &str) -> String {
        fill(route::DOMAIN, &[("namespace", ns)])
    }
    /// `/api/v1/namespaces/{namespace}/trusted-publishers`.
    pub fn trusted_publishers(ns: &str) -> String {
        fill(route::TRUSTED_PUBLISHERS, &[("namespace", ns)])
    }
    /// `/api/v1/namespaces/{namespace}/trusted-publishers/{id}`.
    pub fn trusted_publisher(ns: &str, id: i64) -> String {
        fill(
            route::TRUSTED_PUBLISHER,
            &[("namespace", ns), ("id", &id.to_string())],
        )
    }
    /// `/api/v1/trusted-publishing/exchange`.
    pub fn trusted_exchange() -> String {
        fill(route::TRUSTED_EXCHANGE, &[])
    }
    /// `/api/v1/agents`.
    pub fn agents() -> String {
        fill(route::AGENTS, &[])
    }
    /// `/api/v1/agents/{publisher}/{agent}`.
    pub fn agent(name: &AgentName) -> String {
        fill(
            route::AGENT,
            &[("publisher", name.publisher()), ("agent", name.agent())],
        )
    }
    /// `/api/v1/agents/{publisher}/{agent}/agent-card.json`.
    pub fn agent_card(name: &AgentName) -> String {
        fill(
            route::AGENT_CARD,
            &[("publisher", name.publisher()), ("agent", name.agent())],
        )
    }
    /// `/api/v1/agents/{publisher}/{agent}/versions/{version}`.
    pub fn version(name: &AgentName, version: &str) -> String {
        versioned(route::VERSION, name, version)
    }
    /// `…/versions/{version}/yank`.
    pub fn yank(name: &AgentName, version: &str) -> String {
        versioned(route::YANK, name, version)
    }
    /// `…/versions/{version}/deprecation`.
    pub fn deprecation(name: &AgentName, version: &str) -> String {
        versioned(route::DEPRECATION, name, version)
    }
    /// `…/versions/{version}/unpublish`.
    pub fn unpublish(name: &AgentName, version: &str) -> String {
        versioned(route::UNPUBLISH, name, version)
    }
    /// `…/versions/{version}/bundle`.
    pub fn bundle(name: &AgentName, version: &str) -> String {
        versioned(route::BUNDLE, name, version)
    }
    /// `/api/v1/search` (parameters go in the query string: [`super::SearchParams`]).
    pub fn search() -> String {
        fill(route::SEARCH, &[])
    }
    /// `/api/v1/outbox`.
    pub fn outbox() -> String {
        fill(route::OUTBOX, &[])
    }
    /// `/api/v1/audit`.
    pub fn audit() -> String {
        fill(route::AUDIT, &[])
    }
    /// `/v2/{publisher}/{agent}/blobs/{digest}` (the OCI distribution API, where a bundle is
    /// uploaded before its publish).
    pub fn oci_blob(name: &AgentName, digest: &crate::name::Digest) -> String {
        format!("/v2/{}/{}/blobs/{digest}", name.publisher(), name.agent())
    }
    /// `/v2/{publisher}/{agent}/blobs/uploads/?digest={digest}`: a monolithic blob upload.
    pub fn oci_upload(name: &AgentName, digest: &crate::name::Digest) -> String {
        format!(
            "/v2/{}/{}/blobs/uploads/?digest={digest}",
            name.publisher(),
            name.agent()
        )
    }
    /// `/healthz`.
    pub fn healthz() -> String {
        fill(route::HEALTHZ, &[])
    }
    /// `/readyz`.
    pub fn readyz() -> String {
        fill(route::READYZ, &[])
    }
    /// `/api/v1/log`.
    pub fn log() -> String {
        fill(route::LOG, &[])
    }
    /// `/api/v1/log/publishers/{publisher}`.
    pub fn log_publisher(publisher: &str) -> String {
        fill(route::LOG_PUBLISHER, &[("publisher", publisher)])
    }
}

#[cfg(test)]
mod tests {
    use super::path;
    use crate::name::AgentName;

    #[test]
    fn paths_fill_the_route_templates() {
        let n = AgentName::parse("acme/coder").unwrap();
        assert_eq!(path::me(), "/api/v1/me");
        assert_eq!(path::token(7), "/api/v1/tokens/7");
        assert_eq!(path::agent(&n), "/api/v1/agents/acme/coder");
        assert_eq!(
            path::version(&n, "1.0.0-rc.1"),
            "/api/v1/agents/acme/coder/versions/1.0.0-rc.1"
        );
        assert_eq!(
            path::yank(&n, "1.0.0"),
            "/api/v1/agents/acme/coder/versions/1.0.0/yank"
        );
        assert_eq!(
            path::deprecation(&n, "1.0.0"),
            "/api/v1/agents/acme/coder/versions/1.0.0/deprecation"
        );
        assert_eq!(
            path::bundle(&n, "1.0.0"),
            "/api/v1/agents/acme/coder/versions/1.0.0/bundle"
        );
        assert_eq!(path::keys("acme"), "/api/v1/namespaces/acme/keys");
        assert_eq!(
            path::key("acme", "ab12"),
            "/api/v1/namespaces/acme/keys/ab12"
        );
        assert_eq!(path::search(), "/api/v1/search");
        assert_eq!(path::healthz(), "/healthz");
        let d = crate::name::Digest::of(b"x");
        assert_eq!(path::oci_blob(&n, &d), format!("/v2/acme/coder/blobs/{d}"));
        assert_eq!(
            path::oci_upload(&n, &d),
            format!("/v2/acme/coder/blobs/uploads/?digest={d}")
        );
        // A segment that is not a plain name cannot reach another route.
        assert_eq!(
            path::member("acme", "../x y"),
            "/api/v1/namespaces/acme/members/..%2Fx%20y"
        );
    }
}
