//! Helpers for the `ofc run` end-to-end tests: process agents (`ofc-test-agent`) in
//! blueprints, process checks, an interactive run read line by line ([`Interactive`]), and a
//! real terminal (tmux, on a private socket).

use std::cell::RefCell;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::Value;

use super::{Ofc, Run, bin};

/// A unique tag for the agents of one test, so that process checks see only them.
pub fn tag(test: &str) -> String {
    format!("{test}{}", std::process::id())
}

/// Writes `<dir>/<name>.agent.yaml`: an `ofc-test-agent` process agent.
pub fn process_agent(dir: &Path, name: &str, extra: &[&str]) {
    let mut args = vec!["--name".to_owned(), name.to_owned()];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    std::fs::write(
        dir.join(format!("{name}.agent.yaml")),
        format!(
            "id: \"@{name}\"\ncommand: {:?}\nargs: [{}]\n",
            bin("ofc-test-agent").display().to_string(),
            args.join(", ")
        ),
    )
    .unwrap();
}

pub fn blueprint(dir: &Path, text: &str) {
    std::fs::write(dir.join("blueprint.yaml"), text).unwrap();
}

pub fn run_in(ofc: &Ofc, dir: &Path, args: &[&str]) -> Run {
    Ofc::finish(ofc.cmd().current_dir(dir).args(args))
}

/// Runs `ofc --json ARGS…` in `dir`, panics unless it exits 0; returns stdout as JSON.
pub fn json_in(ofc: &Ofc, dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let r = run_in(ofc, dir, &all);
    r.assert_code(0);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

/// The session id an `ofc run` announced on stderr.
pub fn announced(r: &Run) -> String {
    let at = r
        .stderr
        .find("session ")
        .expect("the run names its session");
    r.stderr[at + 8..at + 8 + 36].to_owned()
}

/// An interactive `ofc --json run ARGS…` (stdin held open) in a project, with `OFC_HOME` and
/// `NO_COLOR=1` and nothing else of `Ofc`'s settings; its stdout and stderr are read line by
/// line as they come, and every wait for a line is bounded (60 s unless [`Self::within`]).
pub struct Interactive {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Receiver<String>,
    err: Receiver<String>,
    /// The stderr lines read so far.
    said: RefCell<Vec<String>>,
    within: Duration,
}

/// A reader of `read`'s lines on a thread of its own, ended by the end of the stream.
fn lines_of(read: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(read).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    rx
}

impl Interactive {
    /// Starts `ofc --json run ARGS…` in `dir` with `OFC_HOME=home` and the variables of `env`.
    pub fn start(home: &Path, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Interactive {
        let mut child = Command::new(bin("ofc"))
            .args(["--json", "run"])
            .args(args)
            .current_dir(dir)
            .env("OFC_HOME", home)
            .envs(env.iter().copied())
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Interactive {
            out: lines_of(child.stdout.take().unwrap()),
            err: lines_of(child.stderr.take().unwrap()),
            stdin: child.stdin.take(),
            child,
            said: RefCell::default(),
            within: Duration::from_secs(60),
        }
    }

    /// How long each wait for a line may take.
    pub fn within(mut self, bound: Duration) -> Interactive {
        self.within = bound;
        self
    }

    /// The next line on stdout; panics, naming `what` was awaited, past the bound.
    pub fn next_line(&self, what: &str) -> String {
        self.out
            .recv_timeout(self.within)
            .unwrap_or_else(|_| panic!("no {what} from ofc run"))
    }

    /// Reads stdout up to the first line that contains `needle`; returns that line.
    pub fn wait_for(&self, needle: &str) -> String {
        Self::wait_on(&self.out, needle, self.within, |_| {})
    }

    /// Reads stderr up to the first line that contains `needle`; returns that line.
    pub fn wait_for_err(&self, needle: &str) -> String {
        Self::wait_on(&self.err, needle, self.within, |l| {
            self.said.borrow_mut().push(l.to_owned())
        })
    }

    fn wait_on(
        lines: &Receiver<String>,
        needle: &str,
        within: Duration,
        keep: impl Fn(&str),
    ) -> String {
        let mut passed = Vec::new();
        loop {
            let Ok(line) = lines.recv_timeout(within) else {
                panic!(
                    "no `{needle}` from ofc run; it said:\n{}",
                    passed.join("\n")
                );
            };
            keep(&line);
            if line.contains(needle) {
                return line;
            }
            passed.push(line);
        }
    }

    /// Waits for the `ready` event; returns the session it names.
    pub fn ready(&self) -> String {
        let ready: Value = serde_json::from_str(&self.wait_for("\"type\":\"ready\"")).unwrap();
        ready["session"]
            .as_str()
            .expect("the ready event names the session")
            .to_owned()
    }

    /// Types a line (a message or a command) on stdin.
    pub fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The process, its stdin still open (its output is read on as before): for a test that
    /// kills it and looks at what it leaves behind.
    pub fn into_child(mut self) -> Child {
        self.child.stdin = self.stdin.take();
        self.child
    }

    /// Kills the run (no goodbye) and waits for it.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Ends the input and waits for the run to exit; answers its exit code (-1: killed by a
    /// signal) and all it said on stderr.
    pub fn end(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        // Up to the end of the stream (a process the run left behind may hold it open: then
        // what came within the bound).
        let mut said = self.said.take();
        while let Ok(line) = self.err.recv_timeout(self.within) {
            said.push(line);
        }
        (status.code().unwrap_or(-1), said.join("\n"))
    }
}

/// Pids of live processes whose command line contains `needle`.
pub fn processes_with(needle: &str) -> Vec<u32> {
    let out = Command::new("ps")
        .args(["-e", "-o", "pid=,stat=,args="])
        .output()
        .expect("ps");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(needle) && !l.contains("ps -e"))
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let pid = parts.next()?.parse().ok()?;
            // Zombies are dead; they only wait for their parent to read their status.
            let stat = parts.next()?;
            (!stat.starts_with('Z')).then_some(pid)
        })
        .collect()
}

/// A tmux server of its own (a private socket) running one session; killed on drop.
pub struct Tmux {
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    /// Starts `command` in a new 120x40 session named `t`. tmux comes from the project's own
    /// peer script, which installs it if needed and fails when it cannot.
    pub fn start(command: &str) -> Tmux {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/peers/tmux");
        let out = Command::new(&script).output().expect("scripts/peers/tmux");
        assert!(
            out.status.success(),
            "tmux is required: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dir = tempfile::tempdir().unwrap();
        let tmux = Tmux {
            socket: dir.path().join("sock"),
            _dir: dir,
        };
        tmux.ok(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "120",
            "-y",
            "40",
            command,
        ]);
        tmux
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn alive(&self) -> bool {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["has-session", "-t", "t"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Types a line and presses Enter.
    pub fn type_line(&self, text: &str) {
        self.ok(&["send-keys", "-t", "t", "-l", text]);
        self.ok(&["send-keys", "-t", "t", "Enter"]);
    }

    pub fn screen(&self) -> String {
        self.ok(&["capture-pane", "-p", "-t", "t", "-S", "-200"])
    }

    /// The screen with its colours and attributes as escape sequences.
    pub fn screen_with_escapes(&self) -> String {
        self.ok(&["capture-pane", "-p", "-e", "-t", "t"])
    }

    /// Whether the pane is on the alternate screen (a full-screen program runs).
    pub fn alternate_on(&self) -> bool {
        self.ok(&["display-message", "-p", "-t", "t", "#{alternate_on}"])
            .trim()
            == "1"
    }

    /// Waits (bounded) until the screen shows `needle` `count` times.
    pub fn wait_for(&self, needle: &str, count: usize) -> String {
        let start = std::time::Instant::now();
        loop {
            let screen = self.screen();
            if screen.matches(needle).count() >= count {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the terminal never showed {needle:?} ({count}×):\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
    }
}
