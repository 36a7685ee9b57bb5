use serde_json::{Value, json};

use super::{canonical, format_double};

/// RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
#[test]
fn numbers_are_written_as_rfc_8785_appendix_b_says() {
    let cases: &[(u64, &str)] = &[
        (0x0000000000000000, "0"),
        (0x8000000000000000, "0"),
        (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"),
        (0x7fefffffffffffff, "1.7976931348623157e+308"),
        (0xffefffffffffffff, "-1.7976931348623157e+308"),
        (0x4340000000000000, "9007199254740992"),
        (0xc340000000000000, "-9007199254740992"),
        (0x4430000000000000, "295147905179352830000"),
        (0x44b52d02c7e14af5, "9.999999999999997e+22"),
        (0x44b52d02c7e14af6, "1e+23"),
        (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
        (0x444b1ae4d6e2ef4e, "999999999999999700000"),
        (0x444b1ae4d6e2ef4f, "999999999999999900000"),
        (0x444b1ae4d6e2ef50, "1e+21"),
        (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
        (0x3eb0c6f7a0b5ed8d, "0.000001"),
        (0x41b3de4355555553, "333333333.3333332"),
        (0x41b3de4355555554, "333333333.33333325"),
        (0x41b3de4355555555, "333333333.3333333"),
        (0x41b3de4355555556, "333333333.3333334"),
        (0x41b3de4355555557, "333333333.33333343"),
        (0xbecbf647612f3696, "-0.0000033333333333333333"),
        (0x43143ff3c1cb0959, "1424953923781206.2"),
    ];
    for (bits, want) in cases {
        assert_eq!(
            format_double(f64::from_bits(*bits)),
            *want,
            "bits {bits:016x}"
        );
    }
    // NaN and the infinities have no JSON form.
    assert_eq!(format_double(f64::NAN), "null");
    assert_eq!(format_double(f64::INFINITY), "null");
}

/// RFC 8785 §3.2.3: names sort by UTF-16 code units, so U+1F600 (high surrogate D83D) comes
/// before U+FB33, where a UTF-8 or code point order would put it last.
#[test]
fn member_names_sort_by_utf16_code_units() {
    let v: Value = serde_json::from_str(
        r#"{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
            "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}"#,
    )
    .unwrap();
    let names: Vec<String> = serde_json::from_str::<serde_json::Map<String, Value>>(&canonical(&v))
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        names,
        [
            "\r",
            "1",
            "\u{80}",
            "\u{f6}",
            "\u{20ac}",
            "\u{1f600}",
            "\u{fb33}"
        ]
    );
}

/// RFC 8785 §3.2.2's example: numbers, escapes, literals, no whitespace.
#[test]
fn the_rfc_example_canonicalises_to_its_published_form() {
    let input = r#"{
        "numbers": [],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
        "literals": [null, true, false]
    }"#;
    let mut v: Value = serde_json::from_str(input).unwrap();
    // The numbers as Rust reads their text (correctly rounded); serde_json's own float parser
    // is not exact in the last bit (it reads 333333333.33333329 as 0x41b3de4355555554).
    #[allow(clippy::excessive_precision)]
    let numbers = [
        333333333.33333329,
        1E30,
        4.50,
        2e-3,
        0.000000000000000000000000001,
    ];
    v["numbers"] = json!(numbers);
    assert_eq!(
        canonical(&v),
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
}

#[test]
fn control_characters_and_integers() {
    // Every control character below U+0020 is escaped; DEL and non-ASCII are not.
    let v = json!({"s": "\u{1}\u{8}\u{1f}\u{7f}é\u{2028}"});
    assert_eq!(
        canonical(&v),
        "{\"s\":\"\\u0001\\b\\u001f\u{7f}é\u{2028}\"}"
    );
    // Integers serde_json holds exactly: as doubles (2^53 + 1 rounds to 2^53).
    let v: Value = serde_json::from_str("[9007199254740993, -7, 100, 1e2, 0.1]").unwrap();
    assert_eq!(canonical(&v), "[9007199254740992,-7,100,100,0.1]");
    // Nested objects sort too; arrays keep their order.
    let v = json!({"b": [{"z": 1, "a": 2}], "a": {}});
    assert_eq!(canonical(&v), r#"{"a":{},"b":[{"a":2,"z":1}]}"#);
}
