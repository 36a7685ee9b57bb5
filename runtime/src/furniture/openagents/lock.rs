//! `.openagents/agent.lock`, the OpenAgents loop's lock (seed 002 §4.2, and the loop's
//! `agent-lock.ts`): a file holding `<pid>\n<ISO timestamp>[\n<session id>]`, its holder
//! alive while the pid is. The loop takes it for its whole run; the board takes it for each
//! change of `tasks.jsonl` only. The board creates it exclusively (`O_CREAT|O_EXCL`, so of two
//! takers one wins — the loop checks and then writes), waits while a live process holds it,
//! and takes over a lock whose process is gone (as the loop does), removing it only if it is
//! still the very file it found stale.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use index_schema::openagents::LOCK_FILE;

/// What ofc writes as the lock's session id.
pub const SESSION: &str = "ofc-taskboard";

/// The lock, held; removed when dropped.
#[derive(Debug)]
pub struct AgentLock {
    path: PathBuf,
    #[cfg(unix)]
    ino: u64,
}

/// Who holds the lock, as its file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The process.
    pub pid: Option<u32>,
    /// Since when, as written.
    pub since: String,
    /// Its session id, when it wrote one.
    pub session: Option<String>,
}

impl Holder {
    fn parse(text: &str) -> Holder {
        let mut lines = text.trim().lines();
        let pid = lines.next().and_then(|l| l.trim().parse().ok());
        let since = lines.next().unwrap_or("").trim().to_owned();
        let session = lines
            .next()
            .map(|l| l.trim().to_owned())
            .filter(|s| !s.is_empty());
        Holder {
            pid,
            since,
            session,
        }
    }
}

fn alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, test_kill_process};
        i32::try_from(pid)
            .ok()
            .and_then(Pid::from_raw)
            .is_some_and(|p| test_kill_process(p).is_ok())
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// A lock file without a readable pid is taken over once it is this old.
const UNREADABLE_STALE: Duration = Duration::from_secs(60);

impl AgentLock {
    /// Takes the lock in the `.openagents` directory `dir`, waiting up to `wait` for a live
    /// holder. The error names the holder.
    pub fn acquire(dir: &Path, wait: Duration) -> io::Result<AgentLock> {
        let path = dir.join(LOCK_FILE);
        let start = Instant::now();
        loop {
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            match options.open(&path) {
                Ok(mut file) => {
                    let now = crate::switchboard::now_iso();
                    file.write_all(format!("{}\n{now}\n{SESSION}", std::process::id()).as_bytes())?;
                    #[cfg(unix)]
                    let ino = {
                        use std::os::unix::fs::MetadataExt;
                        file.metadata()?.ino()
                    };
                    return Ok(AgentLock {
                        path,
                        #[cfg(unix)]
                        ino,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            let holder = match read_holder(&path)? {
                Some((holder, ino, age)) => {
                    let stale = match holder.pid {
                        Some(pid) => !alive(pid),
                        None => age > UNREADABLE_STALE,
                    };
                    if stale {
                        remove_if_same(&path, ino);
                        continue;
                    }
                    holder
                }
                // Removed meanwhile: try again at once.
                None => continue,
            };
            if start.elapsed() >= wait {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!(
                        "{} is held by pid {} since {}{} (an OpenAgents loop holds it for its whole run)",
                        path.display(),
                        holder.pid.map_or("?".to_owned(), |p| p.to_string()),
                        holder.since,
                        holder
                            .session
                            .map(|s| format!(", session {s}"))
                            .unwrap_or_default()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The lock file's holder, its inode and age; `None` when it is gone.
fn read_holder(path: &Path) -> io::Result<Option<(Holder, u64, Duration)>> {
    let mut file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    let mut text = String::new();
    let _ = (&mut file).take(4096).read_to_string(&mut text);
    let age = meta
        .modified()
        .ok()
        .and_then(|m| std::time::SystemTime::now().duration_since(m).ok())
        .unwrap_or_default();
    #[cfg(unix)]
    let ino = {
        use std::os::unix::fs::MetadataExt;
        meta.ino()
    };
    #[cfg(not(unix))]
    let ino = 0;
    Ok(Some((Holder::parse(&text), ino, age)))
}

/// Removes the lock file if it is still the one (inode) found stale, so that a lock another
/// taker made meanwhile is not removed.
fn remove_if_same(path: &Path, ino: u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if fs::symlink_metadata(path).is_ok_and(|m| m.ino() == ino) {
            let _ = fs::remove_file(path);
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (path, ino);
    }
}

impl Drop for AgentLock {
    fn drop(&mut self) {
        #[cfg(unix)]
        remove_if_same(&self.path, self.ino);
        #[cfg(not(unix))]
        let _ = fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_holder_blocks_and_a_dead_one_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let held = AgentLock::acquire(dir.path(), Duration::from_millis(10)).unwrap();
        let text = fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        let holder = Holder::parse(&text);
        assert_eq!(holder.pid, Some(std::process::id()));
        assert_eq!(holder.session.as_deref(), Some(SESSION));
        let e = AgentLock::acquire(dir.path(), Duration::from_millis(60)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert!(
            e.to_string()
                .contains(&format!("pid {}", std::process::id())),
            "{e}"
        );
        drop(held);
        assert!(!dir.path().join(LOCK_FILE).exists());
        // A loop that died holding it: a pid no process has.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        fs::write(
            dir.path().join(LOCK_FILE),
            format!("{dead}\n2025-01-01T00:00:00.000Z"),
        )
        .unwrap();
        let taken = AgentLock::acquire(dir.path(), Duration::from_millis(10)).unwrap();
        drop(taken);
    }
}
