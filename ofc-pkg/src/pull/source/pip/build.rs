//! Building an environment: `python3 -m venv --without-pip` in `tmp-v1/`, the verified files
//! installed into it (`uv pip install` when uv is on PATH, else `pip --python`) with
//! `--no-index --no-deps --require-hashes`, the result checked (exactly the resolved
//! distributions, none installing over the agent's own files, the entry point declared by the
//! agent's own distribution), made to work at its final path
//! ([`super::relocate`]), its marker written last, and renamed into `pip-v1/envs/<key>`.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use index_schema::manifest::PipSource;
use index_schema::name::Digest;

use super::installed;
use super::python::{INSTALLER_ENV, Python, run};
use super::relocate;
use super::resolution::{MARKER, Resolution};
use crate::pull::context::Ctx;

/// Builds the environment in `tmp-v1/` from the verified files and renames it to `dir`.
pub(crate) async fn build_env(
    cx: &Ctx,
    python: &Python,
    files: &[(PathBuf, Digest)],
    resolution: &Resolution,
    p: &PipSource,
    dir: &Path,
) -> Result<()> {
    let allow_sdist = cx.opts.allow_sdist;
    let stage = cx.cache.staging_dir()?;
    let env = stage.path().join("env");
    run(
        tokio::process::Command::new(&python.exe)
            .args(["-I", "-m", "venv", "--without-pip"])
            .arg(&env),
        "python3 -m venv",
    )
    .await?;
    let mut req = String::new();
    for (path, sha) in files {
        req.push_str(&format!("{} --hash=sha256:{}\n", path.display(), sha.hex()));
    }
    let req_file = stage.path().join("requirements.txt");
    fs::write(&req_file, req)?;
    let env_python = env.join("bin").join("python");
    let mut cmd;
    let what;
    if use_uv() {
        cmd = tokio::process::Command::new("uv");
        cmd.args(["pip", "install", "--quiet", "--offline", "--python"])
            .arg(&env_python);
        what = "uv pip install";
    } else {
        cmd = tokio::process::Command::new(&python.exe);
        cmd.args(["-I", "-m", "pip", "--python"])
            .arg(&env_python)
            .args(["install", "--quiet", "--no-input"]);
        what = "pip install";
    }
    cmd.args(["--no-index", "--no-deps", "--require-hashes"]);
    if !allow_sdist {
        cmd.args(["--only-binary", ":all:"]);
    }
    cmd.arg("-r").arg(&req_file);
    run(&mut cmd, what).await?;
    installed::check(&env, resolution, p)?;
    // An entry point the agent's own distribution does not declare fails here, before
    // anything is in place.
    installed::start_of(&env, p)?;
    relocate::relocate(&env, dir)?;
    fs::write(env.join(MARKER), serde_json::to_vec_pretty(resolution)?)?;
    let parent = dir.parent().expect("envs/<key> has a parent");
    fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    if dir.exists() {
        // An incomplete or stale environment (its marker did not match): set it aside.
        let aside = cx.cache.staging_dir()?.keep();
        fs::rename(dir, aside.join("stale"))
            .with_context(|| format!("cannot move {} aside", dir.display()))?;
    }
    fs::rename(&env, dir).with_context(|| format!("cannot install {}", dir.display()))?;
    Ok(())
}

/// uv when forced by [`INSTALLER_ENV`] or found on PATH.
fn use_uv() -> bool {
    match std::env::var(INSTALLER_ENV).as_deref() {
        Ok("uv") => true,
        Ok("pip") => false,
        _ => std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join("uv").is_file())),
    }
}
