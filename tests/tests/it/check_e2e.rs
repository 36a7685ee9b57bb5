//! `ofc check ping | models | ask` through the real `ofc` binary, against a scripted
//! OpenAI-compatible server that wants a bearer key: the key reaches it and appears in no
//! output, an `@agent`'s rendered prompt is the system message, a wrong key and an endpoint
//! that is not there fail with a hint.
//!
//! Needs the binaries: `cargo build -p ofc-pkg -p hub-server --bins`.

use std::path::Path;

use crate::common::run::blueprint;
use crate::common::{Ofc, Run, free_port};
use crate::run_e2e::{ModelServer, chat_of, pieces};

const KEY: &str = "sk-check-4711-never-shown";

fn ofc_in(ofc: &Ofc, dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut c = ofc.cmd();
    c.current_dir(dir).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    Ofc::finish(&mut c)
}

fn no_key(r: &Run) {
    assert!(
        !r.stdout.contains(KEY) && !r.stderr.contains(KEY),
        "the key was printed:\n{}\n{}",
        r.stdout,
        r.stderr
    );
}

fn server() -> ModelServer {
    ModelServer::start_with_key(
        &[
            ("check-model", vec![pieces(&["Forty", "-two."])]),
            ("other-model", vec![pieces(&["no"])]),
        ],
        Some(KEY),
    )
}

#[test]
fn ping_and_models_with_an_endpoint_alone() {
    let home = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let model = server();
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let ep = model.endpoint.as_str();
    let flags = ["--endpoint", ep, "--key", KEY, "--model", "check-model"];

    // No blueprint in this directory: --endpoint alone does not need one.
    let r = ofc_in(
        &ofc,
        empty.path(),
        &[],
        &[&["check", "ping"][..], &flags].concat(),
    );
    r.assert_code(0);
    assert!(
        r.stdout.contains(&format!("  endpoint: {ep}"))
            && r.stdout.contains("  OK (2 models, ")
            && r.stdout.contains("  model \"check-model\": present"),
        "{}",
        r.stdout
    );
    no_key(&r);

    // A model the endpoint does not list fails the ping.
    let r = ofc_in(
        &ofc,
        empty.path(),
        &[],
        &[
            "check",
            "ping",
            "--endpoint",
            ep,
            "--key",
            KEY,
            "--model",
            "gone",
        ],
    );
    r.assert_code(1);
    assert!(
        r.stdout
            .contains("NOT in the /models listing (2 available)"),
        "{}",
        r.stdout
    );

    let r = ofc_in(
        &ofc,
        empty.path(),
        &[],
        &[&["check", "models"][..], &flags].concat(),
    );
    r.assert_code(0);
    assert_eq!(
        r.stdout,
        format!("--endpoint ({ep})\n* check-model\n  other-model\n"),
        "{}",
        r.stderr
    );
    no_key(&r);

    let r = ofc_in(
        &ofc,
        empty.path(),
        &[],
        &[&["--json", "check", "models"][..], &flags].concat(),
    );
    r.assert_code(0);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["ok"], true);
    assert_eq!(
        doc["targets"][0]["models"],
        serde_json::json!(["check-model", "other-model"])
    );
    no_key(&r);
}

#[test]
fn an_unreachable_endpoint_and_a_wrong_key_fail_with_a_hint() {
    let home = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let nowhere = format!("http://127.0.0.1:{}/v1", free_port());
    let r = ofc_in(
        &ofc,
        empty.path(),
        &[],
        &["check", "ping", "--endpoint", &nowhere],
    );
    r.assert_code(1);
    assert!(
        r.stdout.contains("  FAIL: cannot reach")
            && r.stderr.contains("hint: is the server running?"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    let r = ofc_in(
        &ofc,
        empty.path(),
        &[],
        &["--json", "check", "ping", "--endpoint", &nowhere],
    );
    r.assert_code(1);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["targets"][0]["ok"], false);
    assert!(doc["targets"][0]["latency_ms"].is_u64(), "{doc}");

    let model = server();
    let wrong = "sk-wrong-0000";
    for verb in ["ping", "models"] {
        let r = ofc_in(
            &ofc,
            empty.path(),
            &[],
            &["check", verb, "--endpoint", &model.endpoint, "--key", wrong],
        );
        r.assert_code(1);
        assert!(
            r.stdout.contains("FAIL: HTTP 401") && r.stderr.contains("hint: check the key"),
            "{verb}: {}\n{}",
            r.stdout,
            r.stderr
        );
        assert!(!r.stdout.contains(wrong) && !r.stderr.contains(wrong));
    }
    let r = ofc_in(
        &ofc,
        empty.path(),
        &[],
        &[
            "check",
            "ask",
            "--endpoint",
            &model.endpoint,
            "--key",
            wrong,
            "--model",
            "check-model",
            "hello",
        ],
    );
    r.assert_code(1);
    assert!(
        r.stderr.contains("401") && r.stderr.contains("hint: check the key"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains(wrong));

    // No model for ask.
    let r = ofc_in(
        &ofc,
        empty.path(),
        &[],
        &["check", "ask", "--endpoint", &model.endpoint, "hello"],
    );
    r.assert_code(1);
    assert!(
        r.stderr.contains("no model to ask") && r.stderr.contains("hint: give --model"),
        "{}",
        r.stderr
    );
}

#[test]
fn ask_an_agent_sends_its_rendered_prompt_and_key() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model = server();
    std::fs::write(proj.path().join("facts.md"), "the answer is 42").unwrap();
    blueprint(
        proj.path(),
        "name: check\ndefaults:\n  endpoint: \"${OFC_E2E_CHECK_ENDPOINT}\"\n  model: check-model\nagents:\n  - id: \"@oracle\"\n    api_key_env: OFC_E2E_CHECK_KEY\n    prompt: \"You are an oracle for <% env \\\"OFC_E2E_CHECK_WHO\\\" %>. Facts: <% readfile \\\"facts.md\\\" %>\"\n  - id: \"@other\"\n    prompt: other\n",
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let env = [
        ("OFC_E2E_CHECK_ENDPOINT", model.endpoint.as_str()),
        ("OFC_E2E_CHECK_KEY", KEY),
        ("OFC_E2E_CHECK_WHO", "Ada"),
    ];
    let r = ofc_in(
        &ofc,
        proj.path(),
        &env,
        &["check", "ask", "@oracle", "what", "is", "the", "answer?"],
    );
    r.assert_code(0);
    assert_eq!(r.stdout, "Forty-two.\n", "{}", r.stderr);
    no_key(&r);
    let requests = model.requests();
    assert_eq!(requests.len(), 1, "{}", r.stderr);
    assert_eq!(
        requests[0].0.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(requests[0].1["model"], "check-model");
    let chat = chat_of(&requests[0].1);
    assert_eq!(
        chat,
        vec![
            (
                "system".to_owned(),
                String::new(),
                "You are an oracle for Ada. Facts: the answer is 42".to_owned()
            ),
            (
                "user".to_owned(),
                String::new(),
                "what is the answer?".to_owned()
            ),
        ]
    );

    // Flags over the agent's fields: another model, the same prompt and key.
    let r = ofc_in(
        &ofc,
        proj.path(),
        &env,
        &["check", "ask", "@oracle", "--model", "other-model", "sure?"],
    );
    r.assert_code(0);
    assert_eq!(r.stdout, "no\n", "{}", r.stderr);
    let last = model.requests().pop().unwrap();
    assert_eq!(last.1["model"], "other-model");
    assert_eq!(last.0.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(
        chat_of(&last.1)[0].2,
        "You are an oracle for Ada. Facts: the answer is 42"
    );

    // Two LLM agents: `ask` wants one named.
    let r = ofc_in(&ofc, proj.path(), &env, &["check", "ask", "hello"]);
    r.assert_code(1);
    assert!(r.stderr.contains("needs one target"), "{}", r.stderr);

    // ping without a target checks every LLM agent; @other has no key, so it is refused.
    let r = ofc_in(&ofc, proj.path(), &env, &["check", "ping"]);
    r.assert_code(1);
    assert!(
        r.stdout.contains("@oracle\n") && r.stdout.contains("@other\n  endpoint:"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("FAIL: HTTP 401"), "{}", r.stdout);
    no_key(&r);

    let r = ofc_in(
        &ofc,
        proj.path(),
        &env,
        &["--json", "check", "ask", "@oracle", "again"],
    );
    r.assert_code(0);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["answer"], "Forty-two.");
    assert_eq!(doc["target"], "@oracle");
    no_key(&r);
}
