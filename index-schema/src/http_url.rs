//! The one rule for the `http(s)://` URLs ofc stores or calls — hub URLs (`ofc`), agent
//! endpoints (the floor server, LLM agents) and the URLs of `agent.yaml`, lockfiles and
//! blueprints — built on the `url` crate's WHATWG parser.
//!
//! Every such URL is written out in full: it starts with `http://` or `https://` (any case),
//! names a host right after the `//`, and holds no whitespace or control character (the
//! parser would silently drop tabs and line breaks, or strip spaces at the ends; a URL that
//! needed that is a mistake, not a URL). Callers add what they need with [`Rules`]: no user
//! name or password, no query or fragment, plain `http://` only to this machine.

use url::{Host, Url};

/// What a caller refuses beyond the common rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rules {
    /// Refuse a user name or password (`http://user:pw@host`).
    pub no_userinfo: bool,
    /// Refuse a query or fragment, even an empty one (`http://host/?`, `http://host/#`):
    /// paths appended to the URL would land in them.
    pub no_query_or_fragment: bool,
    /// Accept `http://` only for a loopback host ([`is_loopback`]); `https://` elsewhere.
    pub tls_unless_loopback: bool,
}

impl Rules {
    /// The common rule alone.
    pub const ANY: Rules = Rules {
        no_userinfo: false,
        no_query_or_fragment: false,
        tls_unless_loopback: false,
    };
    /// A base URL that paths are appended to: no user info, query or fragment.
    pub const BASE: Rules = Rules {
        no_userinfo: true,
        no_query_or_fragment: true,
        tls_unless_loopback: false,
    };
}

/// Why a URL was refused. The messages complete "… is not a valid URL: ".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpUrlError {
    /// It does not start with `http://` or `https://`.
    #[error("it does not start with http:// or https://")]
    Scheme,
    /// Nothing, or a `/`, right after `//`.
    #[error("it has no host")]
    NoHost,
    /// A space, tab, line break or other control character.
    #[error("it contains whitespace or a control character")]
    Whitespace,
    /// The parser refused it (a bad host, port or escape).
    #[error("{0}")]
    Parse(url::ParseError),
    /// A user name or password, with [`Rules::no_userinfo`].
    #[error("it carries a user name or password")]
    UserInfo,
    /// A query or fragment, with [`Rules::no_query_or_fragment`].
    #[error("it has a query or a fragment")]
    QueryOrFragment,
    /// `http://` to another machine, with [`Rules::tls_unless_loopback`].
    #[error("it uses http:// for a host other than this machine; use https://")]
    PlainHttp,
}

/// Parses `text` under the common rule and `rules`.
pub fn parse(text: &str, rules: Rules) -> Result<Url, HttpUrlError> {
    let lower = text.get(..8).unwrap_or(text).to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &text[8..]
    } else if lower.starts_with("http://") {
        &text[7..]
    } else {
        return Err(HttpUrlError::Scheme);
    };
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(HttpUrlError::Whitespace);
    }
    if rest.is_empty() || rest.starts_with(['/', '\\', '?', '#']) {
        return Err(HttpUrlError::NoHost);
    }
    let url = Url::parse(text).map_err(HttpUrlError::Parse)?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(HttpUrlError::NoHost);
    }
    if rules.no_userinfo && (!url.username().is_empty() || url.password().is_some()) {
        return Err(HttpUrlError::UserInfo);
    }
    // `text` too: the parser keeps an empty query or fragment, but be sure of it.
    if rules.no_query_or_fragment
        && (url.query().is_some() || url.fragment().is_some() || text.contains(['?', '#']))
    {
        return Err(HttpUrlError::QueryOrFragment);
    }
    if rules.tls_unless_loopback && url.scheme() == "http" && !is_loopback(&url) {
        return Err(HttpUrlError::PlainHttp);
    }
    Ok(url)
}

/// `localhost`, 127.0.0.0/8 or `::1`.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The URL's normal form as ofc stores and compares it: lowercase scheme and host, no
/// default port, no trailing `/` (`HTTP://Hub:80/` → `http://hub`).
pub fn normal_form(url: &Url) -> String {
    url.as_str().trim_end_matches('/').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str, rules: Rules) -> HttpUrlError {
        parse(text, rules).unwrap_err()
    }

    #[test]
    fn the_common_rule() {
        for ok in [
            "http://h",
            "https://hub.example:8443/a/b?q=1#f",
            "HTTPS://Hub.Example/",
            "http://127.0.0.1:1",
            "http://[::1]:8080/x",
            "http://u:p@h/",
        ] {
            assert!(parse(ok, Rules::ANY).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("", HttpUrlError::Scheme),
            ("h:1", HttpUrlError::Scheme),
            ("ftp://h", HttpUrlError::Scheme),
            ("http:h", HttpUrlError::Scheme),
            ("http:/h", HttpUrlError::Scheme),
            ("http://", HttpUrlError::NoHost),
            ("http:///h", HttpUrlError::NoHost),
            ("http://?q", HttpUrlError::NoHost),
            (" http://h", HttpUrlError::Scheme),
            ("http://h ", HttpUrlError::Whitespace),
            ("http://h/a b", HttpUrlError::Whitespace),
            ("http://h/a\tb", HttpUrlError::Whitespace),
            ("http://h/\n", HttpUrlError::Whitespace),
        ] {
            assert_eq!(err(bad, Rules::ANY), why, "{bad:?}");
        }
        assert!(matches!(
            err("http://h:99999", Rules::ANY),
            HttpUrlError::Parse(_)
        ));
        assert!(matches!(
            err("http://a b", Rules::ANY),
            HttpUrlError::Whitespace
        ));
        assert!(matches!(
            err("http://[::1", Rules::ANY),
            HttpUrlError::Parse(_)
        ));
    }

    #[test]
    fn the_extras() {
        assert_eq!(err("http://u@h", Rules::BASE), HttpUrlError::UserInfo);
        assert_eq!(err("http://:p@h", Rules::BASE), HttpUrlError::UserInfo);
        for bad in ["http://h/?q=1", "http://h/?", "http://h#", "http://h/x#f"] {
            assert_eq!(
                err(bad, Rules::BASE),
                HttpUrlError::QueryOrFragment,
                "{bad}"
            );
        }
        let tls = Rules {
            tls_unless_loopback: true,
            ..Rules::ANY
        };
        for ok in [
            "https://hub.example",
            "http://localhost:1",
            "http://LOCALHOST",
            "http://127.9.9.9",
            "http://[::1]:1",
        ] {
            assert!(parse(ok, tls).is_ok(), "{ok}");
        }
        for bad in [
            "http://hub.example",
            "http://10.0.0.1",
            "http://localhost.example",
        ] {
            assert_eq!(err(bad, tls), HttpUrlError::PlainHttp, "{bad}");
        }
    }

    #[test]
    fn one_normal_form() {
        let n = |t| normal_form(&parse(t, Rules::ANY).unwrap());
        assert_eq!(n("HTTP://Hub.Example:80/"), "http://hub.example");
        assert_eq!(n("https://h:443"), "https://h");
        assert_eq!(n("https://h/ofc/"), "https://h/ofc");
        assert_eq!(n("http://127.0.0.1:8733/"), "http://127.0.0.1:8733");
    }
}
