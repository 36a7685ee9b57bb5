//! The pages' HTML. Every `(value)` is escaped by `maud`; nothing here builds markup from
//! strings. Links to agents and publishers are built from names the hub has checked (and are
//! escaped as attributes all the same); no manifest URL becomes a link unless it is `https:`
//! or `http:` (so a `javascript:` homepage stays text).

use axum::http::StatusCode;
use hub_search::{SearchParams, SearchResults};
use index_schema::hub_api::search::SearchHit;
use index_schema::hub_api::{AgentInfo, NamespaceInfo, NewToken, TokenInfo, VersionInfo};
use index_schema::manifest::{Capability, Manifest, Source};
use maud::{DOCTYPE, Markup, html};

/// Name of the hidden field every form carries: the session's CSRF token.
pub(crate) const CSRF_FIELD: &str = "csrf";

/// Whether the stored envelope verifies, checked again for the page: by the key it names,
/// registered for the namespace and not revoked.
#[derive(Debug)]
pub(crate) enum Signature {
    /// It verifies with the key.
    Verified,
    /// It verifies, but the key was revoked since.
    KeyRevoked,
    /// It does not verify: the reason.
    Failed(String),
}

fn page(title: &str, query: Option<&str>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · ofc hub" }
                link rel="stylesheet" href="/static/ofc.css";
                script src="/static/ofc.js" defer {}
            }
            body {
                a class="skip" href="#main" { "Skip to content" }
                header class="top" {
                    a class="brand" href="/" { "ofc hub" }
                    form class="search" role="search" method="get" action="/search" {
                        label for="q" class="visually-hidden" { "Search agents" }
                        input id="q" type="search" name="q" value=[query]
                            placeholder="Search agents, e.g. data analysis" autocomplete="off";
                        button type="submit" { "Search" }
                    }
                    nav aria-label="Account" { a href="/account" { "Your account" } }
                }
                main id="main" { (body) }
                footer {
                    p { "Agents here are signed by their publishers; " code { "ofc pull" } " checks every signature." }
                }
            }
        }
    }
}

pub(super) fn error(status: StatusCode, message: &str) -> Markup {
    let title = status.canonical_reason().unwrap_or("Error");
    page(
        title,
        None,
        html! {
            h1 { (status.as_u16()) " " (title) }
            p { (message) }
            p { a href="/" { "Back to the start page" } }
        },
    )
}

fn agent_href(name: &str) -> String {
    format!("/agents/{name}")
}

fn publisher_of(name: &str) -> &str {
    name.split_once('/').map_or(name, |(p, _)| p)
}

fn hit_list(hits: &[SearchHit], marked: bool) -> Markup {
    html! {
        ol class="hits" {
            @for hit in hits {
                li class="hit" {
                    h3 {
                        a href=(agent_href(&hit.name)) { (hit.display_name) }
                        " "
                        span class="name" { (hit.name) "@" (hit.version) }
                        @if hit.deprecated { " " span class="badge warn" { "deprecated" } }
                        @if let Some(d) = &hit.verified_domain { " " span class="badge ok verified" title=(format!("{} proved it holds the domain {d}", hit.name.split('/').next().unwrap_or_default())) { "✓ verified: " (d) } }
                    }
                    @let tagline = hit.highlights.iter().find(|h| h.field == "tagline");
                    @match (marked, tagline) {
                        (true, Some(h)) => p class="tagline" { (highlighted(&h.fragment, &h.ranges)) },
                        _ => p class="tagline" { (hit.tagline) },
                    }
                    @if marked {
                        @for h in hit.highlights.iter().filter(|h| h.field == "description") {
                            p class="fragment" { "… " (highlighted(&h.fragment, &h.ranges)) " …" }
                        }
                    }
                    p class="meta" {
                        span { "by " a href=(format!("/publishers/{}", publisher_of(&hit.name))) { (publisher_of(&hit.name)) } }
                        span { (hit.kind) }
                        span { (count(hit.downloads, "download", "downloads")) }
                        @if !hit.missing_words.is_empty() {
                            span class="partial" { "without: " (hit.missing_words.join(", ")) }
                        }
                    }
                }
            }
        }
    }
}

/// `fragment` with its matched byte ranges in `<mark>`, every piece escaped.
fn highlighted(fragment: &str, ranges: &[index_schema::hub_api::search::ByteRange]) -> Markup {
    let mut pieces: Vec<(bool, &str)> = Vec::new();
    let mut at = 0;
    for r in ranges {
        let (start, end) = (r.start.max(at), r.end.min(fragment.len()));
        if start >= end || !fragment.is_char_boundary(start) || !fragment.is_char_boundary(end) {
            continue;
        }
        pieces.push((false, &fragment[at..start]));
        pieces.push((true, &fragment[start..end]));
        at = end;
    }
    pieces.push((false, &fragment[at..]));
    html! {
        @for (mark, text) in pieces {
            @if mark { mark { (text) } } @else { (text) }
        }
    }
}

pub(super) fn home(recent: &[SearchHit], popular: &[SearchHit], searchable: bool) -> Markup {
    page(
        "Agents",
        None,
        html! {
            section class="hero" {
                h1 { "Find an agent, check who signed it, pull it" }
                p { "Every agent here is a signed manifest. " code { "ofc pull publisher/agent" } " fetches it into a verified cache and " code { "ofc run" } " puts it on a floor." }
            }
            @if !searchable {
                p class="notice" { "Search is not enabled on this hub." }
            }
            div class="columns" {
                section aria-labelledby="recent" {
                    h2 id="recent" { "Recently updated" }
                    @if recent.is_empty() { p { "Nothing published yet." } } @else { (hit_list(recent, false)) }
                }
                section aria-labelledby="popular" {
                    h2 id="popular" { "Most pulled" }
                    @if popular.is_empty() { p { "Nothing pulled yet." } } @else { (hit_list(popular, false)) }
                }
            }
        },
    )
}

fn filter_input(name: &str, label: &str, value: Option<&str>) -> Markup {
    html! {
        div class="field" {
            label for=(format!("f-{name}")) { (label) }
            input id=(format!("f-{name}")) type="text" name=(name) value=[value];
        }
    }
}

pub(super) fn search(params: &SearchParams, results: &SearchResults) -> Markup {
    let q = params.q.as_deref().unwrap_or("");
    let sort = params.sort.as_deref().unwrap_or("relevance");
    let next = results.next_cursor.as_ref().map(|cursor| {
        let mut p = params.clone();
        p.cursor = Some(cursor.clone());
        format!(
            "/search?{}",
            serde_urlencoded::to_string(&p).unwrap_or_default()
        )
    });
    page(
        if q.is_empty() { "Search" } else { q },
        Some(q),
        html! {
            h1 { @if q.is_empty() { "All agents" } @else { "Agents for “" (q) "”" } }
            form class="filters" method="get" action="/search" aria-label="Filters" {
                input type="hidden" name="q" value=(q);
                (filter_input("capability", "Capability", params.capability.as_deref()))
                (filter_input("keyword", "Keyword", params.keyword.as_deref()))
                (filter_input("kind", "Source kind", params.kind.as_deref()))
                (filter_input("publisher", "Publisher", params.publisher.as_deref()))
                div class="field" {
                    label for="f-sort" { "Sort" }
                    select id="f-sort" name="sort" {
                        @for (value, text) in [("relevance", "Relevance"), ("downloads", "Downloads"), ("updated", "Recently updated")] {
                            option value=(value) selected[sort == value] { (text) }
                        }
                    }
                }
                button type="submit" { "Apply" }
            }
            @if !results.dropped_words.is_empty() {
                p class="notice" { "Few agents have every word; also showing agents without: " (results.dropped_words.join(", ")) "." }
            }
            @if let Some(dym) = &results.did_you_mean {
                p class="notice" { "Did you mean " a href=(format!("/search?{}", serde_urlencoded::to_string([("q", dym.as_str())]).unwrap_or_default())) { (dym) } "?" }
            }
            @if results.hits.is_empty() {
                p { "No agent matches." }
            } @else {
                (hit_list(&results.hits, true))
            }
            @if let Some(next) = next {
                nav aria-label="Pages" { a href=(next) rel="next" { "Next page" } }
            }
        },
    )
}

fn when(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(ms / 1000)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .map(|s| s.chars().take(10).collect())
        .unwrap_or_default()
}

fn safe_link(url: &str) -> Option<&str> {
    (url.starts_with("https://") || url.starts_with("http://")).then_some(url)
}

fn schema(label: &str, value: &serde_json::Value) -> Markup {
    html! {
        @if !(value.is_null() || value.as_object().is_some_and(|o| o.is_empty())) {
            details {
                summary { (label) }
                pre { code { (serde_json::to_string_pretty(value).unwrap_or_default()) } }
            }
        }
    }
}

fn capability(c: &Capability) -> Markup {
    html! {
        li {
            h3 { code { (c.name) } }
            @if !c.description.is_empty() { p { (c.description) } }
            @if !c.keywords.is_empty() { p class="meta" { "Keywords: " (c.keywords.join(", ")) } }
            @if let Some(who) = c.authorized_requesters.as_ref().filter(|w| !w.is_empty()) {
                p class="meta" { "Only for: " (who.iter().map(|h| h.to_string()).collect::<Vec<_>>().join(", ")) }
            }
            (schema("Input schema", &c.input_schema))
            (schema("Output schema", &c.output_schema))
        }
    }
}

fn source(s: &Source) -> Markup {
    html! {
        @match s {
            Source::Bundle(b) => p { "A bundle of " (b.size) " bytes, run with " code { (b.entrypoint) } "." },
            Source::Pip(p) => p { "The PyPI package " code { (p.package) "==" (p.version) } " (entry point " code { (p.entry_point) } "); needs Python and " code { "uv" } " or pip." },
            Source::Npm(n) => p { "The npm package " code { (n.package) "@" (n.version) } " (bin " code { (n.bin) } "); needs Node.js." },
            Source::Docker(d) => p { "The container image " code { (d.image) } ", serving on port " (d.port) "; needs podman or docker." },
            Source::Remote(r) => p { "A remote agent at " code { (r.endpoint) } "; nothing runs locally." },
        }
    }
}

pub(super) fn agent(
    info: &AgentInfo,
    v: &VersionInfo,
    manifest: Option<&Manifest>,
    signature: &Signature,
    origin: Option<&str>,
) -> Markup {
    let pull = format!("ofc pull {}@{}", v.name, v.version);
    let major = v.version.split('.').next().unwrap_or("0");
    let snippet = format!("agents:\n  - {}@^{major}\n", v.name);
    let title = manifest.map_or(v.name.as_str(), |m| m.display_name.as_str());
    page(
        title,
        None,
        html! {
            article class="agent" {
                header {
                    h1 { (title) " " span class="name" { (v.name) "@" (v.version) } }
                    @if let Some(m) = manifest { p class="tagline" { (m.tagline) } }
                    p class="meta" {
                        span { "by " a href=(format!("/publishers/{}", info.namespace)) { (info.namespace) } }
                        @if let Some(d) = &info.verified_domain { span class="badge ok verified" id="verified" title=(format!("{} proved it holds the domain {d}", info.namespace)) { "✓ verified: " (d) } }
                        @if let Some(h) = &info.handle { span { "answers as " code { (h) } } }
                        span { (v.source_kind) }
                        span { (count(info.downloads, "download", "downloads")) }
                        span { "published " (when(v.published_at)) }
                    }
                    @if v.yanked { p class="badge danger" { "This version is yanked" @if let Some(r) = &v.yank_reason { ": " (r) } } }
                    @if let Some(d) = &v.deprecated {
                        p class="badge warn" id="deprecated" {
                            "Deprecated: " (d)
                            @if let Some(s) = &v.deprecated_successor { " — use " a href=(format!("/agents/{s}")) { (s) } " instead" }
                        }
                    }
                }
                section aria-labelledby="use" {
                    h2 id="use" { "Use it" }
                    div class="copy" {
                        pre id="pull" { code { (pull) } }
                        button type="button" class="copy-button" data-copy="pull" hidden { "Copy" }
                    }
                    @if let Some(o) = origin { p class="meta" { "From this hub: set " code { "OFC_HUB=" (o) } " (or " code { "ofc login" } " to it)." } }
                    p { "Or in a blueprint:" }
                    div class="copy" {
                        pre id="snippet" { code { (snippet) } }
                        button type="button" class="copy-button" data-copy="snippet" hidden { "Copy" }
                    }
                }
                section aria-labelledby="trust" {
                    h2 id="trust" { "Who signed it" }
                    p {
                        "Key " code { (v.key.key_id) } ": "
                        @match signature {
                            Signature::Verified => strong class="ok" { "the signature verifies" },
                            Signature::KeyRevoked => strong class="warn" { "the signature verifies, but the key has been revoked" },
                            Signature::Failed(why) => strong class="danger" { "the signature does not verify: " (why) },
                        }
                    }
                    p class="meta" { "Manifest digest " code { (v.manifest_digest) } }
                }
                (super::trust::section(v.trust.as_ref(), when))
                @if let Some(m) = manifest {
                    section aria-labelledby="about" {
                        h2 id="about" { "What it does" }
                        @for para in m.description.split("\n\n") { p { (para) } }
                        @if !m.examples.is_empty() {
                            h3 { "Ask it, for example" }
                            ul { @for e in &m.examples { li { (e) } } }
                        }
                        @if !m.keywords.is_empty() { p class="meta" { "Keywords: " (m.keywords.join(", ")) } }
                        p class="meta" {
                            @if let Some(l) = &m.license { span { "License " (l) } }
                            @if let Some(h) = m.homepage.as_deref() {
                                @if let Some(link) = safe_link(h) { span { a href=(link) rel="nofollow noopener" { "Homepage" } } } @else { span { "Homepage " (h) } }
                            }
                            @if let Some(r) = m.repository.as_deref() {
                                @if let Some(link) = safe_link(r) { span { a href=(link) rel="nofollow noopener" { "Repository" } } } @else { span { "Repository " (r) } }
                            }
                        }
                    }
                    @if !m.capabilities.is_empty() {
                        section aria-labelledby="caps" {
                            h2 id="caps" { "Capabilities" }
                            ul class="caps" { @for c in &m.capabilities { (capability(c)) } }
                        }
                    }
                    section aria-labelledby="needs" {
                        h2 id="needs" { "What it needs" }
                        (source(&m.source))
                        @if let Some(r) = &m.requires {
                            ul {
                                @if let Some(model) = &r.model { li { "A model: " code { (model) } } }
                                @for w in &r.workstations { li { "Workstation " code { (w) } } }
                                @for t in &r.tools { li { "Tool " code { (t) } } }
                            }
                        }
                    }
                }
                section aria-labelledby="versions" {
                    h2 id="versions" { "Versions" }
                    table {
                        thead { tr { th scope="col" { "Version" } th scope="col" { "Published" } th scope="col" { "State" } th scope="col" { "Downloads" } } }
                        tbody {
                            @for s in info.versions.iter().rev() {
                                tr {
                                    td { a href=(format!("/agents/{}?version={}", info.name, s.version)) { (s.version) } }
                                    td { (when(s.published_at)) }
                                    td {
                                        @if s.yanked { "yanked" } @else if let Some(d) = &s.deprecated { span class="deprecated" title=(d) { "deprecated" } @if let Some(n) = &s.deprecated_successor { " (use " a href=(format!("/agents/{n}")) { (n) } ")" } } @else { "available" }
                                        @if s.key_revoked_at.is_some() { " (key revoked)" }
                                    }
                                    td { (s.downloads) }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

pub(super) fn publisher(ns: &NamespaceInfo, hits: &[SearchHit]) -> Markup {
    page(
        &ns.name,
        None,
        html! {
            h1 { (ns.name) }
            p class="meta" { "Publishing since " (when(ns.created_at)) "; " (ns.keys.iter().filter(|k| k.revoked_at.is_none()).count()) " signing key(s) in use." }
            section aria-labelledby="agents" {
                h2 id="agents" { "Agents" }
                @if hits.is_empty() { p { "No agents yet." } } @else { (hit_list(hits, false)) }
            }
            @if !ns.members.is_empty() {
                section aria-labelledby="members" {
                    h2 id="members" { "Members" }
                    ul { @for m in &ns.members { li { (m.user) " (" (m.role) ")" } } }
                }
            }
        },
    )
}

fn csrf_field(csrf: &str) -> Markup {
    html! { input type="hidden" name=(CSRF_FIELD) value=(csrf); }
}

/// A one-button form that posts to `action` (revoke, remove, log out).
fn button_form(action: &str, csrf: &str, label: &str, described: &str) -> Markup {
    html! {
        form class="inline" method="post" action=(action) {
            (csrf_field(csrf))
            button type="submit" class="secondary" aria-label=(described) { (label) }
        }
    }
}

pub(super) fn login(csrf: &str, user: Option<&str>, error: Option<&str>) -> Markup {
    page(
        "Sign in",
        None,
        html! {
            h1 { "Sign in" }
            @if let Some(e) = error { p class="notice danger" role="alert" { (e) } }
            form class="stack" method="post" action="/login" {
                (csrf_field(csrf))
                div class="field" {
                    label for="username" { "User name" }
                    input id="username" name="username" autocomplete="username" required value=[user];
                }
                div class="field" {
                    label for="password" { "Password" }
                    input id="password" name="password" type="password" autocomplete="current-password" required;
                }
                button type="submit" { "Sign in" }
            }
            p class="meta" { "Accounts are created by the hub's administrator (" code { "ofc-hub admin create-user" } ")." }
        },
    )
}

pub(super) fn account(
    user: &str,
    session_token: i64,
    namespaces: &[(String, String)],
    tokens: &[TokenInfo],
    csrf: &str,
    new_token: Option<&NewToken>,
) -> Markup {
    let scopes = [
        ("publish-new", "publish new agents"),
        ("publish-update", "publish new versions"),
        ("yank", "yank and deprecate"),
        ("manage-keys", "register and revoke signing keys"),
        ("manage-members", "manage namespace members"),
        ("manage-tokens", "list, create and revoke tokens"),
    ];
    page(
        "Your account",
        None,
        html! {
            h1 { "Signed in as " (user) }
            (button_form("/logout", csrf, "Sign out", "Sign out"))
            @if let Some(t) = new_token {
                section class="notice" aria-labelledby="new-token" {
                    h2 id="new-token" { "New token " (t.info.name) }
                    p { "Copy it now: the hub keeps only its hash and cannot show it again." }
                    div class="copy" {
                        pre { code id="new-token-value" { (t.token) } }
                        button type="button" class="copy-button" data-copy="new-token-value" hidden { "Copy" }
                    }
                    p { "Use it with " code { "ofc login --token-stdin" } "." }
                }
            }
            section aria-labelledby="namespaces" {
                h2 id="namespaces" { "Your namespaces" }
                @if namespaces.is_empty() { p { "You are not a member of any namespace." } }
                ul {
                    @for (name, role) in namespaces {
                        li { a href=(format!("/account/namespaces/{name}")) { (name) } " (" (role) ")" }
                    }
                }
            }
            section aria-labelledby="tokens" {
                h2 id="tokens" { "API tokens" }
                div class="scroll" { table {
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Scopes" } th scope="col" { "Namespaces" } th scope="col" { "Created" } th scope="col" { "Expires" } th scope="col" { "State" } } }
                    tbody {
                        @for t in tokens {
                            tr {
                                td { (t.name) @if t.id == session_token { " (this browser)" } }
                                td { (t.scopes.join(", ")) }
                                td { (t.namespaces.join(", ")) }
                                td { (when(t.created_at)) }
                                td { @if let Some(e) = t.expires_at { (when(e)) } @else { "never" } }
                                td {
                                    @if t.revoked_at.is_some() { "revoked" }
                                    @else { (button_form(&format!("/account/tokens/{}/revoke", t.id), csrf, "Revoke", &format!("Revoke token {} ({})", t.name, t.id))) }
                                }
                            }
                        }
                    }
                } }
            }
            section aria-labelledby="create-token" {
                h2 id="create-token" { "Create a token" }
                form class="stack" method="post" action="/account/tokens" {
                    (csrf_field(csrf))
                    div class="field" {
                        label for="token-name" { "Name" }
                        input id="token-name" name="name" required maxlength="100";
                    }
                    fieldset {
                        legend { "Scopes" }
                        @for (scope, what) in scopes {
                            div {
                                input type="checkbox" id=(format!("scope-{scope}")) name="scope" value=(scope);
                                " "
                                label for=(format!("scope-{scope}")) { code { (scope) } " — " (what) }
                            }
                        }
                    }
                    div class="field" {
                        label for="token-namespaces" { "Namespaces (" code { "*" } ", names, or prefixes ending in " code { "*" } ")" }
                        input id="token-namespaces" name="namespaces" value="*" required;
                    }
                    div class="field" {
                        label for="token-days" { "Expires after (days, empty: never)" }
                        input id="token-days" name="expires_in_days" type="number" min="1" max="3650";
                    }
                    div class="field" {
                        label for="token-password" { "Your password (needed for a token that outlives this session, which ends within a day)" }
                        input id="token-password" name="password" type="password" autocomplete="current-password";
                    }
                    button type="submit" { "Create token" }
                }
            }
        },
    )
}

pub(super) fn namespace_admin(ns: &NamespaceInfo, role: Option<&str>, csrf: &str) -> Markup {
    let base = format!("/account/namespaces/{}", ns.name);
    let roles = ["owner", "maintainer", "publisher"];
    page(
        &ns.name,
        None,
        html! {
            h1 { "Namespace " (ns.name) }
            p class="meta" {
                @if let Some(r) = role { "Your role: " (r) "." } @else { "You are not a member." }
                " Only owners may change members and keys; the hub refuses what your role does not allow. "
                a href=(format!("/publishers/{}", ns.name)) { "Public page" }
            }
            section aria-labelledby="members" {
                h2 id="members" { "Members" }
                div class="scroll" { table {
                    thead { tr { th scope="col" { "User" } th scope="col" { "Role" } th scope="col" { "Remove" } } }
                    tbody {
                        @for m in &ns.members {
                            tr {
                                td { (m.user) }
                                td {
                                    form class="inline" method="post" action=(format!("{base}/members")) {
                                        (csrf_field(csrf))
                                        input type="hidden" name="user" value=(m.user);
                                        select name="role" aria-label=(format!("Role of {}", m.user)) {
                                            @for r in roles { option value=(r) selected[m.role == r] { (r) } }
                                        }
                                        " "
                                        button type="submit" class="secondary" aria-label=(format!("Change the role of {}", m.user)) { "Change" }
                                    }
                                }
                                td { (button_form(&format!("{base}/members/{}/remove", m.user), csrf, "Remove", &format!("Remove {}", m.user))) }
                            }
                        }
                    }
                } }
                h3 { "Add a member" }
                form class="stack" method="post" action=(format!("{base}/members")) {
                    (csrf_field(csrf))
                    div class="field" {
                        label for="member-user" { "User name" }
                        input id="member-user" name="user" required;
                    }
                    div class="field" {
                        label for="member-role" { "Role" }
                        select id="member-role" name="role" {
                            @for r in roles { option value=(r) selected[r == "publisher"] { (r) } }
                        }
                    }
                    button type="submit" { "Add member" }
                }
            }
            section aria-labelledby="keys" {
                h2 id="keys" { "Signing keys" }
                div class="scroll" { table {
                    thead { tr { th scope="col" { "Key id" } th scope="col" { "Added" } th scope="col" { "State" } } }
                    tbody {
                        @for k in &ns.keys {
                            tr {
                                td { code { (k.key_id) } }
                                td { (when(k.added_at)) " by " (k.added_by) }
                                td {
                                    @if let Some(at) = k.revoked_at {
                                        "revoked " (when(at)) @if let Some(by) = &k.revoked_by { " by " (by) }
                                    } @else {
                                        (button_form(&format!("{base}/keys/{}/revoke", k.key_id), csrf, "Revoke", &format!("Revoke key {}", k.key_id)))
                                    }
                                }
                            }
                        }
                    }
                } }
                h3 { "Register a key" }
                form class="stack" method="post" action=(format!("{base}/keys")) {
                    (csrf_field(csrf))
                    div class="field" {
                        label for="public-key" { "Public key (" code { "ed25519:…" } ", as " code { "ofc key show" } " prints it)" }
                        input id="public-key" name="public_key" required;
                    }
                    button type="submit" { "Register key" }
                }
            }
        },
    )
}

/// `n` and the noun in the number it takes ("1 download", "2 downloads", "0 downloads").
fn count(n: impl Into<i128>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn one_download_is_singular() {
        assert_eq!(super::count(1u64, "download", "downloads"), "1 download");
        assert_eq!(super::count(0u64, "download", "downloads"), "0 downloads");
        assert_eq!(super::count(2u64, "download", "downloads"), "2 downloads");
    }
}
