//! Assertions on `(status, JSON body)` answers, and tables of refusals.

use hub_core::auth::Scope;
use serde_json::Value;

use crate::TestHub;

/// Every scope but `admin`.
pub fn user_scopes() -> Vec<Scope> {
    Scope::ALL
        .into_iter()
        .filter(|s| *s != Scope::Admin)
        .collect()
}

/// The `code` of an error body; "" when it has none.
pub fn code(v: &Value) -> &str {
    v["code"].as_str().unwrap_or("")
}

/// Asserts that an answer (status, body) has `status`; returns the body. The failure message
/// shows the body.
#[track_caller]
pub fn assert_status((got, body): (u16, Value), status: u16) -> Value {
    assert_eq!(got, status, "{body}");
    body
}

/// Asserts that an answer (status, body) is the refusal `status` with `code`; returns the body.
/// The failure message shows both statuses and codes, and the body.
#[track_caller]
pub fn assert_refused((got, body): (u16, Value), status: u16, code_: &str) -> Value {
    assert_eq!((got, code(&body)), (status, code_), "{body}");
    body
}

/// The string `field` of every entry of the JSON array `list`, in order.
pub fn strings<'a>(list: &'a Value, field: &str) -> Vec<&'a str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| e[field].as_str().unwrap())
        .collect()
}

/// The string fields `a` and `b` of every entry of the JSON array `list`, in order; a field that
/// is not a string is "".
pub fn string_pairs(list: &Value, a: &str, b: &str) -> Vec<(String, String)> {
    let s = |e: &Value, f: &str| e[f].as_str().unwrap_or("").to_string();
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| (s(e, a), s(e, b)))
        .collect()
}

/// One request of a table of refusals, and the answer it must get: `status` with `code`, and a
/// `message`.
#[derive(Debug)]
pub struct Case {
    pub what: &'static str,
    pub method: reqwest::Method,
    pub path: String,
    /// The token to send; `None`: the table's (see [`assert_cases`]).
    pub token: Option<String>,
    pub body: Option<Value>,
    pub status: u16,
    pub code: &'static str,
}

impl Case {
    /// A case sent with the table's token.
    pub fn new(
        what: &'static str,
        method: reqwest::Method,
        path: impl Into<String>,
        body: Option<Value>,
        status: u16,
        code: &'static str,
    ) -> Case {
        Case {
            what,
            method,
            path: path.into(),
            token: None,
            body,
            status,
            code,
        }
    }
}

/// Sends every case, with its own token or else `token`, and asserts that each got its status
/// and `code` (and, for an error, a non-empty `message`); the failure lists every case that did
/// not, with the request and the answer.
pub async fn assert_cases(app: &TestHub, token: Option<&str>, cases: &[Case]) {
    let mut failures = Vec::new();
    for c in cases {
        let (what, method, path, status) = (c.what, &c.method, &c.path, c.status);
        let t = c.token.as_deref().or(token);
        let (s, e) = app.call(method.clone(), path, t, c.body.clone()).await;
        if (s, code(&e)) != (status, c.code) {
            failures.push(format!(
                "{what}: {method} {path}: expected {status} {:?}, got {s} {e}",
                c.code
            ));
        } else if status >= 400 && e["message"].as_str().is_none_or(|m| m.is_empty()) {
            failures.push(format!("{what}: no message: {e}"));
        }
    }
    assert_no_failures(&failures, cases.len());
}

/// Asserts that none of `total` cases failed; the message lists the `failures`.
#[track_caller]
pub fn assert_no_failures(failures: &[String], total: usize) {
    assert!(
        failures.is_empty(),
        "{} of {total} cases wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
