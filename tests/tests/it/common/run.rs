//! Helpers for the `ofc run` end-to-end tests: process agents (`ofc-test-agent`) in
//! blueprints, process checks, and a real terminal (tmux, on a private socket).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{Ofc, bin};

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

pub fn run_in(ofc: &Ofc, dir: &Path, args: &[&str]) -> super::Run {
    Ofc::finish(ofc.cmd().current_dir(dir).args(args))
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
