//! The pull side against a hostile peer: a corpus of malicious bundles, generated here and
//! committed under `tests/fixtures/hostile/`, each of which must be refused with an error naming
//! the entry, without writing anything outside the destination directory.
//!
//! Regenerate the corpus with `OFC_BLESS=1 cargo test -p ofc-pkg --test client_unpack`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::{Compression, GzBuilder};
use ofc_pkg::unpack::{UnpackError, UnpackLimits, unpack};

/// A raw ustar header; written by hand so the corpus can hold what well-behaved tar writers
/// refuse to produce (`..`, absolute names, lying sizes).
fn header(name: &[u8], typeflag: u8, size: u64, link: &[u8]) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name);
    h[100..108].copy_from_slice(b"0000644\0");
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = typeflag;
    h[157..157 + link.len()].copy_from_slice(link);
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[329..337].copy_from_slice(b"0000001\0");
    h[337..345].copy_from_slice(b"0000003\0");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

#[derive(Default)]
struct RawTar(Vec<u8>);

impl RawTar {
    fn entry(&mut self, name: &[u8], typeflag: u8, data: &[u8], link: &[u8]) -> &mut Self {
        self.entry_sized(name, typeflag, data.len() as u64, data, link)
    }

    /// An entry whose header claims `size` whatever `data` holds.
    fn entry_sized(
        &mut self,
        name: &[u8],
        typeflag: u8,
        size: u64,
        data: &[u8],
        link: &[u8],
    ) -> &mut Self {
        self.0
            .extend_from_slice(&header(name, typeflag, size, link));
        self.0.extend_from_slice(data);
        let pad = (512 - data.len() % 512) % 512;
        self.0.extend(std::iter::repeat_n(0u8, pad));
        self
    }

    fn file(&mut self, name: &str, data: &[u8]) -> &mut Self {
        self.entry(name.as_bytes(), b'0', data, b"")
    }

    fn pax(&mut self, records: &[(&str, &str)]) -> &mut Self {
        let mut body = Vec::new();
        for (k, v) in records {
            let rest = format!(" {k}={v}\n");
            let mut len = rest.len() + 1;
            while format!("{len}{rest}").len() != len {
                len += 1;
            }
            body.extend_from_slice(format!("{len}{rest}").as_bytes());
        }
        self.entry(b"PaxHeader/x", b'x', &body, b"")
    }

    fn finish(&mut self) -> Vec<u8> {
        let mut t = std::mem::take(&mut self.0);
        t.extend(std::iter::repeat_n(0u8, 1024));
        gzip(&t)
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), Compression::new(9));
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

/// Limits the corpus is checked against: the defaults with a smaller entry cap so the flood
/// stays small.
fn limits() -> UnpackLimits {
    UnpackLimits {
        max_entries: 1000,
        ..UnpackLimits::default()
    }
}

/// The corpus: (file name, bundle bytes).
#[expect(
    clippy::vec_init_then_push,
    reason = "one push per case, each with its comment"
)]
fn corpus() -> Vec<(&'static str, Vec<u8>)> {
    let mut v = Vec::new();
    v.push((
        "tar-slip",
        RawTar::default()
            .file("ok.txt", b"fine")
            .file("../evil.txt", b"pwned")
            .finish(),
    ));
    v.push((
        "tar-slip-nested",
        RawTar::default()
            .file("a/b/../../../evil.txt", b"pwned")
            .finish(),
    ));
    v.push((
        "absolute-path",
        RawTar::default()
            .file("/tmp/ofc-evil.txt", b"pwned")
            .finish(),
    ));
    v.push((
        "symlink",
        RawTar::default()
            .entry(b"link", b'2', b"", b"/etc")
            .file("link/passwd", b"pwned")
            .finish(),
    ));
    v.push((
        "symlink-relative-escape",
        RawTar::default().entry(b"up", b'2', b"", b"../..").finish(),
    ));
    v.push((
        "hardlink",
        RawTar::default()
            .entry(b"hl", b'1', b"", b"/etc/passwd")
            .finish(),
    ));
    v.push((
        "char-device",
        RawTar::default().entry(b"null", b'3', b"", b"").finish(),
    ));
    v.push((
        "block-device",
        RawTar::default().entry(b"sda", b'4', b"", b"").finish(),
    ));
    v.push((
        "fifo",
        RawTar::default().entry(b"pipe", b'6', b"", b"").finish(),
    ));
    // 64 MiB of zeros: compresses about 1000:1, far past the 200:1 ratio limit.
    let zeros = vec![0u8; 64 * 1024 * 1024];
    v.push((
        "gzip-bomb",
        RawTar::default().file("zeros.bin", &zeros).finish(),
    ));
    let mut flood = RawTar::default();
    for i in 0..1001 {
        flood.file(&format!("f{i:04}"), b"");
    }
    v.push(("entry-flood", flood.finish()));
    // The header says 1024 bytes; a pax record says 0, so a reader that believes the pax
    // record would parse the data as a header for `../evil.txt`.
    let mut hidden = RawTar::default();
    hidden.file("../evil.txt", b"pwned");
    let smuggled = hidden.0.clone();
    v.push((
        "pax-size-confusion",
        RawTar::default()
            .pax(&[("size", "0")])
            .entry_sized(b"innocent.txt", b'0', smuggled.len() as u64, &smuggled, b"")
            .finish(),
    ));
    v.push((
        "pax-path-override",
        RawTar::default()
            .pax(&[("path", "../../evil.txt")])
            .file("innocent.txt", b"pwned")
            .finish(),
    ));
    v.push((
        "pax-path-override-benign-looking",
        RawTar::default()
            .pax(&[("path", "other.txt")])
            .file("innocent.txt", b"data")
            .finish(),
    ));
    v.push((
        "gnu-longname-slip",
        RawTar::default()
            .entry(b"././@LongLink", b'L', b"../../evil.txt\0", b"")
            .file("innocent.txt", b"pwned")
            .finish(),
    ));
    v.push((
        "duplicate-entry",
        RawTar::default()
            .file("a.txt", b"first")
            .file("a.txt", b"second")
            .finish(),
    ));
    v.push((
        "backslash-path",
        RawTar::default().file("..\\evil.txt", b"pwned").finish(),
    ));
    v.push((
        "file-then-dir-through-it",
        RawTar::default()
            .file("x", b"file")
            .entry(b"x/", b'5', b"", b"")
            .finish(),
    ));
    v
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile")
}

#[test]
fn committed_corpus_matches_the_generator() {
    let dir = fixtures();
    let bless = std::env::var_os("OFC_BLESS").is_some();
    for (name, bytes) in corpus() {
        let path = dir.join(format!("{name}.tar.gz"));
        if bless {
            fs::create_dir_all(&dir).unwrap();
            fs::write(&path, &bytes).unwrap();
        }
        let committed = fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run with OFC_BLESS=1)", path.display()));
        assert!(
            committed == bytes,
            "{name}: committed fixture differs from the generator (run with OFC_BLESS=1)"
        );
    }
}

/// Every path under `root` except `allowed`, its contents and its ancestors.
fn files_outside(root: &Path, allowed: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| !p.starts_with(allowed) && !allowed.starts_with(p))
        .collect()
}

fn chain(e: &UnpackError) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

#[test]
fn every_hostile_bundle_is_refused_and_nothing_escapes() {
    let mut report = String::new();
    let mut entries: Vec<_> = fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    assert_eq!(entries.len(), corpus().len(), "one fixture per corpus case");
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = fs::read(&path).unwrap();
        // root/cache/tmp/dest: anything written above dest is an escape.
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("cache/tmp/dest");
        fs::create_dir_all(&dest).unwrap();
        let result = unpack(&bytes, &dest, &limits());
        let err = match result {
            Ok(u) => panic!("{name}: was unpacked ({u:?}) but must be refused"),
            Err(e) => e,
        };
        let outside = files_outside(root.path(), &dest);
        assert!(
            outside.is_empty(),
            "{name}: wrote outside the destination: {outside:?}"
        );
        // Nothing may be a symlink, hardlinked file, device or fifo inside either.
        for e in walkdir::WalkDir::new(&dest).min_depth(1) {
            let e = e.unwrap();
            let ft = e.file_type();
            assert!(
                ft.is_file() || ft.is_dir(),
                "{name}: created {:?} of type {ft:?}",
                e.path()
            );
        }
        report.push_str(&format!("{name}: {}\n", chain(&err)));
    }
    insta::assert_snapshot!("hostile_bundle_errors", report);
}

#[test]
fn a_well_formed_bundle_unpacks() {
    let bytes = RawTar::default()
        .entry(b"dir/", b'5', b"", b"")
        .file("dir/a.txt", b"hello")
        .file("./b.txt", b"world")
        .pax(&[("mtime", "1700000000.5"), ("comment", "harmless")])
        .file("c.txt", b"!")
        .finish();
    let root = tempfile::tempdir().unwrap();
    let u = unpack(&bytes, root.path(), &UnpackLimits::default()).unwrap();
    assert_eq!((u.files, u.dirs, u.bytes), (3, 1, 11));
    assert_eq!(fs::read(root.path().join("dir/a.txt")).unwrap(), b"hello");
    assert_eq!(fs::read(root.path().join("b.txt")).unwrap(), b"world");
    assert_eq!(fs::read(root.path().join("c.txt")).unwrap(), b"!");
}

#[test]
fn byte_and_file_limits_name_the_entry() {
    let bytes = RawTar::default()
        .file("small.txt", b"12345")
        .file("big.bin", &[7u8; 4096])
        .finish();
    let root = tempfile::tempdir().unwrap();
    let per_file = UnpackLimits {
        max_file_bytes: 1000,
        ..UnpackLimits::default()
    };
    let e = unpack(&bytes, root.path(), &per_file).unwrap_err();
    assert_eq!(
        e.to_string(),
        "bundle entry `big.bin`: 4096 bytes is more than the 1000-byte limit for one file"
    );
    let root = tempfile::tempdir().unwrap();
    let total = UnpackLimits {
        max_total_bytes: 2000,
        ..UnpackLimits::default()
    };
    let e = unpack(&bytes, root.path(), &total).unwrap_err();
    assert!(
        matches!(e, UnpackError::TooLarge { ref entry, .. } if entry == "big.bin"),
        "{e}"
    );
}

#[test]
fn refuses_a_non_empty_destination() {
    let root = tempfile::tempdir().unwrap();
    fs::write(root.path().join("x"), b"").unwrap();
    let bytes = RawTar::default().file("a", b"").finish();
    let e = unpack(&bytes, root.path(), &UnpackLimits::default()).unwrap_err();
    assert!(matches!(e, UnpackError::DestinationNotEmpty(_)), "{e}");
}
