//! Sub-rooms end to end: the real `ofc` binary, interactive over stdin (`--json`), three LLM
//! agents answered by a scripted model that records every request. Two rooms with an agent in
//! both; the agent outside a room is never sent its messages; a room closes by itself when
//! its turn ends and its summary goes to `#main`; a room open when the run stops is open
//! again on `--resume`, with its conversation; `ofc floor replay` replays every room's floor.
//!
//! Needs the binaries: `cargo build -p ofc-pkg -p hub-server --bins`.

use std::path::Path;

use serde_json::Value;

use crate::common::Ofc;
use crate::common::run::{Interactive, blueprint};
use crate::run_e2e::{ModelServer, chat_of, pieces};

const ROOMS: &str = "name: rooms-test\ndefaults:\n  endpoint: ENDPOINT\n  model: shared\nagents:\n  - {id: \"@a\", prompt: You are careful.}\n  - {id: \"@b\", prompt: You are quick.}\n  - {id: \"@c\", prompt: You are curious.}\n";

/// An interactive run whose JSON lines are kept as they are read.
struct Session {
    run: Interactive,
    /// Every JSON line so far (the rooms' events and `#main`'s come on two channels, so their
    /// order on stdout is not fixed).
    seen: std::cell::RefCell<Vec<Value>>,
}

impl Session {
    fn start(home: &Path, dir: &Path, args: &[&str]) -> Self {
        Self {
            run: Interactive::start(home, dir, args, &[]),
            seen: Default::default(),
        }
    }

    /// The first JSON line so far, or to come, for which `want` holds.
    fn wait(&self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(v) = self.seen.borrow().iter().find(|v| want(v)) {
            return v.clone();
        }
        loop {
            let line = self.run.next_line(what);
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                self.seen.borrow_mut().push(v.clone());
                if want(&v) {
                    return v;
                }
            }
        }
    }

    fn room_event(&self, kind: &str, room: &str) -> Value {
        self.wait(&format!("{kind} {room}"), |v| {
            v["type"] == kind && v["room"] == room
        })
    }

    fn say(&mut self, line: &str) {
        self.run.say(line);
    }

    /// Ends the input; answers the exit code and stderr.
    fn end(self) -> (i32, String) {
        self.run.end()
    }
}

/// The chat requests made for `agent`: (system prompt, the rest's contents).
fn asked(model: &ModelServer, agent: &str) -> Vec<Vec<String>> {
    model
        .requests()
        .iter()
        .map(|(_, body)| chat_of(body))
        .filter(|chat| chat[0].2.contains(&format!("You are {agent} on a floor")))
        .map(|chat| chat[1..].iter().map(|(_, _, c)| c.clone()).collect())
        .collect()
}

#[test]
fn two_rooms_with_overlapping_members_stay_apart_and_come_back_on_resume() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let dir = proj.path();
    let model = ModelServer::start(&[
        ("@a", vec![pieces(&["I see ", "a quiet room."])]),
        ("@b", vec![pieces(&["The LEFT-CODE ", "is 42."])]),
        ("@c", vec![pieces(&["Nothing ", "new here."])]),
    ]);
    blueprint(dir, &ROOMS.replace("ENDPOINT", &model.endpoint));
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");

    let mut s = Session::start(home.path(), dir, &[]);
    let ready = s.wait("ready", |v| v["type"] == "ready");
    let id = ready["session"].as_str().unwrap().to_owned();

    // #right holds @b and @c and waits; #left takes @a and @b (in both now) and asks @b.
    s.say("/room #right @b @c");
    let opened = s.room_event("room_opened", "#right");
    assert_eq!(opened["members"], serde_json::json!(["@b", "@c"]));
    s.say("/room #left @a @b @b? what is the LEFT-CODE?");
    s.room_event("room_opened", "#left");
    let reply = s.wait("@b's reply in #left", |v| {
        v["type"] == "message" && v["room"] == "#left" && v["message"]["from"] == "@b"
    });
    assert_eq!(reply["message"]["content"], "The LEFT-CODE is 42.");
    // Nobody else will speak: #left closes by itself, its summary public on #main.
    let closed = s.room_event("room_closed", "#left");
    let summary = "[Room #left closed] Last message from @b: The LEFT-CODE is 42.";
    assert_eq!(closed["summary"], summary);
    s.wait("the summary on #main", |v| {
        v["type"] == "message"
            && v.get("room").is_none()
            && v["message"]["from"] == "@system"
            && v["message"]["content"] == summary
    });
    // Errors are said, nothing is posted.
    s.say("/room #main @a");
    s.say("/room #right @a");
    s.say("/room #x @nobody");
    s.say("/room design @a");
    // @c, in #right only, answers there.
    s.say("/room #right @c? anything new?");
    s.room_event("room_closed", "#right");
    // A room with no prompt stays open through the end of the run.
    s.say("/room #kept @a");
    s.room_event("room_opened", "#kept");
    let (code, stderr) = s.end();
    assert_eq!(code, 0, "{stderr}");
    for said in [
        "· #main is the main room: it is always open and cannot be opened or closed",
        "· room #right exists already (/room close #right first)",
        "· @nobody is not an agent on this floor",
        "· `design` is not a room name",
    ] {
        assert!(stderr.contains(said), "`{said}` in\n{stderr}");
    }

    // What the model was sent: @b in #left, its room's conversation and its private note.
    let b = asked(&model, "@b");
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(
        b[0],
        [
            "You moved to room #left with @a. Messages here are private to this room; #main goes on without you until it closes.",
            "@b? what is the LEFT-CODE?"
        ]
    );
    // @c, outside #left, never got a word of it — not the question, not the answer, not
    // the summary (posted on #main while @c was away in #right).
    let c = asked(&model, "@c");
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(
        c[0],
        [
            "You moved to room #right with @b. Messages here are private to this room; #main goes on without you until it closes.",
            "@c? anything new?"
        ]
    );
    assert!(asked(&model, "@a").is_empty());

    // The log: rooms opened and closed, each floor replayable.
    let file = dir.join(".ofc/sessions").join(format!("{id}.jsonl"));
    let log = std::fs::read_to_string(&file).unwrap();
    let events: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rooms_of = |kind: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["payload_type"] == kind)
            .map(|e| e["payload"]["room"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(rooms_of("room_opened"), ["#right", "#left", "#kept"]);
    assert_eq!(rooms_of("room_closed"), ["#left", "#right"]);
    assert!(events.iter().any(|e| e["room_id"] == "#left"
        && e["payload_type"] == "message_posted"
        && e["payload"]["message"]["content"] == "The LEFT-CODE is 42."));
    let replay = Ofc::finish(ofc.cmd().current_dir(dir).args([
        "--json",
        "floor",
        "replay",
        file.to_str().unwrap(),
    ]));
    replay.assert_code(0);
    let replay: Value = serde_json::from_str(&replay.stdout).unwrap();
    assert_eq!(replay["ok"], true, "{replay}");
    assert_eq!(replay["runs"].as_array().unwrap().len(), 4, "{replay}");

    // Shown: #main's conversation, and each room's apart.
    let show = Ofc::finish(
        ofc.cmd()
            .current_dir(dir)
            .args(["--json", "sessions", "show", &id]),
    );
    show.assert_code(0);
    let show: Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(show["open_rooms"], serde_json::json!(["#kept"]));
    let left: Vec<&str> = show["rooms"]["#left"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(left.last(), Some(&"The LEFT-CODE is 42."));
    assert!(
        show["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| !m["content"]
                .as_str()
                .unwrap()
                .contains("what is the LEFT-CODE")),
        "{show}"
    );
    let text = Ofc::finish(ofc.cmd().current_dir(dir).args(["sessions", "show", &id]));
    assert!(
        text.stdout.contains("room #kept (open): 1 messages"),
        "{}",
        text.stdout
    );

    // Resumed: #kept is open again with @a in it, and @a answers there from its own
    // conversation (its note), not #main's.
    let mut s = Session::start(home.path(), dir, &["--resume", &id]);
    s.wait("ready", |v| v["type"] == "ready");
    s.say("/room #kept @a? what do you see?");
    let reply = s.wait("@a's reply in #kept", |v| {
        v["type"] == "message" && v["room"] == "#kept" && v["message"]["from"] == "@a"
    });
    assert_eq!(reply["message"]["content"], "I see a quiet room.");
    s.room_event("room_closed", "#kept");
    let (code, stderr) = s.end();
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("room #kept is open again: @a"), "{stderr}");
    let a = asked(&model, "@a");
    assert_eq!(
        a,
        [[
            "You moved to room #kept alone. Messages here are private to this room; #main goes on without you until it closes.",
            "@a? what do you see?"
        ]]
    );
}
