//! What a built environment holds, read from the installers' own records: each distribution's
//! `.dist-info` directory (the name and version its `METADATA` gives, the files its `RECORD`
//! lists, the console scripts its `entry_points.txt` declares).
//!
//! The agent's entry point is taken from the agent's own distribution only, and an environment
//! in which another distribution installed one of the agent's own files (a module, a console
//! script, its metadata) is refused: a dependency must not be able to take the agent over.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use index_schema::manifest::PipSource;

use super::resolution::{Resolution, normalize};
use crate::output::{UserError, truncate};
use crate::start::Start;

/// Largest `METADATA`, `RECORD` or `entry_points.txt` read.
const MAX_META_BYTES: u64 = 16 * 1024 * 1024;

/// Most colliding files named in an error.
const MAX_SHOWN: usize = 5;

/// One installed distribution.
#[derive(Debug, Clone)]
pub(crate) struct InstalledDist {
    /// Its `.dist-info` directory.
    pub dir: PathBuf,
    /// Normalized name (PEP 503), from `METADATA`.
    pub name: String,
    /// Version, from `METADATA`.
    pub version: String,
}

fn read_capped(path: &Path) -> Result<String> {
    let len = fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if len > MAX_META_BYTES {
        bail!(
            "{} is {len} bytes, more than {MAX_META_BYTES}",
            path.display()
        );
    }
    fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// The one `lib/python3.X/site-packages` of `env`.
pub(crate) fn site_packages(env: &Path) -> Result<PathBuf> {
    let lib = env.join("lib");
    let mut found = Vec::new();
    for e in fs::read_dir(&lib).with_context(|| format!("cannot read {}", lib.display()))? {
        let site = e?.path().join("site-packages");
        if site.is_dir() {
            found.push(site);
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        n => bail!(
            "the environment {} has {n} site-packages directories, not one",
            env.display()
        ),
    }
}

/// Every `.dist-info` directory of `site`, with the name and version its `METADATA` gives.
pub(crate) fn installed(site: &Path) -> Result<Vec<InstalledDist>> {
    let mut out = Vec::new();
    for e in fs::read_dir(site).with_context(|| format!("cannot read {}", site.display()))? {
        let dir = e?.path();
        if dir.extension().is_none_or(|x| x != "dist-info") || !dir.is_dir() {
            continue;
        }
        let meta = read_capped(&dir.join("METADATA"))?;
        let (mut name, mut version) = (None, None);
        // The headers end at the first empty line; the description follows.
        for line in meta.lines().take_while(|l| !l.trim().is_empty()) {
            if let Some((k, v)) = line.split_once(':') {
                if k.trim().eq_ignore_ascii_case("name") {
                    name.get_or_insert_with(|| normalize(v.trim()));
                } else if k.trim().eq_ignore_ascii_case("version") {
                    version.get_or_insert_with(|| v.trim().to_string());
                }
            }
        }
        let (Some(name), Some(version)) = (name, version) else {
            bail!("{} names no distribution and version", dir.display());
        };
        out.push(InstalledDist { dir, name, version });
    }
    out.sort_by(|a, b| a.dir.cmp(&b.dir));
    Ok(out)
}

/// `a` and `b` are the same PEP 440 version (`1.0` and `1.0.0` are).
fn same_version(a: &str, b: &str) -> bool {
    match (
        a.parse::<pep440_rs::Version>(),
        b.parse::<pep440_rs::Version>(),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The installed distribution `package` `version`.
fn find<'a>(dists: &'a [InstalledDist], package: &str, version: &str) -> Option<&'a InstalledDist> {
    let want = normalize(package);
    dists
        .iter()
        .find(|d| d.name == want && same_version(&d.version, version))
}

/// `rel` resolved against `base` by its components alone (`..` pops one).
pub(crate) fn lexical(base: &Path, rel: &str) -> Option<PathBuf> {
    let rel = Path::new(rel);
    let mut out = if rel.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    for c in rel.components() {
        match c {
            Component::Normal(x) => out.push(x),
            Component::CurDir | Component::RootDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// The path field of a `RECORD` line (CSV: quoted when it holds a comma or a quote), unquoted,
/// and the rest of the line after its comma.
pub(crate) fn split_record_line(line: &str) -> Option<(String, &str, &str)> {
    if let Some(rest) = line.strip_prefix('"') {
        let mut path = String::new();
        let mut chars = rest.char_indices();
        while let Some((i, c)) = chars.next() {
            if c != '"' {
                path.push(c);
                continue;
            }
            if rest[i + 1..].starts_with('"') {
                path.push('"');
                chars.next();
                continue;
            }
            let after = &rest[i + 1..];
            let tail = after.strip_prefix(',')?;
            return Some((path, &line[..i + 2], tail));
        }
        None
    } else {
        let (path, tail) = line.split_once(',')?;
        Some((path.to_string(), path, tail))
    }
}

/// The files `d`'s `RECORD` lists, resolved against site-packages (without touching the
/// filesystem).
pub(crate) fn record(site: &Path, d: &InstalledDist) -> Result<Vec<PathBuf>> {
    let text = read_capped(&d.dir.join("RECORD"))?;
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (path, _, _) = split_record_line(line).ok_or_else(|| {
            anyhow!(
                "{} has an unreadable line `{}`",
                d.dir.join("RECORD").display(),
                truncate(line, 120)
            )
        })?;
        let path = lexical(site, &path).ok_or_else(|| {
            anyhow!(
                "{} lists a path outside the filesystem: `{}`",
                d.dir.join("RECORD").display(),
                truncate(&path, 120)
            )
        })?;
        out.push(path);
    }
    Ok(out)
}

/// Refuses an environment that does not hold exactly the resolved distributions (a wheel that
/// ships another distribution's `.dist-info` could pass for it), or in which a dependency
/// installed a file of the agent's own distribution `p` (its modules, its console scripts, its
/// metadata): installers let the last wheel written win, so a dependency could replace the
/// agent's code or entry point.
pub(crate) fn check(env: &Path, resolution: &Resolution, p: &PipSource) -> Result<()> {
    let site = site_packages(env)?;
    let dists = installed(&site)?;
    for d in &dists {
        if !resolution
            .dists
            .iter()
            .any(|r| r.name == d.name && same_version(&r.version, &d.version))
        {
            bail!(
                UserError::new(format!(
                    "the environment of {}=={} holds the metadata of {} {}, which was not resolved: one of the wheels ships another distribution's `.dist-info`; nothing was installed",
                    p.package,
                    p.version,
                    truncate(&d.name, 80),
                    truncate(&d.version, 40)
                ))
                .hint(format!("report it to the publisher of {}", p.package))
            );
        }
    }
    for r in &resolution.dists {
        let n = dists
            .iter()
            .filter(|d| d.name == r.name && same_version(&d.version, &r.version))
            .count();
        if n != 1 {
            bail!(
                "the environment holds {n} installations of {} {}, not one",
                r.name,
                r.version
            );
        }
    }
    let own = find(&dists, &p.package, &p.version)
        .ok_or_else(|| anyhow!("{}=={} was not installed", p.package, p.version))?;
    let own_files: BTreeSet<PathBuf> = record(&site, own)?.into_iter().collect();
    let mut collisions = Vec::new();
    for d in dists.iter().filter(|d| d.dir != own.dir) {
        for path in record(&site, d)? {
            if own_files.contains(&path) || path.starts_with(&own.dir) {
                let shown = path.strip_prefix(env).unwrap_or(&path);
                collisions.push((d, shown.display().to_string()));
            }
        }
    }
    if let Some((dep, _)) = collisions.first() {
        let files: Vec<String> = collisions
            .iter()
            .take(MAX_SHOWN)
            .map(|(d, f)| format!("{} ({} {})", truncate(f, 120), d.name, d.version))
            .collect();
        bail!(
            UserError::new(format!(
                "{} file(s) of {}=={} itself are also installed by a dependency: {}{}; the wheel written last wins, so a dependency could replace the agent's code or entry point; nothing was installed",
                collisions.len(),
                p.package,
                p.version,
                files.join(", "),
                if collisions.len() > MAX_SHOWN { ", …" } else { "" }
            ))
            .hint(format!(
                "report it to the publisher of {}: its dependency {} {} collides with it",
                p.package, dep.name, dep.version
            ))
        );
    }
    Ok(())
}

/// The `[console_scripts]` of a distribution: `(name, module:function)`.
fn console_scripts(d: &InstalledDist) -> Result<Vec<(String, String)>> {
    let file = d.dir.join("entry_points.txt");
    if !file.exists() {
        return Ok(Vec::new());
    }
    let text = read_capped(&file)?;
    let mut out = Vec::new();
    let mut in_scripts = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_scripts = line == "[console_scripts]";
        } else if in_scripts
            && !line.starts_with(['#', ';'])
            && let Some((k, v)) = line.split_once('=')
        {
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    Ok(out)
}

/// The `module:function` of the console script `name` that the agent's own distribution `p`
/// declares; another distribution declaring one of that name does not count.
fn console_script(env: &Path, p: &PipSource, name: &str) -> Result<String> {
    let dists = installed(&site_packages(env)?)?;
    let own = find(&dists, &p.package, &p.version).ok_or_else(|| {
        anyhow!(
            "{}=={} is not installed in {}",
            p.package,
            p.version,
            env.display()
        )
    })?;
    if let Some((_, target)) = console_scripts(own)?.into_iter().find(|(k, _)| k == name) {
        return Ok(target);
    }
    let mut u = UserError::new(format!(
        "{} {} declares no console script `{}`",
        p.package,
        p.version,
        truncate(name, 80)
    ));
    for d in dists.iter().filter(|d| d.dir != own.dir) {
        if console_scripts(d)?.iter().any(|(k, _)| k == name) {
            u = u.hint(format!(
                "its dependency {} {} declares one, but an agent's entry point is taken from the agent's own distribution only",
                d.name, d.version
            ));
        }
    }
    bail!(u.hint(
        "the manifest's entryPoint must name a console script of the package, or be `module:function`"
    ))
}

/// How the environment's interpreter runs the entry point of `p` (`module:function`, or a
/// console script of the package itself).
pub(crate) fn start_of(env: &Path, p: &PipSource) -> Result<Start> {
    let entry = p.entry_point.as_str();
    let target = if entry.contains(':') {
        entry.to_string()
    } else {
        console_script(env, p, entry)?
    };
    let target = target.split('[').next().unwrap_or_default().trim();
    let (module, attr) = target.split_once(':').ok_or_else(|| {
        anyhow!(
            "entry point `{}` is not `module:function`",
            truncate(target, 80)
        )
    })?;
    let (module, attr) = (module.trim(), attr.trim());
    let dotted = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|part| {
                let mut c = part.chars();
                c.next()
                    .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
                    && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
            })
    };
    if !dotted(module) || !dotted(attr) {
        bail!(
            "entry point `{}` is not `module:function` made of Python identifiers",
            truncate(target, 80)
        );
    }
    let first = attr.split('.').next().unwrap_or(attr);
    Ok(Start::Process {
        program: env.join("bin").join("python"),
        // Isolated: no PYTHONPATH, no user site-packages, nothing from the working directory.
        args: vec![
            "-I".into(),
            "-c".into(),
            format!("import sys; from {module} import {first}; sys.exit({attr}())"),
        ],
        env: Vec::new(),
        cwd: env.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::resolution::Dist;
    use super::*;
    use index_schema::name::Digest;

    fn source(entry: &str) -> PipSource {
        PipSource {
            package: "Ofc_Agent".into(),
            version: "1.0".into(),
            index: None,
            entry_point: entry.into(),
            sha256: None,
        }
    }

    #[test]
    fn entry_points_must_be_identifiers() {
        let env = tempfile::tempdir().unwrap();
        let s = start_of(env.path(), &source("pkg.server:main")).unwrap();
        let Start::Process { args, .. } = s else {
            panic!("not a process")
        };
        assert_eq!(
            args[2],
            "import sys; from pkg.server import main; sys.exit(main())"
        );
        for bad in ["os:system('x')", "a;b:c", "m:", ":f", "m:f()"] {
            assert!(start_of(env.path(), &source(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn record_lines_split_on_the_csv_path_field() {
        assert_eq!(
            split_record_line("a/b.py,sha256=x,3"),
            Some(("a/b.py".into(), "a/b.py", "sha256=x,3"))
        );
        assert_eq!(
            split_record_line("\"a,\"\"b\"\".py\",sha256=x,3"),
            Some(("a,\"b\".py".into(), "\"a,\"\"b\"\".py\"", "sha256=x,3"))
        );
        assert_eq!(split_record_line("\"unclosed,x"), None);
        let site = Path::new("/e/lib/python3.11/site-packages");
        assert_eq!(
            lexical(site, "../../../bin/x").unwrap(),
            Path::new("/e/bin/x")
        );
        assert_eq!(lexical(site, "./a/../b").unwrap(), site.join("b"));
    }

    /// A site-packages with the agent `ofc-agent` and a dependency `dep`, whose RECORDs list
    /// `agent` and `dep` files.
    fn env_with(
        agent: &[&str],
        agent_scripts: &str,
        dep: &[&str],
        dep_scripts: &str,
    ) -> tempfile::TempDir {
        let env = tempfile::tempdir().unwrap();
        let site = env.path().join("lib/python3.11/site-packages");
        for (dist, files, scripts) in [
            ("ofc_agent-1.0.0", agent, agent_scripts),
            ("dep-2.0", dep, dep_scripts),
        ] {
            let info = site.join(format!("{dist}.dist-info"));
            fs::create_dir_all(&info).unwrap();
            let (name, version) = dist.split_once('-').unwrap();
            fs::write(
                info.join("METADATA"),
                format!(
                    "Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nName: not-this\n"
                ),
            )
            .unwrap();
            let mut record: Vec<String> = files.iter().map(|f| format!("{f},sha256=x,1")).collect();
            record.push(format!("{dist}.dist-info/RECORD,,"));
            fs::write(info.join("RECORD"), record.join("\n")).unwrap();
            if !scripts.is_empty() {
                fs::write(info.join("entry_points.txt"), scripts).unwrap();
            }
        }
        env
    }

    fn resolution() -> Resolution {
        let d = |name: &str, version: &str| Dist {
            name: name.into(),
            version: version.into(),
            sha256: Digest::from_bytes([0; 32]),
            url: String::new(),
            filename: String::new(),
        };
        Resolution {
            python: "3.11.7".into(),
            dists: vec![d("dep", "2.0"), d("ofc-agent", "1.0.0")],
        }
    }

    #[test]
    fn the_entry_point_comes_from_the_agents_own_distribution() {
        let agent_scripts = "[console_scripts]\nofc-agent = ofc_agent.server:main\n";
        let dep_scripts = "[console_scripts]\nofc-agent = dep:main\ndep-tool = dep:tool\n";
        let env = env_with(
            &["ofc_agent/server.py", "../../../bin/ofc-agent"],
            agent_scripts,
            &["dep/__init__.py", "../../../bin/dep-tool"],
            dep_scripts,
        );
        check(env.path(), &resolution(), &source("ofc-agent")).unwrap();
        let Start::Process { args, .. } = start_of(env.path(), &source("ofc-agent")).unwrap()
        else {
            panic!("not a process")
        };
        assert!(
            args[2].contains("from ofc_agent.server import main"),
            "{args:?}"
        );
        // A script only a dependency declares is not the agent's.
        let e = start_of(env.path(), &source("dep-tool")).unwrap_err();
        let shown = format!("{e:#} {:?}", crate::output::hints_of(&e));
        assert!(
            shown.contains("declares no console script `dep-tool`"),
            "{shown}"
        );
        assert!(
            shown.contains("its dependency dep 2.0 declares one"),
            "{shown}"
        );
    }

    #[test]
    fn a_dependency_installing_over_the_agents_files_is_refused() {
        for (dep_files, named) in [
            (&["../../../bin/ofc-agent"][..], "bin/ofc-agent"),
            (&["ofc_agent/server.py"][..], "ofc_agent/server.py"),
            (
                &["ofc_agent-1.0.0.dist-info/entry_points.txt"][..],
                "ofc_agent-1.0.0.dist-info/entry_points.txt",
            ),
        ] {
            let env = env_with(
                &["ofc_agent/server.py", "../../../bin/ofc-agent"],
                "",
                dep_files,
                "",
            );
            let e = check(env.path(), &resolution(), &source("ofc-agent")).unwrap_err();
            let shown = format!("{e:#}");
            assert!(
                shown.contains(named) && shown.contains("(dep 2.0)"),
                "{shown}"
            );
        }
        // A distribution nobody resolved (a wheel shipping a second `.dist-info`).
        let env = env_with(&["ofc_agent/server.py"], "", &["dep/x.py"], "");
        let mut r = resolution();
        r.dists.retain(|d| d.name != "dep");
        let e = check(env.path(), &r, &source("ofc-agent")).unwrap_err();
        assert!(format!("{e:#}").contains("which was not resolved"), "{e:#}");
    }
}
