//! Environments that work where they end up. An installer writes the path of the environment
//! it installs into into the console scripts (`#!<env>/bin/python`, or for a long path
//! `#!/bin/sh` and `'''exec' '<env>/bin/python' "$0" "$@"`) and into the activation scripts;
//! ofc builds each environment in `tmp-v1/` and renames it into `pip-v1/envs/` once complete, so
//! those paths would name a directory that is gone. Before the rename, every console script
//! gets the header `uv venv --relocatable` writes (the script finds the interpreter next to
//! itself, wherever the environment is), every other file that names the build directory the
//! final path, and the `RECORD` that lists a rewritten file its new hash and size. A file that
//! names the build directory and cannot be rewritten fails the install.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use sha2::Digest as _;

use super::installed::{installed, lexical, record, site_packages, split_record_line};
use crate::output::truncate;

/// The first line of a relocatable console script, then `'<interpreter>'`, its argument if it
/// has one, and [`TAIL`].
const HEAD: &str = "#!/bin/sh\n'''exec' \"$(dirname -- \"$(realpath -- \"$0\")\")\"/";
const TAIL: &str = " \"$0\" \"$@\"\n' '''\n";

/// Makes the environment built at `build` work at `dest` (see the module documentation).
pub(crate) fn relocate(build: &Path, dest: &Path) -> Result<()> {
    // The installers may have written the build path as given or with its symlinks resolved.
    let mut names = vec![build.to_path_buf()];
    if let Ok(real) = fs::canonicalize(build)
        && real != build
    {
        names.push(real);
    }
    let bin = build.join("bin");
    let mut rewritten = BTreeMap::new();
    for e in fs::read_dir(&bin).with_context(|| format!("cannot read {}", bin.display()))? {
        let path = e?.path();
        let meta = fs::symlink_metadata(&path)?;
        if meta.is_symlink() {
            // The interpreter's links point at the base interpreter, or next to themselves.
            let target = fs::read_link(&path)?;
            if let Some(rest) = names.iter().find_map(|n| target.strip_prefix(n).ok()) {
                fs::remove_file(&path)?;
                std::os::unix::fs::symlink(dest.join(rest), &path)?;
            }
            continue;
        }
        if !meta.is_file() {
            continue;
        }
        let bytes = fs::read(&path)?;
        if let Some(new) = relocated(&bytes, &names, build, dest, &path)? {
            fs::write(&path, &new)?;
            rewritten.insert(path, new);
        }
    }
    let cfg = build.join("pyvenv.cfg");
    let bytes = fs::read(&cfg).with_context(|| format!("cannot read {}", cfg.display()))?;
    if let Some(new) = relocated(&bytes, &names, build, dest, &cfg)? {
        fs::write(&cfg, new)?;
    }
    if !rewritten.is_empty() {
        fix_records(build, &rewritten)?;
    }
    Ok(())
}

/// The new content of the file at `path`, when it names the build directory.
fn relocated(
    bytes: &[u8],
    names: &[PathBuf],
    build: &Path,
    dest: &Path,
    path: &Path,
) -> Result<Option<Vec<u8>>> {
    let names_build = |b: &[u8]| {
        names.iter().any(|n| {
            let n = n.as_os_str().as_encoded_bytes();
            b.windows(n.len()).any(|w| w == n)
        })
    };
    if !names_build(bytes) {
        return Ok(None);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| {
        anyhow!(
            "{} names the build directory {} and is not text; the environment cannot be moved into place",
            path.display(),
            build.display()
        )
    })?;
    let new = match launcher(text, names)? {
        Some((interpreter, arg, body)) => {
            let mut s = format!("{HEAD}'{interpreter}'");
            if let Some(arg) = arg {
                s.push_str(&format!(" '{arg}'"));
            }
            s.push_str(TAIL);
            s.push_str(body);
            s
        }
        None => {
            let mut s = text.to_string();
            for n in names {
                s = s.replace(&*n.to_string_lossy(), &dest.to_string_lossy());
            }
            s
        }
    };
    if names_build(new.as_bytes()) {
        bail!(
            "{} still names the build directory {} once rewritten",
            path.display(),
            build.display()
        );
    }
    Ok(Some(new.into_bytes()))
}

/// The first line of `s` (without its newline) and the rest.
fn split_line(s: &str) -> (&str, &str) {
    s.split_once('\n').unwrap_or((s, ""))
}

/// A console script whose interpreter is in the build's `bin/`: the interpreter's file name,
/// its argument (the kernel passes what follows the interpreter as one), and the script after
/// its header.
fn launcher<'a>(
    text: &'a str,
    names: &[PathBuf],
) -> Result<Option<(&'a str, Option<&'a str>, &'a str)>> {
    let Some(first) = text.strip_prefix("#!") else {
        return Ok(None);
    };
    let (l1, rest) = split_line(first);
    let (command, body) = if l1.trim_end() == "/bin/sh" {
        // `#!/bin/sh` + `'''exec' <interpreter> "$0" "$@"` + `' '''`: pip and uv write this
        // for a path too long for the kernel's limit on `#!` lines.
        let (l2, rest) = split_line(rest);
        let (l3, body) = split_line(rest);
        let Some(command) = l2
            .strip_prefix("'''exec' ")
            .and_then(|c| c.strip_suffix(" \"$0\" \"$@\""))
        else {
            return Ok(None);
        };
        if l3.trim_end() != "' '''" {
            return Ok(None);
        }
        (command, body)
    } else {
        (l1, rest)
    };
    let command = command.trim();
    let (program, arg) = match command.strip_prefix('\'') {
        Some(quoted) => match quoted.split_once('\'') {
            Some((p, a)) => (p, a.trim()),
            None => return Ok(None),
        },
        None => command
            .split_once([' ', '\t'])
            .map_or((command, ""), |(p, a)| (p, a.trim())),
    };
    let Some(interpreter) = names.iter().find_map(|n| {
        Path::new(program)
            .strip_prefix(n.join("bin"))
            .ok()
            .and_then(|rel| rel.to_str())
    }) else {
        return Ok(None);
    };
    let plain = |s: &str| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.=+,:/".contains(c))
    };
    if interpreter.is_empty() || interpreter.contains('/') || !plain(interpreter) || !plain(arg) {
        bail!(
            "a console script starts with `#!{}`, which ofc cannot make relocatable",
            truncate(command, 200)
        );
    }
    Ok(Some((interpreter, (!arg.is_empty()).then_some(arg), body)))
}

/// The `RECORD` hash of `bytes`: `sha256=` and the URL-safe base64 of the digest, unpadded.
fn record_hash(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let digest = sha2::Sha256::digest(bytes);
    let mut out = String::from("sha256=");
    for chunk in digest.chunks(3) {
        let mut n = 0u32;
        for (i, b) in chunk.iter().enumerate() {
            n |= u32::from(*b) << (16 - 8 * i);
        }
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// Gives the `RECORD` lines of the rewritten files their new hash and size.
fn fix_records(build: &Path, rewritten: &BTreeMap<PathBuf, Vec<u8>>) -> Result<()> {
    let site = site_packages(build)?;
    for d in installed(&site)? {
        if !record(&site, &d)?
            .iter()
            .any(|path| rewritten.contains_key(path))
        {
            continue;
        }
        let file = d.dir.join("RECORD");
        let text = fs::read_to_string(&file)?;
        let mut out = String::with_capacity(text.len());
        for line in text.lines() {
            let new = split_record_line(line).and_then(|(path, field, _)| {
                let bytes = rewritten.get(&lexical(&site, &path)?)?;
                Some(format!("{field},{},{}", record_hash(bytes), bytes.len()))
            });
            out.push_str(new.as_deref().unwrap_or(line));
            out.push('\n');
        }
        fs::write(&file, out).with_context(|| format!("cannot write {}", file.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_hashes_are_urlsafe_base64_without_padding() {
        // From a RECORD uv wrote: the INSTALLER file holds `uv`.
        assert_eq!(
            record_hash(b"uv"),
            "sha256=5hhM4Q4mYTT9z6QB6PGpUAW81PGNFrYrdXMj4oM_6ak"
        );
        assert_eq!(
            record_hash(b""),
            "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
    }

    /// A built environment at `<tmp>/build/env` whose console scripts name it the ways pip and
    /// uv write them.
    fn built() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let env = tmp.path().join("build/env");
        let site = env.join("lib/python3.11/site-packages");
        let info = site.join("tool-1.0.dist-info");
        fs::create_dir_all(&info).unwrap();
        fs::create_dir_all(env.join("bin")).unwrap();
        let e = env.display();
        let body = "import sys\nfrom tool import main\nsys.exit(main())\n";
        fs::write(env.join("bin/short"), format!("#!{e}/bin/python\n{body}")).unwrap();
        fs::write(
            env.join("bin/long"),
            format!("#!/bin/sh\n'''exec' '{e}/bin/python' \"$0\" \"$@\"\n' '''\n{body}"),
        )
        .unwrap();
        fs::write(
            env.join("bin/flagged"),
            format!("#!{e}/bin/python3.11 -E\n{body}"),
        )
        .unwrap();
        fs::write(env.join("bin/other"), "#!/usr/bin/env bash\necho hi\n").unwrap();
        std::os::unix::fs::symlink("/usr/bin/python3", env.join("bin/python")).unwrap();
        std::os::unix::fs::symlink(env.join("bin/python"), env.join("bin/python3")).unwrap();
        fs::write(env.join("bin/activate"), format!("VIRTUAL_ENV=\"{e}\"\n")).unwrap();
        fs::write(
            env.join("pyvenv.cfg"),
            format!("home = /usr/bin\ncommand = /usr/bin/python3 -m venv {e}\n"),
        )
        .unwrap();
        fs::write(info.join("METADATA"), "Name: tool\nVersion: 1.0\n").unwrap();
        fs::write(
            info.join("RECORD"),
            "../../../bin/short,sha256=old,1\n\"../../../bin/long\",sha256=old,2\ntool/__init__.py,sha256=keep,3\ntool-1.0.dist-info/RECORD,,\n",
        )
        .unwrap();
        (tmp, env)
    }

    #[test]
    fn scripts_find_their_interpreter_wherever_the_environment_is() {
        let (tmp, env) = built();
        let dest = tmp.path().join("envs/key");
        relocate(&env, &dest).unwrap();
        let read = |f: &str| fs::read_to_string(env.join(f)).unwrap();
        let body = "import sys\nfrom tool import main\nsys.exit(main())\n";
        assert_eq!(read("bin/short"), format!("{HEAD}'python'{TAIL}{body}"));
        assert_eq!(read("bin/long"), format!("{HEAD}'python'{TAIL}{body}"));
        assert_eq!(
            read("bin/flagged"),
            format!("{HEAD}'python3.11' '-E'{TAIL}{body}")
        );
        assert_eq!(read("bin/other"), "#!/usr/bin/env bash\necho hi\n");
        let link = |f: &str| fs::read_link(env.join(f)).unwrap();
        assert_eq!(link("bin/python"), Path::new("/usr/bin/python3"));
        assert_eq!(link("bin/python3"), dest.join("bin/python"));
        assert_eq!(
            read("bin/activate"),
            format!("VIRTUAL_ENV=\"{}\"\n", dest.display())
        );
        assert!(read("pyvenv.cfg").contains(&format!("venv {}\n", dest.display())));
        let record = read("lib/python3.11/site-packages/tool-1.0.dist-info/RECORD");
        let short = format!("{HEAD}'python'{TAIL}{body}");
        assert_eq!(
            record,
            format!(
                "../../../bin/short,{h},{n}\n\"../../../bin/long\",{h},{n}\ntool/__init__.py,sha256=keep,3\ntool-1.0.dist-info/RECORD,,\n",
                h = record_hash(short.as_bytes()),
                n = short.len()
            )
        );
    }

    #[test]
    fn a_binary_naming_the_build_directory_fails_the_install() {
        let (tmp, env) = built();
        let mut bytes = vec![0xff, 0xfe, 0];
        bytes.extend_from_slice(env.as_os_str().as_encoded_bytes());
        fs::write(env.join("bin/native"), bytes).unwrap();
        let e = relocate(&env, &tmp.path().join("envs/key")).unwrap_err();
        assert!(format!("{e:#}").contains("is not text"), "{e:#}");
    }
}
