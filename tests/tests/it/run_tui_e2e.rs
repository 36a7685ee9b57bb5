//! `ofc run --tui` end to end: the real `ofc` binary in a real terminal (tmux: `send-keys`
//! to type, `capture-pane` to read) with process agents (`ofc-test-agent`) that stream.
//!
//! Needs the binaries: `cargo build -p ofc-pkg -p runtime --bins`.

use std::time::Duration;

use crate::common::Ofc;
use crate::common::bin;
use crate::common::run::{Tmux, blueprint, process_agent, processes_with, run_in, tag};

/// Whether tmux's rendering of a screen (`capture-pane -e`) sets a foreground colour.
fn has_colour(screen: &str) -> bool {
    screen.contains("\x1b[38;")
        || (0..8).any(|c| {
            screen.contains(&format!("\x1b[3{c}m")) || screen.contains(&format!("\x1b[9{c}m"))
        })
}

#[test]
fn tui_refuses_a_message_json_and_a_missing_terminal() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let t = tag("tuino");
    process_agent(proj.path(), &t, &[]);
    blueprint(proj.path(), &format!("agents:\n  - ./{t}.agent.yaml\n"));
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    for args in [
        &["run", "--tui", "hello"][..],
        &["--json", "run", "--tui"][..],
    ] {
        let r = run_in(&ofc, proj.path(), args);
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("cannot be used with"), "{}", r.stderr);
    }
    // Not a terminal (the test's pipes): refused before anything starts.
    let r = run_in(&ofc, proj.path(), &["run", "--tui"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--tui needs a terminal"), "{}", r.stderr);
    assert!(r.stderr.contains("\nhint: "), "{}", r.stderr);
    assert!(!proj.path().join(".ofc").exists(), "something was started");
    assert!(processes_with(&t).is_empty(), "an agent was started");
}

#[test]
fn tui_in_a_real_terminal_streaming_ctrl_c_commands_and_restore() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let t = tag("tui");
    let (echo, slow, fast) = (format!("{t}e"), format!("{t}s"), format!("{t}f"));
    process_agent(proj.path(), &echo, &[]);
    process_agent(
        proj.path(),
        &slow,
        &["--behaviour", "stream", "--delay-ms", "20000"],
    );
    process_agent(
        proj.path(),
        &fast,
        &["--behaviour", "stream", "--delay-ms", "100"],
    );
    blueprint(
        proj.path(),
        &format!(
            "agents:\n  - ./{echo}.agent.yaml\n  - ./{slow}.agent.yaml\n  - ./{fast}.agent.yaml\n"
        ),
    );
    // After ofc: its exit code, and whether the terminal is back in canonical (cooked) mode.
    let command = |env: &str| {
        format!(
            "cd '{}' && {env} OFC_HOME='{}' '{}' run --tui; echo \"ofc exited $?\"; \
             stty -a | tr ' ' '\\n' | grep -x -- '-\\?icanon'; sleep 60",
            proj.path().display(),
            home.path().display(),
            bin("ofc").display()
        )
    };
    let tmux = Tmux::start(&command("NO_COLOR=1"));
    tmux.wait_for("type a message", 1);
    assert!(tmux.alternate_on(), "not on the alternate screen");
    // The agent list: both agents with their activation.
    tmux.wait_for(&format!("  @{echo} mention"), 1);
    tmux.wait_for(&format!("  @{slow} mention"), 1);

    // A streamed answer shows its first piece live, its agent marked as responding; Ctrl-C
    // cancels the turn and the session goes on.
    tmux.type_line(&format!("@{slow}? talk slowly"));
    tmux.wait_for(&format!("@{slow}: one"), 1);
    tmux.wait_for(&format!("* @{slow} mention"), 1);
    tmux.ok(&["send-keys", "-t", "t", "C-c"]);
    let screen = tmux.wait_for("turn ended (cancelled)", 1);
    assert!(!screen.contains("two"), "the stream went on:\n{screen}");
    assert!(
        !screen.contains(&format!("* @{slow}")),
        "still marked as responding:\n{screen}"
    );
    assert!(tmux.alternate_on(), "one Ctrl-C ended ofc:\n{screen}");

    // Commands are answered locally, never posted; messages still get answered.
    tmux.type_line("/nosuch thing");
    tmux.wait_for("unknown command /nosuch", 1);
    // Typed with a letter missing, mended with the arrow keys before Enter.
    tmux.ok(&[
        "send-keys",
        "-t",
        "t",
        "-l",
        &format!("@{echo}? stll there"),
    ]);
    tmux.ok(&[
        "send-keys",
        "-t",
        "t",
        "Left",
        "Left",
        "Left",
        "Left",
        "Left",
        "Left",
        "Left",
        "Left",
    ]);
    tmux.ok(&["send-keys", "-t", "t", "-l", "i"]);
    tmux.ok(&["send-keys", "-t", "t", "Enter"]);
    tmux.wait_for(
        &format!("@{echo}: {echo} heard: (at){echo}? still there"),
        1,
    );
    let screen = tmux.wait_for("turn ended", 2);
    assert_eq!(
        screen.matches("@user: /nosuch").count(),
        0,
        "a command was posted:\n{screen}"
    );
    // A streamed answer that completes is shown once (its stored message replaces the pieces).
    tmux.type_line(&format!("@{fast}? go"));
    let screen = tmux.wait_for("turn ended", 3);
    assert_eq!(
        screen.matches(&format!("@{fast}: one two three")).count(),
        1,
        "{screen}"
    );
    // NO_COLOR: no colours, no dim text.
    let raw = tmux.screen_with_escapes();
    assert!(!has_colour(&raw) && !raw.contains("\x1b[2m"), "{raw:?}");

    // Scrolling: once the conversation is longer than the pane, its start scrolls out of
    // view; PageUp brings it back, PageDown returns to the end.
    for _ in 0..10 {
        tmux.type_line("/help");
    }
    let start = std::time::Instant::now();
    while tmux.screen().contains("floor ready") {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the start never scrolled out:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A page at a time, as many as the conversation takes (at most 5).
    for _ in 0..5 {
        tmux.ok(&["send-keys", "-t", "t", "PPage"]);
        std::thread::sleep(Duration::from_millis(200));
        if tmux.screen().contains("floor ready") {
            break;
        }
    }
    let screen = tmux.wait_for("floor ready", 1);
    assert!(screen.contains("scrolled up"), "{screen}");
    tmux.ok(&["send-keys", "-t", "t", "NPage"]);
    let start = std::time::Instant::now();
    while tmux.screen().contains("scrolled up") {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "PageDown did not return to the end:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!tmux.screen().contains("floor ready"));

    // /quit: ofc exits 0, the terminal is restored (main screen, canonical mode), the agents
    // are gone.
    tmux.type_line("/quit");
    let screen = tmux.wait_for("ofc exited 0", 1);
    assert!(!tmux.alternate_on(), "still on the alternate screen");
    let screen = if screen.lines().any(|l| l.trim().ends_with("icanon")) {
        screen
    } else {
        tmux.wait_for("icanon", 1)
    };
    assert!(
        screen.lines().any(|l| l.trim() == "icanon"),
        "the terminal was left in raw mode:\n{screen}"
    );
    let start = std::time::Instant::now();
    while !processes_with(&t).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "agents outlived ofc"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // With colours: each agent's handle in its colour; Ctrl-C when no turn runs quits.
    let tmux2 = Tmux::start(&command("env -u NO_COLOR"));
    tmux2.wait_for(&format!("  @{slow} mention"), 1);
    let raw = tmux2.screen_with_escapes();
    assert!(has_colour(&raw), "no colours:\n{raw:?}");
    tmux2.ok(&["send-keys", "-t", "t", "C-c"]);
    tmux2.wait_for("ofc exited 0", 1);
    assert!(!tmux2.alternate_on());
}
