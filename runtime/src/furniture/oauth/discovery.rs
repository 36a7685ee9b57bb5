//! MCP authorization discovery: from the MCP server to its authorization server's endpoints.
//!
//! 1. The protected-resource metadata (RFC 9728): at the `resource_metadata` URL of the
//!    server's `401` `WWW-Authenticate` challenge, else at
//!    `/.well-known/oauth-protected-resource{path}` and then `/.well-known/oauth-protected-resource`
//!    of the server's origin. Its first `authorization_servers` entry is the issuer. Without any
//!    such document, the server's origin is taken as the issuer (the MCP revision of 2025-03-26).
//! 2. The authorization server metadata (RFC 8414, then OpenID Connect discovery): for an
//!    issuer with a path, `/.well-known/oauth-authorization-server{path}`,
//!    `/.well-known/openid-configuration{path}` and `{issuer}/.well-known/openid-configuration`;
//!    without one, the first two at the root.
//!
//! The blueprint never names an endpoint.

use serde::Deserialize;
use url::Url;

use super::http::Http;

/// What ofc needs of an authorization server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Endpoints {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Option<String>,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    /// The scopes to ask for when the blueprint names none: the challenge's `scope`, else the
    /// resource's `scopes_supported`.
    pub(crate) scopes: Vec<String>,
    pub(crate) code_challenge_methods: Vec<String>,
}

#[derive(Deserialize)]
struct ResourceMetadata {
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
}

#[derive(Deserialize)]
struct ServerMetadata {
    issuer: Option<String>,
    authorization_endpoint: Option<String>,
    token_endpoint: Option<String>,
    registration_endpoint: Option<String>,
    #[serde(default)]
    code_challenge_methods_supported: Vec<String>,
}

/// A parameter of a `WWW-Authenticate: Bearer k="v", …` challenge.
pub(crate) fn challenge_param(header: &str, key: &str) -> Option<String> {
    let rest = header.trim_start();
    let rest = rest
        .get(..6)
        .filter(|s| s.eq_ignore_ascii_case("bearer"))
        .map(|_| &rest[6..])?;
    let mut s = rest;
    loop {
        s = s.trim_start_matches([' ', ',', '\t']);
        let eq = s.find('=')?;
        let k = s[..eq].trim();
        s = &s[eq + 1..];
        let (v, tail) = if let Some(q) = s.strip_prefix('"') {
            let mut v = String::new();
            let mut chars = q.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            v.push(n);
                        }
                    }
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    c => v.push(c),
                }
            }
            (v, &q[end?..])
        } else {
            let end = s.find(',').unwrap_or(s.len());
            (s[..end].trim().to_owned(), &s[end..])
        };
        if k.eq_ignore_ascii_case(key) {
            return Some(v);
        }
        s = tail;
    }
}

fn http_url(s: &str) -> Option<Url> {
    Url::parse(s)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

/// `{origin}/.well-known/{name}{path}` (the path left out when it is `/`).
fn well_known(base: &Url, name: &str, with_path: bool) -> String {
    let origin = base.origin().ascii_serialization();
    let path = base.path().trim_end_matches('/');
    if with_path && !path.is_empty() {
        format!("{origin}/.well-known/{name}{path}")
    } else {
        format!("{origin}/.well-known/{name}")
    }
}

/// Whether the metadata's `resource` names the server at `url`: the same origin, and a path
/// that is the URL's or a parent of it.
fn same_resource(resource: &str, url: &Url) -> bool {
    let Some(r) = http_url(resource) else {
        return false;
    };
    let (rp, up) = (
        r.path().trim_end_matches('/'),
        url.path().trim_end_matches('/'),
    );
    r.origin() == url.origin() && (up == rp || up.starts_with(&format!("{rp}/")))
}

/// Discovers the endpoints for the MCP server at `resource`, given the `WWW-Authenticate`
/// header of its `401`, when there was one.
pub(crate) async fn discover(
    http: &Http,
    resource: &str,
    challenge: Option<&str>,
) -> Result<Endpoints, String> {
    let resource_url =
        http_url(resource).ok_or_else(|| format!("`{resource}` is not an http(s) URL"))?;
    let mut tried = Vec::new();
    let mut candidates = Vec::new();
    if let Some(m) = challenge.and_then(|h| challenge_param(h, "resource_metadata")) {
        match http_url(&m) {
            Some(u) => candidates.push(u.to_string()),
            None => {
                return Err(format!(
                    "the server's resource_metadata `{m}` is not an http(s) URL"
                ));
            }
        }
    }
    candidates.push(well_known(&resource_url, "oauth-protected-resource", true));
    candidates.push(well_known(&resource_url, "oauth-protected-resource", false));
    candidates.dedup();
    let mut resource_meta = None;
    for url in candidates {
        tried.push(url.clone());
        if let Some(m) = http.get_json::<ResourceMetadata>(&url).await? {
            resource_meta = Some(m);
            break;
        }
    }
    let (issuer, resource_scopes) = match resource_meta {
        Some(m) => {
            // RFC 9728 §3.3: metadata for another resource is not this server's (a server
            // could otherwise send ofc, and the client's secret, to anyone's token endpoint).
            if let Some(r) = &m.resource
                && !same_resource(r, &resource_url)
            {
                return Err(format!(
                    "the protected-resource metadata of {resource} is for `{r}`, another resource"
                ));
            }
            let Some(first) = m.authorization_servers.first() else {
                return Err(format!(
                    "the protected-resource metadata of {resource} names no authorization server"
                ));
            };
            let issuer = http_url(first).ok_or_else(|| {
                format!("the authorization server `{first}` of {resource} is not an http(s) URL")
            })?;
            (issuer, m.scopes_supported)
        }
        // The 2025-03-26 revision: the server's origin is its own authorization server.
        None => (
            Url::parse(&resource_url.origin().ascii_serialization())
                .map_err(|e| format!("{resource}: {e}"))?,
            Vec::new(),
        ),
    };
    let has_path = !issuer.path().trim_end_matches('/').is_empty();
    let mut candidates = vec![
        well_known(&issuer, "oauth-authorization-server", true),
        well_known(&issuer, "openid-configuration", true),
    ];
    if has_path {
        candidates.push(format!(
            "{}/.well-known/openid-configuration",
            issuer.as_str().trim_end_matches('/')
        ));
    }
    for url in candidates {
        tried.push(url.clone());
        let Some(m) = http.get_json::<ServerMetadata>(&url).await? else {
            continue;
        };
        let Some(token_endpoint) = m.token_endpoint.filter(|t| http_url(t).is_some()) else {
            return Err(format!(
                "the authorization server metadata at {url} has no http(s) token_endpoint"
            ));
        };
        let scopes = challenge
            .and_then(|h| challenge_param(h, "scope"))
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or(resource_scopes);
        return Ok(Endpoints {
            issuer: m.issuer.unwrap_or_else(|| issuer.to_string()),
            authorization_endpoint: m.authorization_endpoint.filter(|a| http_url(a).is_some()),
            token_endpoint,
            registration_endpoint: m.registration_endpoint.filter(|r| http_url(r).is_some()),
            scopes,
            code_challenge_methods: m.code_challenge_methods_supported,
        });
    }
    Err(format!(
        "no authorization server metadata found for {resource} (tried {})",
        tried.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_parameters_are_read_quoted_or_not() {
        let h = r#"Bearer error="invalid_token", resource_metadata="http://a/.well-known/oauth-protected-resource/mcp", scope="a b""#;
        assert_eq!(
            challenge_param(h, "resource_metadata").as_deref(),
            Some("http://a/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(challenge_param(h, "scope").as_deref(), Some("a b"));
        assert_eq!(
            challenge_param("Bearer realm=x, scope=s1", "scope").as_deref(),
            Some("s1")
        );
        assert_eq!(
            challenge_param(r#"Bearer a="q\"x""#, "a").as_deref(),
            Some("q\"x")
        );
        assert_eq!(challenge_param("Basic realm=x", "realm"), None);
        assert_eq!(challenge_param("Bearer", "scope"), None);
        assert_eq!(challenge_param(r#"Bearer a="unterminated"#, "a"), None);
    }

    /// Serves `docs` (path → JSON) on 127.0.0.1; anything else is a 404. Answers the base URL.
    async fn serve(docs: Vec<(&'static str, serde_json::Value)>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let mut app = axum::Router::new();
        for (path, doc) in docs {
            let doc = serde_json::Value::String(doc.to_string().replace("BASE", &base));
            app = app.route(
                path,
                axum::routing::get(move || {
                    let text = doc.as_str().unwrap_or_default().to_owned();
                    async move { ([("content-type", "application/json")], text) }
                }),
            );
        }
        tokio::spawn(async move { axum::serve(listener, app).await });
        base
    }

    #[tokio::test]
    async fn discovery_falls_back_to_well_known_documents_and_openid_configuration() {
        let http = Http::new().unwrap();
        // No challenge: the protected-resource metadata at its path-suffixed well-known URL,
        // an issuer with a path, found only by `{issuer}/.well-known/openid-configuration`.
        let base = serve(vec![
            (
                "/.well-known/oauth-protected-resource/tenant/mcp",
                serde_json::json!({"authorization_servers": ["BASE/realms/r1"],
                    "scopes_supported": ["mcp:tools"]}),
            ),
            (
                "/realms/r1/.well-known/openid-configuration",
                serde_json::json!({"issuer": "BASE/realms/r1",
                    "token_endpoint": "BASE/realms/r1/token",
                    "authorization_endpoint": "BASE/realms/r1/auth"}),
            ),
        ])
        .await;
        let ep = discover(&http, &format!("{base}/tenant/mcp"), None)
            .await
            .unwrap();
        assert_eq!(ep.token_endpoint, format!("{base}/realms/r1/token"));
        assert_eq!(ep.scopes, ["mcp:tools"]);
        assert_eq!(ep.registration_endpoint, None);

        // No protected-resource metadata at all: the server's origin is its authorization
        // server (RFC 8414 at the root); the challenge's scope wins over nothing.
        let base = serve(vec![(
            "/.well-known/oauth-authorization-server",
            serde_json::json!({"token_endpoint": "BASE/token", "registration_endpoint": "BASE/reg"}),
        )])
        .await;
        let ep = discover(
            &http,
            &format!("{base}/mcp"),
            Some("Bearer realm=\"x\", scope=\"a b\""),
        )
        .await
        .unwrap();
        assert_eq!(ep.token_endpoint, format!("{base}/token"));
        assert_eq!(ep.registration_endpoint, Some(format!("{base}/reg")));
        assert_eq!(ep.scopes, ["a", "b"]);

        // Metadata for another resource is refused.
        let base = serve(vec![(
            "/.well-known/oauth-protected-resource",
            serde_json::json!({"resource": "https://elsewhere.example/mcp",
                "authorization_servers": ["BASE"]}),
        )])
        .await;
        let e = discover(&http, &format!("{base}/mcp"), None)
            .await
            .unwrap_err();
        assert!(e.contains("another resource"), "{e}");

        // Nothing anywhere: an error that says what was tried.
        let base = serve(vec![]).await;
        let e = discover(&http, &format!("{base}/mcp"), None)
            .await
            .unwrap_err();
        assert!(e.contains("no authorization server metadata"), "{e}");
        assert!(e.contains("/.well-known/openid-configuration"), "{e}");
        // A challenge naming metadata that is not http(s).
        let e = discover(
            &http,
            &format!("{base}/mcp"),
            Some("Bearer resource_metadata=\"file:///etc/passwd\""),
        )
        .await
        .unwrap_err();
        assert!(e.contains("not an http(s) URL"), "{e}");
    }

    #[test]
    fn a_resource_is_the_url_or_a_parent_of_it_on_the_same_origin() {
        let u = Url::parse("http://127.0.0.1:9/tenant/mcp").unwrap();
        assert!(same_resource("http://127.0.0.1:9/tenant/mcp", &u));
        assert!(same_resource("http://127.0.0.1:9/tenant/mcp/", &u));
        assert!(same_resource("http://127.0.0.1:9/", &u));
        assert!(same_resource("http://127.0.0.1:9/tenant", &u));
        assert!(!same_resource("http://127.0.0.1:9/ten", &u));
        assert!(!same_resource("http://127.0.0.1:10/tenant/mcp", &u));
        assert!(!same_resource("https://127.0.0.1:9/tenant/mcp", &u));
        assert!(!same_resource("not a url", &u));
    }

    #[test]
    fn well_known_urls_put_the_path_after_the_name() {
        let u = Url::parse("https://h.example:8443/tenant/mcp").unwrap();
        assert_eq!(
            well_known(&u, "oauth-protected-resource", true),
            "https://h.example:8443/.well-known/oauth-protected-resource/tenant/mcp"
        );
        assert_eq!(
            well_known(&u, "oauth-protected-resource", false),
            "https://h.example:8443/.well-known/oauth-protected-resource"
        );
        let root = Url::parse("http://127.0.0.1:9/").unwrap();
        assert_eq!(
            well_known(&root, "openid-configuration", true),
            "http://127.0.0.1:9/.well-known/openid-configuration"
        );
    }
}
