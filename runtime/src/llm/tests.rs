use super::*;

#[test]
fn pass_rule() {
    for (text, reason) in [
        ("[PASS]", None),
        ("[pass]", None),
        ("  [PASS]\n", None),
        ("Nothing to add. [PASS]", Some("Nothing to add")),
        ("**[PASS]**", None),
        ("[PASS].", None),
        ("[PASS] nothing from me", Some("nothing from me")),
        ("`[Pass]`", None),
    ] {
        assert_eq!(
            pass_reason(text),
            Some(reason.map(str::to_owned)),
            "{text:?}"
        );
    }
    for text in [
        "",
        "PASS",
        "Reply [PASS] if you agree, otherwise tell me more",
        "I pass the data to @code?",
        "[PASS is a marker",
        "é[pass",
    ] {
        assert_eq!(pass_reason(text), None, "{text:?}");
    }
}

fn msg(from: &str, calls: Vec<(&str, Value)>, results: Vec<Value>) -> Message {
    let mut m = Message::new(
        "m",
        from,
        "done",
        index_schema::wire::Timestamp::parse("2024-01-15T10:30:00Z").unwrap(),
    );
    m.tool_calls = calls
        .into_iter()
        .map(|(n, a)| ToolCall {
            name: n.into(),
            arguments: a.as_object().cloned().unwrap_or_default(),
        })
        .collect();
    m.tool_results = results;
    m
}

#[test]
fn tool_context_levels() {
    let long_cmd = format!("python -c '{}'\nsecond line", "x".repeat(100));
    let output = (1..=10)
        .map(|i| format!("line {i}"))
        .collect::<Vec<_>>()
        .join("\n");
    let m = msg(
        "@data",
        vec![
            ("bash", json!({"cmd": long_cmd})),
            ("board__add", json!({"t": 1})),
        ],
        vec![json!(output), json!({"id": 7})],
    );
    assert_eq!(format_tool_activity(&m, ToolContext::None), "");
    let summary = format_tool_activity(&m, ToolContext::Summary);
    assert!(
        summary.starts_with(&format!(
            "$ {}...\nline 1\nline 2\nline 3\n... (7 more lines)",
            &long_cmd[..80]
        )),
        "{summary}"
    );
    assert!(
        summary.contains("$ board__add {\"t\":1}\n{\"id\":7}"),
        "{summary}"
    );
    let full = format_tool_activity(&m, ToolContext::Full);
    assert!(
        full.contains("second line") && full.contains("line 10"),
        "{full}"
    );
    let big = msg(
        "@d",
        vec![("bash", json!({"cmd": "cat"}))],
        vec![json!("y".repeat(900))],
    );
    let full = format_tool_activity(&big, ToolContext::Full);
    assert_eq!(full, format!("$ cat\n{}...", "y".repeat(500)));
}
