//! Names and small parts of `/v2/` requests: repository names, tags, digests, the query
//! string, header values.

use std::collections::HashMap;

use axum::http::HeaderValue;
use axum::http::request::Parts;
use index_schema::name::Digest;

use super::error::{OciError, OciResult};

/// Checks an OCI repository name (`a/b…`, components `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`)
/// that has a namespace and a name; returns the namespace.
pub fn check_repository(name: &str) -> OciResult<&str> {
    let bad = |why: &str| OciError::name_invalid(format!("invalid repository name: {why}"));
    if name.len() > 255 {
        return Err(bad("longer than 255 characters"));
    }
    let parts: Vec<&str> = name.split('/').collect();
    if parts.len() < 2 {
        return Err(bad("it must be `namespace/name`"));
    }
    for p in &parts {
        if !component_ok(p) {
            return Err(bad(&format!(
                "component `{}` must be lowercase letters and digits separated by `.`, `_`, `__` or dashes",
                p.escape_default()
            )));
        }
    }
    Ok(parts[0])
}

fn component_ok(c: &str) -> bool {
    let b = c.as_bytes();
    if b.is_empty() || !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let x = b[i];
        if x.is_ascii_lowercase() || x.is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && matches!(b[i], b'.' | b'_' | b'-') {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|s| s == b'-');
        if !ok || i == start {
            return false;
        }
    }
    true
}

/// A tag: `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.
pub fn tag_ok(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

pub(crate) fn parse_digest(s: &str) -> OciResult<Digest> {
    Digest::parse(s).map_err(|e| OciError::digest_invalid(e.to_string()))
}

/// The query parameters of a request (later values win).
pub(crate) fn query(parts: &Parts) -> HashMap<String, String> {
    parts.uri.query().map(query_pairs).unwrap_or_default()
}

/// `application/x-www-form-urlencoded` decoding (`+` is a space, `%XX` a byte, malformed
/// escapes kept as they are, invalid UTF-8 replaced); later values win.
fn query_pairs(q: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(q.as_bytes())
        .into_owned()
        .collect()
}

pub(crate) fn hv(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::{check_repository, query_pairs, tag_ok};

    #[test]
    fn names() {
        assert!(check_repository("acme/img").is_ok());
        assert!(check_repository("acme/a.b_c__d--e/f").is_ok());
        for bad in [
            "acme",
            "acme/..",
            "acme/../x",
            "../acme/x",
            "acme//x",
            "Acme/x",
            "acme/x/",
            "acme/_x",
            "acme/x.",
            "acme/a..b",
            "acme/a___b",
            "acme/a._b",
            "/acme/x",
        ] {
            assert!(check_repository(bad).is_err(), "{bad}");
        }
        assert!(tag_ok("1.0.0-rc.1"));
        assert!(tag_ok("latest"));
        assert!(!tag_ok(".x"));
        assert!(!tag_ok("a/b"));
        assert!(!tag_ok(&"a".repeat(129)));
    }

    #[test]
    fn queries() {
        let q = query_pairs("a=a%2Fb+c%3&digest=sha256%3Aab&&flag&x=1&x=2&end=%3A");
        assert_eq!(q["a"], "a/b c%3");
        assert_eq!(q["digest"], "sha256:ab");
        assert_eq!(q["flag"], "");
        assert_eq!(q["x"], "2");
        // The hand-written decoder this replaced left an escape at the very end undecoded.
        assert_eq!(q["end"], ":");
        assert_eq!(q.len(), 5);
        assert_eq!(
            query_pairs("%FF=%zz"),
            HashMap::from([("\u{FFFD}".into(), "%zz".into())])
        );
    }
}
