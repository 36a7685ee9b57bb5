//! The hub URL, typed: which hub a command talks to (`--hub`, else `OFC_HUB`, else
//! [`DEFAULT_HUB`]) and its one normal form, [`HubUrl`], checked once where it enters the
//! client. Credentials, trust pins, lockfiles and the hub client all key on that form, so
//! `HTTP://Hub:80/` and `http://hub` find the same token and the same pins.

use std::fmt;

use anyhow::Result;
use index_schema::http_url;
use serde::Serialize;

use crate::config::{DEFAULT_HUB, HUB_ENV};
use crate::output::UserError;

/// A hub URL as ofc stores and shows it: `http(s)://host[:port][/path]`, lowercase scheme and
/// host, no default port, no trailing slash.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct HubUrl(String);

impl HubUrl {
    /// Checks `url` and brings it to its normal form; refuses anything but `http(s)://…`
    /// without credentials, query or fragment.
    pub fn parse(url: &str) -> Result<Self> {
        let trimmed = url.trim().trim_end_matches('/');
        let bad = |why: String| -> anyhow::Error {
            UserError::new(format!("invalid hub URL `{url}`: {why}"))
                .hint(format!(
                    "give a URL such as {DEFAULT_HUB} (in {HUB_ENV} or --hub)"
                ))
                .into()
        };
        let parsed = http_url::parse(trimmed, http_url::Rules::BASE).map_err(|e| {
            bad(match e {
                http_url::HttpUrlError::UserInfo => {
                    "it carries a user name or password; use `ofc login` for credentials".into()
                }
                e => e.to_string(),
            })
        })?;
        // The URL's own normal form: lowercase scheme and host, no default port, no trailing
        // slash — so `HTTP://Hub:80/` and `http://hub` store and find the same credentials.
        Ok(Self(http_url::normal_form(&parsed)))
    }

    /// The hub this process talks to ([`configured`]), checked.
    pub fn configured() -> Result<Self> {
        Self::parse(&configured())
    }

    /// The URL as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the hub is reached over HTTPS, or over plain HTTP on this machine.
    pub fn is_loopback_or_tls(&self) -> bool {
        is_loopback_or_tls(&self.0)
    }
}

impl fmt::Display for HubUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::ops::Deref for HubUrl {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for HubUrl {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<HubUrl> for String {
    fn from(url: HubUrl) -> Self {
        url.0
    }
}

impl PartialEq<str> for HubUrl {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for HubUrl {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// HTTPS, or plain HTTP to this machine.
fn is_loopback_or_tls(url: &str) -> bool {
    let tls = http_url::Rules {
        tls_unless_loopback: true,
        ..http_url::Rules::ANY
    };
    http_url::parse(url, tls).is_ok()
}

/// The hub chosen with `--hub` for this process (set once, by the command line).
static HUB_OVERRIDE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Makes `url` the hub of every verb in this process (`ofc --hub URL …`).
pub fn set_override(url: &str) {
    let _ = HUB_OVERRIDE.set(url.trim_end_matches('/').to_string());
}

/// The hub `OFC_HUB` names (else [`DEFAULT_HUB`]), ignoring `--hub`: the hub `OFC_TOKEN`
/// belongs to.
pub fn from_env() -> String {
    let url = std::env::var(HUB_ENV)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_HUB.to_string());
    url.trim_end_matches('/').to_string()
}

/// The hub URL as given: `--hub`, else `OFC_HUB`, else [`DEFAULT_HUB`], without a trailing
/// slash (unchecked: a verb that never talks to the hub does not fail on a bad one).
pub fn configured() -> String {
    match HUB_OVERRIDE.get() {
        Some(h) => h.clone(),
        None => from_env(),
    }
}

/// Whether two hub URLs name the same hub (compared in their normal form).
pub fn same_hub(a: &str, b: &str) -> bool {
    match (HubUrl::parse(a), HubUrl::parse(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a.trim_end_matches('/') == b.trim_end_matches('/'),
    }
}

/// `hub.example` → `https://hub.example`; URLs lose a trailing `/` and get a lowercase scheme
/// and host, so the forms a lockfile may hold compare equal to the client's hub URL.
pub fn normalize_hub(s: &str) -> String {
    let s = s.trim().trim_end_matches('/');
    let with_scheme = if s.contains("://") {
        s.to_string()
    } else {
        format!("{}://{s}", default_scheme(s))
    };
    if let Ok(u) = HubUrl::parse(&with_scheme) {
        return u.into();
    }
    let (scheme, rest) = match s.split_once("://") {
        Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
        None => (default_scheme(s).to_string(), s),
    };
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    format!("{scheme}://{}{path}", host.to_ascii_lowercase())
}

/// Loopback hosts are reached over plain HTTP (as docker does for `localhost`), others HTTPS.
fn default_scheme(host: &str) -> &'static str {
    let h = host.split(':').next().unwrap_or(host);
    if h.eq_ignore_ascii_case("localhost") || h == "127.0.0.1" || h == "[::1]" {
        "http"
    } else {
        "https"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_urls_have_one_form() {
        assert_eq!(
            HubUrl::parse("HTTP://Hub.Example:80/").unwrap().as_str(),
            "http://hub.example"
        );
        assert_eq!(
            HubUrl::parse("https://h:443").unwrap().as_str(),
            "https://h"
        );
        assert_eq!(
            HubUrl::parse("http://127.0.0.1:8733/").unwrap().as_str(),
            "http://127.0.0.1:8733"
        );
        assert!(is_loopback_or_tls("http://localhost:1"));
        assert!(is_loopback_or_tls("http://[::1]:1"));
        assert!(is_loopback_or_tls("https://hub.example"));
        assert!(!is_loopback_or_tls("http://hub.example"));
    }

    #[test]
    fn hub_urls_are_checked_and_normalised() {
        assert_eq!(HubUrl::parse("http://h:1/").unwrap(), "http://h:1");
        assert_eq!(
            HubUrl::parse("https://hub.example/ofc").unwrap(),
            "https://hub.example/ofc"
        );
        for bad in [
            "h:1",
            "ftp://h",
            "http://u:p@h",
            "http://h/?q=1",
            "not a url",
            "",
        ] {
            let e = HubUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains("invalid hub URL"), "{bad}: {e}");
        }
    }

    #[test]
    fn hub_forms_compare_equal() {
        assert_eq!(normalize_hub("hub.example"), "https://hub.example");
        assert_eq!(normalize_hub("HTTPS://Hub.Example/"), "https://hub.example");
        assert_eq!(normalize_hub("localhost:8733"), "http://localhost:8733");
        assert_eq!(normalize_hub("127.0.0.1:8733"), "http://127.0.0.1:8733");
        assert_eq!(
            normalize_hub("http://127.0.0.1:8733/Path/"),
            "http://127.0.0.1:8733/Path"
        );
    }
}
