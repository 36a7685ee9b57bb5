//! `ofc run` sessions end to end: the real `ofc` binary records every run into
//! `.ofc/sessions/<id>.jsonl`, `--resume` continues it (the scripted model is sent the earlier
//! turns, and nobody is asked to rebuild them), `ofc sessions ls|show|rm` (with `--json`),
//! `ofc floor replay` on a session, and hand-edited, crash-cut and foreign session files.
//!
//! Needs the binaries: `cargo build -p ofc-pkg -p hub-server --bins`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::Ofc;
use crate::common::run::{Interactive, announced, blueprint, json_in as json, run_in as run};
use crate::run_e2e::{ModelServer, chat_of, pieces};

const KEEPER: &str = "name: keeper-test\ndefaults:\n  endpoint: ENDPOINT\nagents:\n  - id: \"@keeper\"\n    model: keeper-model\n    activation: always\n    prompt: You keep what you are told.\n";

fn setup(answers: &[&[&str]]) -> (tempfile::TempDir, tempfile::TempDir, ModelServer, Ofc) {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model =
        ModelServer::start(&[("keeper-model", answers.iter().map(|a| pieces(a)).collect())]);
    blueprint(proj.path(), &KEEPER.replace("ENDPOINT", &model.endpoint));
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    (home, proj, model, ofc)
}

fn session_file(dir: &Path, id: &str) -> PathBuf {
    dir.join(".ofc/sessions").join(format!("{id}.jsonl"))
}

#[test]
fn run_stop_and_resume_and_the_agent_remembers() {
    let (_home, proj, model, ofc) = setup(&[
        &["Noted: ", "the code word is ZEBRA."],
        &["You told me: ", "ZEBRA."],
        &["Still ", "ZEBRA."],
    ]);
    let dir = proj.path();

    let first = run(&ofc, dir, &["run", "Remember the code word ZEBRA"]);
    first.assert_code(0);
    let id = announced(&first);
    assert!(
        first.stderr.contains(&format!("ofc run --resume {id}")),
        "{}",
        first.stderr
    );
    let file = session_file(dir, &id);
    assert!(file.is_file());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(file.parent().unwrap()), 0o700);
    }

    // Listed for scripts, with its id, times, event count and blueprint.
    let ls = json(&ofc, dir, &["sessions", "ls"]);
    let sessions = ls["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{ls}");
    assert_eq!(sessions[0]["id"], id.as_str());
    assert_eq!(sessions[0]["blueprint"], "keeper-test");
    assert!(sessions[0]["event_count"].as_u64().unwrap() > 5, "{ls}");
    assert!(sessions[0]["created_at"].is_string() && sessions[0]["last_activity"].is_string());

    // Resumed (the newest, no id given; the message first): the model is sent the first turn.
    let second = run(&ofc, dir, &["run", "What was the code word?", "--resume"]);
    second.assert_code(0);
    assert!(
        second
            .stderr
            .contains(&format!("resuming session {id}: 2 messages")),
        "{}",
        second.stderr
    );
    assert!(
        second.stdout.contains("You told me: ZEBRA."),
        "{}",
        second.stdout
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "no model call rebuilds the session");
    let context = chat_of(&requests[1].1);
    let turns: Vec<(&str, &str)> = context[1..]
        .iter()
        .map(|(role, _, content)| (role.as_str(), content.as_str()))
        .collect();
    assert_eq!(
        turns,
        [
            ("user", "Remember the code word ZEBRA"),
            ("assistant", "Noted: the code word is ZEBRA."),
            ("user", "What was the code word?"),
        ]
    );

    // By id, a third time: everything so far.
    let third = run(&ofc, dir, &["run", "--resume", &id, "And now?"]);
    third.assert_code(0);
    let context = chat_of(&model.requests()[2].1);
    assert_eq!(context.len(), 6, "{context:?}");
    assert_eq!(context[4].2, "You told me: ZEBRA.");

    // Shown: the whole conversation, in order.
    let show = json(&ofc, dir, &["sessions", "show", &id]);
    let said: Vec<&str> = show["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        said,
        [
            "Remember the code word ZEBRA",
            "Noted: the code word is ZEBRA.",
            "What was the code word?",
            "You told me: ZEBRA.",
            "And now?",
            "Still ZEBRA."
        ]
    );
    assert_eq!(show["runs"], 3);
    assert_eq!(show["problems"], serde_json::json!([]));
    let text = run(&ofc, dir, &["sessions", "show", &id]);
    text.assert_code(0);
    assert!(text.stdout.contains("@keeper"), "{}", text.stdout);

    // Replayed: each of the three runs through the controller, by file and by id.
    let replay = run(&ofc, dir, &["floor", "replay", file.to_str().unwrap()]);
    replay.assert_code(0);
    assert_eq!(
        replay.stdout.matches("replayed identically").count(),
        3,
        "{}",
        replay.stdout
    );
    let replay = json(&ofc, dir, &["floor", "replay", &id]);
    assert_eq!(replay["ok"], true);
    assert_eq!(replay["runs"].as_array().unwrap().len(), 3);

    // Removed.
    let rm = json(&ofc, dir, &["sessions", "rm", &id]);
    assert_eq!(rm["removed"], id.as_str());
    assert!(!file.exists());
    let ls = json(&ofc, dir, &["sessions", "ls"]);
    assert_eq!(ls["sessions"], serde_json::json!([]));
    let none = run(&ofc, dir, &["run", "hello", "--resume"]);
    none.assert_code(1);
    assert!(
        none.stderr.contains("no session to resume"),
        "{}",
        none.stderr
    );
}

#[test]
fn a_run_killed_mid_session_resumes_with_what_it_had_said() {
    let (home, proj, model, ofc) = setup(&[&["Noted ", "PELICAN."], &["It was ", "PELICAN."]]);
    let dir = proj.path();
    let mut child = Interactive::start(home.path(), dir, &[], &[]);
    let id = child.ready();
    child.say("The secret bird is PELICAN");
    child.wait_for("Noted PELICAN.");
    child.wait_for("\"type\":\"turn_ended\"");
    // No goodbye: killed.
    child.kill();

    let r = run(&ofc, dir, &["run", "Which bird?", "--resume", &id]);
    r.assert_code(0);
    let context = chat_of(&model.requests()[1].1);
    assert!(
        context
            .iter()
            .any(|(_, _, c)| c == "The secret bird is PELICAN"),
        "{context:?}"
    );
    assert!(
        context.iter().any(|(_, _, c)| c == "Noted PELICAN."),
        "{context:?}"
    );
}

#[test]
fn hand_edited_cut_and_foreign_sessions() {
    let (_home, proj, model, ofc) = setup(&[&["Got ", "it."]]);
    let dir = proj.path();
    let first = run(&ofc, dir, &["run", "first words"]);
    first.assert_code(0);
    let id = announced(&first);
    let file = session_file(dir, &id);
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let total = lines.len();
    // A line that is not JSON, an event from the future, a 10 MB line, and a last line cut
    // by a crash.
    lines.insert(2, "{\"kind\":\"event\", oops".to_owned());
    lines.insert(
        3,
        format!(
            r##"{{"kind":"event","session_id":"{id}","seq":999999,"time":"2999-01-01T00:00:00Z","room_id":"#main","payload_type":"cleared","payload":{{"forgotten":2}}}}"##
        ),
    );
    lines.insert(4, format!("\"{}\"", "x".repeat(10 * 1024 * 1024)));
    let mut edited = lines.join("\n");
    edited.push_str("\n{\"kind\":\"event\",\"session_id\":\"cut-here");
    std::fs::write(&file, edited).unwrap();

    let show = run(&ofc, dir, &["sessions", "show", &id]);
    show.assert_code(0);
    let at = |n: usize| format!("{}:{n}:", file.display());
    for (line, what) in [
        (3, "not JSON"),
        (4, "in the future"),
        (5, "MiB"),
        (total + 4, "cut by a crash"),
    ] {
        assert!(
            show.stderr
                .lines()
                .any(|l| l.starts_with(&format!("warning: {}", at(line))) && l.contains(what)),
            "line {line} ({what}) named in\n{}",
            show.stderr
        );
    }
    // Nothing else lost: the conversation is whole.
    let shown = json(&ofc, dir, &["sessions", "show", &id]);
    assert_eq!(shown["messages"].as_array().unwrap().len(), 2, "{shown}");
    assert_eq!(shown["problems"].as_array().unwrap().len(), 3);
    assert_eq!(shown["torn"]["line"], total + 4);
    let ls = run(&ofc, dir, &["sessions", "ls"]);
    assert!(
        ls.stdout.contains("(!)") && ls.stderr.contains("sessions show"),
        "{ls:?}"
    );

    // It resumes, the cut line set aside, the agent sent both earlier messages.
    let r = run(&ofc, dir, &["run", "more", "--resume"]);
    r.assert_code(0);
    assert!(r.stderr.contains("cut by a crash"), "{}", r.stderr);
    let context = chat_of(&model.requests()[1].1);
    assert_eq!(context.len(), 4, "{context:?}");
    assert!(
        file.with_extension("jsonl.torn-".to_owned() + &last_seq(&text))
            .is_file()
    );
    let after = json(&ofc, dir, &["sessions", "show", &id]);
    assert!(after["torn"].is_null(), "{after}");
    assert_eq!(after["messages"].as_array().unwrap().len(), 4);

    // Another project's session, even copied here, is not readable; ids are checked first.
    let other = tempfile::tempdir().unwrap();
    blueprint(other.path(), &KEEPER.replace("ENDPOINT", &model.endpoint));
    let theirs = run(&ofc, other.path(), &["run", "their words"]);
    theirs.assert_code(0);
    let their_id = announced(&theirs);
    std::fs::copy(
        session_file(other.path(), &their_id),
        session_file(dir, &their_id),
    )
    .unwrap();
    let refused = run(&ofc, dir, &["sessions", "show", &their_id]);
    refused.assert_code(1);
    assert!(refused.stderr.contains("belongs to"), "{}", refused.stderr);
    assert!(refused.stderr.contains("hint:"), "{}", refused.stderr);
    let refused = run(&ofc, dir, &["run", "x", "--resume", &their_id]);
    refused.assert_code(1);
    assert!(refused.stderr.contains("belongs to"), "{}", refused.stderr);
    let ls = json(&ofc, dir, &["sessions", "ls"]);
    assert_eq!(ls["sessions"].as_array().unwrap().len(), 1, "{ls}");
    for bad in ["../../etc/passwd", "not-an-id"] {
        let r = run(&ofc, dir, &["sessions", "show", bad]);
        r.assert_code(1);
        assert!(r.stderr.contains("is not a session id"), "{}", r.stderr);
    }
    // Unknown flags are refused; so is a message where --resume wants an id, before
    // anything starts.
    run(&ofc, dir, &["sessions", "ls", "--all"]).assert_code(2);
    let r = run(&ofc, dir, &["run", "--resume", "what now?"]);
    r.assert_code(2);
    assert!(r.stderr.contains("put the message first"), "{}", r.stderr);
    let calls = model.requests().len();
    let r = run(
        &ofc,
        dir,
        &[
            "run",
            "--resume",
            "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
            "x",
        ],
    );
    r.assert_code(1);
    assert!(
        r.stderr
            .contains("no session 1b4e28ba-2fa1-11d2-883f-0016d3cca427")
            && r.stderr.contains("hint: `ofc sessions ls`"),
        "{}",
        r.stderr
    );
    assert_eq!(model.requests().len(), calls, "no agent was called");
}

/// The seq of the last event of a session file's text.
fn last_seq(text: &str) -> String {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["seq"].as_u64())
        .max()
        .unwrap()
        .to_string()
}

/// Grants given during a session and the task board are there again after a resume: the agent
/// writes to the board under a grant the user gave in an earlier run (a policy would otherwise
/// want the user asked), and lists the task an earlier run added.
#[test]
fn grants_and_the_task_board_outlive_the_run() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let dir = proj.path();
    let model = ModelServer::start(&[(
        "keeper-model",
        vec![
            pieces(&["TOOL board__add_task {\"title\": \"write the report\"}"]),
            pieces(&["Added."]),
            pieces(&["TOOL board__list_tasks {}"]),
            pieces(&["One task."]),
        ],
    )]);
    blueprint(
        dir,
        &format!(
            "name: board-test\ndefaults:\n  endpoint: {}\nfurniture:\n  - {{name: board, type: taskboard}}\nfloor_manager:\n  auto_approve_read: true\n  policies:\n    - {{access: write, workstation: board, decision: ask}}\nagents:\n  - {{id: \"@keeper\", model: keeper-model, furniture: [board]}}\n",
            model.endpoint
        ),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let tool_result = |n: usize| {
        let body = &model.requests()[n].1;
        chat_of(body)
            .into_iter()
            .rev()
            .find(|(role, _, _)| role == "tool")
            .map(|(_, _, content)| content)
            .unwrap_or_else(|| panic!("no tool result in {body}"))
    };

    let r = run(
        &ofc,
        dir,
        &["run", "@floor-manager? give @keeper write on board"],
    );
    r.assert_code(0);
    assert!(model.requests().is_empty());

    let r = run(&ofc, dir, &["run", "@keeper? add the task", "--resume"]);
    r.assert_code(0);
    let added = tool_result(1);
    assert!(
        added.contains("write the report") && !added.contains("refused"),
        "the grant of the first run holds: {added}"
    );

    let r = run(
        &ofc,
        dir,
        &["run", "@keeper? what is on the board?", "--resume"],
    );
    r.assert_code(0);
    let listed = tool_result(3);
    assert!(
        listed.contains("write the report"),
        "the board was restored: {listed}"
    );

    let show = json(
        &ofc,
        dir,
        &["sessions", "show", &announced_newest(&ofc, dir)],
    );
    assert_eq!(show["runs"], 3);
}

fn announced_newest(ofc: &Ofc, dir: &Path) -> String {
    let ls = json(ofc, dir, &["sessions", "ls"]);
    ls["sessions"][0]["id"].as_str().unwrap().to_owned()
}

/// An agent whose memory is a running summary: each summary is a `compaction` event, and a
/// resumed run goes on from the recorded summary (its next summary call starts from it)
/// instead of summarising the whole conversation again.
#[test]
fn memory_summaries_are_compaction_events_and_resume_from_the_log() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let dir = proj.path();
    let model = ModelServer::start(&[(
        "keeper-model",
        vec![
            pieces(&["a1"]),
            pieces(&["a2"]),
            pieces(&["SUMMARY-A"]),
            pieces(&["a3"]),
            pieces(&["SUMMARY-B"]),
            pieces(&["a4"]),
        ],
    )]);
    blueprint(
        dir,
        &format!(
            "name: memory-test\ndefaults:\n  endpoint: {}\nagents:\n  - id: \"@keeper\"\n    model: keeper-model\n    activation: always\n    memory: {{window: 2, summary: true}}\n",
            model.endpoint
        ),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    run(&ofc, dir, &["run", "m1"]).assert_code(0);
    for m in ["m2", "m3", "m4"] {
        run(&ofc, dir, &["run", m, "--resume"]).assert_code(0);
    }
    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    // The third run summarised (msg-1 to msg-3); the fourth, a new process, started its
    // summary call from that summary, read back from the log.
    let first = chat_of(&requests[2].1);
    assert!(first[0].2.contains("memory of @keeper"), "{first:?}");
    assert!(!first[1].2.contains("Summary so far"), "{first:?}");
    let second = chat_of(&requests[4].1);
    assert!(
        second[1].2.starts_with("Summary so far:\nSUMMARY-A"),
        "{second:?}"
    );
    assert!(!second[1].2.contains("@user: m1"), "{second:?}");
    let answer = chat_of(&requests[5].1);
    assert!(answer[1].2.contains("SUMMARY-B"), "{answer:?}");

    let id = announced_newest(&ofc, dir);
    let show = json(&ofc, dir, &["sessions", "show", &id]);
    assert_eq!(show["compactions"][0]["summary"], "SUMMARY-B");
    let text = std::fs::read_to_string(session_file(dir, &id)).unwrap();
    let compactions: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["payload_type"] == "compaction")
        .collect();
    assert_eq!(compactions.len(), 2, "{compactions:?}");
    assert_eq!(compactions[0]["payload"]["agent_id"], "@keeper");
    assert_eq!(compactions[0]["payload"]["through"], "msg-3");
    assert_eq!(compactions[0]["payload"]["summary"], "SUMMARY-A");
    assert!(compactions[0]["payload"]["covers_up_to_seq"].is_u64());
}
