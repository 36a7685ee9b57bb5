//! Where ofc keeps its files, and the names of the settings that choose the hub (the hub URL
//! itself is [`crate::hub_url`]).
//!
//! `OFC_HOME` relocates everything: config (keys, credentials) goes to `$OFC_HOME/config` and the
//! cache to `$OFC_HOME/cache`. Without it the platform's directories are used (on Linux
//! `~/.config/ofc` and `~/.cache/ofc`). `OFC_HUB` selects the hub (default [`DEFAULT_HUB`]).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::output::UserError;

/// The hub used when `OFC_HUB` is not set.
pub const DEFAULT_HUB: &str = "http://127.0.0.1:8733";

/// Environment variable relocating config, credentials and cache.
pub const HOME_ENV: &str = "OFC_HOME";

/// Environment variable selecting the hub URL.
pub const HUB_ENV: &str = "OFC_HUB";

/// ofc's directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// Config: keys and credentials. Private to the user.
    pub config: PathBuf,
    /// The content-addressed cache.
    pub cache: PathBuf,
}

impl Paths {
    /// The directories under one root (what `OFC_HOME` gives).
    pub fn under(home: &Path) -> Self {
        Self {
            config: home.join("config"),
            cache: home.join("cache"),
        }
    }

    /// The directories from the environment: `OFC_HOME`, else the platform's.
    pub fn from_env() -> Result<Self> {
        match std::env::var_os(HOME_ENV) {
            Some(home) if !home.is_empty() => {
                let home = PathBuf::from(home);
                if !home.is_absolute() {
                    // A relative home would move with the working directory.
                    let cwd = std::env::current_dir()?;
                    return Ok(Self::under(&cwd.join(home)));
                }
                Ok(Self::under(&home))
            }
            _ => {
                let (Some(config), Some(cache)) = (dirs::config_dir(), dirs::cache_dir()) else {
                    bail!(
                        UserError::new("cannot find the user's config and cache directories")
                            .hint(format!("set {HOME_ENV} to a directory ofc may use"))
                    );
                };
                Ok(Self {
                    config: config.join("ofc"),
                    cache: cache.join("ofc"),
                })
            }
        }
    }

    /// The directory of signing keys.
    pub fn keys_dir(&self) -> PathBuf {
        self.config.join("keys")
    }

    /// The secret key file of the key called `name`.
    pub fn secret_key_file(&self, name: &str) -> PathBuf {
        self.keys_dir().join(format!("{name}.key"))
    }

    /// The public key file of the key called `name`.
    pub fn public_key_file(&self, name: &str) -> PathBuf {
        self.keys_dir().join(format!("{name}.pub"))
    }
}

/// Reads a TOML file of ofc's (credentials, trust store); a missing file is the default value.
/// A file that does not parse is an error naming it as `what`, with `hint`: every field ofc
/// does not know is refused, as `file:line:col: field.path: what is wrong`.
pub fn read_toml<T: serde::de::DeserializeOwned + Default>(
    path: &Path,
    what: &str,
    hint: &str,
) -> Result<T> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(T::default()),
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!("cannot read {}", path.display())));
        }
    };
    parse_toml(&text).map_err(|problem| {
        let file = path.display();
        UserError::new(format!("{file} is not a valid {what}:\n{file}:{problem}"))
            .hint(hint)
            .into()
    })
}

/// Parses TOML text into `T`; the error is `line:col: field.path: message` (` field.path:
/// message` when TOML gives no position).
fn parse_toml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
        let mut field = e.path().to_string();
        let inner = e.into_inner();
        let message = inner.message().trim_end().to_string();
        // Some deserializers name an unknown field at its parent; name the field itself.
        if let Some(name) = message
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
            && field != name
            && !field.ends_with(&format!(".{name}"))
        {
            field = if field == "." {
                name.to_string()
            } else {
                format!("{field}.{name}")
            };
        }
        let at = inner.span().map_or(" ".to_string(), |s| {
            let p = index_schema::source::offset_to_position(text, s.start);
            format!("{}:{}: ", p.line, p.col)
        });
        format!("{at}{field}: {message}")
    })
}

/// Opens (creating it) the lock file `dir/name` and holds it exclusively until the returned
/// file is dropped; waits for other holders.
pub fn lock_exclusive(dir: &Path, name: &str) -> Result<std::fs::File> {
    let path = dir.join(name);
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| anyhow::Error::new(e).context(format!("cannot open {}", path.display())))?;
    lock.lock()
        .map_err(|e| anyhow::Error::new(e).context(format!("cannot lock {}", path.display())))?;
    Ok(lock)
}

/// Replaces `path` with `bytes` atomically: a temp file in the same directory (created mode
/// 0600 on Unix), synced, then renamed over it. A crash leaves the old file or the new one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}-"))
        .tempfile_in(dir)
        .map_err(|e| anyhow::Error::new(e).context(format!("cannot write in {}", dir.display())))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| {
        anyhow::Error::new(e.error).context(format!("cannot write {}", path.display()))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn refused<T: serde::de::DeserializeOwned + std::fmt::Debug>(text: &str) -> String {
        parse_toml::<T>(text).expect_err("should be refused")
    }

    /// Every field of the trust store and the credentials file that ofc does not define is
    /// refused with its line and its path.
    #[rstest]
    #[case("colour = 1\n", "1:1: colour: unknown field `colour`")]
    #[case(
        "[hubs.local.publishers.acme]\nkeys = []\nfingerprint = \"x\"\n",
        "3:1: hubs.local.publishers.acme.fingerprint: unknown field `fingerprint`"
    )]
    #[case(
        "[hubs.local.witnesses]\nkeys = []\nquorum = 2\n",
        "3:1: hubs.local.witnesses.quorum: unknown field `quorum`"
    )]
    #[case(
        "[hubs.local.log]\nkey = \"k\"\ncheckpoint = \"c\"\nsize = 3\n",
        "4:1: hubs.local.log.size: unknown field `size`"
    )]
    #[case(
        "[hubs.local.agents.\"a/b\"]\nhighest = \"1.0.0\"\nlowest = \"0.1.0\"\n",
        "3:1: hubs.local.agents.a/b.lowest: unknown field `lowest`"
    )]
    #[case(
        "[hubs.local]\nmirror = \"x\"\n",
        "2:1: hubs.local.mirror: unknown field `mirror`"
    )]
    fn trust_store_fields_it_does_not_define_are_refused(
        #[case] text: &str,
        #[case] expected: &str,
    ) {
        let e = refused::<crate::trust::TrustStore>(text);
        assert!(e.starts_with(expected), "{e}");
    }

    #[rstest]
    #[case("user = \"a\"\n", "1:1: user: unknown field `user`")]
    #[case(
        "[hubs.local]\ntoken = \"ofc_x\"\nexpires = 3\n",
        "3:1: hubs.local.expires: unknown field `expires`"
    )]
    fn credentials_fields_it_does_not_define_are_refused(
        #[case] text: &str,
        #[case] expected: &str,
    ) {
        let e = refused::<crate::credentials::Credentials>(text);
        assert!(e.starts_with(expected), "{e}");
    }

    #[test]
    fn a_refused_file_is_named_with_the_line_and_field() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("trust.toml");
        std::fs::write(&path, "[hubs.local]\nmirror = \"x\"\n").unwrap();
        let e = read_toml::<crate::trust::TrustStore>(&path, "trust store", "fix it")
            .unwrap_err()
            .to_string();
        let line = format!(
            "{}:2:1: hubs.local.mirror: unknown field `mirror`",
            path.display()
        );
        assert!(
            e.contains("is not a valid trust store") && e.contains(&line),
            "{e}"
        );
    }

    #[test]
    fn home_puts_config_and_cache_under_it() {
        let p = Paths::under(Path::new("/x/home"));
        assert_eq!(p.config, Path::new("/x/home/config"));
        assert_eq!(p.cache, Path::new("/x/home/cache"));
        assert_eq!(
            p.secret_key_file("default"),
            Path::new("/x/home/config/keys/default.key")
        );
    }
}
