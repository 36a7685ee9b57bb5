//! `.switchboard/state.json`: the agents (`terminals`, `chatAgents`) and `teams` of the
//! workspace, changed only under the lock the seed's Switchboard takes with proper-lockfile:
//! the directory `state.json.lock` made with `mkdir` (atomic: one maker wins), removed on
//! release, and taken over when its time is more than [`STALE`] old (the holder died). ofc
//! holds it only for one read-change-write, far under that.

use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use rustix::fs::{AtFlags, FileType, Mode};
use serde_json::{Map, Value};

use super::workspace::{open_dir, open_file_at, stat_at, write_atomic_at};

/// The state file's name.
pub const FILE: &str = "state.json";
/// proper-lockfile's default: a lock older than this is abandoned.
pub const STALE: Duration = Duration::from_secs(10);
/// The largest `state.json` read.
pub const MAX_STATE_BYTES: u64 = 4 * 1024 * 1024;

/// The lock on `state.json`, released when dropped.
#[derive(Debug)]
pub struct StateLock {
    /// The directory the lock is in (a link put in its place later is not followed).
    dir: OwnedFd,
    name: String,
}

impl StateLock {
    /// Takes the lock of `file` (`<file>.lock/`), waiting up to `wait`.
    pub fn acquire(file: &Path, wait: Duration) -> io::Result<StateLock> {
        let parent = file.parent().unwrap_or(Path::new("."));
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| io::Error::other("the state file has no name"))?;
        Self::acquire_in(open_dir(parent)?, name, wait)
    }

    /// Takes the lock of the file `name` in `dir`.
    fn acquire_in(dir: OwnedFd, name: &str, wait: Duration) -> io::Result<StateLock> {
        let lock = format!("{name}.lock");
        let start = Instant::now();
        loop {
            match rustix::fs::mkdirat(dir.as_fd(), lock.as_str(), Mode::from_raw_mode(0o755)) {
                Ok(()) => return Ok(StateLock { dir, name: lock }),
                Err(rustix::io::Errno::EXIST) => {
                    let stale = stat_at(dir.as_fd(), &lock)
                        .ok()
                        .and_then(|m| {
                            SystemTime::UNIX_EPOCH
                                .checked_add(Duration::from_secs(m.st_mtime.max(0) as u64))
                        })
                        .and_then(|t| SystemTime::now().duration_since(t).ok())
                        .is_some_and(|age| age > STALE);
                    if stale {
                        // As proper-lockfile does: remove the abandoned lock, then compete
                        // for it again with mkdir.
                        let _ =
                            rustix::fs::unlinkat(dir.as_fd(), lock.as_str(), AtFlags::REMOVEDIR);
                        continue;
                    }
                    if start.elapsed() >= wait {
                        return Err(io::Error::new(
                            io::ErrorKind::WouldBlock,
                            format!(
                                "{lock} is held by another process (for less than {}s)",
                                STALE.as_secs()
                            ),
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl Drop for StateLock {
    fn drop(&mut self) {
        let _ = rustix::fs::unlinkat(self.dir.as_fd(), self.name.as_str(), AtFlags::REMOVEDIR);
    }
}

/// Changes `state.json` under its lock: `change` gets the state as an object (`{}` when the
/// file is missing) and the result is written back atomically. A file that is JSON but not an
/// object is replaced, and `Ok(true)` says so; one that cannot be read (too large, not JSON,
/// not a regular file) is an error and left as it is — other writers' agents are in it.
pub fn update(root: &Path, change: impl FnOnce(&mut Map<String, Value>)) -> io::Result<bool> {
    update_in(open_dir(root)?, change)
}

/// [`update`] in the directory `root` (the workspace's handle).
pub fn update_at(
    root: BorrowedFd<'_>,
    change: impl FnOnce(&mut Map<String, Value>),
) -> io::Result<bool> {
    update_in(root.try_clone_to_owned()?, change)
}

fn update_in(root: OwnedFd, change: impl FnOnce(&mut Map<String, Value>)) -> io::Result<bool> {
    if stat_at(root.as_fd(), FILE).is_err() {
        // proper-lockfile locks the file's real path, so the file must exist first.
        write_atomic_at(root.as_fd(), FILE, b"{}\n", 0o600)?;
    }
    let dir = root.try_clone()?;
    let _lock = StateLock::acquire_in(root, FILE, Duration::from_secs(5))?;
    let (mut state, replaced) = match read_at(dir.as_fd(), FILE) {
        Ok(Value::Object(map)) => (map, false),
        Ok(_) => (Map::new(), true),
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("{e}; it is left as it is, unchanged"),
            ));
        }
    };
    change(&mut state);
    let text = serde_json::to_string_pretty(&Value::Object(state)).map_err(io::Error::other)?;
    write_atomic_at(dir.as_fd(), FILE, text.as_bytes(), 0o600)?;
    Ok(replaced)
}

/// Reads `state.json` (bounded; never through a symbolic link).
pub fn read(file: &Path) -> io::Result<Value> {
    let parent = file.parent().unwrap_or(Path::new("."));
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::other("the state file has no name"))?;
    read_at(open_dir(parent)?.as_fd(), name)
}

fn read_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<Value> {
    let meta = stat_at(dir, name)?;
    if FileType::from_raw_mode(meta.st_mode) != FileType::RegularFile {
        return Err(io::Error::other("state.json is not a regular file"));
    }
    if meta.st_size as u64 > MAX_STATE_BYTES {
        return Err(io::Error::other(format!(
            "state.json is more than {MAX_STATE_BYTES} bytes"
        )));
    }
    let mut text = String::new();
    open_file_at(dir, name)?
        .take(MAX_STATE_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_STATE_BYTES {
        return Err(io::Error::other(format!(
            "state.json is more than {MAX_STATE_BYTES} bytes"
        )));
    }
    serde_json::from_str(&text).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("state.json is not JSON: {e}"),
        )
    })
}

/// The object at `state[key]`, made one if it is missing or not an object.
pub fn section<'a>(state: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = state
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(map) => map,
        _ => unreachable!("made an object just above"),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn the_lock_is_exclusive_and_a_stale_one_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE);
        let held = StateLock::acquire(&file, Duration::from_millis(10)).unwrap();
        let e = StateLock::acquire(&file, Duration::from_millis(50)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        drop(held);
        let again = StateLock::acquire(&file, Duration::from_millis(10)).unwrap();
        // A lock left behind by a dead holder: its time is old.
        std::mem::forget(again);
        let old = SystemTime::now() - Duration::from_secs(60);
        fs::File::open(dir.path().join("state.json.lock"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        StateLock::acquire(&file, Duration::from_millis(10)).unwrap();
    }

    #[test]
    fn a_state_that_cannot_be_read_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let big = format!(
            r#"{{"session": {{"owner": "vscode-extension"}}, "pad": "{}"}}"#,
            "x".repeat(MAX_STATE_BYTES as usize)
        );
        for text in [big.as_str(), r#"{"session": {"owner": "vscode-"#] {
            fs::write(&path, text).unwrap();
            let e = update(dir.path(), |s| {
                section(s, "chatAgents").insert("small".into(), serde_json::json!({}));
            })
            .unwrap_err();
            assert!(e.to_string().contains("left as it is"), "{e}");
            assert_eq!(fs::read_to_string(&path).unwrap(), text);
            assert!(!dir.path().join("state.json.lock").exists());
        }
        // JSON that is not an object holds no one's data: replaced, and said.
        fs::write(&path, "[1, 2]").unwrap();
        assert!(update(dir.path(), |_| {}).unwrap());
        assert_eq!(read(&path).unwrap(), serde_json::json!({}));
    }

    #[test]
    fn updates_keep_what_others_wrote() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(FILE),
            r#"{"session": {"status": "IDLE"}, "terminals": {"t1": {"pid": 1}}}"#,
        )
        .unwrap();
        let replaced = update(dir.path(), |s| {
            section(s, "chatAgents").insert("lead".into(), serde_json::json!({"role": "lead"}));
        })
        .unwrap();
        assert!(!replaced);
        let v = read(&dir.path().join(FILE)).unwrap();
        assert_eq!(v["session"]["status"], "IDLE");
        assert_eq!(v["terminals"]["t1"]["pid"], 1);
        assert_eq!(v["chatAgents"]["lead"]["role"], "lead");
        assert!(!dir.path().join("state.json.lock").exists());
    }
}
