//! Deterministic packing: the same folder gives the same bytes whatever the file times, owners,
//! permissions or creation order; headers are normalised; special files are refused.

use std::fs;
use std::io::Read;
use std::path::Path;

use ofc_pkg::pack::{PackError, PackLimits, pack_dir};
use ofc_pkg::unpack::{UnpackLimits, unpack};

fn write(root: &Path, rel: &str, data: &[u8]) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, data).unwrap();
}

#[cfg(unix)]
fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// The same tree, created in a different order with different permissions and times.
fn make_tree(root: &Path, reversed: bool) {
    let mut files: Vec<(&str, &[u8])> = vec![
        ("agent.yaml", b"id: \"@demo\"\n"),
        ("src/main.py", b"print('hi')\n"),
        ("src/util/helpers.py", b"X = 1\n"),
        ("Zeta.txt", b"capital sorts first\n"),
        ("run.sh", b"#!/bin/sh\necho hi\n"),
        (".git/config", b"ignored"),
        ("target/debug/x", b"ignored"),
        ("node_modules/m/index.js", b"ignored"),
        (".ofc/logs/x.jsonl", b"ignored"),
        ("secrets.env", b"ignored by .ofcignore"),
        (".ofcignore", b"# local only\nsecrets.env\n"),
    ];
    if reversed {
        files.reverse();
    }
    for (rel, data) in files {
        write(root, rel, data);
    }
    fs::create_dir_all(root.join("empty")).unwrap();
    #[cfg(unix)]
    {
        chmod(&root.join("run.sh"), if reversed { 0o700 } else { 0o755 });
        chmod(
            &root.join("src/main.py"),
            if reversed { 0o600 } else { 0o664 },
        );
    }
}

#[test]
fn same_folder_same_digest_and_normalised_headers() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    make_tree(a.path(), false);
    make_tree(b.path(), true);
    let pa = pack_dir(a.path(), &PackLimits::default()).unwrap();
    let pb = pack_dir(b.path(), &PackLimits::default()).unwrap();
    assert_eq!(pa.digest, pb.digest);
    assert_eq!(pa.bytes, pb.bytes);
    // Packing twice gives the same bytes too.
    assert_eq!(
        pack_dir(a.path(), &PackLimits::default()).unwrap().bytes,
        pa.bytes
    );

    // gzip header: magic, deflate, no flags (so no file name), mtime 0, OS unknown.
    assert_eq!(&pa.bytes[..4], &[0x1f, 0x8b, 8, 0]);
    assert_eq!(&pa.bytes[4..8], &[0, 0, 0, 0]);
    assert_eq!(pa.bytes[9], 255);

    let mut tar_bytes = Vec::new();
    flate2::read::GzDecoder::new(&pa.bytes[..])
        .read_to_end(&mut tar_bytes)
        .unwrap();
    let mut archive = tar::Archive::new(&tar_bytes[..]);
    let mut seen = Vec::new();
    for e in archive.entries().unwrap() {
        let e = e.unwrap();
        let h = e.header();
        let path = String::from_utf8(e.path_bytes().into_owned()).unwrap();
        assert_eq!(h.mtime().unwrap(), 0, "{path}");
        assert_eq!(h.uid().unwrap(), 0, "{path}");
        assert_eq!(h.gid().unwrap(), 0, "{path}");
        assert_eq!(h.username().unwrap(), Some(""), "{path}");
        assert_eq!(h.groupname().unwrap(), Some(""), "{path}");
        let expected_mode = if h.entry_type().is_dir() || path == "run.sh" {
            0o755
        } else {
            0o644
        };
        assert_eq!(h.mode().unwrap(), expected_mode, "{path}");
        seen.push(path);
    }
    assert_eq!(
        seen,
        [
            ".ofcignore",
            "Zeta.txt",
            "agent.yaml",
            "empty/",
            "run.sh",
            "src/",
            "src/main.py",
            "src/util/",
            "src/util/helpers.py",
        ]
    );
    assert_eq!(pa.entries, seen);
}

/// The digest of a fixed tree, committed: a change to the packer that changes bytes shows up
/// here (and would change every published bundle's digest).
#[test]
fn packed_digest_is_stable() {
    let a = tempfile::tempdir().unwrap();
    make_tree(a.path(), false);
    let p = pack_dir(a.path(), &PackLimits::default()).unwrap();
    insta::assert_snapshot!(format!("{} {}", p.digest, p.bytes.len()));
}

#[test]
fn long_names_round_trip_through_unpack() {
    let a = tempfile::tempdir().unwrap();
    let long = format!("{}/{}.txt", "d".repeat(120), "f".repeat(120));
    write(a.path(), &long, b"long");
    write(a.path(), "agent.yaml", b"id: \"@x\"\n");
    let p = pack_dir(a.path(), &PackLimits::default()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let u = unpack(&p.bytes, out.path(), &UnpackLimits::default()).unwrap();
    assert_eq!(u.files, 2);
    assert_eq!(fs::read(out.path().join(&long)).unwrap(), b"long");
}

#[cfg(unix)]
#[test]
fn symlinks_and_fifos_are_refused_by_name() {
    let a = tempfile::tempdir().unwrap();
    write(a.path(), "agent.yaml", b"x");
    std::os::unix::fs::symlink("/etc/passwd", a.path().join("sub-link")).unwrap();
    let e = pack_dir(a.path(), &PackLimits::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "sub-link: a symlink cannot be packed; bundles hold only regular files and directories"
    );

    let b = tempfile::tempdir().unwrap();
    fs::create_dir(b.path().join("d")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(b.path().join("d/pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let e = pack_dir(b.path(), &PackLimits::default()).unwrap_err();
    assert!(
        matches!(&e, PackError::Unsupported { path, kind: "a fifo" } if path == "d/pipe"),
        "{e}"
    );
}

#[test]
fn limits_are_enforced() {
    let a = tempfile::tempdir().unwrap();
    write(a.path(), "a.bin", &[1u8; 100]);
    write(a.path(), "b.bin", &[2u8; 100]);
    write(a.path(), "c.bin", &[3u8; 100]);
    let e = pack_dir(
        a.path(),
        &PackLimits {
            max_file_bytes: 99,
            ..PackLimits::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "a.bin: 100 bytes is more than the 99-byte limit for one file"
    );
    let e = pack_dir(
        a.path(),
        &PackLimits {
            max_total_bytes: 250,
            ..PackLimits::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, PackError::TooLarge { limit: 250 }), "{e}");
    let e = pack_dir(
        a.path(),
        &PackLimits {
            max_entries: 2,
            ..PackLimits::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, PackError::TooManyEntries { limit: 2 }), "{e}");
    let e = pack_dir(
        a.path(),
        &PackLimits {
            max_bundle_bytes: 10,
            ..PackLimits::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, PackError::BundleTooLarge { .. }), "{e}");
}
