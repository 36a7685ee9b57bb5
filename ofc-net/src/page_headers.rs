//! The headers every answer of a server that serves pages carries (the hub's web pages, the
//! floor server's browser view): its Content-Security-Policy, and no sniffing, no framing, no
//! referrer.

use axum::http::{HeaderMap, HeaderValue, header};

/// Sets the page headers on `headers`, with `csp` as the Content-Security-Policy.
pub fn set(headers: &mut HeaderMap, csp: &'static str) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(csp),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}
