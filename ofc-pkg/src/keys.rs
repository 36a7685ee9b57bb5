//! Signing keys on disk: `<config>/keys/<name>.key` (the secret, mode 0600, never printed) and
//! `<name>.pub` (the public key text).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use index_schema::envelope::{PublicKey, SecretKey};

use crate::config::Paths;
use crate::output::UserError;

/// The key used when `--key`/`--name` is not given.
pub const DEFAULT_KEY: &str = "default";

/// Checks a key name: 1–64 of `a-z`, `0-9`, `-`, `_`, starting with a letter or digit. Key names
/// become file names, so nothing else is allowed.
pub fn check_key_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    if !ok {
        bail!(
            UserError::new(format!("invalid key name `{name}`"))
                .hint("use 1-64 lowercase letters, digits, `-` or `_`, e.g. `--name work`")
        );
    }
    Ok(())
}

/// A key written by [`generate`].
#[derive(Debug)]
pub struct GeneratedKey {
    /// The public key.
    pub public: PublicKey,
    /// The secret key file.
    pub secret_file: PathBuf,
    /// The public key file.
    pub public_file: PathBuf,
}

/// Generates a key called `name` and writes it. Refuses to replace an existing key unless
/// `force`. The secret file is created with mode 0600 before any byte is written to it (a
/// temporary file made with 0600, then renamed), so it is never readable by others.
pub fn generate(paths: &Paths, name: &str, force: bool) -> Result<GeneratedKey> {
    check_key_name(name)?;
    let dir = paths.keys_dir();
    create_private_dir(&dir)?;
    let secret_file = paths.secret_key_file(name);
    let public_file = paths.public_key_file(name);
    if !force && (secret_file.exists() || public_file.exists()) {
        bail!(
            UserError::new(format!(
                "a key called `{name}` already exists at {}",
                secret_file.display()
            ))
            .hint(
                "pass `--force` to replace it (anything signed with the old key stays signed by it)"
            )
            .hint("or pick another name with `--name`")
        );
    }
    let key = SecretKey::generate(&mut rand_core::OsRng);
    let public = key.public_key();

    // tempfile creates files with mode 0600 on Unix.
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-key-")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot create a file in {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    let mut text = key.to_secret_text();
    text.push('\n');
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    let persisted = if force {
        tmp.persist(&secret_file).map_err(|e| e.error)
    } else {
        // Never replace a key another process wrote meanwhile.
        tmp.persist_noclobber(&secret_file).map_err(|e| e.error)
    };
    persisted.with_context(|| format!("cannot write {}", secret_file.display()))?;

    fs::write(&public_file, format!("{public}\n"))
        .with_context(|| format!("cannot write {}", public_file.display()))?;
    Ok(GeneratedKey {
        public,
        secret_file,
        public_file,
    })
}

/// Loads the secret key called `name`. Refuses a key file others can read.
pub fn load(paths: &Paths, name: &str) -> Result<SecretKey> {
    check_key_name(name)?;
    let file = paths.secret_key_file(name);
    let text = match fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let hint = if name == DEFAULT_KEY {
                "create one with `ofc keygen`".to_string()
            } else {
                format!("create one with `ofc keygen --name {name}`")
            };
            bail!(
                UserError::new(format!(
                    "no signing key `{name}` ({} not found)",
                    file.display()
                ))
                .hint(hint)
            );
        }
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read {}", file.display()));
        }
    };
    check_private(&file)?;
    SecretKey::from_secret_text(&text)
        .with_context(|| format!("{} is not an ofc secret key", file.display()))
}

#[cfg(unix)]
fn check_private(file: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(file)?.permissions().mode();
    if mode & 0o077 != 0 {
        bail!(
            UserError::new(format!(
                "{} is readable by other users (mode {:o})",
                file.display(),
                mode & 0o777
            ))
            .hint(format!("run `chmod 600 {}`", file.display()))
        );
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_file: &Path) -> Result<()> {
    Ok(())
}

/// Creates `dir` (and parents) with mode 0700 for the last component.
fn create_private_dir(dir: &Path) -> Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}
