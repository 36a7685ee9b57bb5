//! `ofc floor serve`: a real server process, driven over HTTP.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn serve_creates_floors_and_writes_transcripts() {
    let logs = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ofc"))
        .args([
            "floor",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--json",
            "--logs",
        ])
        .arg(logs.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    // The first line says where it listens; it ends early if the server fails to start.
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let started: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    let url = started["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let server_token = started["server_token"].as_str().unwrap().to_owned();
    assert!(server_token.starts_with("ofc_floorsrv_"), "{started}");

    let client = reqwest::Client::new();
    // Without the server token no floor is created.
    let refused = client
        .post(format!("{url}/floors"))
        .json(&json!({"name": "cli"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), reqwest::StatusCode::UNAUTHORIZED);
    let created: Value = client
        .post(format!("{url}/floors"))
        .bearer_auth(&server_token)
        .json(&json!({"name": "cli"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let floor = created["floor_id"].as_str().unwrap();
    let token = created["join_token"].as_str().unwrap();
    let state = client
        .get(format!("{url}/floors/{floor}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(state.status(), reqwest::StatusCode::OK);
    let denied = client
        .get(format!("{url}/floors/{floor}"))
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), reqwest::StatusCode::UNAUTHORIZED);
    // On loopback, a request addressed to another host name (DNS rebinding) is refused.
    let rebound = client
        .get(format!("{url}/floors/{floor}"))
        .bearer_auth(token)
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), reqwest::StatusCode::MISDIRECTED_REQUEST);

    let transcript = std::fs::read_to_string(logs.path().join(format!("{floor}.jsonl"))).unwrap();
    let first: Value = serde_json::from_str(transcript.lines().next().unwrap()).unwrap();
    assert_eq!(first["kind"], "floor");
    assert_eq!(first["floor_id"], floor);
    drop(server);
}

#[test]
fn serve_refuses_an_address_it_cannot_listen_on() {
    let output = Command::new(env!("CARGO_BIN_EXE_ofc"))
        .args(["floor", "serve", "--listen", "not-an-address"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot listen on not-an-address"),
        "{stderr}"
    );
}

/// `ofc floor serve` made its default `.ofc/logs` 0755 (transcripts are private
/// conversations); it is 0700 now, `.ofc` too, as `ofc run` makes them.
#[test]
fn serve_keeps_its_transcripts_private() {
    use std::os::unix::fs::PermissionsExt;
    let project = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ofc"))
        .args(["floor", "serve", "--listen", "127.0.0.1:0", "--json"])
        .current_dir(project.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    assert!(line.contains("url"), "{line}");
    for dir in [".ofc", ".ofc/logs"] {
        let mode = std::fs::metadata(project.path().join(dir))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o700, "{dir}");
    }
    drop(server);
}
