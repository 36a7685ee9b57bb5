//! The JSON Canonicalization Scheme (RFC 8785): one byte string per JSON value, for
//! signatures over JSON (the A2A card signatures of [`crate::a2a_sign`]).
//!
//! - Objects: members sorted by their names compared as UTF-16 code units (not as UTF-8 bytes
//!   or code points: a name with a character above U+FFFF sorts by its high surrogate).
//! - Strings: only `"`, `\` and U+0000..U+001F are escaped — the five with a short form
//!   (`\b \t \n \f \r`) that way, the others `\u00xx` in lowercase hex; every other character
//!   is written as itself in UTF-8.
//! - Numbers: IEEE 754 doubles written as ECMAScript's `Number.prototype.toString` writes them
//!   (shortest round-trip digits; plain notation from 1e-6 to below 1e21, else `d.ddde±n`;
//!   `-0` as `0`). An integer beyond 2^53 is first rounded to its double, as RFC 8785 says.
//! - No whitespace.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

/// The canonical form of `v`.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => write_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => write_object(out, m),
    }
}

fn write_object(out: &mut String, m: &Map<String, Value>) {
    let mut members: Vec<(&String, &Value)> = m.iter().collect();
    members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    out.push('{');
    for (i, (k, v)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, k);
        out.push(':');
        write_value(out, v);
    }
    out.push('}');
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn number(n: &Number) -> String {
    // Every JSON number is a double here; integers serde_json holds exactly are converted (and
    // rounded past 2^53), as RFC 8785 reads numbers.
    let f = n
        .as_f64()
        .or_else(|| n.as_i64().map(|i| i as f64))
        .or_else(|| n.as_u64().map(|u| u as f64))
        .unwrap_or(0.0);
    format_double(f)
}

/// `f` as ECMAScript's `Number.prototype.toString` writes it (ECMA-262, Number::toString), the
/// number form of RFC 8785. NaN and infinities have no JSON form; they give `null`.
pub fn format_double(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    if f == 0.0 {
        return "0".into();
    }
    // Rust's `{:e}` writes the fewest digits that read back as the same double (k of them).
    // ECMAScript wants, of the k-digit decimals that do, the one closest to the double and on
    // a tie the even one: the double correctly rounded to k digits, which `{:.(k-1)e}` writes
    // (exact, ties to even). Then `d[.ddd]e<exp>`, with the decimal exponent n (value =
    // 0.digits × 10^n), is laid out by ECMAScript's rules.
    let shortest = format!("{:e}", f.abs());
    let k = shortest
        .split('e')
        .next()
        .unwrap_or("")
        .replace('.', "")
        .len();
    let sci = format!("{:.*e}", k.saturating_sub(1), f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp.parse::<i32>().unwrap_or(0) + 1;
    let mut out = String::new();
    if f < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        let e = n - 1;
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if e >= 0 { '+' } else { '-' });
        let _ = write!(out, "{}", e.abs());
    }
    out
}

#[cfg(test)]
mod tests;
