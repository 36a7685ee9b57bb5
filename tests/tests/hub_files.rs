//! The hub's data directory is private (issue 13, point 12): the SQLite database (password and
//! token hashes), blobs, staged uploads and the search index are 0700 directories and 0600
//! files, whatever the umask of whoever started the hub.

mod common;

use common::HubProc;

#[cfg(unix)]
#[test]
fn everything_the_hub_writes_is_private() {
    use std::os::unix::fs::PermissionsExt;
    // The usual umask: without the hub's own, its files would be 0644.
    let hub = HubProc::start();
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
