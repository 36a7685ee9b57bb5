//! No orphans: a small watchdog process that stops every agent `ofc run` started (and every
//! installer a pull runs, [`output_supervised`]) when `ofc` ends, however it ends. It sits
//! below `pull` and `run`, which both start processes.
//!
//! A process killed with SIGKILL runs no code, and ofc forbids `unsafe` (so no
//! `prctl(PR_SET_PDEATHSIG)`, which is Linux-only anyway). Instead `ofc run` starts
//! `ofc __supervise` (itself, re-executed) with a pipe on its standard input and writes
//! `+PGID` for every agent process group it starts, `-PGID` for one it stopped itself. The
//! kernel closes the pipe when `ofc` exits for any reason; the supervisor then reads end of
//! file, sends SIGTERM to every group still listed, SIGKILL to those alive after a grace
//! period, and exits. It runs in a process group of its own, so the terminal's Ctrl-C (sent
//! to `ofc`'s group) does not reach it. This works the same on Linux and macOS.
//!
//! A process that leaves its group (`setsid`, a daemonising child) is out of reach of group
//! signals, so every process `ofc run` starts carries the run's id in its environment
//! ([`RUN_MARK`]), which its children inherit: the supervisor also stops every process so
//! marked (Linux: read from `/proc/<pid>/environ`). And when `ofc` and its supervisor are
//! killed together, the next `ofc run` in the project finds the last run unfinished in
//! `run.json` and stops what it left: marked processes, and containers labelled with its pid
//! ([`clean_after_unfinished_run`]).

use std::io::{BufRead, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// The hidden subcommand.
pub const SUBCOMMAND: &str = "__supervise";

/// The most groups one supervisor tracks (a floor has at most 64 agents).
const MAX_GROUPS: usize = 1024;

/// The environment variable naming the run a process belongs to (inherited by its children).
pub const RUN_MARK: &str = "OFC_RUN_ID";

/// `ofc run`'s side: where agent process groups are registered.
#[derive(Debug, Clone)]
pub struct Supervisor {
    pipe: Arc<Mutex<Option<ChildStdin>>>,
    _child: Arc<Mutex<Child>>,
}

impl Supervisor {
    /// Starts `ofc __supervise`.
    pub fn start() -> Result<Self> {
        let exe = std::env::current_exe().context("cannot find the ofc executable")?;
        let mut cmd = Command::new(exe);
        cmd.arg(SUBCOMMAND)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let mut child = cmd.spawn().context("cannot start the process supervisor")?;
        let pipe = child.stdin.take();
        Ok(Self {
            pipe: Arc::new(Mutex::new(pipe)),
            _child: Arc::new(Mutex::new(child)),
        })
    }

    /// Registers a process group to stop if `ofc` dies.
    pub fn watch(&self, pgid: u32) {
        self.send(&format!("+{pgid}\n"));
    }

    /// Registers a container (run by the engine `program`) to remove if `ofc` dies.
    pub fn watch_container(&self, program: &std::path::Path, name: &str) {
        if let Some(p) = program.to_str() {
            self.send(&format!("C{name}\t{p}\n"));
        }
    }

    /// Forgets a group `ofc` stopped itself (its id may be reused).
    pub fn forget(&self, pgid: u32) {
        self.send(&format!("-{pgid}\n"));
    }

    /// Names the run whose marked processes ([`RUN_MARK`]) to stop when `ofc` dies.
    pub fn mark_run(&self, run_id: &str) {
        if run_id_ok(run_id) {
            self.send(&format!("R{run_id}\n"));
        }
    }

    fn send(&self, line: &str) {
        if let Ok(mut pipe) = self.pipe.lock()
            && let Some(p) = pipe.as_mut()
            && (p.write_all(line.as_bytes()).is_err() || p.flush().is_err())
        {
            // The supervisor is gone; nothing more can be done from here.
            *pipe = None;
        }
    }

    /// Ends supervision cleanly: closing the pipe makes the supervisor stop what is left
    /// and exit.
    pub fn finish(&self) {
        if let Ok(mut pipe) = self.pipe.lock() {
            pipe.take();
        }
    }
}

/// `ofc __supervise`: reads `+PGID`/`-PGID` lines (and `CNAME\tENGINE` for containers) until
/// end of file, then stops every group still registered and removes every container (a
/// container `ofc` already removed is not there any more; removing it again does nothing).
pub fn main() -> std::process::ExitCode {
    let mut groups: Vec<u32> = Vec::new();
    let mut containers: Vec<(String, String)> = Vec::new();
    let mut runs: Vec<String> = Vec::new();
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if let Some(run) = line.trim().strip_prefix('R') {
            if run_id_ok(run) && runs.len() < MAX_GROUPS && !runs.iter().any(|r| r == run) {
                runs.push(run.to_owned());
            }
            continue;
        }
        if let Some(c) = container_line(&line) {
            if containers.len() < MAX_GROUPS && !containers.contains(&c) {
                containers.push(c);
            }
            continue;
        }
        apply(&mut groups, &line);
    }
    stop_groups(&groups, runtime::agent::STOP_GRACE * 2);
    // What left the groups (setsid) but carries the run's mark.
    for run in &runs {
        stop_marked(run, runtime::agent::STOP_GRACE * 2);
    }
    for (name, engine) in &containers {
        let _ = Command::new(engine)
            .args(["rm", "-f", name])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    std::process::ExitCode::SUCCESS
}

/// A run id as `ofc run` makes them (`20261127T073000Z-0a1b2c3d`): letters, digits, `-`.
fn run_id_ok(run: &str) -> bool {
    !run.is_empty() && run.len() <= 64 && run.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// The processes (other than this one) whose environment carries `RUN_MARK=run`. Linux only
/// (`/proc/<pid>/environ`); none elsewhere.
pub fn marked_processes(run: &str) -> Vec<u32> {
    let mut found = Vec::new();
    if !cfg!(target_os = "linux") || !run_id_ok(run) {
        return found;
    }
    let needle = format!("{RUN_MARK}={run}");
    let me = std::process::id();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        // Another user's processes (and kernel threads) are unreadable: not ours anyway.
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if environ
            .split(|b| *b == 0)
            .any(|var| var == needle.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

/// SIGTERM to every process marked with `run`, then SIGKILL to those alive after `grace`.
/// Answers how many there were.
#[cfg(unix)]
pub fn stop_marked(run: &str, grace: Duration) -> usize {
    use runtime::agent::{process_alive, signal_process};
    let pids = marked_processes(run);
    for pid in &pids {
        signal_process(*pid, false);
    }
    let alive = |pid: u32| process_alive(pid) && marked_processes(run).contains(&pid);
    let started = Instant::now();
    while started.elapsed() < grace && pids.iter().any(|p| alive(*p)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in marked_processes(run) {
        signal_process(pid, true);
    }
    pids.len()
}

#[cfg(not(unix))]
pub fn stop_marked(_run: &str, _grace: Duration) -> usize {
    0
}

/// When the last run of the project (`.ofc/run.json` in `root`) did not end (`ofc` and its
/// supervisor killed together), stops what it left: processes marked with its id and
/// containers labelled with its pid (`ofc.pid`). Called with the project lock held, so that
/// run is over. Answers what was stopped, for the user.
pub fn clean_after_unfinished_run(root: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("run.json")).ok()?;
    let state: serde_json::Value = serde_json::from_str(&text).ok()?;
    if state.get("state").and_then(|s| s.as_str()) == Some("ended") {
        return None;
    }
    let run = state.get("run").and_then(|r| r.as_str())?;
    let processes = stop_marked(run, runtime::agent::STOP_GRACE * 2);
    let mut containers = 0;
    if let (Some(pid), Ok(engine)) = (
        state.get("pid").and_then(serde_json::Value::as_u64),
        crate::container::find_engine(),
    ) && !std::path::Path::new(&format!("/proc/{pid}")).exists()
    {
        let filter = format!("label=ofc.pid={pid}");
        if let Ok(out) = Command::new(&engine.program)
            .args(["ps", "-aq", "--filter", &filter])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
        {
            for id in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let removed = Command::new(&engine.program)
                    .args(["rm", "-f", id])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                containers += usize::from(removed);
            }
        }
    }
    (processes + containers > 0).then(|| {
        format!(
            "the last run here ({run}) did not end cleanly: stopped {processes} process(es) and \
             removed {containers} container(s) it left"
        )
    })
}

/// A `Cofc-NAME\tENGINE` line: a container named by ofc (`ofc-` and letters, digits, `-`) and
/// the absolute path of the engine that runs it.
fn container_line(line: &str) -> Option<(String, String)> {
    let (name, engine) = line
        .trim_end_matches(['\r', '\n'])
        .strip_prefix('C')?
        .split_once('\t')?;
    let name_ok = name.starts_with("ofc-")
        && name.len() <= 128
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let engine_ok = engine.starts_with('/') && !engine.chars().any(char::is_control);
    (name_ok && engine_ok).then(|| (name.to_string(), engine.to_string()))
}

/// Applies one `+PGID` / `-PGID` line; anything else is ignored.
fn apply(groups: &mut Vec<u32>, line: &str) {
    let line = line.trim();
    let Some(sign) = line.chars().next() else {
        return;
    };
    let Ok(pgid) = line[sign.len_utf8()..].parse::<u32>() else {
        return;
    };
    // 0 and 1 would signal our own group or init's, and ids above i32::MAX are negative
    // pids to kill(2): never valid agent groups.
    if pgid <= 1 || i32::try_from(pgid).is_err() {
        return;
    }
    match sign {
        '+' if groups.len() < MAX_GROUPS && !groups.contains(&pgid) => groups.push(pgid),
        '-' => groups.retain(|g| *g != pgid),
        _ => {}
    }
}

/// SIGTERM to every group, then SIGKILL to those still alive after `grace`.
#[cfg(unix)]
pub fn stop_groups(groups: &[u32], grace: Duration) {
    use runtime::agent::{group_alive, signal_group};
    for g in groups {
        signal_group(*g, false);
    }
    let started = Instant::now();
    while started.elapsed() < grace && groups.iter().any(|g| group_alive(*g)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for g in groups {
        signal_group(*g, true);
    }
}

#[cfg(not(unix))]
pub fn stop_groups(_groups: &[u32], _grace: Duration) {
    let _ = Instant::now();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_lines_change_the_groups() {
        let mut g = Vec::new();
        for line in [
            "+100",
            "+100",
            " +200 ",
            "+0",
            "+1",
            "-",
            "",
            "+",
            "+-5",
            "+4294967295",
            "+abc",
            "*300",
            "é12",
            "+12345678901234567890",
            "-100",
        ] {
            apply(&mut g, line);
        }
        assert_eq!(g, vec![200]);
        for i in 0..(MAX_GROUPS as u32 + 10) {
            apply(&mut g, &format!("+{}", 1000 + i));
        }
        assert_eq!(g.len(), MAX_GROUPS, "bounded");
    }

    #[test]
    fn container_lines_name_ofc_containers_and_absolute_engines() {
        assert_eq!(
            container_line("Cofc-echo-0a1b\t/usr/bin/podman"),
            Some(("ofc-echo-0a1b".into(), "/usr/bin/podman".into()))
        );
        for bad in [
            "Cecho\t/usr/bin/podman",
            "Cofc-a b\t/usr/bin/podman",
            "Cofc-a\tpodman",
            "Cofc-a",
            "+100",
            "Cofc--rm\t/usr/bin/podman\u{7}",
        ] {
            assert_eq!(container_line(bad), None, "{bad:?}");
        }
    }
}

/// Runs `cmd` (stdout and stderr captured) to completion within `limit`, in a process group of
/// its own watched by a [`Supervisor`]: `ofc` killed with SIGKILL runs no code, and without the
/// supervisor a tool it started (pip, uv, npm) would go on, orphaned, writing into a staging
/// dir that `ofc gc` takes to be abandoned. `Ok(None)`: the limit passed (the tool is killed).
pub async fn output_supervised(
    cmd: &mut tokio::process::Command,
    limit: Duration,
) -> Result<Option<std::io::Result<std::process::Output>>, SpawnError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let supervisor = Supervisor::start().map_err(SpawnError::Supervisor)?;
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            supervisor.finish();
            return Err(SpawnError::Spawn(e));
        }
    };
    let pid = child.id();
    if let Some(pid) = pid {
        supervisor.watch(pid);
    }
    let out = tokio::time::timeout(limit, child.wait_with_output()).await;
    if let (Some(pid), Ok(Ok(_))) = (pid, &out) {
        // It ended by itself; its group id may be reused.
        supervisor.forget(pid);
    }
    supervisor.finish();
    Ok(out.ok())
}

/// Why [`output_supervised`] could not start the command.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The supervisor process did not start.
    #[error("cannot start the supervisor: {0:#}")]
    Supervisor(anyhow::Error),
    /// The command did not start.
    #[error(transparent)]
    Spawn(std::io::Error),
}
