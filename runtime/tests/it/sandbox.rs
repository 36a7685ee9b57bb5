//! The sandbox workstation with real podman (configured by `scripts/peers/podman`): an image
//! built `FROM scratch` around Debian's static busybox, its `bash` tool in the mounted
//! workspace, the timeout, the output cap, the rebuild on change, and no container left behind.
//! These tests fail (never skip) without podman or the static busybox.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use index_schema::blueprint::{Blueprint, Workstation};
use runtime::furniture::{Class, Furniture, FurnitureSettings, Sandbox, SandboxSettings};
use serde_json::{Map, Value, json};

/// podman, and the static busybox the test images are built around.
pub(crate) fn podman() -> PathBuf {
    let podman = ["/usr/bin/podman", "/usr/local/bin/podman", "/bin/podman"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    let busybox = Path::new("/bin/busybox");
    assert!(
        podman.is_some() && busybox.is_file(),
        "podman and Debian's busybox-static are needed: run scripts/install-test-deps (or \
         scripts/peers/podman)"
    );
    podman.unwrap()
}

/// A build context: a Dockerfile `FROM scratch` with busybox installed as /bin/sh & co.
pub(crate) fn busybox_context(dir: &Path, extra: &str) -> PathBuf {
    podman();
    let ctx = dir.join("sandbox");
    std::fs::create_dir_all(&ctx).unwrap();
    std::fs::copy("/bin/busybox", ctx.join("busybox")).unwrap();
    std::fs::write(
        ctx.join("Dockerfile"),
        format!(
            "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n{extra}ENTRYPOINT [\"/bin/busybox\", \"sh\"]\n"
        ),
    )
    .unwrap();
    ctx
}

fn workstation(yaml: &str) -> Workstation {
    let bp = Blueprint::from_yaml(&format!("agents: []\nworkstations:\n  - {yaml}\n"))
        .unwrap_or_else(|e| panic!("{e:?}"));
    bp.workstations[0].clone()
}

fn settings(dir: &Path) -> FurnitureSettings {
    FurnitureSettings {
        working_dir: Some(dir.to_path_buf()),
        ..FurnitureSettings::default()
    }
}

/// Whether the engine still has the container (running or not).
pub(crate) fn container_exists(name: &str) -> bool {
    std::process::Command::new(podman())
        .args(["container", "exists", name])
        .status()
        .unwrap()
        .success()
}

fn bash(command: &str) -> Map<String, Value> {
    json!({"command": command}).as_object().unwrap().clone()
}

#[tokio::test]
async fn a_sandbox_built_from_scratch_runs_bash_in_the_mounted_workspace() {
    let dir = tempfile::tempdir().unwrap();
    busybox_context(dir.path(), "");
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    std::fs::write(dir.path().join("workspace/sales.csv"), "q1,10\nq2,32\n").unwrap();
    let ws = workstation(
        "{type: sandbox, name: py, dockerfile: ./sandbox/Dockerfile, mount: ./workspace:/workspace}",
    );
    let piece = Furniture::workstation(&ws, &settings(dir.path()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(piece.name(), "py");
    assert_eq!(piece.kind(), "sandbox");
    let tool = piece.tool("bash").unwrap();
    assert_eq!(tool.class, Class::Execute);
    let sandbox = piece.as_sandbox().unwrap().clone();
    assert!(
        sandbox.image().starts_with("localhost/ofc-sandbox-py:"),
        "{}",
        sandbox.image()
    );
    assert!(container_exists(sandbox.container()));

    // The command runs in the mounted workspace, reads the host's file and writes one back.
    let out = piece
        .call(
            "bash",
            bash("pwd; awk -F, '{s+=$2} END {print s}' sales.csv; echo made > out.txt"),
        )
        .await
        .unwrap();
    assert_eq!(out, json!("/workspace\n42"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("workspace/out.txt")).unwrap(),
        "made\n"
    );
    // stderr follows stdout; a failing command's exit code is shown, not an error.
    let out = piece
        .call("bash", bash("echo to-out; echo to-err >&2; exit 3"))
        .await
        .unwrap();
    assert_eq!(out, json!("to-out\nto-err\n[exit code 3]"));
    // Bad arguments are tool errors the model can read.
    let err = piece.call("bash", Map::new()).await.unwrap_err();
    assert!(err.0.contains("command"), "{err}");

    let container = sandbox.container().to_owned();
    drop(sandbox);
    piece.shutdown().await;
    assert!(
        !container_exists(&container),
        "the container outlived the floor"
    );
    let err = piece.call("bash", bash("true")).await.unwrap_err();
    assert!(err.0.contains("stopped"), "{err}");
}

#[tokio::test]
async fn a_command_that_never_ends_is_cut_at_the_timeout_and_killed() {
    let dir = tempfile::tempdir().unwrap();
    busybox_context(dir.path(), "");
    let ws = workstation("{type: sandbox, name: slow, dockerfile: ./sandbox}");
    let piece = Furniture::workstation(&ws, &settings(dir.path()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let mut args = bash("echo begun; sleep 1000; echo never");
    args.insert("timeout".into(), json!(2));
    let err = piece.call("bash", args).await.unwrap_err();
    let took = started.elapsed();
    assert!(err.0.contains("did not finish within 2s"), "{err}");
    assert!(err.0.contains("begun") && !err.0.contains("never"), "{err}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    // The command's processes are gone from the container, not only the exec client.
    let ps = piece.call("bash", bash("ps")).await.unwrap();
    assert!(!ps.as_str().unwrap().contains("sleep 1000"), "{ps}");
    // No working directory without a mount: `/`.
    assert_eq!(piece.call("bash", bash("pwd")).await.unwrap(), json!("/"));
    piece.shutdown().await;
}

#[tokio::test]
async fn long_output_is_cut_in_the_middle_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    busybox_context(dir.path(), "");
    let ws = workstation("{type: sandbox, name: loud, dockerfile: ./sandbox}");
    let settings = FurnitureSettings {
        sandbox: SandboxSettings {
            output_cap: 1000,
            ..SandboxSettings::default()
        },
        ..settings(dir.path())
    };
    let piece = Furniture::workstation(&ws, &settings).await.unwrap();
    let out = piece
        .call("bash", bash("echo FIRST; yes x | head -n 50000; echo LAST"))
        .await
        .unwrap();
    let out = out.as_str().unwrap();
    assert!(out.starts_with("FIRST\n") && out.ends_with("LAST"), "{out}");
    assert!(out.contains("bytes cut"), "{out}");
    assert!(out.len() < 1200, "{}", out.len());
    piece.shutdown().await;
}

#[tokio::test]
async fn the_image_is_rebuilt_when_the_dockerfile_changes_and_reused_when_not() {
    let dir = tempfile::tempdir().unwrap();
    busybox_context(dir.path(), "");
    let ws = workstation("{type: sandbox, name: rebuild, dockerfile: ./sandbox/Dockerfile}");
    let first = Sandbox::start(&ws, &settings(dir.path())).await.unwrap();
    let first_image = first.image().to_owned();
    first.stop().await;
    let again = Sandbox::start(&ws, &settings(dir.path())).await.unwrap();
    assert_eq!(
        again.image(),
        first_image,
        "an unchanged context is not rebuilt"
    );
    again.stop().await;
    busybox_context(dir.path(), "ENV OFC_MARK=changed\n");
    let changed = Sandbox::start(&ws, &settings(dir.path())).await.unwrap();
    assert_ne!(changed.image(), first_image);
    let mark = changed
        .exec("echo $OFC_MARK", Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(mark, "changed");
    changed.stop().await;
}

#[tokio::test]
async fn a_floor_start_removes_sandboxes_whose_floor_process_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    busybox_context(dir.path(), "");
    let ws = workstation("{type: sandbox, name: reap, dockerfile: ./sandbox}");
    let base = Sandbox::start(&ws, &settings(dir.path())).await.unwrap();
    // A container as a killed floor leaves it: the sandbox label, the pid of a dead process.
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let name = format!("ofc-sandbox-orphan-{}", std::process::id());
    let ok = std::process::Command::new(podman())
        .args([
            "run",
            "-d",
            "--rm",
            "--name",
            &name,
            "--label",
            "ofc.sandbox=orphan",
            "--label",
            &format!("ofc.pid={dead_pid}"),
            "--entrypoint",
            "/bin/sh",
            base.image(),
            "-c",
            "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done",
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    assert!(container_exists(&name));
    let next = Sandbox::start(&ws, &settings(dir.path())).await.unwrap();
    assert!(!container_exists(&name), "the orphan was not removed");
    // A live floor's sandbox is left alone.
    assert!(container_exists(base.container()));
    next.stop().await;
    base.stop().await;
}

#[tokio::test]
async fn a_missing_dockerfile_or_a_bad_image_is_a_clear_error_naming_the_workstation() {
    podman();
    let dir = tempfile::tempdir().unwrap();
    let ws = workstation("{type: sandbox, name: nofile, dockerfile: ./nope/Dockerfile}");
    let err = Furniture::workstation(&ws, &settings(dir.path()))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("nofile") && err.contains("does not exist"),
        "{err}"
    );
    let ctx = dir.path().join("broken");
    std::fs::create_dir_all(&ctx).unwrap();
    std::fs::write(ctx.join("Dockerfile"), "FROM scratch\nCOPY missing /x\n").unwrap();
    let ws = workstation("{type: sandbox, name: broken, dockerfile: ./broken}");
    let err = Furniture::workstation(&ws, &settings(dir.path()))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("broken") && err.contains("failed"), "{err}");
}
