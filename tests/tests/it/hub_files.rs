//! The hub's data directory is private (issue 13, point 12): the SQLite database (password and
//! token hashes), blobs, staged uploads and the search index are 0700 directories and 0600
//! files, whatever the umask of whoever started the hub.

use crate::common::Publishers as _;
use ofc_test_kit::{ProcessOptions, TestHub};

#[cfg(unix)]
#[test]
fn everything_the_hub_writes_is_private() {
    use std::os::unix::fs::PermissionsExt;
    // The usual umask: without the hub's own, its files would be 0644.
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("modes", &["ofc-examples"]);
    let published = publisher.publish_examples();
    assert!(!published.is_empty());
    let mut seen = 0;
    let mut open = Vec::new();
    for entry in walkdir::WalkDir::new(hub.data_dir()) {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if !(meta.is_file() || meta.is_dir()) {
            continue;
        }
        seen += 1;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            open.push(format!("{:o} {}", mode, entry.path().display()));
        }
    }
    assert!(
        seen > 10,
        "the walk saw the database, blobs and index ({seen})"
    );
    assert!(open.is_empty(), "readable by others:\n{}", open.join("\n"));
}

/// The hub's resident memory, in bytes.
#[cfg(target_os = "linux")]
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// Issue 13, point 4: a bundle download is streamed from its blob file, so downloads that
/// stall do not each hold the bundle in the hub's memory.
#[cfg(target_os = "linux")]
#[test]
fn stalled_bundle_downloads_do_not_hold_bundles_in_memory() {
    use std::io::{Read, Write};
    const SIZE: usize = 16 << 20;
    const STALLED: usize = 16;
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("agent.yaml"),
        "id: \"@big\"\nname: Big\npackage: acme/big\nversion: 1.0.0\n\
         tagline: A big agent\ndescription: For download tests.\nmodel: m\nactivation: mention\n",
    )
    .unwrap();
    // xorshift: incompressible, so the bundle is as large as the data.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let data: Vec<u8> = (0..SIZE)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(work.path().join("data.bin"), data).unwrap();
    publisher
        .ofc
        .ok(&["publish", work.path().to_str().unwrap()]);

    let pid = hub.pid().unwrap();
    let addr = hub.url.trim_start_matches("http://").to_owned();
    let before = rss(pid);
    let mut stalled = Vec::new();
    for _ in 0..STALLED {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        s.write_all(
            b"GET /api/v1/agents/acme/big/versions/1.0.0/bundle HTTP/1.1\r\nhost: x\r\n\r\n",
        )
        .unwrap();
        // The head and the first bytes, then nothing more is read.
        let mut head = [0u8; 1024];
        let n = s.read(&mut head).unwrap();
        assert!(
            String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&head[..n])
        );
        stalled.push(s);
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let grown = rss(pid).saturating_sub(before);
    // Held in memory, the bundles would be STALLED × 16 MiB = 256 MiB.
    assert!(
        grown < 64 << 20,
        "the hub grew by {} MiB for {STALLED} stalled downloads",
        grown >> 20
    );
    drop(stalled);
}
