//! `ofc run` with a sandbox workstation, end to end: the real `ofc` binary, real podman
//! (configured by `scripts/peers/podman`), an image built `FROM scratch` around Debian's static
//! busybox, and LLM agents on a scripted model calling its `bash` tool under the floor
//! manager's policies. The container ends with the floor, and with a SIGKILL of `ofc run`.
//! Fails (never skips) without podman or busybox-static.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Ofc;
use crate::common::run::{blueprint, tag};
use crate::run_e2e::{ModelServer, pieces, start_interactive};

pub(crate) fn podman() -> PathBuf {
    let podman = ["/usr/bin/podman", "/usr/local/bin/podman"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    assert!(
        podman.is_some() && Path::new("/bin/busybox").is_file(),
        "podman and Debian's busybox-static are needed: run scripts/install-test-deps (or \
         scripts/peers/podman)"
    );
    podman.unwrap()
}

/// `<dir>/sandbox/`: busybox installed in a FROM-scratch image.
pub(crate) fn busybox_context(dir: &Path) {
    podman();
    let ctx = dir.join("sandbox");
    std::fs::create_dir_all(&ctx).unwrap();
    std::fs::copy("/bin/busybox", ctx.join("busybox")).unwrap();
    std::fs::write(
        ctx.join("Dockerfile"),
        "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\nCMD [\"/bin/busybox\", \"sh\"]\n",
    )
    .unwrap();
}

/// Names of the containers (running or not) of the sandbox workstation `name`.
fn containers_of(name: &str) -> Vec<String> {
    let out = std::process::Command::new(podman())
        .args([
            "ps",
            "-a",
            "--filter",
            &format!("label=ofc.sandbox={name}"),
            "--format",
            "{{.Names}}",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn llm_agents_run_bash_in_the_sandbox_under_the_policies_and_it_ends_with_the_floor() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    busybox_context(proj.path());
    std::fs::create_dir_all(proj.path().join("workspace")).unwrap();
    std::fs::write(proj.path().join("workspace/data.txt"), "17\n25\n").unwrap();
    let station = format!("box{}", tag("sb"));
    let model = ModelServer::start(&[
        (
            "code-model",
            vec![
                pieces(&[&format!(
                    "TOOL {station}__bash {{\"command\": \"pwd; awk '{{s+=$1}} END {{print s}}' data.txt; echo done > result.txt\"}}"
                )]),
                pieces(&["The sum is 42. @viewer? check it"]),
                pieces(&["Thanks, @user."]),
            ],
        ),
        (
            "view-model",
            vec![
                pieces(&[&format!(
                    "TOOL {station}__bash {{\"command\": \"rm -rf /workspace\"}}"
                )]),
                pieces(&["I could not run anything, @user."]),
            ],
        ),
    ]);
    blueprint(
        proj.path(),
        &format!(
            "defaults:\n  endpoint: {}\nworkstations:\n  - {{type: sandbox, name: {station}, dockerfile: ./sandbox/Dockerfile, mount: ./workspace:/workspace}}\nfloor_manager:\n  policies:\n    - {{access: execute, agents: [\"@coder\"], workstation: {station}, decision: approve}}\nagents:\n  - {{id: \"@coder\", model: code-model, can_use_tools: true}}\n  - {{id: \"@viewer\", model: view-model, can_use_tools: true}}\n",
            model.endpoint
        ),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args([
        "--json",
        "run",
        "@coder? add up data.txt",
    ]));
    r.assert_code(0);
    let messages: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|e| e["type"] == "message")
        .map(|e| e["message"].clone())
        .collect();
    let coder = messages.iter().find(|m| m["from"] == "@coder").unwrap();
    assert_eq!(coder["tool_calls"][0]["name"], format!("{station}__bash"));
    assert_eq!(coder["tool_results"][0], "/workspace\n42", "{coder}");
    assert_eq!(
        std::fs::read_to_string(proj.path().join("workspace/result.txt")).unwrap(),
        "done\n"
    );
    // @viewer may use tools, but no policy approves execute for it: refused, nothing ran.
    let viewer = messages.iter().find(|m| m["from"] == "@viewer").unwrap();
    let refused = viewer["tool_results"][0].as_str().unwrap();
    assert!(
        refused.contains(&format!("refused: `{station}__bash`"))
            && refused.contains("@viewer holds no grant")
            && refused.contains("no floor_manager policy approves execute access"),
        "{refused}"
    );
    assert!(proj.path().join("workspace/data.txt").is_file());
    // The floor ended: its container is gone.
    assert_eq!(containers_of(&station), Vec::<String>::new());
}

#[test]
fn a_sandbox_that_cannot_start_is_reported_at_its_line() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    podman();
    let model = ModelServer::start(&[("m", vec![pieces(&["hi"])])]);
    blueprint(
        proj.path(),
        &format!(
            "defaults:\n  endpoint: {}\n  model: m\nworkstations:\n  - {{type: sandbox, name: nobox, dockerfile: ./missing/Dockerfile}}\nagents:\n  - {{id: \"@a\", can_use_tools: true}}\n",
            model.endpoint
        ),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args(["run", "@a? hi"]));
    r.assert_code(1);
    assert!(
        r.stderr
            .contains("blueprint.yaml:5:5: workstations[0]: furniture `nobox`"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("does not exist"), "{}", r.stderr);
}

#[test]
fn sigkill_of_ofc_run_leaves_no_sandbox_container() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    busybox_context(proj.path());
    let station = format!("box{}", tag("sbkill"));
    let model = ModelServer::start(&[("m", vec![pieces(&["hi"])])]);
    blueprint(
        proj.path(),
        &format!(
            "defaults:\n  endpoint: {}\n  model: m\nworkstations:\n  - {{type: sandbox, name: {station}, dockerfile: ./sandbox}}\nagents:\n  - {{id: \"@a\", can_use_tools: true}}\n",
            model.endpoint
        ),
    );
    let mut child = start_interactive(proj.path(), home.path());
    assert_eq!(containers_of(&station).len(), 1, "the sandbox runs");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !containers_of(&station).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        containers_of(&station),
        Vec::<String>::new(),
        "the sandbox container outlived ofc"
    );
}
