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
//! paths ([`index_schema::switchboard::check_name`]); `.switchboard/` is opened once, as a
//! directory handle, and every operation is relative to it, one component at a time, none
//! followed if it is a symbolic link (`openat` with `O_NOFOLLOW | O_DIRECTORY` for each
//! directory, `O_NOFOLLOW` for files, `renameat` between handles) — so a link put in place of
//! `inbox/`, `outbox/`, `archive/` or an agent's folder, at start or while ofc runs, is refused
//! and never followed; files are written to a temporary name in the same directory and renamed
//! into place, so a reader never sees half a file and a symbolic link at the destination is
//! replaced rather than written through; inbox files must be regular files and are read only up
//! to [`MAX_MESSAGE_FILE_BYTES`]. The handles need a Unix (`openat` and its kin), as the
//! runtime does anyway.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use index_schema::switchboard::{MAX_MESSAGE_FILE_BYTES, Message, Receipt, ServerInfo};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// The workspace directory's name.
pub const DIR: &str = ".switchboard";
/// Where refused inbox files go (ofc's addition to the layout).
pub const REJECTED: &str = "rejected";
/// ofc's delivery journal.
pub const JOURNAL: &str = "ofc-journal.jsonl";
/// The most inbox files remembered as not yet readable (past it, the oldest are forgotten:
/// they are read once more).
const MAX_SETTLING: usize = 4096;

/// The most entries of one inbox looked at in one look (see [`Workspace::list`]).
pub const MAX_INBOX_ENTRIES: usize = 100_000;

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
    /// `.switchboard/` itself, opened once.
    fd: Arc<OwnedFd>,
    /// Inbox files read that were not yet messages: (inbox, file) → what they were then.
    settling: Arc<Mutex<HashMap<(String, String), Settling>>>,
}

/// An inbox file as it was when first found not to be a message yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    len: u64,
    mtime: (i64, i64),
    ino: u64,
}

#[derive(Debug)]
struct Settling {
    identity: Identity,
    /// When ofc first saw it so (ofc's own clock: a writer's clock may be ahead).
    since: Instant,
}

/// What one look at an inbox found.
#[derive(Debug, Default)]
pub struct Listing {
    /// Message files, oldest name first, at most the limit asked.
    pub names: Vec<String>,
    /// Entries looked at.
    pub entries: usize,
    /// Whether the inbox held more entries than one look reads.
    pub more: bool,
}

impl Workspace {
    /// Opens (creating what is missing) `<dir>/.switchboard/` and its `inbox/`, `archive/`,
    /// `outbox/`, `reviews/` and `rejected/`. Refuses a symbolic link or a file in the place
    /// of any of them.
    pub fn open(dir: &Path) -> io::Result<Workspace> {
        let root = dir.join(DIR);
        let parent = open_dir(dir)?;
        let fd = dir_at(parent.as_fd(), DIR, true, 0o700)
            .map_err(|e| in_place(e, &root.display().to_string()))?;
        let ws = Workspace {
            root,
            fd: Arc::new(fd),
            settling: Arc::default(),
        };
        for sub in ["inbox", "archive", "outbox", "reviews", REJECTED] {
            dir_at(ws.fd.as_fd(), sub, true, 0o755)
                .map_err(|e| in_place(e, &ws.root.join(sub).display().to_string()))?;
        }
        Ok(ws)
    }

    /// `.switchboard/` itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The handle of `.switchboard/`.
    pub fn root_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The handle of `kind/<name>/`, created when `create`; a link or a file in the place of
    /// either component is an error.
    fn sub(&self, kind: &str, name: &str, create: bool) -> io::Result<OwnedFd> {
        let k = dir_at(self.fd.as_fd(), kind, create, 0o755).map_err(|e| in_place(e, kind))?;
        dir_at(k.as_fd(), name, create, 0o755).map_err(|e| in_place(e, &format!("{kind}/{name}")))
    }

    /// `kind/<name>` (`inbox`, `archive`, `outbox`, `rejected`), created when missing.
    /// `name` must have passed [`index_schema::switchboard::check_name`].
    pub fn dir(&self, kind: &str, name: &str) -> io::Result<PathBuf> {
        self.sub(kind, name, true)?;
        Ok(self.path(kind, name))
    }

    /// `kind/<name>`, as a path to show (operations never go through it).
    pub fn path(&self, kind: &str, name: &str) -> PathBuf {
        self.root.join(kind).join(name)
    }

    /// Writes a new `auth_token` (32 random bytes, hex; mode 0600) and answers it.
    pub fn new_token(&self) -> io::Result<String> {
        let mut bytes = [0u8; 32];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        write_atomic_at(self.fd.as_fd(), "auth_token", token.as_bytes(), 0o600)?;
        Ok(token)
    }

    /// Writes `server_info.json`.
    pub fn write_server_info(&self, info: &ServerInfo) -> io::Result<()> {
        let text = serde_json::to_string_pretty(info).map_err(io::Error::other)?;
        write_atomic_at(self.fd.as_fd(), "server_info.json", text.as_bytes(), 0o600)
    }

    /// Removes `server_info.json` (the server stopped).
    pub fn remove_server_info(&self) {
        let _ = rustix::fs::unlinkat(self.fd.as_fd(), "server_info.json", AtFlags::empty());
    }

    /// Puts a message into its recipient's inbox (written aside, then renamed into place).
    pub fn deliver(&self, message: &Message) -> io::Result<PathBuf> {
        let dir = self.sub("inbox", &message.recipient, true)?;
        write_atomic_at(
            dir.as_fd(),
            &message.file_name(),
            message.to_json().as_bytes(),
            0o600,
        )?;
        Ok(self
            .path("inbox", &message.recipient)
            .join(message.file_name()))
    }

    /// Writes a receipt into `outbox/<sender>/`.
    pub fn write_receipt(&self, sender: &str, receipt: &Receipt) -> io::Result<()> {
        let dir = self.sub("outbox", sender, true)?;
        let text = serde_json::to_string_pretty(receipt).map_err(io::Error::other)?;
        write_atomic_at(dir.as_fd(), &receipt.file_name(), text.as_bytes(), 0o600)
    }

    /// Whether `outbox/<sender>/` holds the receipt of `message_id`.
    pub fn has_receipt(&self, sender: &str, message_id: &str) -> bool {
        self.sub("outbox", sender, false)
            .and_then(|d| stat_at(d.as_fd(), &format!("receipt_{message_id}.json")))
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
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
        plain(file)?;
        let from = match self.sub("inbox", name, false) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        if stat_at(from.as_fd(), file).is_err() {
            return Ok(false);
        }
        let to = self.sub(kind, name, true)?;
        let mut target = file.to_owned();
        let mut n = 1;
        while stat_at(to.as_fd(), &target).is_ok() {
            target = format!("{file}.{n}");
            n += 1;
            if n > 1000 {
                return Err(io::Error::other(format!(
                    "{kind}/{name}/ holds {file} and 1000 more like it"
                )));
            }
        }
        match rustix::fs::renameat(from.as_fd(), file, to.as_fd(), target.as_str()) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether `kind/<name>/<file>` exists (as anything: a link is not followed).
    pub fn exists(&self, kind: &str, name: &str, file: &str) -> bool {
        plain(file).is_ok()
            && self
                .sub(kind, name, false)
                .and_then(|d| stat_at(d.as_fd(), file))
                .is_ok()
    }

    /// The message in `archive/<name>/<file>`, when that is a regular file holding one.
    pub fn archived_message(&self, name: &str, file: &str) -> Option<Message> {
        plain(file).ok()?;
        let dir = self.sub("archive", name, false).ok()?;
        let st = stat_at(dir.as_fd(), file).ok()?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return None;
        }
        let bytes = read_bounded(dir.as_fd(), file).ok()??;
        Message::from_json(std::str::from_utf8(&bytes).ok()?).ok()
    }

    /// Whether `archive/<name>/<file>` exists.
    pub fn archived(&self, name: &str, file: &str) -> bool {
        self.exists("archive", name, file)
    }

    /// The message files waiting in `inbox/<name>/`, oldest name first, at most `limit`:
    /// entries ending in `.json` whose name does not start with `.` (writers use such names
    /// for the file they are still writing). A missing inbox is empty; an inbox that is not
    /// a real directory is an error.
    pub fn pending(&self, name: &str, limit: usize) -> io::Result<Vec<String>> {
        Ok(self.list(name, limit, MAX_INBOX_ENTRIES, |_| false)?.names)
    }

    /// [`Workspace::pending`] looking at no more than `max_entries` entries, leaving out the
    /// names `skip` answers true for before taking `limit` (files left alone never take the
    /// place of others). Every other entry (temporary files, names that are not messages)
    /// counts only toward `max_entries`, so no number of them hides a message behind them.
    pub fn list(
        &self,
        name: &str,
        limit: usize,
        max_entries: usize,
        skip: impl Fn(&str) -> bool,
    ) -> io::Result<Listing> {
        let dir = match self.sub("inbox", name, false) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Listing::default()),
            Err(e) => return Err(e),
        };
        let mut listing = Listing::default();
        // The `limit` smallest names, kept as the directory is read: memory bounded by it.
        let mut names: BTreeSet<String> = BTreeSet::new();
        for entry in rustix::fs::Dir::read_from(dir.as_fd())? {
            if listing.entries >= max_entries {
                listing.more = true;
                break;
            }
            listing.entries += 1;
            let entry = entry?;
            let Ok(file) = entry.file_name().to_str() else {
                continue;
            };
            if !file.ends_with(".json") || file.starts_with('.') || skip(file) {
                continue;
            }
            if names.len() >= limit && names.last().is_some_and(|l| l.as_str() <= file) {
                continue;
            }
            names.insert(file.to_owned());
            if names.len() > limit {
                names.pop_last();
            }
        }
        listing.names = names.into_iter().collect();
        Ok(listing)
    }

    /// Reads `inbox/<name>/<file>`. A file that does not parse is [`ReadOutcome::NotYet`]
    /// while its writer may still be at it — it changed less than `settle` ago, by its time
    /// or, when that is in the future or nearer, by how long ofc has seen it unchanged — and
    /// refused after. Such a file is read again only when it changed or has settled.
    pub fn read(&self, name: &str, file: &str, settle: Duration) -> ReadOutcome {
        let outcome = self.read_settling(name, file, settle);
        if !matches!(outcome, ReadOutcome::NotYet) {
            self.settled(name, file);
        }
        outcome
    }

    /// Forgets what was remembered of `inbox/<name>/<file>`.
    fn settled(&self, name: &str, file: &str) {
        let mut settling = self.settling.lock().unwrap_or_else(|e| e.into_inner());
        if !settling.is_empty() {
            settling.remove(&(name.to_owned(), file.to_owned()));
        }
    }

    fn read_settling(&self, name: &str, file: &str, settle: Duration) -> ReadOutcome {
        if let Err(e) = plain(file) {
            return ReadOutcome::Refused(e.to_string());
        }
        let dir = match self.sub("inbox", name, false) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return ReadOutcome::Gone,
            Err(e) => return ReadOutcome::Refused(format!("cannot be read: {e}")),
        };
        let meta = match stat_at(dir.as_fd(), file) {
            Ok(m) => m,
            Err(_) => return ReadOutcome::Gone,
        };
        let kind = FileType::from_raw_mode(meta.st_mode);
        if kind == FileType::Symlink {
            let target = rustix::fs::readlinkat(dir.as_fd(), file, Vec::new())
                .map(|t| String::from_utf8_lossy(t.as_bytes()).into_owned())
                .unwrap_or_default();
            return ReadOutcome::Refused(format!(
                "is a symbolic link (to {}), not a message file; links are never followed",
                shown(&target)
            ));
        }
        if kind != FileType::RegularFile {
            return ReadOutcome::Refused("is not a regular file".into());
        }
        let len = meta.st_size as u64;
        if len > MAX_MESSAGE_FILE_BYTES {
            return ReadOutcome::Refused(format!(
                "is {len} bytes, more than the {MAX_MESSAGE_FILE_BYTES} a message may have"
            ));
        }
        let identity = Identity {
            len,
            mtime: (meta.st_mtime as i64, meta.st_mtime_nsec as i64),
            ino: meta.st_ino as u64,
        };
        let modified = SystemTime::UNIX_EPOCH.checked_add(Duration::new(
            identity.mtime.0.max(0) as u64,
            identity.mtime.1.clamp(0, 999_999_999) as u32,
        ));
        // Settled by its time only when that is in the past.
        let old = modified
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age >= settle);
        let key = (name.to_owned(), file.to_owned());
        let seen = {
            let settling = self.settling.lock().unwrap_or_else(|e| e.into_inner());
            settling
                .get(&key)
                .filter(|s| s.identity == identity)
                .map(|s| s.since)
        };
        let young = !old && seen.is_none_or(|since| since.elapsed() < settle);
        if young && seen.is_some() {
            // Read already as it is, and not a message: the same bytes again.
            return ReadOutcome::NotYet;
        }
        let outcome = Self::parse(dir.as_fd(), file, young);
        if matches!(outcome, ReadOutcome::NotYet) && seen.is_none() {
            let mut settling = self.settling.lock().unwrap_or_else(|e| e.into_inner());
            if settling.len() >= MAX_SETTLING {
                // Bounded: the oldest are forgotten (and read once more when seen again).
                let mut by_age: Vec<Instant> = settling.values().map(|s| s.since).collect();
                by_age.sort();
                let cut = by_age[by_age.len() / 2];
                settling.retain(|_, s| s.since > cut);
            }
            settling.insert(
                key,
                Settling {
                    identity,
                    since: Instant::now(),
                },
            );
        }
        outcome
    }

    /// The message in `dir/file`; `young`: a file that does not parse may still be written.
    fn parse(dir: BorrowedFd<'_>, file: &str, young: bool) -> ReadOutcome {
        let text = match read_bounded(dir, file) {
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

/// A file name of one component (what an inbox listing or a checked id gives).
fn plain(file: &str) -> io::Result<()> {
    if file.is_empty() || file == "." || file == ".." || file.contains(['/', '\0']) {
        return Err(io::Error::other(format!(
            "`{}` is not a plain file name",
            shown(file)
        )));
    }
    Ok(())
}

/// An error opening a directory of the workspace, saying what is in its place.
fn in_place(e: io::Error, what: &str) -> io::Error {
    match e.raw_os_error().map(rustix::io::Errno::from_raw_os_error) {
        Some(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => io::Error::other(format!(
            "{what} is not a directory (a symbolic link or a file is in its place); ofc does not follow it"
        )),
        _ if e.kind() == io::ErrorKind::NotFound => {
            io::Error::new(io::ErrorKind::NotFound, format!("{what}: {e}"))
        }
        _ => io::Error::new(e.kind(), format!("{what}: {e}")),
    }
}

/// Opens the directory at `path` (its last component must not be a link).
pub(crate) fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Opens the directory `name` in `dir` without following a link, creating it (`mode`) when
/// `create` and it is missing.
fn dir_at(dir: BorrowedFd<'_>, name: &str, create: bool, mode: u32) -> io::Result<OwnedFd> {
    plain(name)?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => Ok(fd),
        Err(rustix::io::Errno::NOENT) if create => {
            match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(mode)) {
                // Another writer made it meanwhile: opened as it is, checked the same way.
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            Ok(rustix::fs::openat(dir, name, flags, Mode::empty())?)
        }
        Err(e) => Err(e.into()),
    }
}

/// `lstat` of `name` in `dir`.
pub(crate) fn stat_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<rustix::fs::Stat> {
    Ok(rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?)
}

/// Opens `name` in `dir` for reading without following a link, and without blocking on a
/// FIFO swapped in after a check; it must be a regular file.
pub(crate) fn open_file_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<File> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let file = File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            shown(name)
        )));
    }
    Ok(file)
}

/// The file's bytes, or `None` past [`MAX_MESSAGE_FILE_BYTES`].
fn read_bounded(dir: BorrowedFd<'_>, name: &str) -> io::Result<Option<Vec<u8>>> {
    let file = open_file_at(dir, name)?;
    let mut bytes = Vec::new();
    file.take(MAX_MESSAGE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= MAX_MESSAGE_FILE_BYTES).then_some(bytes))
}

/// Writes `dir/name` whole or not at all: a temporary file in the same directory (created
/// new, `mode`), synced, then renamed over `name`. `dir`'s last component must not be a link.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
    write_atomic_at(open_dir(dir)?.as_fd(), name, bytes, mode)
}

/// [`write_atomic`] in the directory `dir`.
pub(crate) fn write_atomic_at(
    dir: BorrowedFd<'_>,
    name: &str,
    bytes: &[u8],
    mode: u32,
) -> io::Result<()> {
    plain(name)?;
    let mut suffix = [0u8; 6];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut suffix);
    let tmp = format!(
        ".{name}.{}.tmp",
        suffix
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    let result = (|| {
        let fd = rustix::fs::openat(
            dir,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )?;
        let mut file = File::from(fd);
        file.write_all(bytes)?;
        file.sync_data()?;
        rustix::fs::renameat(dir, tmp.as_str(), dir, name)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
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
    use std::fs;

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

    fn files(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Links swapped in for `inbox/`, `outbox/`, `archive/` and an agent's folder while ofc
    /// runs (after the workspace was opened): nothing is written, read or moved through them.
    #[test]
    fn links_swapped_in_while_running_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let root = ws.root().to_path_buf();
        let message = |id: &str, sender: &str, recipient: &str| {
            Message::from_json(
                &serde_json::json!({"id": id, "action": "status_update", "sender": sender,
                    "recipient": recipient, "payload": "p", "createdAt": "2025-01-01T00:00:00.000Z"})
                .to_string(),
            )
            .unwrap()
        };
        ws.deliver(&message("msg_0", "user", "worker")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        fs::create_dir(victim.path().join("user")).unwrap();
        fs::write(
            victim.path().join("user/secret.json"),
            "TOP SECRET not json",
        )
        .unwrap();
        fs::create_dir(outside.path().join("worker")).unwrap();
        fs::write(outside.path().join("worker/keep.json"), "keep").unwrap();
        for (sub, to) in [
            ("outbox", outside.path()),
            ("inbox", victim.path()),
            ("archive", outside.path()),
        ] {
            fs::rename(root.join(sub), root.join(format!("{sub}.old"))).unwrap();
            std::os::unix::fs::symlink(to, root.join(sub)).unwrap();
        }
        fs::create_dir(root.join("rejected/user")).unwrap();
        assert!(ws.deliver(&message("msg_1", "user", "worker")).is_err());
        let receipt = Receipt::delivered("msg_1", "worker", "2025-01-01T00:00:00.000Z".into());
        let e = ws.write_receipt("user", &receipt).unwrap_err();
        assert!(e.to_string().contains("outbox is not a directory"), "{e}");
        let e = ws.pending("user", 10).unwrap_err();
        assert!(e.to_string().contains("inbox is not a directory"), "{e}");
        assert!(matches!(
            ws.read("user", "secret.json", Duration::ZERO),
            ReadOutcome::Refused(_)
        ));
        assert!(ws.reject("user", "secret.json").is_err());
        assert!(!ws.has_receipt("worker", "msg_0"));
        assert!(dir_at(ws.root_fd(), "archive", false, 0o755).is_err());
        // The inbox back, an agent's folder in it a link.
        fs::remove_file(root.join("inbox")).unwrap();
        fs::rename(root.join("inbox.old"), root.join("inbox")).unwrap();
        std::os::unix::fs::symlink(victim.path().join("user"), root.join("inbox/user")).unwrap();
        assert!(ws.pending("user", 10).is_err());
        assert!(ws.reject("user", "secret.json").is_err());
        assert!(!ws.exists("inbox", "user", "secret.json"));
        assert!(
            ws.archive("worker", "msg_0.json").is_err(),
            "archive/ is a link"
        );
        assert!(ws.exists("inbox", "worker", "msg_0.json"));
        // Outside, nothing came and nothing went.
        assert_eq!(files(outside.path()), ["worker"]);
        assert_eq!(files(&outside.path().join("worker")), ["keep.json"]);
        assert_eq!(files(&victim.path().join("user")), ["secret.json"]);
        assert!(files(&root.join("rejected/user")).is_empty());
    }

    fn valid(id: &str) -> String {
        serde_json::json!({"id": id, "action": "status_update", "sender": "worker",
            "recipient": "user", "payload": "p", "createdAt": "2025-01-01T00:00:00.000Z"})
        .to_string()
    }

    /// A file that is not a message, with a time in the future (a writer's clock ahead, or set
    /// so): refused once ofc has seen it unchanged for the settle time, and not read meanwhile.
    #[test]
    fn a_bad_file_with_a_future_time_is_refused_once_settled() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let inbox = ws.dir("inbox", "user").unwrap();
        let future = SystemTime::now() + Duration::from_secs(365 * 24 * 3600);
        // Written, then dated `future`.
        let write_dated = |file: &str, bytes: &[u8]| {
            fs::write(inbox.join(file), bytes).unwrap();
            File::options()
                .write(true)
                .open(inbox.join(file))
                .unwrap()
                .set_modified(future)
                .unwrap();
        };
        for (file, text) in [("bad.json", "x".repeat(1000)), ("ok.json", valid("msg_ok"))] {
            write_dated(file, text.as_bytes());
        }
        assert!(matches!(
            ws.read("user", "ok.json", Duration::from_secs(1)),
            ReadOutcome::Message(_)
        ));
        let settle = Duration::from_millis(100);
        assert!(matches!(
            ws.read("user", "bad.json", settle),
            ReadOutcome::NotYet
        ));
        // Unchanged (same inode, size and time): not read again before it settles — here its
        // bytes were replaced by a message behind ofc's back, and ofc does not look.
        let mut padded = valid("msg_x").into_bytes();
        padded.resize(1000, b' ');
        write_dated("bad.json", &padded);
        assert!(matches!(
            ws.read("user", "bad.json", settle),
            ReadOutcome::NotYet
        ));
        write_dated("bad.json", "x".repeat(1000).as_bytes());
        std::thread::sleep(settle);
        match ws.read("user", "bad.json", settle) {
            ReadOutcome::Refused(reason) => assert!(reason.contains("invalid JSON"), "{reason}"),
            other => panic!("{other:?}"),
        }
        assert!(ws.settling.lock().unwrap().is_empty());
    }

    /// However many temporary files (or other names) an inbox holds, and wherever they lie in
    /// the directory's order, a message among them is found; files left alone do not take the
    /// place of others.
    #[test]
    fn no_number_of_other_entries_hides_a_message() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let inbox = ws.dir("inbox", "user").unwrap();
        for n in 0..2500 {
            fs::write(inbox.join(format!(".partial_{n}.json.tmp")), "").unwrap();
        }
        fs::write(inbox.join("msg_9.json"), valid("msg_9")).unwrap();
        for n in 2500..5000 {
            fs::write(inbox.join(format!(".partial_{n}.json.tmp")), "").unwrap();
        }
        assert_eq!(ws.pending("user", 4).unwrap(), ["msg_9.json"]);
        for f in ["msg_1.json", "msg_2.json"] {
            fs::write(inbox.join(f), valid("msg_1")).unwrap();
        }
        let listing = ws
            .list("user", 1, MAX_INBOX_ENTRIES, |f| {
                f == "msg_1.json" || f == "msg_2.json"
            })
            .unwrap();
        assert_eq!(listing.names, ["msg_9.json"]);
        assert!(!listing.more);
        assert_eq!(ws.pending("user", 2).unwrap(), ["msg_1.json", "msg_2.json"]);
        let listing = ws.list("user", 10, 100, |_| false).unwrap();
        assert!(listing.more);
        assert_eq!(listing.entries, 100);
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
