//! The `.switchboard/` directory as seed 004 lays it out, and every file operation on it.
//!
//! ```text
//! .switchboard/
//! ├── auth_token          bearer token of the HTTP/SSE server (0600, new each run)
//! ├── server_info.json    where that server listens
//! ├── state.json          agents and teams (locked as proper-lockfile does: state.json.lock/)
//! ├── inbox/<agent>/      messages for each agent, <id>.json
//! ├── archive/<agent>/    processed messages
//! ├── outbox/<sender>/    delivery receipts, receipt_<id>.json
//! ├── reviews/            review artifacts (the seed's; ofc keeps the directory)
//! ├── rejected/<agent>/   ofc's: inbox files refused (malformed, too large, not a file…)
//! └── ofc-journal.jsonl   ofc's: deliveries begun, so a restart delivers each message once
//! ```
//!
//! Rules that keep everything inside `.switchboard/`: names are checked before they become
//! paths ([`index_schema::switchboard::check_name`]); every directory ofc uses must be a real
//! directory (a symbolic link in its place is refused, never followed); files are written to a
//! temporary name in the same directory and renamed into place, so a reader never sees half a
//! file and a symbolic link at the destination is replaced rather than written through; inbox
//! files are opened without following links, must be regular files, and are read only up to
//! [`MAX_MESSAGE_FILE_BYTES`].

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use index_schema::switchboard::{MAX_MESSAGE_FILE_BYTES, Message, Receipt, ServerInfo};

/// The workspace directory's name.
pub const DIR: &str = ".switchboard";
/// Where refused inbox files go (ofc's addition to the layout).
pub const REJECTED: &str = "rejected";
/// ofc's delivery journal.
pub const JOURNAL: &str = "ofc-journal.jsonl";

/// What reading one inbox file gave.
#[derive(Debug)]
pub enum ReadOutcome {
    /// A complete, valid message.
    Message(Box<Message>),
    /// Not (yet) a message, but young enough that its writer may still be at it: left for
    /// the next scan.
    NotYet,
    /// Refused, with the reason; the file is to be moved aside.
    Refused(String),
    /// Gone between the listing and the read.
    Gone,
}

/// A `.switchboard/` directory.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Opens (creating what is missing) `<dir>/.switchboard/` and its `inbox/`, `archive/`,
    /// `outbox/`, `reviews/` and `rejected/`. Refuses a symbolic link or a file in the place
    /// of any of them.
    pub fn open(dir: &Path) -> io::Result<Workspace> {
        let root = dir.join(DIR);
        real_dir(&root, true)?;
        let ws = Workspace { root };
        for sub in ["inbox", "archive", "outbox", "reviews", REJECTED] {
            real_dir(&ws.root.join(sub), false)?;
        }
        Ok(ws)
    }

    /// `.switchboard/` itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `kind/<name>` (`inbox`, `archive`, `outbox`, `rejected`), created when missing.
    /// `name` must have passed [`index_schema::switchboard::check_name`].
    pub fn dir(&self, kind: &str, name: &str) -> io::Result<PathBuf> {
        let path = self.root.join(kind).join(name);
        real_dir(&path, false)?;
        Ok(path)
    }

    /// `kind/<name>` without creating it.
    pub fn path(&self, kind: &str, name: &str) -> PathBuf {
        self.root.join(kind).join(name)
    }

    /// Writes a new `auth_token` (32 random bytes, hex; mode 0600) and answers it.
    pub fn new_token(&self) -> io::Result<String> {
        let mut bytes = [0u8; 32];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        write_atomic(&self.root, "auth_token", token.as_bytes(), 0o600)?;
        Ok(token)
    }

    /// Writes `server_info.json`.
    pub fn write_server_info(&self, info: &ServerInfo) -> io::Result<()> {
        let text = serde_json::to_string_pretty(info).map_err(io::Error::other)?;
        write_atomic(&self.root, "server_info.json", text.as_bytes(), 0o600)
    }

    /// Removes `server_info.json` (the server stopped).
    pub fn remove_server_info(&self) {
        let _ = fs::remove_file(self.root.join("server_info.json"));
    }

    /// Puts a message into its recipient's inbox (written aside, then renamed into place).
    pub fn deliver(&self, message: &Message) -> io::Result<PathBuf> {
        let dir = self.dir("inbox", &message.recipient)?;
        write_atomic(
            &dir,
            &message.file_name(),
            message.to_json().as_bytes(),
            0o600,
        )?;
        Ok(dir.join(message.file_name()))
    }

    /// Writes a receipt into `outbox/<sender>/`.
    pub fn write_receipt(&self, sender: &str, receipt: &Receipt) -> io::Result<()> {
        let dir = self.dir("outbox", sender)?;
        let text = serde_json::to_string_pretty(receipt).map_err(io::Error::other)?;
        write_atomic(&dir, &receipt.file_name(), text.as_bytes(), 0o600)
    }

    /// Whether `outbox/<sender>/` holds the receipt of `message_id`.
    pub fn has_receipt(&self, sender: &str, message_id: &str) -> bool {
        self.path("outbox", sender)
            .join(format!("receipt_{message_id}.json"))
            .is_file()
    }

    /// Moves `inbox/<name>/<file>` to `archive/<name>/` (under another name if one is
    /// taken). `Ok(false)` when the file is no longer in the inbox.
    pub fn archive(&self, name: &str, file: &str) -> io::Result<bool> {
        self.move_to("archive", name, file)
    }

    /// Moves `inbox/<name>/<file>` aside to `rejected/<name>/`. Renaming moves a symbolic
    /// link itself, never what it points to.
    pub fn reject(&self, name: &str, file: &str) -> io::Result<bool> {
        self.move_to(REJECTED, name, file)
    }

    fn move_to(&self, kind: &str, name: &str, file: &str) -> io::Result<bool> {
        let from = self.path("inbox", name).join(file);
        if fs::symlink_metadata(&from).is_err() {
            return Ok(false);
        }
        let dir = self.dir(kind, name)?;
        let mut to = dir.join(file);
        let mut n = 1;
        while fs::symlink_metadata(&to).is_ok() {
            to = dir.join(format!("{file}.{n}"));
            n += 1;
            if n > 1000 {
                return Err(io::Error::other(format!(
                    "{kind}/{name}/ holds {file} and 1000 more like it"
                )));
            }
        }
        match fs::rename(&from, &to) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether `kind/<name>/<file>` exists (as anything: a link is not followed).
    pub fn exists(&self, kind: &str, name: &str, file: &str) -> bool {
        fs::symlink_metadata(self.path(kind, name).join(file)).is_ok()
    }

    /// Whether `archive/<name>/<file>` exists.
    pub fn archived(&self, name: &str, file: &str) -> bool {
        fs::symlink_metadata(self.path("archive", name).join(file)).is_ok()
    }

    /// The message files waiting in `inbox/<name>/`, oldest name first, at most `limit`:
    /// entries ending in `.json` whose name does not start with `.` (writers use such names
    /// for the file they are still writing). A missing inbox is empty; an inbox that is not
    /// a real directory is an error.
    pub fn pending(&self, name: &str, limit: usize) -> io::Result<Vec<String>> {
        let dir = self.path("inbox", name);
        match fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
            Ok(m) if !m.is_dir() => {
                return Err(io::Error::other(format!(
                    "inbox/{name} is not a directory (a symbolic link?)"
                )));
            }
            Ok(_) => {}
        }
        let mut names = Vec::new();
        // Bounded: a flooded inbox is taken a slice at a time.
        for entry in fs::read_dir(&dir)?.take(limit.saturating_mul(16).max(limit)) {
            let entry = entry?;
            let Some(file) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if file.ends_with(".json") && !file.starts_with('.') {
                names.push(file);
            }
        }
        names.sort();
        names.truncate(limit);
        Ok(names)
    }

    /// Reads `inbox/<name>/<file>`. A file that does not parse is [`ReadOutcome::NotYet`]
    /// while it changed less than `settle` ago, and refused after.
    pub fn read(&self, name: &str, file: &str, settle: Duration) -> ReadOutcome {
        let path = self.path("inbox", name).join(file);
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(_) => return ReadOutcome::Gone,
        };
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&path)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            return ReadOutcome::Refused(format!(
                "is a symbolic link (to {}), not a message file; links are never followed",
                shown(&target)
            ));
        }
        if !meta.is_file() {
            return ReadOutcome::Refused("is not a regular file".into());
        }
        if meta.len() > MAX_MESSAGE_FILE_BYTES {
            return ReadOutcome::Refused(format!(
                "is {} bytes, more than the {MAX_MESSAGE_FILE_BYTES} a message may have",
                meta.len()
            ));
        }
        let young = meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_none_or(|age| age < settle);
        let text = match read_bounded(&path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return ReadOutcome::Refused(format!(
                    "grew past the {MAX_MESSAGE_FILE_BYTES} bytes a message may have"
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return ReadOutcome::Gone,
            Err(e) => return ReadOutcome::Refused(format!("cannot be read: {e}")),
        };
        let text = match String::from_utf8(text) {
            Ok(t) => t,
            Err(_) if young => return ReadOutcome::NotYet,
            Err(e) => {
                return ReadOutcome::Refused(format!(
                    "is not UTF-8 (invalid byte at offset {})",
                    e.utf8_error().valid_up_to()
                ));
            }
        };
        match Message::from_json(&text) {
            Ok(m) => ReadOutcome::Message(Box::new(m)),
            Err(_) if young => ReadOutcome::NotYet,
            Err(d) => ReadOutcome::Refused(
                d.iter()
                    .map(|d| shown(&d.to_string()))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        }
    }
}

/// Makes sure `path` is a real directory (0700 for the workspace root), creating it when
/// missing; a symbolic link or anything else in its place is an error.
fn real_dir(path: &Path, private: bool) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(io::Error::other(format!(
            "{} is not a directory (a symbolic link or a file is in its place); ofc does not follow it",
            path.display()
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            match fs::create_dir(path) {
                Ok(()) => {}
                // Another writer made it meanwhile: check what it is.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return real_dir(path, private);
                }
                Err(e) => return Err(e),
            }
            #[cfg(unix)]
            if private {
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(path, fs::Permissions::from_mode(0o700))?;
            }
            let _ = private;
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Opens a file for reading without following a symbolic link, and without blocking on a
/// FIFO swapped in after the check.
fn open_nofollow(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
        options.custom_flags(flags.bits() as i32);
    }
    options.open(path)
}

/// The file's bytes, or `None` past [`MAX_MESSAGE_FILE_BYTES`].
fn read_bounded(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let file = open_nofollow(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_MESSAGE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= MAX_MESSAGE_FILE_BYTES).then_some(bytes))
}

/// Writes `dir/name` whole or not at all: a temporary file in the same directory (created
/// new, `mode`), synced, then renamed over `name`.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut suffix = [0u8; 6];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut suffix);
    let tmp = dir.join(format!(
        ".{name}.{}.tmp",
        suffix
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ));
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    let _ = mode;
    let result = (|| {
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_data()?;
        fs::rename(&tmp, dir.join(name))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// A text from outside (a file name, a link target, a parse error) made safe for a log
/// line: at most 300 characters, control characters escaped.
pub fn shown(s: &str) -> String {
    let mut out: String = s.chars().take(300).flat_map(char::escape_debug).collect();
    if s.chars().count() > 300 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_made_and_links_in_its_place_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        for sub in ["inbox", "archive", "outbox", "reviews", REJECTED] {
            assert!(ws.root().join(sub).is_dir(), "{sub}");
        }
        let other = tempfile::tempdir().unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(other.path(), ws.root().join("inbox/lead")).unwrap();
            let e = ws.dir("inbox", "lead").unwrap_err();
            assert!(e.to_string().contains("not a directory"), "{e}");
            assert!(ws.pending("lead", 10).is_err());
            let elsewhere = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(other.path(), elsewhere.path().join(DIR)).unwrap();
            assert!(Workspace::open(elsewhere.path()).is_err());
        }
        assert_eq!(fs::read_dir(other.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_write_is_whole_or_absent_and_replaces_a_link_instead_of_following_it() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        fs::write(&outside, "keep").unwrap();
        let ws_dir = dir.path().join("ws");
        fs::create_dir(&ws_dir).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, ws_dir.join("auth_token")).unwrap();
        write_atomic(&ws_dir, "auth_token", b"secret", 0o600).unwrap();
        assert_eq!(fs::read_to_string(&outside).unwrap(), "keep");
        assert_eq!(
            fs::read_to_string(ws_dir.join("auth_token")).unwrap(),
            "secret"
        );
        let leftovers: Vec<_> = fs::read_dir(&ws_dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
