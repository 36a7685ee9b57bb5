//! The shared end-to-end harness: the real `ofc` binary against the real `ofc-hub`, both run as
//! child processes. The hub comes from the test kit (`ofc_test_kit::TestHub::process`).
//!
//! ```text
//! let hub = TestHub::process(ProcessOptions::default()); // ofc-hub serve on 127.0.0.1:<ephemeral>
//! let alice = hub.publisher("alice", &["ofc-examples"]); // user, namespaces, login, key
//! let names = alice.publish_examples();              // every folder of examples/agents
//! hub.wait_for_search("q=data", |hits| !hits.is_empty());
//! let home = tempfile::tempdir().unwrap();
//! let out = Ofc::new(home.path(), &hub.url).ok(&["search", "data analysis"]);
//! ```
//!
//! - [`bin`] (from the kit) finds a binary next to the test executable (`target/<profile>/`);
//!   `cargo nextest run --workspace` builds them, otherwise run
//!   `cargo build -p hub-server -p ofc-pkg --bins`.
//! - [`Publishers::publisher`]: a user with namespaces, logged in with `ofc` from a fresh
//!   `OFC_HOME`, with a registered key (`ofc keygen`, `ofc key register`).
//! - [`Ofc`] runs `ofc` with `OFC_HOME`, `OFC_HUB`, `NO_COLOR=1`, `COLUMNS=100`, without
//!   `OFC_TOKEN`, and with a time limit, so nothing of the machine's own setup leaks in.
//! - [`redact`] makes output stable for snapshots (hub URL, digests, key ids, times, sizes).
//! - [`run`]: for the `ofc run` tests, process agents in blueprints, process checks, an
//!   interactive run read line by line ([`run::Interactive`]) and a real terminal
//!   ([`run::Tmux`]).
//!
//! Every wait is bounded; a timeout panics with what the hub logged.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use ofc_test_kit::HubProcess;
pub use ofc_test_kit::{COMMAND_BOUND, bin};
use serde_json::Value;

pub mod run;

/// The repository's example agents (`examples/agents`).
pub fn examples_agents() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/agents")
}

/// The example agent folders, sorted.
pub fn example_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(examples_agents())
        .expect("examples/agents")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// The `ofc`-side publisher fixture of a [`HubProcess`].
pub trait Publishers {
    /// A user `user` (with its own namespace) who also owns `namespaces`, logged in from a fresh
    /// `OFC_HOME`, with a signing key (`default`) registered for every one of its namespaces.
    fn publisher(&self, user: &str, namespaces: &[&str]) -> Publisher;
}

impl Publishers for HubProcess {
    fn publisher(&self, user: &str, namespaces: &[&str]) -> Publisher {
        let token = self.create_user(user);
        for ns in namespaces {
            self.create_namespace(ns, user);
        }
        let home = tempfile::tempdir().unwrap();
        let ofc = Ofc::new(home.path(), &self.url);
        ofc.cmd()
            .args(["login", "--token-stdin"])
            .write_stdin(token.clone())
            .assert()
            .success();
        ofc.ok(&["keygen"]);
        for ns in std::iter::once(&user).chain(namespaces) {
            ofc.ok(&["key", "register", "--namespace", ns]);
        }
        Publisher {
            user: user.to_string(),
            token,
            namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
            ofc,
            _home: home,
        }
    }
}

/// A user who can publish; see [`Publishers::publisher`].
#[derive(Debug)]
pub struct Publisher {
    /// User name (also a namespace).
    pub user: String,
    /// The user's API token (also stored in the publisher's credentials file).
    pub token: String,
    /// The extra namespaces the user owns.
    pub namespaces: Vec<String>,
    /// `ofc` logged in as this user.
    pub ofc: Ofc,
    _home: tempfile::TempDir,
}

impl Publisher {
    /// Publishes every example agent as `ofc-examples/<folder>` (AgentCards, which name no
    /// publisher or version, get `--name ofc-examples/<folder> --version 1.0.0`). Needs the
    /// `ofc-examples` namespace. Returns the names, sorted.
    pub fn publish_examples(&self) -> Vec<String> {
        assert!(
            self.namespaces.iter().any(|n| n == "ofc-examples"),
            "publish_examples needs a publisher of the `ofc-examples` namespace"
        );
        let mut names = Vec::new();
        for dir in example_dirs() {
            let folder = dir.file_name().unwrap().to_str().unwrap().to_string();
            let name = format!("ofc-examples/{folder}");
            let mut c = self.ofc.cmd();
            c.arg("publish").arg(&dir);
            if !dir.join("agent.yaml").exists() {
                c.args(["--name", &name, "--version", "1.0.0"]);
            }
            let out = c.output().unwrap();
            assert!(
                out.status.success(),
                "publishing {}: {}",
                dir.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            names.push(name);
        }
        names
    }
}

/// `ofc` for one `OFC_HOME` and hub.
#[derive(Debug, Clone)]
pub struct Ofc {
    home: PathBuf,
    hub_url: String,
}

/// What one `ofc` run gave.
#[derive(Debug)]
pub struct Run {
    /// Exit code (`None`: killed by a signal or the time limit).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Asserts the exit code, showing stdout and stderr when it differs.
    #[track_caller]
    pub fn assert_code(&self, code: i32) {
        assert_eq!(
            self.code,
            Some(code),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
    }
}

impl Ofc {
    /// `ofc` with `OFC_HOME=home` and `OFC_HUB=hub_url`.
    pub fn new(home: &Path, hub_url: &str) -> Ofc {
        Ofc {
            home: home.to_path_buf(),
            hub_url: hub_url.to_string(),
        }
    }

    /// The `OFC_HOME`.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The `OFC_HUB`.
    pub fn hub_url(&self) -> &str {
        &self.hub_url
    }

    /// A command to add arguments to: `OFC_HOME`, `OFC_HUB`, `NO_COLOR=1`, `COLUMNS=100`, no
    /// `OFC_TOKEN`, stdin empty unless written, and a time limit.
    pub fn cmd(&self) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::new(bin("ofc"));
        c.env("OFC_HOME", &self.home)
            .env("OFC_HUB", &self.hub_url)
            .env("NO_COLOR", "1")
            .env("COLUMNS", "100")
            .env_remove("OFC_TOKEN")
            .env_remove("RUST_LOG")
            .timeout(COMMAND_BOUND);
        c
    }

    /// Runs `ofc ARGS…`, whatever the outcome.
    pub fn run(&self, args: &[&str]) -> Run {
        Self::finish(self.cmd().args(args))
    }

    /// Runs a prepared command, whatever the outcome.
    pub fn finish(c: &mut assert_cmd::Command) -> Run {
        let out = c.output().expect("run ofc");
        Run {
            code: out.status.code(),
            stdout: String::from_utf8(out.stdout).expect("UTF-8 on stdout"),
            stderr: String::from_utf8(out.stderr).expect("UTF-8 on stderr"),
        }
    }

    /// Runs `ofc ARGS…`, panics unless it exits 0; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let r = self.run(args);
        assert_eq!(
            r.code,
            Some(0),
            "ofc {args:?} failed\nstdout:\n{}\nstderr:\n{}",
            r.stdout,
            r.stderr
        );
        r.stdout
    }

    /// Runs `ofc --json ARGS…`, panics unless it exits 0; returns stdout as JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.ok(&all);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("ofc {args:?}: {e}\n{out}"))
    }

    /// Runs `ofc ARGS…`, panics unless it exits with `code`; returns the run.
    pub fn fails(&self, code: i32, args: &[&str]) -> Run {
        let r = self.run(args);
        assert_eq!(
            r.code,
            Some(code),
            "ofc {args:?}: expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            r.stdout,
            r.stderr
        );
        r
    }
}

/// Output made stable for snapshots: the hub's URL becomes `[HUB]` (and any other loopback
/// `http://127.0.0.1:PORT` becomes `http://127.0.0.1:[PORT]`), each `(from, to)` of `extra` is
/// replaced (temp paths), `sha256:<hex>` becomes `sha256:[digest]`, `(N bytes)` becomes
/// `([size] bytes)`, and — keeping their width, so tables stay aligned — 32-hex-digit key ids
/// become `[key-id]-----…`, times `YYYY-MM-DD HH:MM UTC` the letters `YYYY-MM-DD HH:MM UTC`,
/// and the start of a run of weeks (`Monday YYYY-MM-DD`, as `ofc info`'s downloads per week
/// say it) `Monday YYYY-MM-DD`.
pub fn redact(text: &str, hub_url: &str, extra: &[(&str, &str)]) -> String {
    let mut s = text.to_string();
    for (from, to) in extra {
        s = s.replace(from, to);
    }
    if !hub_url.is_empty() {
        s = s.replace(hub_url, "[HUB]");
    }
    s = replace_runs(&s, "127.0.0.1:", |rest| {
        let n = rest.bytes().take_while(u8::is_ascii_digit).count();
        (n > 0).then(|| (n, "[PORT]".to_string()))
    });
    s = replace_runs(&s, "sha256:", |rest| {
        let n = rest.bytes().take_while(u8::is_ascii_hexdigit).count();
        (n == 64).then(|| (n, "[digest]".to_string()))
    });
    s = replace_words(
        &s,
        |w| {
            w.len() == 32
                && w.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        },
        &format!("{:-<32}", "[key-id]"),
    );
    s = replace_times(&s);
    s = replace_runs(&s, "Monday ", |rest| {
        let date = rest.get(..10)?;
        let fits = date.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
        fits.then(|| (10, "YYYY-MM-DD".to_string()))
    });
    replace_runs(&s, "(", |rest| {
        let n = rest.bytes().take_while(u8::is_ascii_digit).count();
        (n > 0 && rest[n..].starts_with(" bytes)")).then(|| (n, "[size]".to_string()))
    })
}

/// After each `marker`, `f(rest)` may replace the first `n` bytes of the rest.
fn replace_runs(s: &str, marker: &str, f: impl Fn(&str) -> Option<(usize, String)>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(marker) {
        let after = i + marker.len();
        out.push_str(&rest[..after]);
        rest = &rest[after..];
        if let Some((n, with)) = f(rest) {
            out.push_str(&with);
            rest = &rest[n..];
        }
    }
    out.push_str(rest);
    out
}

/// Replaces every alphanumeric word for which `is` holds.
fn replace_words(s: &str, is: impl Fn(&str) -> bool, with: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    for c in s.chars().chain(std::iter::once('\0')) {
        if c.is_ascii_alphanumeric() {
            word.push(c);
            continue;
        }
        if is(&word) {
            out.push_str(with);
        } else {
            out.push_str(&word);
        }
        word.clear();
        if c != '\0' {
            out.push(c);
        }
    }
    out
}

/// `2026-11-22 04:33 UTC` → `YYYY-MM-DD HH:MM UTC`.
fn replace_times(s: &str) -> String {
    const SHAPE: &[u8] = b"0000-00-00 00:00 UTC";
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let mut copied = 0;
    while i + SHAPE.len() <= b.len() {
        let fits = SHAPE.iter().zip(&b[i..]).all(|(want, got)| match want {
            b'0' => got.is_ascii_digit(),
            other => other == got,
        });
        if fits {
            out.push_str(&s[copied..i]);
            out.push_str("YYYY-MM-DD HH:MM UTC");
            i += SHAPE.len();
            copied = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[copied..]);
    out
}

#[test]
fn redaction_is_stable() {
    let text = "at http://127.0.0.1:4242 and http://127.0.0.1:9 \
                sha256:1b17f5d75e3a0af2031a68470212c52a01b53b443cb887294b977bbafc04c479 (1088 bytes) \
                key 218f3b70c96aecc5ee8e6d37c6f15b03 on 2026-11-22 04:33 UTC in /tmp/x \
                (weeks from Monday 2026-10-05, oldest first)";
    assert_eq!(
        redact(text, "http://127.0.0.1:4242", &[("/tmp/x", "[HOME]")]),
        "at [HUB] and http://127.0.0.1:[PORT] sha256:[digest] ([size] bytes) key \
         [key-id]------------------------ on YYYY-MM-DD HH:MM UTC in [HOME] \
         (weeks from Monday YYYY-MM-DD, oldest first)"
    );
}

/// A free loopback port (bound, then released for a child process to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts a pulled agent as `ofc run` does with a `process` start (`start` is the pull's JSON
/// `start`; OFC_PORT set), checks that `/ofc/info` names `id`, and returns its answer to one
/// respond call holding `message` from `@user`.
pub fn start_and_call(start: &Value, id: &str, message: &str) -> Value {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    assert_eq!(start["kind"], "process", "{start}");
    let port = free_port();
    let mut cmd = Command::new(start["program"].as_str().unwrap());
    for a in start["args"].as_array().unwrap() {
        cmd.arg(a.as_str().unwrap());
    }
    for kv in start["env"].as_array().unwrap() {
        cmd.env(kv[0].as_str().unwrap(), kv[1].as_str().unwrap());
    }
    let mut child = cmd
        .current_dir(start["cwd"].as_str().unwrap())
        .env("OFC_PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}/ofc");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let message = message.to_owned();
    let result = rt.block_on(async {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        let info: Value = loop {
            match client.get(format!("{base}/info")).send().await {
                Ok(r) if r.status().is_success() => break r.json().await.unwrap(),
                _ if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                other => panic!("the agent did not answer /ofc/info: {other:?}"),
            }
        };
        let reply: Value = client
            .post(format!("{base}/respond"))
            .header("OFC-Floor-Id", "floor-1")
            .json(&serde_json::json!({
                "floor_id": "floor-1",
                "messages": [{"id": "m1", "from": "@user", "content": message,
                              "timestamp": "2026-01-01T00:00:00Z"}]
            }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (info, reply)
    });
    let _ = child.kill();
    let _ = child.wait();
    let (info, reply) = result;
    assert_eq!(info["id"], id, "{info}");
    reply
}
