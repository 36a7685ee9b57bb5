//! The reference CLI's blueprint fields end to end, through the real `ofc` binary:
//! `${VAR}` forms expanded at load (an unset one named with its field), `prompt_file` read
//! from the blueprint's directory (never `../` out of it), prompt templates rendered for the
//! turn (`<% readfile %>` kept inside the blueprint's directory), as the scripted model sees.
//!
//! Needs the binaries: `cargo build -p ofc-pkg -p hub-server --bins`.

use std::path::Path;

use crate::common::run::blueprint;
use crate::common::{Ofc, Run};
use crate::run_e2e::{ModelServer, chat_of, pieces};

fn ofc_in(ofc: &Ofc, dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut c = ofc.cmd();
    c.current_dir(dir).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    Ofc::finish(&mut c)
}

#[test]
fn variables_and_a_prompt_file_reach_the_model_expanded_once() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model = ModelServer::start(&[("fields-model", vec![pieces(&["Noted, ", "@user."])])]);
    std::fs::create_dir(proj.path().join("prompts")).unwrap();
    // A prompt file is text: `${…}` in it is not expanded.
    std::fs::write(
        proj.path().join("prompts/keeper.md"),
        "You keep notes for <% env \"OFC_E2E_FIELDS_WHO\" %>. Literal: ${OFC_E2E_FIELDS_ENDPOINT} and $5.\nContext: <% readfile \"prompts/context.md\" %>\n",
    )
    .unwrap();
    std::fs::write(
        proj.path().join("prompts/context.md"),
        "the Q3 sales figures",
    )
    .unwrap();
    blueprint(
        proj.path(),
        "name: fields\ndefaults:\n  endpoint: \"${OFC_E2E_FIELDS_ENDPOINT}\"\n  model: \"${OFC_E2E_FIELDS_UNSET_MODEL:-fields-model}\"\nagents:\n  - id: \"@keeper\"\n    name: \"${OFC_E2E_FIELDS_EMPTY:-Keeper}\"\n    activation: always\n    prompt_file: prompts/keeper.md\n",
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let env = [
        ("OFC_E2E_FIELDS_ENDPOINT", model.endpoint.as_str()),
        ("OFC_E2E_FIELDS_EMPTY", ""),
        ("OFC_E2E_FIELDS_WHO", "Ada"),
    ];
    let r = ofc_in(&ofc, proj.path(), &env, &["run", "Remember this"]);
    r.assert_code(0);
    let requests = model.requests();
    assert_eq!(requests.len(), 1, "{}", r.stderr);
    assert_eq!(requests[0].1["model"], "fields-model");
    let chat = chat_of(&requests[0].1);
    assert_eq!(chat[0].0, "system");
    assert!(
        chat[0]
            .2
            .starts_with("You keep notes for Ada. Literal: ${OFC_E2E_FIELDS_ENDPOINT} and $5.\nContext: the Q3 sales figures\n"),
        "{chat:#?}"
    );
    // `ofc validate` loads it the same way.
    let v = ofc_in(&ofc, proj.path(), &env, &["validate", "blueprint.yaml"]);
    v.assert_code(0);
}

#[test]
fn an_unset_variable_names_itself_and_its_field() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    blueprint(
        proj.path(),
        "name: fields\nagents:\n  - id: \"@a\"\n    model: m\n    endpoint: http://127.0.0.1:9/v1\n    prompt: \"Hello ${OFC_E2E_FIELDS_NEVER_SET}\"\n",
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    for args in [&["run", "hi"][..], &["validate", "blueprint.yaml"]] {
        let r = ofc_in(&ofc, proj.path(), &[], args);
        assert_ne!(r.code, Some(0), "{args:?}");
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(
            all.contains("agents[0].prompt")
                && all.contains("OFC_E2E_FIELDS_NEVER_SET is not set")
                && all.contains(":6:"),
            "{args:?}: {all}"
        );
    }
}

#[test]
fn a_prompt_file_outside_the_blueprint_directory_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let outer = tempfile::tempdir().unwrap();
    let proj = outer.path().join("floor");
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(outer.path().join("secret"), "do-not-send-4711").unwrap();
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let agent = |field: &str| {
        format!(
            "name: fields\nagents:\n  - id: \"@a\"\n    model: m\n    endpoint: http://127.0.0.1:9/v1\n{field}"
        )
    };
    blueprint(&proj, &agent("    prompt_file: ../secret\n"));
    let r = ofc_in(&ofc, &proj, &[], &["run", "hi"]);
    r.assert_code(1);
    assert!(
        r.stderr.contains("agents[0].prompt_file")
            && r.stderr
                .contains("`../secret` leads outside the blueprint's directory"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("do-not-send-4711"));

    blueprint(&proj, &agent("    prompt_file: missing.md\n"));
    let r = ofc_in(&ofc, &proj, &[], &["run", "hi"]);
    r.assert_code(1);
    assert!(
        r.stderr.contains("agents[0].prompt_file") && r.stderr.contains("cannot read `missing.md`"),
        "{}",
        r.stderr
    );

    blueprint(&proj, &agent("    prompt: hi\n    prompt_file: p.md\n"));
    let r = ofc_in(&ofc, &proj, &[], &["run", "hi"]);
    r.assert_code(1);
    assert!(
        r.stderr
            .contains("agent `@a` has both `prompt` and `prompt_file`"),
        "{}",
        r.stderr
    );
}

#[test]
fn readfile_outside_the_blueprint_directory_is_refused_at_load() {
    let home = tempfile::tempdir().unwrap();
    let outer = tempfile::tempdir().unwrap();
    let proj = outer.path().join("floor");
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(outer.path().join("secret"), "do-not-send-4711").unwrap();
    blueprint(
        &proj,
        "name: fields\nagents:\n  - id: \"@a\"\n    model: m\n    endpoint: http://127.0.0.1:9/v1\n    prompt: \"Read <% readfile \\\"../secret\\\" %>\"\n",
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    for args in [&["run", "hi"][..], &["validate", "blueprint.yaml"]] {
        let r = ofc_in(&ofc, &proj, &[], args);
        assert_ne!(r.code, Some(0), "{args:?}");
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(
            all.contains("agents[0].prompt")
                && all.contains(
                    "`readfile \"../secret\"`: `../secret` leads outside the blueprint's directory"
                )
                && all.contains("write an absolute path"),
            "{args:?}: {all}"
        );
        assert!(!all.contains("do-not-send-4711"));
    }
    // Written as an absolute path, it is the author's explicit choice.
    let abs = outer.path().join("secret");
    blueprint(
        &proj,
        &format!(
            "name: fields\nagents:\n  - id: \"@a\"\n    model: m\n    prompt: \"Read <% readfile \\\"{}\\\" %>\"\n",
            abs.display()
        ),
    );
    ofc_in(&ofc, &proj, &[], &["validate", "blueprint.yaml"]).assert_code(0);
}

/// Every file under `dir`, read as text.
fn all_files(dir: &Path, out: &mut String) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            all_files(&p, out);
        } else {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
        }
    }
}

#[test]
fn an_api_key_is_sent_as_bearer_and_shown_nowhere() {
    const KEY: &str = "sk-e2e-written-4711";
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model = ModelServer::start(&[(
        "key-model",
        vec![pieces(&["One, ", "@user."]), pieces(&["Two, ", "@user."])],
    )]);
    let text = |key: &str| {
        format!(
            "name: fields\ndefaults:\n  endpoint: {}\n  model: key-model\n  api_key: \"{key}\"\nagents:\n  - id: \"@a\"\n    activation: always\n    prompt: You answer.\n",
            model.endpoint
        )
    };
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    // Written in the file: it works, with a warning that names the field, not the key.
    blueprint(proj.path(), &text(KEY));
    let r = ofc_in(&ofc, proj.path(), &[], &["--json", "run", "hi"]);
    r.assert_code(0);
    assert!(
        r.stderr.contains("defaults.api_key")
            && r.stderr
                .contains("anyone who can read this file can read it"),
        "{}",
        r.stderr
    );
    let v = ofc_in(
        &ofc,
        proj.path(),
        &[],
        &["--json", "validate", "blueprint.yaml"],
    );
    v.assert_code(0);
    assert!(v.stdout.contains("defaults.api_key"), "{}", v.stdout);
    // From the environment: no warning.
    blueprint(proj.path(), &text("${OFC_E2E_FIELDS_KEY}"));
    let r2 = ofc_in(
        &ofc,
        proj.path(),
        &[("OFC_E2E_FIELDS_KEY", KEY)],
        &["--json", "run", "hi again"],
    );
    r2.assert_code(0);
    assert!(!r2.stderr.contains("defaults.api_key"), "{}", r2.stderr);

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    for (auth, _) in &requests {
        assert_eq!(auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    }
    let mut logs = String::new();
    all_files(&proj.path().join(".ofc"), &mut logs);
    assert!(
        logs.contains("You answer.") || logs.contains("One,"),
        "the session log was read"
    );
    for (what, text) in [
        ("run --json stdout", &r.stdout),
        ("run stderr", &r.stderr),
        ("validate --json", &v.stdout),
        ("validate stderr", &v.stderr),
        ("second run stdout", &r2.stdout),
        ("second run stderr", &r2.stderr),
        ("the session logs and everything else under .ofc", &logs),
    ] {
        assert!(
            !text.contains("written-4711"),
            "{what} shows the key:\n{text}"
        );
    }
}
