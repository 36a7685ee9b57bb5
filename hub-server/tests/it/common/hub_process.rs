//! The real `ofc-hub serve` binary as a child process, for tests that must kill it (SIGKILL)
//! and start it again on the same data.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the hub may take to start.
const START_BOUND: Duration = Duration::from_secs(180);

/// `ofc-hub` with `--data` (and `--database-url`), quiet logs and no brute-force limit (the
/// tests' clients are many and fast).
pub fn hub_command(data: &Path, database_url: Option<&str>) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ofc-hub"));
    c.arg("--data").arg(data);
    if let Some(u) = database_url {
        c.arg("--database-url").arg(u);
    }
    c.env("OFC_HUB_LOG", "warn,sqlx=error")
        .env("OFC_HUB__AUTH_FAILURE_LIMIT", "100000");
    c
}

/// A running `ofc-hub serve` child process.
pub struct HubProcess {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Every line the hub wrote to stderr so far.
    pub log: Arc<Mutex<Vec<String>>>,
}

impl HubProcess {
    /// Starts the hub on an ephemeral loopback port and waits until it listens.
    pub fn start(data: &Path, database_url: Option<&str>) -> HubProcess {
        let mut child = hub_command(data, database_url)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ofc-hub serve");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let l = log.clone();
        // Keeps draining stderr for the life of the process, so the hub never blocks on it.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("ofc-hub listening on ") {
                    let _ = tx.send(url.trim().to_string());
                }
                l.lock().unwrap().push(line);
            }
        });
        match rx.recv_timeout(START_BOUND) {
            Ok(url) => HubProcess { child, url, log },
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("ofc-hub did not start:\n{}", log.lock().unwrap().join("\n"));
            }
        }
    }

    /// SIGKILL: no shutdown handler, no flush, no graceful close.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL the hub");
        self.child.wait().expect("reap the hub");
    }
}

impl Drop for HubProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Registers `key` for `namespace` through the API, as a publisher would; panics unless 201.
pub async fn register_key(
    http: &reqwest::Client,
    hub_url: &str,
    token: &str,
    namespace: &str,
    key: &index_schema::envelope::SecretKey,
) {
    let r = http
        .post(format!("{hub_url}/api/v1/namespaces/{namespace}/keys"))
        .bearer_auth(token)
        .json(&serde_json::json!({ "public_key": key.public_key().to_string() }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201, "{}", r.text().await.unwrap());
}
