//! `pip`: a Python package and its dependencies, installed into an isolated environment in the
//! cache.
//!
//! 1. **Resolve once.** pip resolves `package==version` against the manifest's index
//!    (`pip install --dry-run --report`), wheels only unless the user passed `--allow-sdist`
//!    (building an sdist runs the package's code). The report names every distribution, the
//!    file chosen and its sha256.
//! 2. **Verify.** The package's own file must hash to the publisher's signed pin, when the
//!    manifest has one; under `--locked` the set of hashes must be the lock's.
//! 3. **Fetch.** Each file is downloaded by ofc into `pip-v1/files/<sha256>/`, hashed while it
//!    streams and refused unless it matches the resolution.
//!    ofc's own downloads are held to the rate floor of [`crate::transfer`].
//! 4. **Install.** The environment is keyed by what was resolved (interpreter version and every
//!    file's hash), so agents with the same resolution share it. It is built in `tmp-v1/`
//!    (`python3 -m venv --without-pip`, then `uv pip install` when uv is on PATH, else
//!    `pip --python`), from the verified files only (`--no-index --no-deps --require-hashes`),
//!    checked (exactly the resolved distributions, none installing over the agent's own files),
//!    made to work at its final path (its console scripts run on their own, see [`relocate`]),
//!    and renamed into `pip-v1/envs/<key>` when complete, under a per-key file lock.
//! 5. **Start.** The environment's interpreter, isolated (`-I`), calls the entry point, which
//!    is taken from the agent's own distribution (see [`installed`]).

use std::collections::BTreeSet;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use async_trait::async_trait;
use index_schema::lockfile::LockedSource;
use index_schema::manifest::{PipSource, Source as ManifestSource};
use index_schema::name::Digest;
use serde::{Deserialize, Serialize};

use super::kind::{Installed, Job, Source};
use crate::cache::layout::{self, PIP};
use crate::output::{UserError, truncate};
use crate::pull::context::Ctx;
use crate::transfer::{MIN_RATE_ENV, RateFloor, Stalled};

mod build;
mod installed;
mod python;
mod relocate;
mod resolution;

use installed::start_of;
use python::{Python, ToolFailed, run};
use resolution::{Dist, MARKER, Resolution, normalize};

/// The index used when the manifest names none.
const PYPI: &str = "https://pypi.org/simple";

/// Most distributions one agent may resolve to.
const MAX_DISTS: usize = 500;

/// Largest pip report read.
const MAX_REPORT_BYTES: u64 = 8 * 1024 * 1024;

/// Largest single distribution file downloaded.
const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;

/// The `pip` kind.
pub(crate) struct Pip;

/// `pip-v1/by-manifest/<hex>.json`: which environment a signed manifest installed.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    key: Digest,
    resolution: Resolution,
}

fn pip_source<'a>(job: &Job<'a>) -> &'a PipSource {
    match &job.manifest.source {
        ManifestSource::Pip(p) => p,
        _ => unreachable!("the pip kind is only chosen for pip sources"),
    }
}

fn env_dir(cx: &Ctx, key: &Digest) -> PathBuf {
    PIP.env_dir(cx.cache.root(), key)
}

fn record_file(cx: &Ctx, manifest: &Digest) -> PathBuf {
    PIP.record_file(cx.cache.root(), manifest)
}

fn read_record(cx: &Ctx, manifest: &Digest) -> Option<Record> {
    let bytes = fs::read(record_file(cx, manifest)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The environment for `key` is complete (its marker names the same resolution) and its
/// interpreter is still there.
fn env_complete(dir: &Path, r: &Resolution) -> bool {
    let Ok(bytes) = fs::read(dir.join(MARKER)) else {
        return false;
    };
    serde_json::from_slice::<Resolution>(&bytes).is_ok_and(|m| &m == r)
        && dir.join("bin").join("python").exists()
}

fn locked_source(p: &PipSource, r: &Resolution) -> LockedSource {
    LockedSource::Pip {
        package: p.package.clone(),
        version: p.version.clone(),
        index: p.index.clone(),
        hashes: r.hashes().into_iter().collect(),
        python: Some(r.python.clone()),
    }
}

/// The lock's hashes, when it has a pip entry.
fn locked_hashes(job: &Job<'_>) -> Option<BTreeSet<Digest>> {
    match job.locked {
        Some(LockedSource::Pip { hashes, .. }) => Some(hashes.iter().copied().collect()),
        _ => None,
    }
}

#[async_trait]
impl Source for Pip {
    fn cached(&self, cx: &Ctx, job: &Job<'_>) -> Result<Result<Installed, String>> {
        let p = pip_source(job);
        let Some(rec) = read_record(cx, job.digest) else {
            return Ok(Err("its Python environment is not in the cache".into()));
        };
        if rec.key != rec.resolution.key() {
            return Ok(Err(
                "its Python environment was built by an older ofc, whose console scripts do not run on their own"
                    .into(),
            ));
        }
        if let Some(locked) = locked_hashes(job)
            && locked != rec.resolution.hashes()
        {
            return Ok(Err(
                "the cached Python environment is not the one ofc.lock records".into(),
            ));
        }
        let dir = env_dir(cx, &rec.key);
        if !env_complete(&dir, &rec.resolution) {
            return Ok(Err(format!(
                "its Python environment {} is missing or incomplete",
                dir.display()
            )));
        }
        let start = match start_of(&dir, p) {
            Ok(s) => s,
            Err(e) => return Ok(Err(format!("{e:#}"))),
        };
        Ok(Ok(Installed {
            source: locked_source(p, &rec.resolution),
            path: Some(dir),
            downloaded: 0,
            extracted: false,
            start,
        }))
    }

    async fn install(&self, cx: &Ctx, job: &Job<'_>) -> Result<Installed> {
        let p = pip_source(job);
        let what = format!("{}=={}", p.package, p.version);
        let python = Python::find().await?;
        let index = p.index.clone().unwrap_or_else(|| PYPI.to_string());
        let resolution = resolve(&python, &index, p, cx.opts.allow_sdist).await?;

        // The publisher's pin: the package's own file, whatever the index serves.
        let own = own_dist(&resolution, p)?;
        if let Some(pin) = p.sha256
            && own.sha256 != pin
        {
            bail!(
                UserError::new(format!(
                    "the index {} serves {} ({}) with sha256 {}, but the signed manifest of {} pins {pin}; nothing was installed",
                    truncate(&index, 120),
                    what,
                    truncate(&own.filename, 120),
                    own.sha256,
                    job.name
                ))
                .hint("the index holds another file than the one the publisher signed: it was replaced or the index is compromised; report it to the publisher")
            );
        }
        if cx.opts.locked
            && let Some(locked) = locked_hashes(job)
        {
            let now = resolution.hashes();
            if locked != now {
                let added = now.difference(&locked).count();
                let gone = locked.difference(&now).count();
                bail!(
                    UserError::new(format!(
                        "ofc.lock no longer matches what {} resolves for {}: {added} file(s) not in the lock, {gone} locked file(s) no longer chosen; nothing was installed",
                        truncate(&index, 120),
                        what
                    ))
                    .hint("run without --locked to resolve again and update the lockfile")
                );
            }
        }

        let mut downloaded = 0;
        let mut files = Vec::new();
        for d in &resolution.dists {
            let (path, n) = fetch_file(cx, job, d).await?;
            downloaded += n;
            files.push((path, d.sha256));
        }

        let key = resolution.key();
        let dir = env_dir(cx, &key);
        let extracted = {
            let cache = cx.cache.clone();
            let _lock = tokio::task::spawn_blocking(move || cache.lock_install("pip-env", &key))
                .await
                .map_err(|e| anyhow!("{e}"))??;
            if env_complete(&dir, &resolution) {
                false
            } else {
                build::build_env(cx, &python, &files, &resolution, p, &dir).await?;
                true
            }
        };
        let start = start_of(&dir, p)?;
        write_record(
            cx,
            job.digest,
            &Record {
                key,
                resolution: resolution.clone(),
            },
        )?;
        Ok(Installed {
            source: locked_source(p, &resolution),
            path: Some(dir),
            downloaded,
            extracted,
            start,
        })
    }
}

#[derive(Deserialize)]
struct Report {
    #[serde(default)]
    install: Vec<ReportItem>,
}

#[derive(Deserialize)]
struct ReportItem {
    download_info: DownloadInfo,
    metadata: ReportMetadata,
}

#[derive(Deserialize)]
struct DownloadInfo {
    url: String,
    #[serde(default)]
    archive_info: Option<ArchiveInfo>,
}

#[derive(Deserialize)]
struct ArchiveInfo {
    #[serde(default)]
    hashes: Option<std::collections::HashMap<String, String>>,
}

#[derive(Deserialize)]
struct ReportMetadata {
    name: String,
    version: String,
}

/// Resolves the whole dependency set once, with pip's resolver, without installing anything.
async fn resolve(
    python: &Python,
    index: &str,
    p: &PipSource,
    allow_sdist: bool,
) -> Result<Resolution> {
    let tmp = tempfile::tempdir().context("cannot create a temporary directory")?;
    let report_path = tmp.path().join("report.json");
    let requirement = format!("{}=={}", p.package, p.version);
    let mut cmd = tokio::process::Command::new(&python.exe);
    cmd.args([
        "-I",
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--ignore-installed",
    ])
    .args(["--quiet", "--no-input", "--index-url", index, "--report"])
    .arg(&report_path);
    if !allow_sdist {
        cmd.args(["--only-binary", ":all:"]);
    }
    cmd.arg("--").arg(&requirement);
    if let Err(e) = run(&mut cmd, "pip (resolving)").await {
        let failed = e.downcast_ref::<ToolFailed>();
        let no_wheel = failed.is_some_and(|f| {
            f.stderr.contains("No matching distribution")
                || f.stderr.contains("from versions: none")
        });
        let mut u = UserError::new(format!(
            "cannot resolve {requirement} from {}",
            truncate(index, 120)
        ));
        if no_wheel && !allow_sdist {
            u = u
                .hint(format!(
                    "ofc installs wheels only: {requirement} or one of its dependencies may have only a source distribution, and building one runs code from the package"
                ))
                .hint("if you trust it, pass --allow-sdist");
        }
        return Err(crate::output::explain(e, u));
    }
    let meta = fs::metadata(&report_path).context("pip wrote no report")?;
    if meta.len() > MAX_REPORT_BYTES {
        bail!(
            "pip's report is {} bytes, more than {MAX_REPORT_BYTES}",
            meta.len()
        );
    }
    let report: Report = serde_json::from_slice(&fs::read(&report_path)?)
        .context("cannot read pip's installation report")?;
    if report.install.len() > MAX_DISTS {
        bail!(
            "{requirement} resolves to {} distributions, more than the {MAX_DISTS} accepted",
            report.install.len()
        );
    }
    let mut dists = Vec::new();
    for item in report.install {
        let name = normalize(&item.metadata.name);
        let url = item.download_info.url;
        let sha = item
            .download_info
            .archive_info
            .and_then(|a| a.hashes)
            .and_then(|h| h.get("sha256").cloned())
            .ok_or_else(|| {
                anyhow!(
                    UserError::new(format!(
                        "the index gave no sha256 for {name} {}; refusing to install a file that cannot be checked",
                        truncate(&item.metadata.version, 40)
                    ))
                    .hint("use an index that publishes file hashes (PEP 503 `#sha256=` links)")
                )
            })?;
        let sha256 = Digest::parse(&format!("sha256:{sha}"))
            .map_err(|e| anyhow!("pip reported an invalid sha256 for {name}: {e}"))?;
        let filename = file_name(&url)?;
        let wheel = filename.ends_with(".whl");
        if !wheel && !allow_sdist {
            bail!(
                UserError::new(format!(
                    "{name} {} is only available as a source distribution ({}); building it runs code from the package, so it was refused",
                    truncate(&item.metadata.version, 40),
                    truncate(&filename, 120)
                ))
                .hint("if you trust it, pass --allow-sdist")
            );
        }
        dists.push(Dist {
            name,
            version: item.metadata.version,
            sha256,
            url,
            filename,
        });
    }
    dists.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Resolution {
        python: python.version.clone(),
        dists,
    })
}

/// The file name at the end of a distribution URL; refused unless it is a plain archive name.
fn file_name(url: &str) -> Result<String> {
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://")) {
        bail!(
            "pip resolved a distribution at `{}`, not an http(s) URL; refusing it",
            truncate(url, 120)
        );
    }
    let path = url.split(['#', '?']).next().unwrap_or_default();
    let name = path.rsplit('/').next().unwrap_or_default();
    let ok = !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '!'))
        && [".whl", ".tar.gz", ".zip"]
            .iter()
            .any(|e| name.ends_with(e));
    if !ok {
        bail!(
            "pip resolved a distribution file named `{}`, which is not a wheel or source archive name; refusing it",
            truncate(name, 120)
        );
    }
    Ok(name.to_string())
}

fn own_dist<'a>(r: &'a Resolution, p: &PipSource) -> Result<&'a Dist> {
    let want = normalize(&p.package);
    let version: Option<pep440_rs::Version> = p.version.parse().ok();
    r.dists
        .iter()
        .find(|d| d.name == want && d.version.parse::<pep440_rs::Version>().ok() == version)
        .ok_or_else(|| {
            anyhow!(
                "pip's resolution does not contain {}=={} itself",
                p.package,
                p.version
            )
        })
}

/// Downloads one distribution file into `pip-v1/files/<sha256>/<name>`, refusing any byte
/// stream that does not hash to the resolution's sha256. Returns the path and bytes fetched.
async fn fetch_file(cx: &Ctx, job: &Job<'_>, d: &Dist) -> Result<(PathBuf, u64)> {
    let dir = layout::pip_files_dir(cx.cache.root()).join(d.sha256.hex());
    let path = dir.join(&d.filename);
    // A damaged file is fetched again below, replacing it.
    if let Ok(bytes) = fs::read(&path)
        && Digest::of(&bytes) == d.sha256
    {
        return Ok((path, 0));
    }
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let url = truncate(&d.url, 160);
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    let mut h = <sha2::Sha256 as sha2::Digest>::new();
    let mut n: u64 = 0;
    // The floor's first window covers the request too: an index slow to answer is as stalled
    // as one slow to send.
    let mut floor = RateFloor::from_env()?;
    let mut resp = None;
    loop {
        let piece = floor
            .next(async {
                let r = match &mut resp {
                    Some(r) => r,
                    None => {
                        let r = job
                            .hub
                            .http()
                            .get(&d.url)
                            .send()
                            .await
                            .with_context(|| format!("cannot download {url}"))?;
                        if !r.status().is_success() {
                            bail!("{url} answered {}", r.status());
                        }
                        resp.insert(r)
                    }
                };
                r.chunk()
                    .await
                    .with_context(|| format!("downloading {url}"))
            })
            .await;
        let chunk = match piece {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(Stalled::Transport(e)) => return Err(e),
            Err(Stalled::TooSlow {
                got,
                window,
                min_rate,
            }) => bail!(
                UserError::new(format!(
                    "the index sent {url} at {} bytes/s over the last {} s ({n} bytes so far), below the minimum of {min_rate} bytes/s; gave up, nothing was installed",
                    got / window.as_secs().max(1),
                    window.as_secs()
                ))
                .hint(format!("the index or a proxy is stalling the download; retry later, or lower {MIN_RATE_ENV} (0 turns the floor off)"))
            ),
        };
        n += chunk.len() as u64;
        if n > MAX_FILE_BYTES {
            bail!("{url} is more than {MAX_FILE_BYTES} bytes; refusing it");
        }
        sha2::Digest::update(&mut h, &chunk);
        tmp.write_all(&chunk)?;
    }
    let actual = Digest::from_bytes(sha2::Digest::finalize(h).into());
    if actual != d.sha256 {
        bail!(
            UserError::new(format!(
                "{} hashes to {actual}, but the resolution said {}; nothing was installed",
                truncate(&d.url, 160),
                d.sha256
            ))
            .hint("the index changed the file while it was being installed, or something altered it in transit")
        );
    }
    tmp.persist(&path).map_err(|e| e.error)?;
    Ok((path, n))
}

fn write_record(cx: &Ctx, manifest: &Digest, rec: &Record) -> Result<()> {
    let file = record_file(cx, manifest);
    let dir = file.parent().expect("has a parent");
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(&serde_json::to_vec(rec)?)?;
    tmp.persist(&file).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_normalize_as_pep_503_says() {
        assert_eq!(normalize("Ofc_Echo.Agent"), "ofc-echo-agent");
        assert_eq!(normalize("a--b__c"), "a-b-c");
    }

    #[test]
    fn file_names_are_plain_archives_over_http() {
        assert_eq!(
            file_name("http://127.0.0.1:1/packages/x-1.0-py3-none-any.whl#sha256=00").unwrap(),
            "x-1.0-py3-none-any.whl"
        );
        for bad in [
            "file:///etc/passwd.whl",
            "http://h/../x",
            "http://h/x.exe",
            "http://h/.whl",
            "http://h/a%2f..whl",
        ] {
            assert!(file_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_key_ignores_urls_but_not_hashes() {
        let d = |url: &str, b: u8| Dist {
            name: "x".into(),
            version: "1.0".into(),
            sha256: Digest::from_bytes([b; 32]),
            url: url.into(),
            filename: "x-1.0-py3-none-any.whl".into(),
        };
        let r = |dists| Resolution {
            python: "3.11.7".into(),
            dists,
        };
        assert_eq!(
            r(vec![d("http://a", 1)]).key(),
            r(vec![d("http://b", 1)]).key()
        );
        assert_ne!(
            r(vec![d("http://a", 1)]).key(),
            r(vec![d("http://a", 2)]).key()
        );
    }
}
