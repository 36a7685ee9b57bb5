//! `.switchboard/state.json`: the agents (`terminals`, `chatAgents`) and `teams` of the
//! workspace, changed only under the lock the seed's Switchboard takes with proper-lockfile:
//! the directory `state.json.lock` made with `mkdir` (atomic: one maker wins), removed on
//! release, and taken over when its time is more than [`STALE`] old (the holder died). ofc
//! holds it only for one read-change-write, far under that.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value};

use super::workspace::write_atomic;

/// The state file's name.
pub const FILE: &str = "state.json";
/// proper-lockfile's default: a lock older than this is abandoned.
pub const STALE: Duration = Duration::from_secs(10);
/// The largest `state.json` read.
pub const MAX_STATE_BYTES: u64 = 4 * 1024 * 1024;

/// The lock on `state.json`, released when dropped.
#[derive(Debug)]
pub struct StateLock {
    dir: PathBuf,
}

impl StateLock {
    /// Takes the lock of `file` (`<file>.lock/`), waiting up to `wait`.
    pub fn acquire(file: &Path, wait: Duration) -> io::Result<StateLock> {
        let dir = PathBuf::from(format!("{}.lock", file.display()));
        let start = Instant::now();
        loop {
            match fs::create_dir(&dir) {
                Ok(()) => return Ok(StateLock { dir }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let stale = fs::symlink_metadata(&dir)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok())
                        .is_some_and(|age| age > STALE);
                    if stale {
                        // As proper-lockfile does: remove the abandoned lock, then compete
                        // for it again with mkdir.
                        let _ = fs::remove_dir(&dir);
                        continue;
                    }
                    if start.elapsed() >= wait {
                        return Err(io::Error::new(
                            io::ErrorKind::WouldBlock,
                            format!(
                                "{} is held by another process (for less than {}s)",
                                dir.display(),
                                STALE.as_secs()
                            ),
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for StateLock {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.dir);
    }
}

/// Changes `state.json` under its lock: `change` gets the state as an object (`{}` when the
/// file is missing) and the result is written back atomically. A file that is JSON but not an
/// object is replaced, and `Ok(true)` says so; one that cannot be read (too large, not JSON,
/// not a regular file) is an error and left as it is — other writers' agents are in it.
pub fn update(root: &Path, change: impl FnOnce(&mut Map<String, Value>)) -> io::Result<bool> {
    let file = root.join(FILE);
    if fs::symlink_metadata(&file).is_err() {
        // proper-lockfile locks the file's real path, so the file must exist first.
        write_atomic(root, FILE, b"{}\n", 0o600)?;
    }
    let _lock = StateLock::acquire(&file, Duration::from_secs(5))?;
    let (mut state, replaced) = match read(&file) {
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
    write_atomic(root, FILE, text.as_bytes(), 0o600)?;
    Ok(replaced)
}

/// Reads `state.json` (bounded; never through a symbolic link).
pub fn read(file: &Path) -> io::Result<Value> {
    let meta = fs::symlink_metadata(file)?;
    if !meta.is_file() {
        return Err(io::Error::other("state.json is not a regular file"));
    }
    if meta.len() > MAX_STATE_BYTES {
        return Err(io::Error::other(format!(
            "state.json is more than {MAX_STATE_BYTES} bytes"
        )));
    }
    let text = fs::read_to_string(file)?;
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
