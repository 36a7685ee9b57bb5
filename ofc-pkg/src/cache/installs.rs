//! What the cache holds for the installer kinds: pip and npm environments and container
//! images — found, verified, removed and collected the way bundles are.

use std::fs;
use std::path::{Path, PathBuf};

use index_schema::manifest::Source;
use index_schema::name::Digest;

use super::layout::{self, ENV_MARKER, IMAGE_MARKER, NPM, PIP};
use super::{Cache, GcReport, Problem, Result, dir_size, hash_file, io_at, remove_entry_dir};

impl Cache {
    /// pip and npm environments: each must carry the marker written when it was complete; each
    /// downloaded pip file must still hash to the sha256 it is filed under.
    pub(crate) fn verify_environments(&self, checked: &mut usize, problems: &mut Vec<Problem>) {
        for envs in [PIP, NPM] {
            let Ok(rd) = fs::read_dir(envs.envs_dir(&self.root)) else {
                continue;
            };
            for e in rd.flatten() {
                *checked += 1;
                let marker = e.path().join(ENV_MARKER);
                let ok = fs::read(&marker)
                    .ok()
                    .is_some_and(|b| serde_json::from_slice::<serde_json::Value>(&b).is_ok());
                if !ok {
                    problems.push(Problem {
                        kind: "environment",
                        entry: e.path().display().to_string(),
                        reason: "its completion marker is missing or unreadable".into(),
                    });
                }
            }
        }
        let Ok(rd) = fs::read_dir(layout::pip_files_dir(&self.root)) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let expected = Digest::parse(&format!("sha256:{name}")).ok();
            for f in fs::read_dir(e.path()).into_iter().flatten().flatten() {
                if f.file_name().to_string_lossy().starts_with(".tmp") {
                    continue; // a download in progress
                }
                *checked += 1;
                let actual = fs::read(f.path()).ok().map(|b| Digest::of(&b));
                if expected.is_none() || actual != expected {
                    problems.push(Problem {
                        kind: "pip file",
                        entry: f.path().display().to_string(),
                        reason: format!("does not hash to the sha256 it is filed under ({name})"),
                    });
                }
            }
        }
    }

    /// The installed environment (pip or npm) or container image (docker) of a cached
    /// manifest: its kind, directory and whether it is complete.
    pub fn environment(&self, manifest: &Digest) -> Option<(&'static str, PathBuf, bool)> {
        if let Ok(m) = self.manifest(manifest)
            && let Source::Docker(d) = &m.manifest.source
        {
            let dir = self.image_dir(&d.digest()?);
            let complete = dir.join(IMAGE_MARKER).is_file();
            return Some(("docker", dir, complete));
        }
        for envs in [PIP, NPM] {
            let rec = envs.record_file(&self.root, manifest);
            let Ok(bytes) = fs::read(&rec) else { continue };
            let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
            let key = Digest::parse(v["key"].as_str()?).ok()?;
            let env = envs.env_dir(&self.root, &key);
            let complete = env.join(ENV_MARKER).is_file();
            return Some((envs.kind, env, complete));
        }
        None
    }

    pub(crate) fn image_dir(&self, digest: &Digest) -> PathBuf {
        layout::image_dir(&self.root, digest)
    }

    /// Removes a container image entry (damaged or not).
    pub fn remove_image(&self, digest: &Digest) -> Result<bool> {
        let _cache = self.lock_exclusive()?;
        let dir = self.image_dir(digest);
        if !dir.exists() {
            return Ok(false);
        }
        remove_entry_dir(&self.root, &dir)?;
        Ok(true)
    }

    /// The image digests the cached manifests pin.
    pub(crate) fn referenced_images(&self) -> Result<Vec<Digest>> {
        let mut out = Vec::new();
        for (_, d) in self.digests_in(&layout::manifests_dir(&self.root), ".json")? {
            if let Some(m) = d.and_then(|d| self.manifest(&d).ok())
                && let Source::Docker(dk) = m.manifest.source
                && let Some(img) = dk.digest()
            {
                out.push(img);
            }
        }
        Ok(out)
    }

    /// Checks one image layout: its marker names it, and every blob the marker lists is there
    /// with its size and hashes to its name.
    pub(crate) fn verify_image(&self, dir: &Path) -> std::result::Result<(), String> {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = fs::read(dir.join(IMAGE_MARKER))
            .map_err(|_| "its completion marker is missing".to_string())?;
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|_| "its completion marker is unreadable".to_string())?;
        let digest = v["digest"]
            .as_str()
            .and_then(|d| Digest::parse(d).ok())
            .ok_or("its completion marker names no digest")?;
        if digest.hex() != name {
            return Err(format!("its marker names another image ({digest})"));
        }
        for b in v["blobs"].as_array().into_iter().flatten() {
            let Some(d) = b[0].as_str().and_then(|d| Digest::parse(d).ok()) else {
                return Err("its marker lists an invalid blob".into());
            };
            let path = dir.join("blobs/sha256").join(d.hex());
            match hash_file(&path) {
                Ok((actual, size)) if actual == d && Some(size) == b[1].as_u64() => {}
                Ok((actual, _)) => return Err(format!("blob {d} hashes to {actual}")),
                Err(_) => return Err(format!("blob {d} is missing")),
            }
        }
        for f in ["index.json", "oci-layout"] {
            if !dir.join(f).is_file() {
                return Err(format!("its {f} is missing"));
            }
        }
        Ok(())
    }

    /// Images no cached manifest pins go (through `tmp-v1/`, like bundles).
    pub(crate) fn gc_images(&self, report: &mut GcReport) -> Result<()> {
        let used = self.referenced_images()?;
        let Ok(rd) = fs::read_dir(layout::images_dir(&self.root)) else {
            return Ok(());
        };
        for entry in rd.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let d = Digest::parse(&format!("sha256:{name}")).ok();
            if d.is_some_and(|d| used.contains(&d)) {
                continue;
            }
            let p = entry.path();
            report.bytes += dir_size(&p);
            remove_entry_dir(&self.root, &p)?;
            if let Some(d) = d {
                report.images.push(d);
            } else {
                report.temporaries += 1;
            }
        }
        Ok(())
    }

    /// pip: `pip-v1/by-manifest/<m>.json` records whose manifest is no longer cached go, then
    /// every environment (`envs/<key>`) and downloaded file (`files/<sha256>`) that no remaining
    /// record names. Entries are moved out through `tmp-v1/` like bundles.
    pub(crate) fn gc_pip(&self, report: &mut GcReport) -> Result<()> {
        let records = PIP.records_dir(&self.root);
        let mut keys = std::collections::HashSet::new();
        let mut files = std::collections::HashSet::new();
        for (name, d) in self.digests_in(&records, ".json")? {
            let path = records.join(&name);
            let kept = d.is_some_and(|d| self.manifest_file(&d).is_file());
            let rec: Option<serde_json::Value> = fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            match rec {
                Some(rec) if kept => {
                    if let Some(k) = rec["key"].as_str().and_then(|k| Digest::parse(k).ok()) {
                        keys.insert(k.hex());
                    }
                    for dist in rec["resolution"]["dists"].as_array().into_iter().flatten() {
                        if let Some(h) = dist["sha256"].as_str().and_then(|h| Digest::parse(h).ok())
                        {
                            files.insert(h.hex());
                        }
                    }
                }
                _ => {
                    fs::remove_file(&path).map_err(io_at(&path))?;
                }
            }
        }
        for (dir, used) in [
            (PIP.envs_dir(&self.root), &keys),
            (layout::pip_files_dir(&self.root), &files),
        ] {
            let Ok(rd) = fs::read_dir(&dir) else { continue };
            for entry in rd.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if used.contains(&name) {
                    continue;
                }
                let p = entry.path();
                report.bytes += dir_size(&p);
                remove_entry_dir(&self.root, &p)?;
                report.environments += 1;
            }
        }
        Ok(())
    }

    /// npm prefixes no cached manifest uses (`npm-v1/envs/<key>`), the records of manifests
    /// no longer cached, and npm's own download cache (`npm-v1/npm-cache`, which only speeds
    /// up a reinstall: every install checks the integrity the lock records).
    pub(crate) fn gc_npm(&self, report: &mut GcReport) -> Result<()> {
        let records = NPM.records_dir(&self.root);
        let mut keys = std::collections::HashSet::new();
        for (name, d) in self.digests_in(&records, ".json")? {
            let path = records.join(&name);
            let kept = d.is_some_and(|d| self.manifest_file(&d).is_file());
            let key = fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|rec| rec["key"].as_str().and_then(|k| Digest::parse(k).ok()));
            match key {
                Some(k) if kept => {
                    keys.insert(k.hex());
                }
                _ => fs::remove_file(&path).map_err(io_at(&path))?,
            }
        }
        if let Ok(rd) = fs::read_dir(NPM.envs_dir(&self.root)) {
            for entry in rd.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if keys.contains(&name) {
                    continue;
                }
                let p = entry.path();
                report.bytes += dir_size(&p);
                remove_entry_dir(&self.root, &p)?;
                report.environments += 1;
            }
        }
        let npm_cache = layout::npm_cache_dir(&self.root);
        if npm_cache.is_dir() {
            report.bytes += dir_size(&npm_cache);
            fs::remove_dir_all(&npm_cache).map_err(io_at(&npm_cache))?;
        }
        Ok(())
    }
}
