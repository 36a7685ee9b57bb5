use super::*;

/// A deterministic unit vector per seed (a small linear congruential sequence).
fn unit(seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut v: Vec<f32> = (0..DIM)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            #[allow(clippy::cast_precision_loss)]
            let f = (x >> 40) as f32 / (1u64 << 24) as f32;
            f - 0.5
        })
        .collect();
    crate::embed::normalize(&mut v);
    v
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn quantised_cosines_stay_within_a_thousandth_of_f32() {
    let mut worst = 0f32;
    for i in 0..200 {
        let (a, b) = (unit(i), unit(i + 1000));
        let (codes, scale) = quantize(&b);
        let q = VectorRef {
            codes: &codes,
            scale,
        };
        worst = worst.max((q.dot(&a) - dot(&a, &b)).abs());
        assert!(
            (q.dot(&b) - 1.0).abs() < 2e-3,
            "self-similarity {}",
            q.dot(&b)
        );
    }
    assert!(worst < 1e-3, "worst cosine error {worst}");
}

#[test]
fn commits_survive_reopening_and_deletes_and_updates_apply() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = VectorStore::open(dir.path(), "m1").unwrap();
    assert_eq!(s.seq(), 0);
    assert!(s.reset_reason().is_some());
    s.upsert("a/one", 11, &unit(1));
    s.upsert("a/two", 12, &unit(2));
    s.commit(5).unwrap();
    s.upsert("a/three", 13, &unit(3));
    s.remove("a/one");
    s.upsert("a/two", 22, &unit(22));
    s.commit(9).unwrap();
    // Uncommitted changes are not on disk.
    s.upsert("a/four", 14, &unit(4));

    let r = VectorStore::open(dir.path(), "m1").unwrap();
    assert_eq!(r.seq(), 9);
    assert_eq!(r.reset_reason(), None);
    assert_eq!(r.len(), 2);
    assert!(r.get("a/one").is_none());
    assert!(r.get("a/four").is_none());
    assert_eq!(r.text_hash("a/two"), Some(22));
    assert!(r.get("a/two").unwrap().dot(&unit(22)) > 0.999);
    assert!(r.get("a/three").unwrap().dot(&unit(3)) > 0.999);
    let mut keys: Vec<&str> = r.iter().map(|(k, _)| k).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["a/three", "a/two"]);
}

#[test]
fn another_model_or_a_damaged_header_starts_empty() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = VectorStore::open(dir.path(), "m1").unwrap();
    s.upsert("a/one", 1, &unit(1));
    s.commit(3).unwrap();
    let other = VectorStore::open(dir.path(), "m2").unwrap();
    assert_eq!((other.seq(), other.len()), (0, 0));
    assert!(other.reset_reason().unwrap().contains("another model"));

    let path = dir.path().join(FILE_NAME);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let damaged = VectorStore::open(dir.path(), "m1").unwrap();
    assert_eq!((damaged.seq(), damaged.len()), (0, 0));
}

#[test]
fn a_torn_last_block_is_cut_off_and_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = VectorStore::open(dir.path(), "m").unwrap();
    s.upsert("a/one", 1, &unit(1));
    s.commit(3).unwrap();
    s.upsert("a/two", 2, &unit(2));
    s.commit(4).unwrap();
    let path = dir.path().join(FILE_NAME);
    let full = std::fs::read(&path).unwrap();
    // The first commit wrote the header and one block; its end is where the second starts.
    let fresh = tempfile::tempdir().unwrap();
    let mut f = VectorStore::open(fresh.path(), "m").unwrap();
    f.upsert("a/one", 1, &unit(1));
    f.commit(3).unwrap();
    let first_end = std::fs::metadata(fresh.path().join(FILE_NAME))
        .unwrap()
        .len() as usize;
    assert_eq!(
        full[..first_end],
        std::fs::read(fresh.path().join(FILE_NAME)).unwrap()[..]
    );
    // Every cut inside the second block falls back to the first.
    for cut in [first_end + 1, first_end + BLOCK_HEAD + 7, full.len() - 1] {
        std::fs::write(&path, &full[..cut]).unwrap();
        let mut r = VectorStore::open(dir.path(), "m").unwrap();
        assert_eq!((r.seq(), r.len()), (3, 1), "cut at {cut}");
        r.upsert("a/three", 3, &unit(3));
        r.commit(7).unwrap();
        let again = VectorStore::open(dir.path(), "m").unwrap();
        assert_eq!((again.seq(), again.len()), (7, 2), "cut at {cut}");
    }
    // A flipped byte in the payload fails the checksum: the block is dropped, not misread.
    std::fs::write(&path, &full).unwrap();
    let mut bad = full.clone();
    let n = bad.len();
    bad[n - CHECK - 10] ^= 1;
    std::fs::write(&path, &bad).unwrap();
    let r = VectorStore::open(dir.path(), "m").unwrap();
    assert_eq!((r.seq(), r.len()), (3, 1));
}

#[test]
fn a_mostly_dead_file_is_rewritten_to_its_live_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = VectorStore::open(dir.path(), "m").unwrap();
    for round in 0..5u64 {
        for i in 0..400u64 {
            s.upsert(&format!("p/a{i}"), round, &unit(i + round));
        }
        s.commit(round + 1).unwrap();
    }
    let path = dir.path().join(FILE_NAME);
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    // 5 × 400 records were written; after the rewrite the file holds about the live 400
    // (plus at most the records of the commits since).
    assert!(len < 3 * 400 * (DIM + 30), "file of {len} bytes");
    let r = VectorStore::open(dir.path(), "m").unwrap();
    assert_eq!((r.seq(), r.len()), (5, 400));
    assert_eq!(r.text_hash("p/a7"), Some(4));
    assert!(r.get("p/a7").unwrap().dot(&unit(11)) > 0.999);
}

#[test]
fn write_needs_only_shared_access_and_finish_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = VectorStore::open(dir.path(), "m").unwrap();
    s.upsert("a/one", 1, &unit(1));
    let shared = &s;
    let written = shared.write(4).unwrap();
    // Readers still see the store; on disk the commit is already there.
    assert!(shared.get("a/one").is_some());
    assert_eq!(VectorStore::open(dir.path(), "m").unwrap().seq(), 4);
    s.finish(written);
    assert_eq!(s.seq(), 4);
    s.upsert("a/two", 2, &unit(2));
    s.commit(6).unwrap();
    let r = VectorStore::open(dir.path(), "m").unwrap();
    assert_eq!((r.seq(), r.len()), (6, 2));
}

#[test]
#[should_panic(expected = "changed between write and finish")]
fn finish_refuses_a_write_the_store_moved_past() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = VectorStore::open(dir.path(), "m").unwrap();
    s.upsert("a/one", 1, &unit(1));
    let written = s.write(1).unwrap();
    s.upsert("a/two", 2, &unit(2));
    s.finish(written);
}
