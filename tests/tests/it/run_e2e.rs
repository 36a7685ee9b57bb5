//! `ofc run` end to end: the real `ofc` binary runs blueprints whose agents are real
//! processes (`ofc-test-agent`, an OFC agent server), agents pulled from a real `ofc-hub`, and
//! a real terminal (tmux) for the interactive line mode.
//!
//! Needs the binaries: `cargo build -p ofc-pkg -p runtime -p hub-server --bins`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::Publishers as _;
use crate::common::run::{
    Interactive, Tmux, blueprint, process_agent, processes_with, run_in, tag,
};
use crate::common::{Ofc, bin};
use ofc_test_kit::{ProcessOptions, TestHub};
use serde_json::Value;

#[test]
fn process_agents_delegate_and_the_transcript_replays() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let t = tag("deleg");
    let (a, b, c) = (format!("{t}a"), format!("{t}b"), format!("{t}c"));
    process_agent(
        proj.path(),
        &a,
        &["--behaviour", "delegate", "--target", &b, "--wake"],
    );
    process_agent(
        proj.path(),
        &b,
        &["--behaviour", "delegate", "--target", &c],
    );
    process_agent(proj.path(), &c, &["--behaviour", "echo"]);
    blueprint(
        proj.path(),
        &format!(
            "name: chain\nagents:\n  - ./{a}.agent.yaml\n  - ./{b}.agent.yaml\n  - ./{c}.agent.yaml\n"
        ),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");

    // Line mode: every agent's answer on stdout, the floor's narration on stderr.
    let r = run_in(&ofc, proj.path(), &["run", "count the rows"]);
    r.assert_code(0);
    assert!(
        r.stdout.contains(&format!("@{c}: {c} heard")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!("@{b}: {b} reports")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!("@{a}: {a} reports")),
        "{}",
        r.stdout
    );
    assert!(r.stderr.contains("floor ready"), "{}", r.stderr);
    assert!(r.stderr.contains("turn ended"), "{}", r.stderr);
    assert!(!r.stdout.contains('\x1b'), "NO_COLOR: no escape sequences");

    // --json: one event per line, ready first, exit last.
    let r = run_in(&ofc, proj.path(), &["--json", "run", "again"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let events: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events[0]["type"], "ready");
    assert_eq!(events.last().unwrap()["type"], "exit");
    assert_eq!(events.last().unwrap()["code"], 0);
    let responders: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "responding")
        .map(|e| e["agent"].as_str().unwrap())
        .collect();
    assert_eq!(
        responders,
        [
            format!("@{a}"),
            format!("@{b}"),
            format!("@{c}"),
            format!("@{b}"),
            format!("@{a}")
        ]
    );

    // The project directory: private, with replayable transcripts and the run state.
    let dot = proj.path().join(".ofc");
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(dot.join("run.json")).unwrap()).unwrap();
    assert_eq!(state["state"], "ended");
    let transcript = PathBuf::from(state["transcript"].as_str().unwrap());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dot), 0o700);
        assert_eq!(mode(&dot.join("logs")), 0o700);
        assert_eq!(mode(&transcript), 0o600);
        assert_eq!(mode(&dot.join("run.json")), 0o600);
    }
    let replay = ofc.ok(&["floor", "replay", transcript.to_str().unwrap()]);
    assert!(replay.contains("replayed identically"), "{replay}");
    assert!(processes_with(&t).is_empty(), "every agent stopped");
}

#[test]
fn exit_codes_say_how_the_turn_ended() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let t = tag("codes");
    let (q, f) = (format!("{t}q"), format!("{t}f"));
    process_agent(proj.path(), &q, &["--behaviour", "echo"]);
    process_agent(proj.path(), &f, &["--behaviour", "crash-mid-respond"]);
    blueprint(
        proj.path(),
        &format!("agents:\n  - ./{q}.agent.yaml\n  - ./{f}.agent.yaml\n"),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    // Nobody wakes for a message that names nobody: 3.
    let r = run_in(&ofc, proj.path(), &["run", "anyone?"]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    // An explicit request answered: 0.
    let r = run_in(&ofc, proj.path(), &["run", &format!("@{q}? hello")]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // An agent that dies mid-answer: 5, and the failure is shown.
    let r = run_in(&ofc, proj.path(), &["run", &format!("@{f}? hello")]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(r.stderr.contains("failed"), "{}", r.stderr);
    assert!(processes_with(&t).is_empty(), "every agent stopped");
}

#[test]
fn what_cannot_run_is_refused_with_its_line_before_anything_starts() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let t = tag("refuse");
    let ok = format!("{t}ok");
    process_agent(proj.path(), &ok, &[]);
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let cases: Vec<(String, &str)> = vec![
        (
            format!(
                "agents:\n  - ./{ok}.agent.yaml\nworkstations:\n  - type: filesystem\n    path: ./ws\n"
            ),
            "blueprint.yaml:4:9: workstations[0]: filesystem workstations are not available yet",
        ),
        (
            format!(
                "agents:\n  - ./{ok}.agent.yaml\n  - id: \"@coder\"\n    model: m\n    endpoint: http://127.0.0.1:9/v1\n"
            ),
            "blueprint.yaml:5:15: agents[1].endpoint: the model endpoint http://127.0.0.1:9/v1 of @coder cannot be reached",
        ),
        (
            format!(
                "defaults:\n  endpoint: http://127.0.0.1:9/v1\nagents:\n  - ./{ok}.agent.yaml\n  - id: \"@coder\"\n    model: m\n"
            ),
            "blueprint.yaml:2:13: defaults.endpoint: the model endpoint http://127.0.0.1:9/v1 of @coder cannot be reached",
        ),
        (
            format!(
                "agents:\n  - ./{ok}.agent.yaml\n  - id: \"@coder\"\n    model: m\n    endpoint: http://127.0.0.1:9/v1\n    api_key_env: OFC_TEST_NO_SUCH_KEY\n"
            ),
            "blueprint.yaml:6:18: agents[1].api_key_env: agent @coder: `api_key_env` names the environment variable OFC_TEST_NO_SUCH_KEY, which is not set",
        ),
        (
            format!(
                "agents:\n  - ./{ok}.agent.yaml\n  - id: \"@claude\"\n    type: acp\n    command: no-such-acp-agent-xyz\n"
            ),
            "blueprint.yaml:5:14: agents[1].command: `no-such-acp-agent-xyz` is not found in PATH",
        ),
        (
            format!("agents:\n  - ./{ok}.agent.yaml\n  - ./missing.agent.yaml\n"),
            "blueprint.yaml:3:5: agents[1]: cannot read",
        ),
        (
            "agents:\n  - id: \"@x\"\n    type: llm\n    model: m\n    colour: red\n".to_owned(),
            "blueprint.yaml:5:13: agents[0].colour: unknown field",
        ),
        (
            format!("agents:\n  - ./{ok}.agent.yaml\n  - ./{ok}.agent.yaml\n"),
            "agents[1]",
        ),
    ];
    for (text, expected) in cases {
        blueprint(proj.path(), &text);
        let r = run_in(&ofc, proj.path(), &["run", "hello"]);
        assert_eq!(r.code, Some(1), "{text}\n{}", r.stderr);
        assert!(r.stderr.starts_with("error: "), "{}", r.stderr);
        assert!(
            r.stderr.contains(expected),
            "{text}\nwanted {expected}\ngot {}",
            r.stderr
        );
        assert!(processes_with(&t).is_empty(), "nothing started for\n{text}");
    }
    // A command that does not exist, and a remote agent that does not answer.
    std::fs::write(
        proj.path().join("bad.agent.yaml"),
        "id: \"@bad\"\ncommand: no-such-program-xyz\n",
    )
    .unwrap();
    std::fs::write(
        proj.path().join("far.agent.yaml"),
        "id: \"@far\"\nsource:\n  type: remote\n  endpoint: http://127.0.0.1:9/ofc\n",
    )
    .unwrap();
    blueprint(proj.path(), "agents:\n  - ./bad.agent.yaml\n");
    let r = run_in(&ofc, proj.path(), &["run", "hello"]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr
            .contains("`no-such-program-xyz` is not found in PATH"),
        "{}",
        r.stderr
    );
    blueprint(
        proj.path(),
        &format!("agents:\n  - ./{ok}.agent.yaml\n  - ./far.agent.yaml\n"),
    );
    let r = run_in(&ofc, proj.path(), &["run", "hello"]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr
            .contains("agents[1]: the remote agent at http://127.0.0.1:9/ofc"),
        "{}",
        r.stderr
    );
    assert!(processes_with(&t).is_empty(), "nothing started");
    // No blueprint at all.
    let empty = tempfile::tempdir().unwrap();
    let r = run_in(&ofc, empty.path(), &["run", "hello"]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("blueprint.yaml does not exist"),
        "{}",
        r.stderr
    );
}

/// A field that does not belong to its entry is refused before anything starts (the newcomer's
/// command on an agent without `type: acp` was dropped and the agent run as an LLM agent); a
/// field ofc does not act on is named in a `warning:` line, for the blueprint and for a local
/// agent file alike.
#[test]
fn fields_ofc_would_ignore_are_refused_or_warned_before_anything_starts() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let t = tag("fields");
    let ok = format!("{t}ok");
    process_agent(proj.path(), &ok, &[]);
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    blueprint(
        proj.path(),
        &format!(
            "defaults:\n  model: m\nagents:\n  - ./{ok}.agent.yaml\n  - id: \"@claude\"\n    command: claude-code-acp\n"
        ),
    );
    let r = run_in(&ofc, proj.path(), &["run", "hello"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "blueprint.yaml:6:14: agents[1].command: `command` does not apply to an `llm` agent \
             (the default type), only to an `acp` agent; to run a program, use a local agent \
             file (`./x.agent.yaml` with `command`), or `type: acp`"
        ),
        "{}",
        r.stderr
    );
    assert!(processes_with(&t).is_empty(), "nothing started");

    // Warnings, then the refusal of what cannot run (nothing starts either way).
    std::fs::write(
        proj.path().join("tools.agent.yaml"),
        "id: \"@tools\"\ncommand: no-such-program-xyz\ntools: [bash]\n",
    )
    .unwrap();
    blueprint(
        proj.path(),
        "agents:\n  - ./tools.agent.yaml\nfurniture:\n  - name: b\n    type: taskboard\n    config: {columns: [a]}\n",
    );
    let r = run_in(&ofc, proj.path(), &["run", "hello"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "warning: blueprint.yaml:6:13: furniture[0].config: `config` is accepted but not used by ofc"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("tools.agent.yaml:3:8: tools: `tools` is accepted but not used by ofc"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("`no-such-program-xyz` is not found in PATH"),
        "{}",
        r.stderr
    );
}

/// Starts `ofc run` (interactive, stdin held open) in `dir`; returns the child once the floor
/// is ready.
pub(crate) fn start_interactive(dir: &Path, home: &Path) -> std::process::Child {
    let run = Interactive::start(home, dir, &[], &[]);
    run.ready();
    run.into_child()
}

#[test]
fn sigkill_of_ofc_run_leaves_no_agent_alive() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let t = tag("orphan");
    let mut text = String::from("agents:\n");
    for i in 0..5 {
        let name = format!("{t}n{i}");
        process_agent(proj.path(), &name, &[]);
        text.push_str(&format!("  - ./{name}.agent.yaml\n"));
    }
    blueprint(proj.path(), &text);
    let mut child = start_interactive(proj.path(), home.path());
    assert_eq!(processes_with(&t).len(), 5, "five agents run");

    // A second run in the same project is refused at once.
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = run_in(&ofc, proj.path(), &["run", "hello"]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("another `ofc run` is using this project"),
        "{}",
        r.stderr
    );
    assert_eq!(
        processes_with(&t).len(),
        5,
        "the refused run started nothing"
    );

    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // The supervisor gives them a grace period, then SIGKILL; on a loaded machine (the whole
    // suite on 2 cores) that can take longer than the 2 s this test used to sleep.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !processes_with(&t).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(processes_with(&t), Vec::<u32>::new(), "agents outlived ofc");
}

#[test]
fn hub_agents_are_pulled_locked_and_run_without_the_hub() {
    let mut hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let work = tempfile::tempdir().unwrap();
    let t = tag("hub");
    for (agent, extra) in [("teller", "--wake"), ("helper", "")] {
        let dir = work.path().join(agent);
        std::fs::create_dir_all(&dir).unwrap();
        let args = if extra.is_empty() {
            format!("[\"--name\", \"{agent}\", \"--activation\", \"mention\"]")
        } else {
            format!(
                "[\"--name\", \"{agent}\", \"--behaviour\", \"delegate\", \"--target\", \"helper\", \"{extra}\"]"
            )
        };
        std::fs::write(
            dir.join("agent.yaml"),
            format!(
                "id: \"@{agent}\"\nname: {agent}\npackage: acme/{agent}\nversion: 1.0.0\ntagline: A test agent\n\
                 description: Run tests ({t}).\ncommand: {:?}\nargs: {args}\n",
                bin("ofc-test-agent").display().to_string()
            ),
        )
        .unwrap();
        publisher.ofc.ok(&["publish", dir.to_str().unwrap()]);
    }
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    blueprint(
        proj.path(),
        "agents:\n  - acme/teller@^1\n  - acme/helper\n",
    );
    let ofc = Ofc::new(home.path(), &hub.url);
    let r = run_in(&ofc, proj.path(), &["run", "what is new?"]);
    r.assert_code(0);
    assert!(r.stdout.contains("@helper: helper heard"), "{}", r.stdout);
    assert!(r.stdout.contains("@teller: teller reports"), "{}", r.stdout);
    let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
    assert!(
        lock.contains("acme/teller") && lock.contains("acme/helper"),
        "{lock}"
    );

    // The hub is gone: the lock and the cache are enough.
    hub.kill();
    let r = run_in(&ofc, proj.path(), &["run", "--locked", "and now?"]);
    r.assert_code(0);
    assert!(r.stdout.contains("@teller: teller reports"), "{}", r.stdout);
    assert_eq!(
        std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap(),
        lock
    );

    // An unknown agent is refused with its line, before anything starts.
    blueprint(proj.path(), "agents:\n  - acme/teller\n  - acme/nobody\n");
    let r = run_in(&ofc, proj.path(), &["run", "--offline", "hello"]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr
            .contains("blueprint.yaml:3:5: agents[1]: cannot pull `acme/nobody`"),
        "{}",
        r.stderr
    );
}

#[test]
fn line_mode_in_a_real_terminal_commands_streaming_and_ctrl_c() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let t = tag("tty");
    let (echo, slow) = (format!("{t}e"), format!("{t}s"));
    process_agent(proj.path(), &echo, &[]);
    process_agent(
        proj.path(),
        &slow,
        &["--behaviour", "stream", "--delay-ms", "20000"],
    );
    blueprint(
        proj.path(),
        &format!("agents:\n  - ./{echo}.agent.yaml\n  - ./{slow}.agent.yaml\n"),
    );
    let command = format!(
        "cd '{}' && OFC_HOME='{}' '{}' run; echo \"ofc exited $?\"; sleep 60",
        proj.path().display(),
        home.path().display(),
        bin("ofc").display()
    );
    let tmux = Tmux::start(&command);
    tmux.wait_for("type a message", 1);

    // Interactive commands are answered locally, never posted.
    tmux.type_line("/agents");
    tmux.wait_for(&format!("@{slow}  Mention"), 1);
    tmux.type_line("/frobnicate now");
    tmux.wait_for("unknown command /frobnicate", 1);

    // A question, answered.
    tmux.type_line(&format!("@{echo}? first question"));
    tmux.wait_for(
        &format!("@{echo}: {echo} heard: (at){echo}? first question"),
        1,
    );
    tmux.wait_for("turn ended", 1);

    // A streamed answer, cut by Ctrl-C after its first piece; the session goes on.
    tmux.type_line(&format!("@{slow}? talk slowly"));
    tmux.wait_for(&format!("@{slow}: one"), 1);
    tmux.ok(&["send-keys", "-t", "t", "C-c"]);
    let screen = tmux.wait_for("turn ended (cancelled)", 1);
    assert!(!screen.contains("two"), "the stream went on:\n{screen}");
    assert!(
        !screen.contains("ofc exited"),
        "one Ctrl-C ended ofc:\n{screen}"
    );
    tmux.type_line(&format!("@{echo}? still there"));
    tmux.wait_for(&format!("{echo} heard: (at){echo}? still there"), 1);
    tmux.wait_for("turn ended", 3);

    // /clear, then a Ctrl-C during a stream followed by a second one: ofc exits.
    tmux.type_line("/clear");
    tmux.wait_for("conversation cleared", 1);
    tmux.type_line(&format!("@{slow}? once more"));
    tmux.wait_for(&format!("@{slow}: one"), 2);
    tmux.ok(&["send-keys", "-t", "t", "C-c"]);
    // Two SIGINTs sent back to back can reach ofc as one (signals coalesce); the second is
    // sent once the first has been seen.
    tmux.wait_for("cancelling the turn", 2);
    tmux.ok(&["send-keys", "-t", "t", "C-c"]);
    tmux.wait_for("ofc exited 0", 1);
    let start = std::time::Instant::now();
    // Bounded generously: on a loaded machine the supervisor's SIGTERM-then-SIGKILL and the
    // reaping take seconds; what matters is that they end.
    while !processes_with(&t).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "agents outlived ofc"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // /quit ends a fresh session.
    let tmux2 = Tmux::start(&command);
    tmux2.wait_for("type a message", 1);
    tmux2.type_line("/quit");
    tmux2.wait_for("ofc exited 0", 1);
    assert!(tmux.alive() && tmux2.alive());
}

/// A scripted OpenAI-compatible model server on loopback (the model is not what is under
/// test: `ofc run`'s LLM agents, the floor and the frontends are). Each model name has a list
/// of answers, given in turn (cycling, so a second run gets the same ones), each streamed as
/// chat-completion chunks a few milliseconds apart. Every request is recorded.
pub(crate) struct ModelServer {
    pub(crate) endpoint: String,
    requests: Recorded,
    _rt: tokio::runtime::Runtime,
}

/// The requests a model server got: the `Authorization` header and the body.
type Recorded = std::sync::Arc<std::sync::Mutex<Vec<(Option<String>, Value)>>>;

type Script = std::collections::HashMap<String, (usize, Vec<Vec<String>>)>;

impl ModelServer {
    pub(crate) fn start(script: &[(&str, Vec<Vec<String>>)]) -> ModelServer {
        Self::start_with_key(script, None)
    }

    /// A server that answers only requests carrying `Bearer {key}` (401 otherwise), and lists
    /// its scripted models (those not keyed by a handle) at `GET /v1/models`.
    pub(crate) fn start_with_key(
        script: &[(&str, Vec<Vec<String>>)],
        key: Option<&str>,
    ) -> ModelServer {
        use axum::body::Body;
        use axum::extract::State;
        use axum::http::HeaderMap;
        use std::sync::{Arc, Mutex};

        type Shared = (
            Arc<Mutex<Script>>,
            Arc<Mutex<Vec<(Option<String>, Value)>>>,
            Option<String>,
        );
        fn refused(
            auth: &Option<String>,
            key: &Option<String>,
        ) -> Option<axum::response::Response> {
            let key = key.as_ref()?;
            (auth.as_deref() != Some(format!("Bearer {key}").as_str())).then(|| {
                axum::response::Response::builder()
                    .status(401)
                    .body(Body::from("{\"error\":{\"message\":\"invalid api key\"}}"))
                    .unwrap()
            })
        }
        async fn models(
            State((script, _, key)): State<Shared>,
            headers: HeaderMap,
        ) -> axum::response::Response {
            // Not recorded: `requests` are the chat calls (`ofc run` probes /models too).
            let auth = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if let Some(r) = refused(&auth, &key) {
                return r;
            }
            let data: Vec<Value> = script
                .lock()
                .unwrap()
                .keys()
                .filter(|k| !k.starts_with('@'))
                .map(|k| serde_json::json!({"id": k, "object": "model"}))
                .collect();
            axum::response::Response::builder()
                .header("content-type", "application/json")
                .body(Body::from(
                    serde_json::json!({"object": "list", "data": data}).to_string(),
                ))
                .unwrap()
        }
        async fn chat(
            State((script, requests, key)): State<Shared>,
            headers: HeaderMap,
            body: String,
        ) -> axum::response::Response {
            let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let auth = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            requests.lock().unwrap().push((auth.clone(), body.clone()));
            if let Some(r) = refused(&auth, &key) {
                return r;
            }
            let mut model = body["model"].as_str().unwrap_or_default().to_owned();
            let pieces = {
                let mut script = script.lock().unwrap();
                // A script keyed by an agent's handle (`@data`) answers that agent, whatever
                // model it names (blueprints where every agent uses `defaults.model`).
                if !script.contains_key(&model) {
                    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
                    if let Some(handle) = script.keys().find(|k| {
                        k.starts_with('@') && system.contains(&format!("You are {k} on a floor"))
                    }) {
                        model = handle.clone();
                    }
                }
                script.get_mut(&model).map(|(next, answers)| {
                    let a = answers[*next % answers.len()].clone();
                    *next += 1;
                    a
                })
            };
            let Some(pieces) = pieces else {
                return axum::response::Response::builder()
                    .status(404)
                    .body(Body::from(format!(
                        "{{\"error\":{{\"message\":\"no model {model}\"}}}}"
                    )))
                    .unwrap();
            };
            // A piece `TOOL name {arguments}` is a tool call instead of text; `WAIT ms` sends
            // nothing, and the next chunk comes that much later.
            let mut calls = 0;
            let mut wait = 0;
            let mut chunks: Vec<(u64, String)> = pieces
                .iter()
                .filter_map(|p| {
                    if let Some(ms) = p.strip_prefix("WAIT ") {
                        wait += ms.parse::<u64>().expect("WAIT <ms>");
                        return None;
                    }
                    let delta = match p.strip_prefix("TOOL ") {
                        Some(call) => {
                            let (name, args) = call.split_once(' ').unwrap_or((call, "{}"));
                            calls += 1;
                            serde_json::json!({"tool_calls": [{"index": calls - 1,
                                "id": format!("call{calls}"), "type": "function",
                                "function": {"name": name, "arguments": args}}]})
                        }
                        None => serde_json::json!({"content": p}),
                    };
                    Some((
                        5 + std::mem::take(&mut wait),
                        format!(
                            "data: {}\n\n",
                            serde_json::json!({"choices": [{"index": 0, "delta": delta}]})
                        ),
                    ))
                })
                .collect();
            let reason = if calls > 0 { "tool_calls" } else { "stop" };
            chunks.push((5 + wait, format!(
                "data: {}\n\ndata: [DONE]\n\n",
                serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
            )));
            let stream = futures::stream::unfold(chunks.into_iter(), |mut it| async move {
                let (ms, chunk) = it.next()?;
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Some((Ok::<_, std::io::Error>(chunk), it))
            });
            axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap()
        }

        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let script: Script = script
            .iter()
            .map(|(m, answers)| ((*m).to_owned(), (0, answers.clone())))
            .collect();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let state: Shared = (
            Arc::new(Mutex::new(script)),
            requests.clone(),
            key.map(str::to_owned),
        );
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(chat))
            .route("/v1/models", axum::routing::get(models))
            .with_state(state);
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        rt.spawn(async move { axum::serve(listener, app).await });
        ModelServer {
            endpoint: format!("http://{addr}/v1"),
            requests,
            _rt: rt,
        }
    }

    pub(crate) fn requests(&self) -> Vec<(Option<String>, Value)> {
        self.requests.lock().unwrap().clone()
    }
}

pub(crate) fn pieces(p: &[&str]) -> Vec<String> {
    p.iter().map(|s| (*s).to_owned()).collect()
}

/// The chat messages of a recorded request, as (role, name, content).
pub(crate) fn chat_of(body: &Value) -> Vec<(String, String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let s = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
            (s("role"), s("name"), s("content"))
        })
        .collect()
}

#[test]
fn llm_agents_and_a_process_agent_delegate_to_each_other() {
    const KEY: &str = "sk-test-4711-do-not-log";
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let t = tag("llm");
    let calc = format!("{t}calc");
    process_agent(proj.path(), &calc, &["--behaviour", "echo"]);
    let model = ModelServer::start(&[
        (
            "plan-model",
            vec![
                pieces(&[
                    "Counting ",
                    "first: ",
                    &format!("@{calc}? "),
                    "how many rows?",
                ]),
                pieces(&["Now ", "@writer? ", "write it up."]),
                pieces(&["Done: ", "the report is ready, ", "@user."]),
            ],
        ),
        ("write-model", vec![pieces(&["Sales report: ", "42 rows."])]),
    ]);
    blueprint(
        proj.path(),
        &format!(
            "name: sales\ndefaults:\n  endpoint: {}\nagents:\n  - id: \"@planner\"\n    model: plan-model\n    activation: always\n    prompt: You plan the analysis.\n    api_key_env: OFC_TEST_LLM_KEY\n  - id: \"@writer\"\n    model: write-model\n    temperature: 0.2\n    prompt: You write reports.\n    memory: {{window: 10, summary: true}}\n    context_window: 8000\n  - ./{calc}.agent.yaml\n",
            model.endpoint
        ),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let run = |args: &[&str]| {
        Ofc::finish(
            ofc.cmd()
                .current_dir(proj.path())
                .env("OFC_TEST_LLM_KEY", KEY)
                .args(args),
        )
    };

    // --json: the order of the responses and the streamed tokens.
    let r = run(&["--json", "run", "Analyze the sales data"]);
    r.assert_code(0);
    let events: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events[0]["type"], "ready");
    let responders: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "responding")
        .map(|e| e["agent"].as_str().unwrap())
        .collect();
    let c = format!("@{calc}");
    assert_eq!(
        responders,
        ["@planner", c.as_str(), "@planner", "@writer", "@planner"],
        "{}",
        r.stdout
    );
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "delta" && e["agent"] == "@writer")
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        deltas,
        ["Sales report: ", "42 rows."],
        "streamed as it came"
    );
    let said: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| {
            (
                e["message"]["from"].as_str().unwrap().to_owned(),
                e["message"]["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        said,
        [
            ("@user".to_owned(), "Analyze the sales data".to_owned()),
            (
                "@planner".to_owned(),
                format!("Counting first: @{calc}? how many rows?")
            ),
            // The test agent quotes mentions as `(at)name`, so its echo delegates to no one.
            (
                c.clone(),
                format!("{calc} heard: Counting first: (at){calc}? how many rows?")
            ),
            (
                "@planner".to_owned(),
                "Now @writer? write it up.".to_owned()
            ),
            ("@writer".to_owned(), "Sales report: 42 rows.".to_owned()),
            (
                "@planner".to_owned(),
                "Done: the report is ready, @user.".to_owned()
            ),
        ]
    );
    assert_eq!(events.last().unwrap()["code"], 0);

    // What the model server saw: per-agent model, temperature, key and prompt.
    let requests = model.requests();
    let models: Vec<&str> = requests
        .iter()
        .map(|(_, b)| b["model"].as_str().unwrap())
        .collect();
    assert_eq!(
        models,
        ["plan-model", "plan-model", "write-model", "plan-model"]
    );
    for (auth, body) in &requests {
        assert_eq!(body["stream"], true);
        if body["model"] == "plan-model" {
            assert_eq!(auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
            assert_eq!(body["temperature"], 0.7);
        } else {
            assert_eq!(auth, &None, "only the agent naming api_key_env sends a key");
            assert_eq!(body["temperature"], 0.2);
        }
    }
    let first = chat_of(&requests[0].1);
    assert_eq!(first[0].0, "system");
    for part in [
        "You plan the analysis.",
        "You are @planner",
        "@writer",
        c.as_str(),
        "[PASS]",
    ] {
        assert!(first[0].2.contains(part), "{part} in {}", first[0].2);
    }
    assert_eq!(
        first[1..],
        [(
            "user".to_owned(),
            "user".to_owned(),
            "Analyze the sales data".to_owned()
        )]
    );
    // The planner's second call sees the process agent's answer; the writer sees everything
    // before it, its own prompt first.
    let second = chat_of(&requests[1].1);
    assert_eq!(second[2].0, "assistant");
    assert!(second[3].2.contains(&format!("{calc} heard")), "{second:?}");
    let writer = chat_of(&requests[2].1);
    assert!(
        writer[0].2.starts_with("You write reports."),
        "{}",
        writer[0].2
    );
    assert!(writer[0].2.contains("You are @writer"));
    assert_eq!(writer.last().unwrap().2, "Now @writer? write it up.");
    assert_eq!(writer.len(), 5, "system + 4 floor messages: {writer:?}");

    // Line mode: the same conversation, streamed in order on stdout.
    let r = run(&["run", "Analyze the sales data"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let at = |needle: &str| {
        r.stdout
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} in\n{}", r.stdout))
    };
    assert!(at("@planner: Counting first") < at(&format!("@{calc}: {calc} heard")));
    assert!(at(&format!("@{calc}: {calc} heard")) < at("@writer: Sales report: 42 rows."));
    assert!(at("@writer: Sales report: 42 rows.") < at("@planner: Done: the report is ready"));
    assert!(r.stderr.contains("turn ended"), "{}", r.stderr);

    // The transcript replays (the floor's decisions, without the model).
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(proj.path().join(".ofc/run.json")).unwrap())
            .unwrap();
    let replay = ofc.ok(&["floor", "replay", state["transcript"].as_str().unwrap()]);
    assert!(replay.contains("replayed identically"), "{replay}");

    // The key is in no output, transcript, log or state file.
    assert!(!r.stdout.contains(KEY) && !r.stderr.contains(KEY));
    for entry in walkdir::WalkDir::new(proj.path().join(".ofc")) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            assert!(
                !text.contains(KEY),
                "the key leaked into {}",
                entry.path().display()
            );
        }
    }
    assert!(processes_with(&t).is_empty(), "every agent stopped");
}
