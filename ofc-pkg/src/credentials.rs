//! Hub credentials: `<config>/credentials.toml`, mode 0600, one token per hub URL.
//!
//! ```toml
//! # Written by `ofc login`. Keep this file private.
//! [hubs."http://127.0.0.1:8733"]
//! token = "ofc_…"
//! user = "alice"
//! ```
//!
//! `OFC_TOKEN` overrides the file for every hub. Tokens never appear in logs or output.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use secrecy::{ExposeSecret as _, SecretString};
use serde::{Deserialize, Serialize};

use crate::config::Paths;
use crate::hub_url::{HubUrl, same_hub};
use crate::output::UserError;

/// Environment variable holding an API token; wins over the credentials file.
pub const TOKEN_ENV: &str = "OFC_TOKEN";

/// The name of the credentials file inside the config directory.
pub const FILE_NAME: &str = "credentials.toml";

/// What is stored for one hub.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HubCredentials {
    /// The API token (`ofc_…`): zeroed when dropped, written to the file only by `save`.
    #[serde(serialize_with = "serialize_secret")]
    pub token: SecretString,
    /// Who the hub said the token belongs to, for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// `secrecy` deserializes a secret but never serializes one by itself: the credentials file is
/// the one place the token is written, so it is exposed here and nowhere else.
fn serialize_secret<S: serde::Serializer>(secret: &SecretString, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(secret.expose_secret())
}

impl PartialEq for HubCredentials {
    fn eq(&self, other: &Self) -> bool {
        self.token.expose_secret() == other.token.expose_secret() && self.user == other.user
    }
}

impl Eq for HubCredentials {}

impl std::fmt::Debug for HubCredentials {
    /// Never the token: a stray `{:?}` must not leak it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubCredentials")
            .field("token", &"<redacted>")
            .field("user", &self.user)
            .finish()
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// By hub URL (no trailing slash).
    #[serde(default)]
    pub hubs: BTreeMap<String, HubCredentials>,
}

/// Where the file lives.
pub fn file(paths: &Paths) -> PathBuf {
    paths.config.join(FILE_NAME)
}

impl Credentials {
    /// Reads the file; a missing file is empty.
    pub fn load(paths: &Paths) -> Result<Self> {
        crate::config::read_toml(
            &file(paths),
            "credentials file",
            "fix it, or remove it and run `ofc login` again",
        )
    }

    /// Writes the file atomically with mode 0600 (created that way, never widened).
    pub fn save(&self, paths: &Paths) -> Result<()> {
        let path = file(paths);
        let dir = path.parent().expect("credentials file has a parent");
        create_private_dir(dir)?;
        let mut text = String::from("# Written by `ofc login`. Keep this file private.\n");
        text.push_str(&toml::to_string(self).context("cannot encode credentials")?);
        crate::config::write_atomic(&path, text.as_bytes())?;
        // Created 0600 by the temp file; say so explicitly anyway.
        set_private(&path)
    }

    /// Runs `f` on the stored credentials under an exclusive lock (`credentials.lock`) and
    /// saves the result: two `ofc login`s at once never lose each other's entry.
    pub fn update<T>(paths: &Paths, f: impl FnOnce(&mut Credentials) -> Result<T>) -> Result<T> {
        create_private_dir(&paths.config)?;
        let lock = crate::config::lock_exclusive(&paths.config, "credentials.lock")?;
        let mut creds = Self::load(paths)?;
        let out = f(&mut creds)?;
        creds.save(paths)?;
        drop(lock);
        Ok(out)
    }

    /// Stores `entry` for `hub`, replacing whatever was stored under any form of its URL.
    pub fn set(&mut self, hub: &HubUrl, entry: HubCredentials) {
        self.remove(hub);
        self.hubs.insert(hub.to_string(), entry);
    }

    /// Forgets what is stored for `hub` (under any form of its URL); returns whether anything was.
    pub fn remove(&mut self, hub: &str) -> bool {
        let before = self.hubs.len();
        self.hubs.retain(|k, _| !same_hub(k, hub));
        self.hubs.len() != before
    }

    /// The token stored for `hub` (URLs compared in their normal form).
    pub fn token_for(&self, hub: &str) -> Option<&HubCredentials> {
        self.hubs.get(hub.trim_end_matches('/')).or_else(|| {
            self.hubs
                .iter()
                .find(|(k, _)| same_hub(k, hub))
                .map(|(_, v)| v)
        })
    }
}

/// Where a token came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    /// `OFC_TOKEN`.
    Env,
    /// The credentials file.
    File,
    /// Exchanged for a CI's OIDC ID token (`ofc publish --oidc`), for this run only.
    Exchanged,
}

/// The token to use for `hub`: `OFC_TOKEN`, else the credentials file.
pub fn token(paths: &Paths, hub: &HubUrl) -> Result<Option<(SecretString, TokenSource)>> {
    // OFC_TOKEN belongs to the hub OFC_HUB names; another hub (`--hub`, a host in a
    // reference) only ever gets the token stored for it.
    let configured = same_hub(hub, &crate::hub_url::from_env());
    if configured && let Some(t) = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()) {
        return Ok(Some((t.into(), TokenSource::Env)));
    }
    Ok(Credentials::load(paths)?
        .token_for(hub)
        .map(|c| (c.token.clone(), TokenSource::File)))
}

/// Creates `dir` (and parents) with mode 0700 for the last component.
pub fn create_private_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    #[cfg(not(unix))]
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(())
}

fn set_private(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(path, fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot restrict {}", path.display()))?;
    }
    Ok(())
}

/// Refuses a token that cannot be one (so a pasted password or URL is not stored).
pub fn check_token_shape(token: &str) -> Result<()> {
    if token.is_empty()
        || token.len() > 512
        || token.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        bail!(UserError::new("that does not look like an API token").hint(
            "create one on the hub (`POST /api/v1/tokens`) or log in with a user name and password"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_private_mode() {
        let home = tempfile::tempdir().unwrap();
        let paths = Paths::under(home.path());
        let mut c = Credentials::default();
        c.hubs.insert(
            "http://h:1".into(),
            HubCredentials {
                token: "ofc_x".into(),
                user: Some("u".into()),
            },
        );
        c.save(&paths).unwrap();
        assert_eq!(Credentials::load(&paths).unwrap(), c);
        assert_eq!(
            Credentials::load(&paths)
                .unwrap()
                .token_for("http://h:1/")
                .unwrap()
                .token
                .expose_secret(),
            "ofc_x"
        );
        let shown = format!("{:?}", c.hubs["http://h:1"]);
        assert!(
            !shown.contains("ofc_x") && shown.contains("<redacted>"),
            "{shown}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = fs::metadata(file(&paths)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_broken_file_names_itself() {
        let home = tempfile::tempdir().unwrap();
        let paths = Paths::under(home.path());
        fs::create_dir_all(&paths.config).unwrap();
        fs::write(file(&paths), "hubs = 3\n").unwrap();
        let e = Credentials::load(&paths).unwrap_err().to_string();
        assert!(e.contains("credentials.toml"), "{e}");
    }
}
