//! `npm`: a Node package and its dependencies, installed into a prefix of its own in the cache.
//!
//! npm resolves and installs `package@version` from the manifest's registry into a prefix staged
//! in `tmp-v1/`, with **install scripts off** (`--ignore-scripts`); npm checks every tarball
//! against the integrity the registry declares. ofc then reads the resulting
//! `package-lock.json`: every package must carry an integrity hash, the package's own must be
//! the publisher's signed pin (when the manifest has one) and, under `--locked`, the lock's; a
//! package that declares install scripts is refused unless the user opted in
//! (`--allow-install-scripts`, which then runs them with `npm rebuild`). The lock says what the
//! registry's metadata declares; the `package.json` packed in each tarball is what npm would
//! run, so it is read too, and scripts only it declares are refused the same way. The prefix is
//! keyed by the Node version and every package's integrity (agents with the same resolution
//! share it) and renamed into `npm-v1/envs/<key>` under a per-key file lock.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use async_trait::async_trait;
use index_schema::lockfile::LockedSource;
use index_schema::manifest::{NpmSource, Source as ManifestSource};
use index_schema::name::Digest;
use serde::{Deserialize, Serialize};

use super::kind::{Installed, Job, Source};
use crate::cache::layout::{self, ENV_MARKER as MARKER, NPM};
use crate::output::{UserError, truncate};
use crate::pull::context::Ctx;
use crate::start::Start;
use crate::supervisor::{SpawnError, output_supervised};

/// The registry used when the manifest names none.
const NPMJS: &str = "https://registry.npmjs.org/";

/// How long an install may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(600);

/// Most packages one agent may resolve to.
const MAX_PACKAGES: usize = 2000;

/// Largest `package-lock.json` read.
const MAX_LOCK_BYTES: u64 = 32 * 1024 * 1024;

/// Largest installed `package.json` read.
const MAX_PACKAGE_JSON_BYTES: u64 = 16 * 1024 * 1024;

/// The scripts npm runs when it installs a package.
const INSTALL_SCRIPTS: [&str; 3] = ["preinstall", "install", "postinstall"];

/// The `npm` kind.
pub(crate) struct Npm;

/// What npm resolved: the Node version and every package with its integrity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Resolution {
    node: String,
    /// `(node_modules path, version, integrity)`, sorted.
    packages: Vec<(String, String, String)>,
    /// The package's own integrity.
    integrity: String,
}

impl Resolution {
    fn key(&self) -> Digest {
        let mut t = format!("ofc-npm-env-v1\nnode {}\n", self.node);
        for (p, v, i) in &self.packages {
            t.push_str(&format!("{p} {v} {i}\n"));
        }
        Digest::of(t.as_bytes())
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Record {
    key: Digest,
    resolution: Resolution,
}

fn npm_source<'a>(job: &Job<'a>) -> &'a NpmSource {
    match &job.manifest.source {
        ManifestSource::Npm(n) => n,
        _ => unreachable!("the npm kind is only chosen for npm sources"),
    }
}

fn record_file(cx: &Ctx, manifest: &Digest) -> PathBuf {
    NPM.record_file(cx.cache.root(), manifest)
}

fn env_complete(dir: &Path, r: &Resolution) -> bool {
    fs::read(dir.join(MARKER))
        .ok()
        .and_then(|b| serde_json::from_slice::<Resolution>(&b).ok())
        .is_some_and(|m| &m == r)
}

fn locked_integrity<'a>(job: &Job<'a>) -> Option<&'a str> {
    match job.locked {
        Some(LockedSource::Npm { integrity, .. }) => Some(integrity),
        _ => None,
    }
}

fn locked_source(n: &NpmSource, r: &Resolution) -> LockedSource {
    LockedSource::Npm {
        package: n.package.clone(),
        version: n.version.clone(),
        integrity: r.integrity.clone(),
    }
}

#[async_trait]
impl Source for Npm {
    fn cached(&self, cx: &Ctx, job: &Job<'_>) -> Result<Result<Installed, String>> {
        let n = npm_source(job);
        let rec: Option<Record> = fs::read(record_file(cx, job.digest))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let Some(rec) = rec else {
            return Ok(Err("its npm prefix is not in the cache".into()));
        };
        if locked_integrity(job).is_some_and(|i| i != rec.resolution.integrity) {
            return Ok(Err(
                "the cached npm prefix is not the one ofc.lock records".into()
            ));
        }
        let dir = NPM.env_dir(cx.cache.root(), &rec.key);
        if !env_complete(&dir, &rec.resolution) {
            return Ok(Err(format!(
                "its npm prefix {} is missing or incomplete",
                dir.display()
            )));
        }
        let start = match start_of(&dir, n) {
            Ok(s) => s,
            Err(e) => return Ok(Err(format!("{e:#}"))),
        };
        Ok(Ok(Installed {
            source: locked_source(n, &rec.resolution),
            path: Some(dir),
            downloaded: 0,
            extracted: false,
            start,
        }))
    }

    async fn install(&self, cx: &Ctx, job: &Job<'_>) -> Result<Installed> {
        let n = npm_source(job);
        let spec = format!("{}@{}", n.package, n.version);
        let registry = n.registry.clone().unwrap_or_else(|| NPMJS.to_string());
        let node = node_version().await?;
        let stage = cx.cache.staging_dir()?;
        let prefix = stage.path().join("env");
        fs::create_dir_all(&prefix)?;
        fs::write(
            prefix.join("package.json"),
            br#"{"name":"ofc-agent-prefix","private":true}"#,
        )?;
        let npm_cache = layout::npm_cache_dir(cx.cache.root());
        let mut cmd = npm_command(&npm_cache, stage.path())?;
        cmd.arg("install")
            .arg("--prefix")
            .arg(&prefix)
            .args(["--registry", &registry])
            .args([
                "--ignore-scripts",
                "--save-exact",
                "--no-audit",
                "--no-fund",
            ])
            .args(["--no-update-notifier", "--loglevel=error", "--"])
            .arg(&spec);
        run(&mut cmd, "npm install").await.map_err(|e| {
            e.context(format!(
                "cannot install {spec} from {}",
                truncate(&registry, 120)
            ))
        })?;

        let resolution = read_lock(&prefix, n, &node, cx.opts.allow_install_scripts)?;
        if let Some(pin) = &n.integrity
            && pin != &resolution.integrity
        {
            bail!(
                UserError::new(format!(
                    "the registry {} serves {spec} with integrity {}, but the signed manifest of {} pins {pin}; nothing was installed",
                    truncate(&registry, 120),
                    truncate(&resolution.integrity, 100),
                    job.name
                ))
                .hint("the registry holds another tarball than the one the publisher signed; report it to the publisher")
            );
        }
        if cx.opts.locked
            && let Some(locked) = locked_integrity(job)
            && locked != resolution.integrity
        {
            bail!(
                UserError::new(format!(
                    "ofc.lock no longer matches: it records {spec} with integrity {}, the registry now serves {}; nothing was installed",
                    truncate(locked, 100),
                    truncate(&resolution.integrity, 100)
                ))
                .hint("run without --locked to update the lockfile")
            );
        }
        if cx.opts.allow_install_scripts {
            // npm reads its hidden lockfile instead of the installed `package.json` files when
            // it can, and that lockfile holds only what the registry's metadata declared:
            // without it, `npm rebuild` runs the scripts the packages themselves declare.
            let hidden = prefix.join("node_modules").join(".package-lock.json");
            if hidden.exists() {
                fs::remove_file(&hidden)
                    .with_context(|| format!("cannot remove {}", hidden.display()))?;
            }
            let mut cmd = npm_command(&npm_cache, stage.path())?;
            cmd.arg("rebuild")
                .arg("--prefix")
                .arg(&prefix)
                .args(["--no-update-notifier", "--loglevel=error"]);
            run(&mut cmd, "npm rebuild (install scripts)").await?;
        }

        let key = resolution.key();
        let dir = NPM.env_dir(cx.cache.root(), &key);
        let extracted = {
            let cache = cx.cache.clone();
            let _lock = tokio::task::spawn_blocking(move || cache.lock_install("npm-env", &key))
                .await
                .map_err(|e| anyhow!("{e}"))??;
            if env_complete(&dir, &resolution) {
                false
            } else {
                fs::write(prefix.join(MARKER), serde_json::to_vec_pretty(&resolution)?)?;
                let parent = dir.parent().expect("envs/<key> has a parent");
                fs::create_dir_all(parent)?;
                if dir.exists() {
                    let aside = cx.cache.staging_dir()?.keep();
                    fs::rename(&dir, aside.join("stale"))?;
                }
                fs::rename(&prefix, &dir)
                    .with_context(|| format!("cannot install {}", dir.display()))?;
                true
            }
        };
        let rec = Record {
            key,
            resolution: resolution.clone(),
        };
        let file = record_file(cx, job.digest);
        let parent = file.parent().expect("has a parent");
        fs::create_dir_all(parent)?;
        let mut tmp = tempfile::NamedTempFile::new_in(parent)?;
        tmp.write_all(&serde_json::to_vec(&rec)?)?;
        tmp.persist(&file).map_err(|e| e.error)?;
        let start = start_of(&dir, n)?;
        Ok(Installed {
            source: locked_source(n, &resolution),
            path: Some(dir),
            downloaded: 0,
            extracted,
            start,
        })
    }
}

/// `npm` with the user's configuration out of the way (empty user and global config files in
/// the staging dir, no `npm_config_*` variables) and ofc's own cache.
fn npm_command(cache: &Path, stage: &Path) -> Result<tokio::process::Command> {
    let user = stage.join("npmrc-user");
    let global = stage.join("npmrc-global");
    fs::write(&user, b"")?;
    fs::write(&global, b"")?;
    let mut cmd = tokio::process::Command::new("npm");
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.to_ascii_lowercase().starts_with("npm_config_") {
            cmd.env_remove(k.as_ref());
        }
    }
    cmd.env("npm_config_userconfig", &user)
        .env("npm_config_globalconfig", &global)
        .env("npm_config_cache", cache)
        .env("npm_config_update_notifier", "false")
        // A registry that is down fails in seconds, not after npm's minute-long backoff.
        .env("npm_config_fetch_retries", "1")
        .env("npm_config_fetch_retry_mintimeout", "1000")
        .env("npm_config_fetch_retry_maxtimeout", "5000");
    Ok(cmd)
}

/// Runs `cmd` to completion (bounded by [`STEP_TIMEOUT`]). npm runs in a process group of its
/// own, registered with a supervisor (`ofc __supervise`, see [`Supervisor`]): `ofc` killed with
/// SIGKILL runs no code, and without it the `npm install` it started would go on, orphaned,
/// writing into a staging dir that `ofc gc` takes to be abandoned.
async fn run(cmd: &mut tokio::process::Command, what: &str) -> Result<Vec<u8>> {
    let out = match output_supervised(cmd, STEP_TIMEOUT).await {
        Err(SpawnError::Spawn(e)) => {
            return Err(anyhow!(e).context(
                UserError::new(format!("cannot start {what}"))
                    .hint("npm agents need Node.js and npm on PATH"),
            ));
        }
        Err(e) => return Err(anyhow!(e)),
        Ok(None) => bail!("{what} took longer than {}s", STEP_TIMEOUT.as_secs()),
        Ok(Some(out)) => out?,
    };
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let err: String = err
            .trim()
            .chars()
            .rev()
            .take(2000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .map(|c| if c.is_control() && c != '\n' { '?' } else { c })
            .collect();
        bail!("{what} failed ({}): {err}", out.status);
    }
    Ok(out.stdout)
}

async fn node_version() -> Result<String> {
    let out = run(
        tokio::process::Command::new("node").arg("--version"),
        "node --version",
    )
    .await?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

#[derive(Deserialize)]
struct LockFile {
    #[serde(default)]
    packages: serde_json::Map<String, serde_json::Value>,
}

/// Reads npm's `package-lock.json`: every package with its integrity; install scripts refused
/// unless allowed.
fn read_lock(prefix: &Path, n: &NpmSource, node: &str, allow_scripts: bool) -> Result<Resolution> {
    let path = prefix.join("package-lock.json");
    let meta = fs::metadata(&path).context("npm wrote no package-lock.json")?;
    if meta.len() > MAX_LOCK_BYTES {
        bail!(
            "package-lock.json is {} bytes, more than {MAX_LOCK_BYTES}",
            meta.len()
        );
    }
    let lock: LockFile =
        serde_json::from_slice(&fs::read(&path)?).context("cannot read npm's package-lock.json")?;
    if lock.packages.len() > MAX_PACKAGES {
        bail!(
            "{}@{} resolves to {} packages, more than the {MAX_PACKAGES} accepted",
            n.package,
            n.version,
            lock.packages.len()
        );
    }
    let own_path = format!("node_modules/{}", n.package);
    let mut packages = Vec::new();
    let mut own = None;
    let mut scripted = Vec::new();
    for (p, v) in &lock.packages {
        if p.is_empty() {
            continue; // the prefix itself
        }
        let version = v["version"].as_str().unwrap_or_default().to_string();
        let Some(integrity) = v["integrity"].as_str() else {
            bail!(
                UserError::new(format!(
                    "npm resolved {} without an integrity hash; refusing a package that cannot be checked",
                    truncate(p, 120)
                ))
                .hint("the registry must publish `dist.integrity` for every tarball")
            );
        };
        let shown = p.trim_start_matches("node_modules/");
        if v["hasInstallScript"].as_bool() == Some(true) {
            scripted.push(truncate(shown, 80));
        } else {
            let packed = packed_install_scripts(prefix, p)?;
            if !packed.is_empty() {
                scripted.push(format!(
                    "{} (`{}` in its packed package.json, which the registry's metadata does not show)",
                    truncate(shown, 80),
                    packed.join("`, `")
                ));
            }
        }
        if p == &own_path {
            if version != n.version.to_string() {
                bail!(
                    "npm installed {} {}, not the {} the manifest names",
                    n.package,
                    truncate(&version, 40),
                    n.version
                );
            }
            own = Some(integrity.to_string());
        }
        packages.push((p.clone(), version, integrity.to_string()));
    }
    if !scripted.is_empty() && !allow_scripts {
        bail!(
            UserError::new(format!(
                "{} declare{} install scripts, which run code from the package at install time; refused, and they did not run",
                scripted.join(", "),
                if scripted.len() == 1 { "s" } else { "" }
            ))
            .hint("if you trust them, pass --allow-install-scripts")
        );
    }
    packages.sort();
    let integrity =
        own.ok_or_else(|| anyhow!("npm's lock does not contain {} itself", n.package))?;
    Ok(Resolution {
        node: node.to_string(),
        packages,
        integrity,
    })
}

/// The install scripts the package installed at `prefix/<path>` declares in its own
/// `package.json` (the one packed in its tarball, which npm runs whatever the registry's
/// metadata says): `preinstall`, `install`, `postinstall`, and the `node-gyp rebuild` npm runs
/// for a `binding.gyp` without an install script.
fn packed_install_scripts(prefix: &Path, path: &str) -> Result<Vec<&'static str>> {
    let rel = Path::new(path);
    if !rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        bail!(
            "npm's lock names a package at `{}`, outside its prefix",
            truncate(path, 120)
        );
    }
    let dir = prefix.join(rel);
    let file = dir.join("package.json");
    let Ok(meta) = fs::metadata(&file) else {
        // Not installed here (an optional package for another platform): nothing runs.
        return Ok(Vec::new());
    };
    if meta.len() > MAX_PACKAGE_JSON_BYTES {
        bail!(
            "{} is {} bytes, more than {MAX_PACKAGE_JSON_BYTES}",
            file.display(),
            meta.len()
        );
    }
    let pj: serde_json::Value = serde_json::from_slice(&fs::read(&file)?)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let mut found: Vec<&'static str> = INSTALL_SCRIPTS
        .into_iter()
        .filter(|s| !pj["scripts"][*s].is_null())
        .collect();
    if !found.iter().any(|s| *s != "postinstall") && dir.join("binding.gyp").is_file() {
        found.push("binding.gyp");
    }
    Ok(found)
}

/// `node <bin file>` for the package's bin named in the manifest.
fn start_of(prefix: &Path, n: &NpmSource) -> Result<Start> {
    let pkg_dir = prefix.join("node_modules").join(&n.package);
    let pj: serde_json::Value = serde_json::from_slice(
        &fs::read(pkg_dir.join("package.json"))
            .with_context(|| format!("{} has no package.json", pkg_dir.display()))?,
    )?;
    let rel = match &pj["bin"] {
        serde_json::Value::String(s) => {
            let short = n.package.rsplit('/').next().unwrap_or(&n.package);
            (n.bin == short).then(|| s.clone())
        }
        serde_json::Value::Object(m) => m.get(&n.bin).and_then(|v| v.as_str()).map(String::from),
        _ => None,
    }
    .ok_or_else(|| {
        anyhow!(
            UserError::new(format!(
                "{} has no bin named `{}`",
                n.package,
                truncate(&n.bin, 60)
            ))
            .hint("the manifest's bin must be one of the package's `bin` entries")
        )
    })?;
    let rel_path = Path::new(&rel);
    if rel_path.is_absolute()
        || rel_path
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        bail!(
            "the bin `{}` of {} leaves the package",
            truncate(&rel, 80),
            n.package
        );
    }
    Ok(Start::Process {
        program: which("node").unwrap_or_else(|| PathBuf::from("node")),
        args: vec![pkg_dir.join(rel_path).display().to_string()],
        env: Vec::new(),
        cwd: prefix.to_path_buf(),
    })
}

fn which(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|p| p.join(name))
        .find(|p| p.is_file())
}
