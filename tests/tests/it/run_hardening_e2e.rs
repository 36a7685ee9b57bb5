//! `ofc run` against the findings of the third hardening pass: what a newcomer and an attack
//! pass found in how floors run, each with the real `ofc` binary and real agent processes.

use crate::common::Ofc;
use crate::common::run::{blueprint, process_agent, run_in, tag};

/// A turn in which the only agent passes has no answer: exit 3 ("no agent responded", as the
/// README says), not 0.
#[test]
fn a_turn_where_every_agent_passes_exits_3() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let a = tag("passer");
    process_agent(proj.path(), &a, &["--behaviour", "pass", "--wake"]);
    blueprint(
        proj.path(),
        &format!("name: quiet\nagents:\n  - ./{a}.agent.yaml\n"),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = run_in(&ofc, proj.path(), &["run", "anyone?"]);
    r.assert_code(3);
    assert!(r.stderr.contains(&format!("@{a} passed")), "{}", r.stderr);
    // And --json reports the same code as its last event.
    let r = run_in(&ofc, proj.path(), &["--json", "run", "anyone?"]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    let last: serde_json::Value = serde_json::from_str(r.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        (last["type"].as_str(), last["code"].as_u64()),
        (Some("exit"), Some(3))
    );
}

/// An agent that streams without end grew `ofc run` to gigabytes (only LLM answers were
/// capped). Every reply is capped now, whatever the transport: the call ends at the floor's
/// message limit and the reply is cut with a marker.
#[test]
fn an_agent_streaming_without_end_is_cut_at_the_message_limit() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let a = tag("flooder");
    process_agent(proj.path(), &a, &["--behaviour", "flood", "--wake"]);
    blueprint(
        proj.path(),
        &format!("name: flood\nagents:\n  - ./{a}.agent.yaml\n"),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let started = std::time::Instant::now();
    let r = run_in(&ofc, proj.path(), &["--json", "run", "say something"]);
    let took = started.elapsed();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // The respond deadline (120 s) was what ended it before; the cap ends it at once.
    assert!(took < std::time::Duration::from_secs(60), "{took:?}");
    let events: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let streamed: usize = events
        .iter()
        .filter(|e| e["type"] == "delta")
        .map(|e| e["content"].as_str().unwrap_or_default().len())
        .sum();
    assert!(streamed <= 256 * 1024, "{streamed} bytes streamed");
    let reply = events
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["from"] == format!("@{a}"))
        .map(|e| e["message"]["content"].as_str().unwrap().to_owned())
        .expect("the cut reply is on the floor");
    assert!(
        reply.contains("more bytes cut"),
        "{}",
        &reply[reply.len() - 200..]
    );
    assert!(reply.len() < 256 * 1024 + 200, "{}", reply.len());
}

/// A 10,000-agent blueprint took `ofc run` to 8 GB before the floor's 64-agent limit refused
/// it (work that compares agents with each other came first). The limit is checked first now:
/// a clear error, at once.
#[test]
fn a_blueprint_past_the_floor_limits_is_refused_before_any_work() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let mut text = String::from(
        "name: crowd\ndefaults: {model: m, endpoint: http://127.0.0.1:9/v1}\nagents:\n",
    );
    for i in 0..10_000 {
        text.push_str(&format!("  - {{id: \"@a{i}\"}}\n"));
    }
    blueprint(proj.path(), &text);
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let started = std::time::Instant::now();
    let r = run_in(&ofc, proj.path(), &["run", "hello"]);
    r.assert_code(1);
    assert!(
        r.stderr.contains("agents") && r.stderr.contains("10000 entries; a floor holds at most 64"),
        "{}",
        r.stderr
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

/// A sandbox workstation that fails to start got a hint about MCP servers. It gets one about
/// the container engine and the image now.
#[test]
fn a_sandbox_that_fails_to_start_gets_a_hint_about_containers() {
    crate::run_sandbox_e2e::podman();
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let ctx = proj.path().join("broken");
    std::fs::create_dir_all(&ctx).unwrap();
    // A Dockerfile that cannot build (its base is no image anywhere).
    std::fs::write(
        ctx.join("Dockerfile"),
        "FROM scratch\nCOPY no-such-file /x\n",
    )
    .unwrap();
    let model = crate::run_e2e::ModelServer::start(&[("m", vec![crate::run_e2e::pieces(&["hi"])])]);
    blueprint(
        proj.path(),
        &format!(
            "name: boxed\ndefaults: {{model: m, endpoint: {}}}\n\
             workstations:\n  - {{type: sandbox, name: box, dockerfile: ./broken/Dockerfile, image: ofc-test-broken:1}}\n\
             agents:\n  - {{id: \"@a\"}}\n",
            model.endpoint
        ),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = run_in(&ofc, proj.path(), &["run", "hello"]);
    r.assert_code(1);
    assert!(r.stderr.contains("workstation"), "{}", r.stderr);
    assert!(r.stderr.contains("podman"), "{}", r.stderr);
    assert!(!r.stderr.contains("MCP server"), "{}", r.stderr);
}

/// Whether process `pid` is alive (not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next().map(|st| st != "Z"))
        })
        .unwrap_or(false)
}

/// Waits up to 20 s for `pid` to be gone.
fn gone_soon(pid: u32) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while alive(pid) {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    true
}

fn read_pid(path: &std::path::Path) -> u32 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no pid in {}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The parent pid of `pid`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// An interactive `ofc run` of one agent that starts a `setsid` child.
struct Detaching {
    home: tempfile::TempDir,
    proj: tempfile::TempDir,
    agent: String,
    pidfile: std::path::PathBuf,
    child: std::process::Child,
    /// The detached child's pid.
    detached: u32,
}

impl Detaching {
    fn start(name: &str) -> Detaching {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let agent = tag(name);
        let pidfile = proj.path().join("detached.pid");
        process_agent(
            proj.path(),
            &agent,
            &["--detach", pidfile.to_str().unwrap()],
        );
        blueprint(proj.path(), &format!("agents:\n  - ./{agent}.agent.yaml\n"));
        let child = crate::run_e2e::start_interactive(proj.path(), home.path());
        let detached = read_pid(&pidfile);
        Detaching {
            home,
            proj,
            agent,
            pidfile,
            child,
            detached,
        }
    }
}

/// An agent's child that left the agent's process group (`setsid`) survived a SIGKILL of
/// `ofc run`: the supervisor signals groups. Every process of a run carries the run's id in
/// its environment now, and the supervisor stops those too.
#[test]
fn a_detached_child_of_an_agent_dies_with_ofc() {
    let d = Detaching::start("detacher");
    let (mut child, detached) = (d.child, d.detached);
    assert!(alive(detached));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(gone_soon(detached), "the setsid child outlived ofc");
}

/// `ofc run` and its supervisor killed together left every agent running. The next `ofc run`
/// in the project finds the last run unfinished and stops what it left.
#[test]
fn the_next_run_stops_what_a_killed_run_left() {
    let Detaching {
        home,
        proj,
        agent: a,
        pidfile,
        mut child,
        detached,
    } = Detaching::start("leftover");
    let agents = crate::common::run::processes_with(&a);
    assert_eq!(agents.len(), 1, "{agents:?}");
    let ofc_pid = child.id();
    let supervisors: Vec<u32> = crate::common::run::processes_with("__supervise")
        .into_iter()
        .filter(|p| parent_of(*p) == Some(ofc_pid))
        .collect();
    assert_eq!(supervisors.len(), 1, "{supervisors:?}");
    // Both at once: nothing is left to clean up after them.
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &supervisors[0].to_string(), &ofc_pid.to_string()])
        .status();
    child.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        alive(agents[0]) && alive(detached),
        "the kill left them (as before)"
    );

    // The next run cleans up, then runs as usual.
    std::fs::remove_file(&pidfile).unwrap();
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = run_in(&ofc, proj.path(), &["run", &format!("@{a}? hello")]);
    r.assert_code(0);
    assert!(r.stderr.contains("did not end cleanly"), "{}", r.stderr);
    assert!(gone_soon(agents[0]), "the last run's agent is still there");
    assert!(
        gone_soon(detached),
        "the last run's detached child is still there"
    );
}
