//! Sessions in PostgreSQL (`OFC_SESSIONS_URL`) end to end, on a fresh database of the
//! project's PostgreSQL peer (`scripts/peers/postgres`; fails without it): the real `ofc`
//! records a run there (no file in the project), `--resume` continues it and the scripted
//! model is sent the earlier turns, `ofc sessions ls|show|rm` and `ofc floor replay` by id,
//! a session open in one process is refused to another (rm and resume), a run killed
//! mid-session resumes with what it had said, rows edited by hand are named by line and
//! skipped with nothing else lost, another project's session is not readable, and bad
//! settings are refused clearly. The database's password never shows.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use ofc_test_kit::PgDatabase;
use serde_json::Value;

use crate::common::run::{Interactive, announced, blueprint};
use crate::common::{Ofc, Run, bin};
use crate::run_e2e::{ModelServer, chat_of, pieces};

const KEEPER: &str = "name: keeper-pg\ndefaults:\n  endpoint: ENDPOINT\nagents:\n  - id: \"@keeper\"\n    model: keeper-model\n    activation: always\n    prompt: You keep what you are told.\n";

fn run(ofc: &Ofc, dir: &Path, url: &str, args: &[&str]) -> Run {
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(dir)
            .env("OFC_SESSIONS_URL", url)
            .args(args),
    );
    let password = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(auth, _)| auth.split_once(':'))
        .map(|(_, p)| format!(":{p}@"));
    if let Some(p) = password {
        assert!(
            !r.stderr.contains(&p) && !r.stdout.contains(&p),
            "the database password shows: {r:?}"
        );
    }
    r
}

fn json(ofc: &Ofc, dir: &Path, url: &str, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let r = run(ofc, dir, url, &all);
    r.assert_code(0);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

/// One SQL statement on the sessions' database.
fn sql(url: &str, statement: String) {
    let url = url.to_owned();
    ofc_test_kit::on_own_runtime(async move {
        use sqlx::Connection as _;
        let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::query(&statement).execute(&mut c).await.unwrap();
        c.close().await.ok();
    });
}

/// The number of the session's last stored line.
fn last_line(url: &str, id: &str) -> i64 {
    let (url, id) = (url.to_owned(), id.to_owned());
    ofc_test_kit::on_own_runtime(async move {
        use sqlx::Connection as _;
        let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
        let (n,): (i64,) =
            sqlx::query_as("SELECT max(n) FROM ofc_session_lines WHERE session_id = $1")
                .bind(&id)
                .fetch_one(&mut c)
                .await
                .unwrap();
        c.close().await.ok();
        n
    })
}

#[test]
fn sessions_in_postgresql_resume_list_replay_lock_and_survive_hand_edits() {
    let db = PgDatabase::create_blocking();
    let url = db.url.as_str();
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model = ModelServer::start(&[(
        "keeper-model",
        vec![
            pieces(&["Noted: ", "the code word is ZEBRA."]),
            pieces(&["You told me: ", "ZEBRA."]),
            pieces(&["Noted ", "PELICAN."]),
            pieces(&["ZEBRA and ", "PELICAN."]),
            pieces(&["Still ", "here."]),
            pieces(&["Theirs."]),
        ],
    )]);
    blueprint(proj.path(), &KEEPER.replace("ENDPOINT", &model.endpoint));
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let dir = proj.path();

    // Recorded in PostgreSQL, not in the project.
    let first = run(&ofc, dir, url, &["run", "Remember the code word ZEBRA"]);
    first.assert_code(0);
    let id = announced(&first);
    assert!(
        !dir.join(".ofc/sessions").exists(),
        "a session file was written"
    );
    let ls = json(&ofc, dir, url, &["sessions", "ls"]);
    let sessions = ls["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{ls}");
    assert_eq!(sessions[0]["id"], id.as_str());
    assert_eq!(sessions[0]["blueprint"], "keeper-pg");
    assert!(sessions[0]["event_count"].as_u64().unwrap() > 5, "{ls}");

    // Resumed (the newest): the model is sent the first turn, no model call rebuilds it.
    let second = run(
        &ofc,
        dir,
        url,
        &["run", "What was the code word?", "--resume"],
    );
    second.assert_code(0);
    assert!(
        second
            .stderr
            .contains(&format!("resuming session {id}: 2 messages")),
        "{}",
        second.stderr
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let context = chat_of(&requests[1].1);
    let turns: Vec<&str> = context[1..].iter().map(|(_, _, c)| c.as_str()).collect();
    assert_eq!(
        turns,
        [
            "Remember the code word ZEBRA",
            "Noted: the code word is ZEBRA.",
            "What was the code word?"
        ]
    );

    // Open in one process (an interactive run), refused to another; killed mid-session, it
    // resumes with what it had said.
    let mut child = Interactive::start(
        home.path(),
        dir,
        &["--resume", &id],
        &[("OFC_SESSIONS_URL", url)],
    );
    child.ready();
    let busy = run(&ofc, dir, url, &["sessions", "rm", &id]);
    busy.assert_code(1);
    assert!(
        busy.stderr.contains("open in another ofc process"),
        "{}",
        busy.stderr
    );
    // (A second run of the project is refused by the project's lock before it gets that far.)
    let busy = run(&ofc, dir, url, &["run", "x", "--resume", &id]);
    busy.assert_code(1);
    assert!(
        busy.stderr
            .contains("another `ofc run` is using this project"),
        "{}",
        busy.stderr
    );
    child.say("The secret bird is PELICAN");
    child.wait_for("Noted PELICAN.");
    child.wait_for("\"type\":\"turn_ended\"");
    child.kill();
    let r = run(&ofc, dir, url, &["run", "Which two?", "--resume", &id]);
    r.assert_code(0);
    let context = chat_of(&model.requests()[3].1);
    for said in [
        "Remember the code word ZEBRA",
        "The secret bird is PELICAN",
        "Noted PELICAN.",
    ] {
        assert!(
            context.iter().any(|(_, _, c)| c == said),
            "{said}: {context:?}"
        );
    }

    // Rows edited by hand: not JSON, an event from the future, a 10 MB line — each named by
    // its line, skipped, nothing else lost; and it resumes after them.
    let last = last_line(url, &id);
    let future = format!(
        r##"{{"kind":"event","session_id":"{id}","seq":999999,"time":"2999-01-01T00:00:00Z","room_id":"#main","payload_type":"cleared","payload":{{"forgotten":2}}}}"##
    );
    for (n, line) in [
        (last + 1, "{\"kind\":\"event\", oops".to_owned()),
        (last + 2, future),
        (last + 3, format!("\"{}\"", "x".repeat(10 * 1024 * 1024))),
    ] {
        sql(
            url,
            format!(
                "INSERT INTO ofc_session_lines (session_id, n, line) VALUES ('{id}', {n}, '{}')",
                line.replace('\'', "''")
            ),
        );
    }
    let show = run(&ofc, dir, url, &["sessions", "show", &id]);
    show.assert_code(0);
    for (n, what) in [
        (last + 1, "not JSON"),
        (last + 2, "in the future"),
        (last + 3, "MiB"),
    ] {
        assert!(
            show.stderr
                .lines()
                .any(|l| l.starts_with("warning: postgres://")
                    && l.contains(&format!("#{id}:{n}:"))
                    && l.contains(what)),
            "line {n} ({what}) named in\n{}",
            show.stderr
        );
    }
    let shown = json(&ofc, dir, url, &["sessions", "show", &id]);
    assert_eq!(shown["messages"].as_array().unwrap().len(), 8, "{shown}");
    assert_eq!(shown["problems"].as_array().unwrap().len(), 3);
    let r = run(&ofc, dir, url, &["run", "And now?", "--resume", &id]);
    r.assert_code(0);
    let shown = json(&ofc, dir, url, &["sessions", "show", &id]);
    assert_eq!(shown["messages"].as_array().unwrap().len(), 10, "{shown}");

    // Replayed by id: each run through the controller.
    let replay = json(&ofc, dir, url, &["floor", "replay", &id]);
    assert_eq!(replay["ok"], true, "{replay}");
    assert_eq!(replay["runs"].as_array().unwrap().len(), 5, "{replay}");

    // Another project on the same database: its own sessions only; ours not readable there.
    let other = tempfile::tempdir().unwrap();
    blueprint(other.path(), &KEEPER.replace("ENDPOINT", &model.endpoint));
    let theirs = run(&ofc, other.path(), url, &["run", "their words"]);
    theirs.assert_code(0);
    let their_id = announced(&theirs);
    let ls = json(&ofc, other.path(), url, &["sessions", "ls"]);
    assert_eq!(ls["sessions"].as_array().unwrap().len(), 1, "{ls}");
    assert_eq!(ls["sessions"][0]["id"], their_id.as_str());
    for args in [
        vec!["sessions", "show", id.as_str()],
        vec!["sessions", "rm", id.as_str()],
        vec!["run", "x", "--resume", id.as_str()],
    ] {
        let refused = run(&ofc, other.path(), url, &args);
        refused.assert_code(1);
        assert!(refused.stderr.contains("belongs to"), "{}", refused.stderr);
    }

    // Removed (ours, from our project): gone from the list and the database.
    let rm = json(&ofc, dir, url, &["sessions", "rm", &id]);
    assert_eq!(rm["removed"], id.as_str());
    let ls = json(&ofc, dir, url, &["sessions", "ls"]);
    assert_eq!(ls["sessions"], serde_json::json!([]));
    let gone = run(&ofc, dir, url, &["sessions", "show", &id]);
    gone.assert_code(1);
    assert!(gone.stderr.contains("no session"), "{}", gone.stderr);

    // Settings refused clearly, before any model is called.
    let calls = model.requests().len();
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(dir)
            .env("OFC_SESSIONS_URL", url)
            .env("OFC_SESSIONS_DIR", dir.join("elsewhere"))
            .args(["run", "x"]),
    );
    r.assert_code(1);
    assert!(
        r.stderr
            .contains("both OFC_SESSIONS_DIR and OFC_SESSIONS_URL"),
        "{}",
        r.stderr
    );
    let r = run(&ofc, dir, "mysql://u:p@127.0.0.1/x", &["run", "x"]);
    r.assert_code(1);
    assert!(r.stderr.contains("is not a PostgreSQL URL"), "{}", r.stderr);
    let r = run(
        &ofc,
        dir,
        "postgres://ofc:hunter2@127.0.0.1:9/nothing",
        &["run", "x"],
    );
    r.assert_code(1);
    assert!(
        r.stderr
            .contains("session store postgres://ofc:***@127.0.0.1:9/nothing"),
        "{}",
        r.stderr
    );
    assert_eq!(model.requests().len(), calls, "no agent was called");
}

/// `ofc serve` on sessions in PostgreSQL: a session made over HTTP records there, and once it
/// is closed its whole event stream is read back from the database (`Last-Event-ID: 0`), the
/// same events `ofc sessions show` lists; it resumes over HTTP from there.
#[test]
fn the_floor_server_records_to_postgresql_and_streams_a_closed_session_back_from_it() {
    use std::io::BufRead as _;
    let db = PgDatabase::create_blocking();
    let url = db.url.clone();
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model = ModelServer::start(&[(
        "keeper-model",
        vec![
            pieces(&["Kept ", "in the database."]),
            pieces(&["Still ", "there."]),
        ],
    )]);
    blueprint(proj.path(), &KEEPER.replace("ENDPOINT", &model.endpoint));
    let mut child = Command::new(bin("ofc"))
        .current_dir(proj.path())
        .env("OFC_HOME", home.path())
        .env("OFC_HUB", "http://127.0.0.1:9")
        .env("OFC_SESSIONS_URL", &url)
        .env("NO_COLOR", "1")
        .env_remove("OFC_SERVE_TOKEN")
        .args(["--json", "serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let started: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    let base = started["url"].as_str().unwrap().to_owned();
    let token = started["server_token"].as_str().unwrap().to_owned();
    assert!(
        !started.to_string().contains(":ofc@"),
        "the database password shows: {started}"
    );
    let (id, stream, resumed) = ofc_test_kit::on_own_runtime(async move {
        let c = reqwest::Client::new();
        let call = |method: reqwest::Method, path: String, body: Option<Value>| {
            let mut r = c
                .request(method, format!("{base}{path}"))
                .bearer_auth(&token)
                .timeout(Duration::from_secs(60));
            if let Some(b) = body {
                r = r.json(&b);
            }
            r.send()
        };
        let created: Value = call(reqwest::Method::POST, "/api/v1/sessions".into(), None)
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = created["id"].as_str().unwrap().to_owned();
        let posted = call(
            reqwest::Method::POST,
            format!("/api/v1/sessions/{id}/messages"),
            Some(serde_json::json!({"content": "keep this"})),
        )
        .await
        .unwrap();
        assert!(posted.status().is_success(), "{posted:?}");
        // The answer stored, then the session closed: the stream is the database's.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let s: Value = call(reqwest::Method::GET, format!("/api/v1/sessions/{id}"), None)
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if s.to_string().contains("Kept in the database.") || s["last_seq"].as_u64() > Some(6) {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "no answer: {s}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let closed = call(
            reqwest::Method::POST,
            format!("/api/v1/sessions/{id}/close"),
            None,
        )
        .await
        .unwrap();
        assert!(closed.status().is_success(), "{closed:?}");
        let stream = c
            .get(format!("{base}/api/v1/sessions/{id}/events"))
            .bearer_auth(&token)
            .header("Last-Event-ID", "0")
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        let mut text = String::new();
        let mut body = stream;
        while let Ok(Some(chunk)) = body.chunk().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.contains("Kept in the database.") && text.contains("session_ended") {
                break;
            }
        }
        let resumed = call(
            reqwest::Method::POST,
            format!("/api/v1/sessions/{id}/resume"),
            None,
        )
        .await
        .unwrap()
        .status()
        .as_u16();
        (id, text, resumed)
    });
    let _ = child.kill();
    let _ = child.wait();
    let ids: Vec<u64> = stream
        .lines()
        .filter_map(|l| l.strip_prefix("id: ")?.trim().parse().ok())
        .collect();
    assert!(
        stream.contains("Kept in the database."),
        "the answer is not in the stream read back: {stream}"
    );
    assert_eq!(ids.first(), Some(&1), "{stream}");
    assert!(
        ids.windows(2).all(|w| w[1] == w[0] + 1),
        "events missing or twice: {ids:?}"
    );
    assert_eq!(resumed, 200, "resume over HTTP");
    // The same session, read by `ofc sessions show` from the database.
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let shown = json(&ofc, proj.path(), &url, &["sessions", "show", &id]);
    let said: Vec<&str> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(said, ["keep this", "Kept in the database."], "{shown}");
}

/// ofc's secrets in its environment — the sessions database's URL (with its password), the
/// hub token, the floor server's token — do not reach the processes a floor starts: an agent
/// that writes down its environment finds none of them, and finds what the machine's
/// environment gives otherwise.
#[test]
fn the_sessions_url_and_ofc_tokens_do_not_reach_the_floors_processes() {
    let db = PgDatabase::create_blocking();
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let seen = proj.path().join("env-seen.txt");
    std::fs::write(
        proj.path().join("envcheck.agent.yaml"),
        format!(
            "id: \"@envcheck\"\ncommand: sh\nargs: [\"-c\", \"env > {} && exec {} --name envcheck --wake\"]\n",
            seen.display(),
            bin("ofc-test-agent").display()
        ),
    )
    .unwrap();
    blueprint(proj.path(), "agents:\n  - ./envcheck.agent.yaml\n");
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(proj.path())
            .env("OFC_SESSIONS_URL", &db.url)
            .env("OFC_TOKEN", "ofc_secret_hub_token_value")
            .env("OFC_SERVE_TOKEN", "ofc_secret_serve_token_value")
            .env("OFC_TEST_HARMLESS", "passed-on")
            .args(["run", "hello @envcheck"]),
    );
    r.assert_code(0);
    let env = std::fs::read_to_string(&seen).expect("the agent wrote its environment");
    assert!(env.contains("OFC_TEST_HARMLESS=passed-on"), "{env}");
    for secret in [
        "OFC_SESSIONS_URL",
        "OFC_TOKEN=",
        "OFC_SERVE_TOKEN",
        "ofc_secret_hub_token_value",
        "ofc_secret_serve_token_value",
    ] {
        assert!(!env.contains(secret), "{secret} reached the agent:\n{env}");
    }
}

/// PostgreSQL restarted while a session is open (between two turns of an interactive run):
/// the next turn's lines go to the database all the same — the writer connects again, takes
/// the session's lock again and writes what was not confirmed — and nothing is doubled.
#[test]
fn a_database_restarted_between_turns_loses_no_line_of_the_open_session() {
    let pg = ofc_test_kit::PrivatePostgres::start();
    let url = pg.url.clone();
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model = ModelServer::start(&[(
        "keeper-model",
        vec![
            pieces(&["First ", "answer."]),
            pieces(&["Second ", "answer."]),
        ],
    )]);
    blueprint(proj.path(), &KEEPER.replace("ENDPOINT", &model.endpoint));
    let mut child =
        Interactive::start(home.path(), proj.path(), &[], &[("OFC_SESSIONS_URL", &url)])
            .within(Duration::from_secs(90));
    let id = child.ready();
    child.say("one");
    child.wait_for("First answer.");
    child.wait_for("\"type\":\"turn_ended\"");
    pg.stop();
    pg.start_again();
    child.say("two");
    child.wait_for("Second answer.");
    child.wait_for("\"type\":\"turn_ended\"");
    let (code, stderr) = child.end();
    assert_eq!(code, 0, "ofc run: {stderr}");

    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let shown = json(&ofc, proj.path(), &url, &["sessions", "show", &id]);
    let said: Vec<&str> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        said,
        ["one", "First answer.", "two", "Second answer."],
        "{shown}"
    );
    assert_eq!(shown["problems"], serde_json::json!([]), "{shown}");
}
