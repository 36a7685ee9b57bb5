//! The hub's transparency log checked by an implementation we did not write: aics-tlog (PyPI,
//! installed by `scripts/peers/aics-tlog`; the test fails without it) reads the tiles and the
//! checkpoint the hub serves under `/log/`, verifies the checkpoint's signature with the log
//! key, and inclusion and consistency — both from the tiles and from the proofs the JSON API
//! gives. On SQLite and PostgreSQL.

use std::path::{Path, PathBuf};
use std::process::Command;

use index_schema::tlog::{LogVerifier, hash_b64, record_hash};
use ofc_test_kit::{Backend, TestHub, remote_manifest};
use rstest::rstest;
use serde_json::Value;

pub(crate) fn aics_tlog() -> PathBuf {
    PathBuf::from(ofc_test_kit::peer("aics-tlog"))
}

/// Runs `aics-tlog ARGS`; its one JSON report and whether it said ok.
pub(crate) fn aics(bin: &Path, args: &[&str]) -> (bool, Value) {
    let out = Command::new(bin).args(args).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "aics-tlog {args:?} printed no JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let ok = report["ok"] == true;
    assert_eq!(ok, out.status.success(), "{report}");
    (ok, report)
}

/// `aics-tlog verify-inclusion` of the entry in the file `leaf` at `index`, from the tiles under
/// `tiles` (a URL) checked with the log key in the file `key_file`.
fn aics_from_tiles(
    bin: &Path,
    tiles: &str,
    key_file: &str,
    index: &str,
    leaf: &str,
) -> (bool, Value) {
    aics(
        bin,
        &[
            "verify-inclusion",
            "--tiles",
            tiles,
            "--vkey-file",
            key_file,
            "--index",
            index,
            "--leaf",
            leaf,
        ],
    )
}

/// `aics-tlog verify-inclusion` of the entry in the file `leaf` at `index` by the hub's proof
/// (the file `proof`) under its signed checkpoint (the file `note`).
fn aics_from_proof(
    bin: &Path,
    leaf: &str,
    index: &str,
    proof: &str,
    note: &str,
    key_file: &str,
) -> (bool, Value) {
    aics(
        bin,
        &[
            "verify-inclusion",
            "--leaf",
            leaf,
            "--index",
            index,
            "--proof",
            proof,
            "--checkpoint",
            note,
            "--vkey-file",
            key_file,
        ],
    )
}

/// Whether aics-tlog proves `entry` at `index` from `app`'s tiles, checked with the log key
/// `app` gives (`GET /api/v1/log`); its report.
pub(crate) async fn aics_proves(
    bin: &Path,
    app: &TestHub,
    entry: &str,
    index: u64,
) -> (bool, Value) {
    let (s, info) = app.get("/api/v1/log").await;
    assert_eq!(s, 200, "{info}");
    let dir = tempfile::tempdir().unwrap();
    let key_file = write(
        dir.path(),
        "log.vkey",
        &format!("{}\n", info["key"].as_str().unwrap()),
    );
    let leaf = write(dir.path(), "leaf", &format!("{entry}\n"));
    aics_from_tiles(bin, &app.url("/log/"), &key_file, &index.to_string(), &leaf)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn lines(v: &Value) -> String {
    v.as_array()
        .unwrap()
        .iter()
        .map(|h| format!("{}\n", h.as_str().unwrap()))
        .collect()
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread")]
async fn tlog_independent(#[case] backend: Backend) {
    let bin = aics_tlog();
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tiles = app.url("/log/");

    let (s, info) = app.get("/api/v1/log").await;
    assert_eq!(s, 200, "{info}");
    let vkey = info["key"].as_str().unwrap().to_string();
    let verifier = LogVerifier::parse(&vkey).unwrap();
    assert_eq!(info["origin"], verifier.origin());
    let key_file = write(d, "log.vkey", &format!("{vkey}\n"));

    // The first publish: its answer carries the entry, its proof and the checkpoint after it.
    let m = remote_manifest("alice/code", "1.0.0");
    let (s, first) = app.publish(&u.token, &u.key, &m, None).await;
    assert_eq!(s, 201, "{first}");
    let log = &first["log"];
    assert_eq!(log["index"], 1, "entry 0 is alice's key");
    let entry = log["entry"].as_str().unwrap();
    assert_eq!(
        entry,
        format!(
            "ofc-log/v1 publish alice/code 1.0.0 {} {}",
            m.digest(),
            u.key.key_id()
        )
    );
    let cp = verifier
        .verify_checkpoint(log["checkpoint"].as_str().unwrap())
        .unwrap();
    assert_eq!(cp.size, 2);
    let old_note = write(d, "old.note", log["checkpoint"].as_str().unwrap());
    let leaf = write(d, "leaf", &format!("{entry}\n"));
    let proof = write(d, "proof", &lines(&log["inclusion"]));
    // The hub's own proof, checked by aics-tlog against the signed checkpoint.
    let (ok, r) = aics_from_proof(&bin, &leaf, "1", &proof, &old_note, &key_file);
    assert!(ok, "{r}");
    assert_eq!(r["checkpoint_verified"], true, "{r}");

    // Past a full tile (256 entries) and into a level-1 partial tile.
    for i in 1..300 {
        let m = remote_manifest("alice/code", &format!("1.0.{i}"));
        let (s, b) = app.publish(&u.token, &u.key, &m, None).await;
        assert_eq!(s, 201, "{b}");
    }
    let (s, y) = app
        .yank(
            &u.token,
            "alice/code",
            "1.0.7",
            serde_json::json!({"reason": "bad"}),
        )
        .await;
    assert_eq!(s, 204, "{y}");
    let size = 302u64;

    // Full tiles are cacheable for good; partial ones are not.
    let full = app
        .client
        .get(app.url("/log/tile/0/000"))
        .send()
        .await
        .unwrap();
    assert_eq!(full.status(), 200);
    assert_eq!(
        full.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(full.bytes().await.unwrap().len(), 256 * 32);
    let partial = app
        .client
        .get(app.url("/log/tile/0/001.p/46"))
        .send()
        .await
        .unwrap();
    assert_eq!(partial.status(), 200);
    assert_eq!(partial.headers()["cache-control"], "public, max-age=60");
    let missing = app
        .client
        .get(app.url("/log/tile/0/001.p/47"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404, "a tile past the tree");

    // The checkpoint, from the tiles' prefix, signed by the key given out of band.
    let (ok, r) = aics(
        &bin,
        &[
            "verify-checkpoint",
            "--tiles",
            &tiles,
            "--vkey-file",
            &key_file,
        ],
    );
    assert!(ok, "{r}");
    assert_eq!(r["size"], size, "{r}");

    // Inclusion computed from the tiles, for entries in the full tile, the partial one, and
    // the last (the yank).
    for (index, version) in [
        (1u64, "1.0.0"),
        (255, "1.0.254"),
        (256, "1.0.255"),
        (300, "1.0.299"),
    ] {
        let (s, v) = app
            .get(&format!("/api/v1/agents/alice/code/versions/{version}"))
            .await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["log"]["index"], index, "{v}");
        let leaf = write(
            d,
            "leaf",
            &format!("{}\n", v["log"]["entry"].as_str().unwrap()),
        );
        let (ok, r) = aics_from_tiles(&bin, &tiles, &key_file, &index.to_string(), &leaf);
        assert!(ok, "{version}: {r}");
        // And the version API's own proof, under the checkpoint it gives.
        let note = write(d, "now.note", v["log"]["checkpoint"].as_str().unwrap());
        let proof = write(d, "proof", &lines(&v["log"]["inclusion"]));
        let (ok, r) = aics_from_proof(&bin, &leaf, &index.to_string(), &proof, &note, &key_file);
        assert!(ok, "{version}: {r}");
    }
    let yank = write(d, "leaf", "ofc-log/v1 yank alice/code 1.0.7\n");
    let (ok, r) = aics_from_tiles(&bin, &tiles, &key_file, "301", &yank);
    assert!(ok, "{r}");

    // Consistency of the old checkpoint with the new one: from the tiles, and the hub's proof.
    let (ok, r) = aics(
        &bin,
        &[
            "verify-consistency",
            "--old-checkpoint",
            &old_note,
            "--tiles",
            &tiles,
            "--vkey-file",
            &key_file,
        ],
    );
    assert!(ok, "{r}");
    let (s, info) = app.get("/api/v1/log?log_size=2").await;
    assert_eq!(s, 200, "{info}");
    let now = verifier
        .verify_checkpoint(info["checkpoint"].as_str().unwrap())
        .unwrap();
    assert_eq!(now.size, size);
    let proof = write(d, "proof", &lines(&info["consistency"]));
    let (ok, r) = aics(
        &bin,
        &[
            "verify-consistency",
            "--old-size",
            "2",
            "--new-size",
            &size.to_string(),
            "--old-root",
            &hash_b64(&cp.root),
            "--new-root",
            &hash_b64(&now.root),
            "--proof",
            &proof,
        ],
    );
    assert!(ok, "{r}");

    // A publisher's entries, each proven under one checkpoint.
    let (s, page) = app
        .get("/api/v1/log/publishers/alice?agent=code&log_size=2")
        .await;
    assert_eq!(s, 200, "{page}");
    let entries = page["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 302, "key-add, 300 publishes, a yank");
    let head = verifier
        .verify_checkpoint(page["checkpoint"].as_str().unwrap())
        .unwrap();
    for e in entries {
        let proof: Vec<_> = e["inclusion"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| index_schema::tlog::parse_hash_b64(h.as_str().unwrap()).unwrap())
            .collect();
        index_schema::tlog::check_inclusion(
            &proof,
            head.size,
            head.root,
            e["index"].as_u64().unwrap(),
            format!("{}\n", e["entry"].as_str().unwrap()).as_bytes(),
        )
        .unwrap();
    }
    assert_eq!(
        page["consistency"].as_array().unwrap().len(),
        info["consistency"].as_array().unwrap().len()
    );
    let (s, none) = app.get("/api/v1/log/publishers/nobody").await;
    assert_eq!(s, 200, "{none}");
    assert_eq!(none["entries"].as_array().unwrap().len(), 0);

    // The verifier is not a rubber stamp: another leaf, another key, another root fail.
    let wrong = write(d, "leaf", "ofc-log/v1 yank alice/code 1.0.8\n");
    let (ok, _) = aics_from_tiles(&bin, &tiles, &key_file, "301", &wrong);
    assert!(!ok, "a leaf that is not at 301");
    let other = index_schema::tlog::LogSigner::generate(verifier.origin(), &mut rand::rngs::OsRng)
        .unwrap()
        .verifier()
        .to_string();
    let other_file = write(d, "other.vkey", &format!("{other}\n"));
    let (ok, _) = aics(
        &bin,
        &[
            "verify-checkpoint",
            "--tiles",
            &tiles,
            "--vkey-file",
            &other_file,
        ],
    );
    assert!(!ok, "a checkpoint verified with another key");
    let (ok, _) = aics(
        &bin,
        &[
            "verify-consistency",
            "--old-size",
            "2",
            "--new-size",
            &size.to_string(),
            "--old-root",
            &hash_b64(&record_hash(b"x")),
            "--new-root",
            &hash_b64(&now.root),
            "--proof",
            &proof,
        ],
    );
    assert!(!ok, "a rewritten old tree");
}

/// An operator's deletions are in the log too: one `delete` entry for a version, one per
/// version for an agent, each in the publisher's entries; the log still verifies.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn operator_deletions_are_logged(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    for (a, v) in [
        ("alice/code", "1.0.0"),
        ("alice/code", "1.1.0"),
        ("alice/docs", "2.0.0"),
        ("alice/docs", "2.0.1"),
    ] {
        let (s, b) = app
            .publish(&u.token, &u.key, &remote_manifest(a, v), None)
            .await;
        assert_eq!(s, 201, "{b}");
    }
    assert!(
        hub_core::admin::delete(app.store(), "alice/code", Some("1.0.0"))
            .await
            .unwrap()
    );
    assert!(
        hub_core::admin::delete(app.store(), "alice/docs", None)
            .await
            .unwrap()
    );
    let (s, v) = app.get("/api/v1/log/publishers/alice").await;
    assert_eq!(s, 200, "{v}");
    let entries: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["entry"].as_str().unwrap())
        .collect();
    assert_eq!(
        entries[entries.len() - 3..],
        [
            "ofc-log/v1 delete alice/code 1.0.0",
            "ofc-log/v1 delete alice/docs 2.0.0",
            "ofc-log/v1 delete alice/docs 2.0.1",
        ],
        "{v}"
    );
    let report = app.store().log_verify().await.unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.size, 8, "a key, four publishes, three deletions");
}

/// `ofc-hub log verify`'s check finds an entry rewritten in the database, a stored hash
/// changed, and a version whose entry is gone.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn log_verify_finds_what_was_changed_behind_the_log(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    for v in ["1.0.0", "1.0.1", "1.0.2"] {
        let (s, b) = app
            .publish(&u.token, &u.key, &remote_manifest("alice/code", v), None)
            .await;
        assert_eq!(s, 201, "{b}");
    }
    let report = app.store().log_verify().await.unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.size, 4);

    // A publish entry rewritten (another digest for 1.0.1), and a stored hash changed.
    let rewritten = format!(
        "ofc-log/v1 publish alice/code 1.0.1 {} {}\n",
        index_schema::name::Digest::of(b"other"),
        u.key.key_id()
    );
    {
        let pool = app.store().db().write();
        sqlx::query("UPDATE tlog_entries SET data = $1 WHERE idx = 2")
            .bind(rewritten.as_bytes())
            .execute(pool)
            .await
            .unwrap();
        sqlx::query("UPDATE tlog_hashes SET hash = $1 WHERE idx = 1")
            .bind(vec![0u8; 32])
            .execute(pool)
            .await
            .unwrap();
        // Size 4 has one perfect subtree: an edge of one other hash.
        sqlx::query("UPDATE tlog_state SET edge = $1 WHERE id = 1")
            .bind(vec![7u8; 32])
            .execute(pool)
            .await
            .unwrap();
    }
    let problems = app.store().log_verify().await.unwrap().problems.join("\n");
    assert!(
        problems.contains("alice/code@1.0.1: the log says digest"),
        "{problems}"
    );
    assert!(problems.contains("stored hash 1 differs"), "{problems}");
    assert!(
        problems.contains("is not the recomputed root"),
        "{problems}"
    );
    assert!(
        problems.contains("right edge is not the recomputed one"),
        "{problems}"
    );
}

/// Replicas starting together on a database whose keys predate the log each run the start-up
/// backfill (on PostgreSQL, two handles at once): every row is logged once. And `log verify`
/// flags a key logged twice.
#[tokio::test]
async fn two_backfills_at_once_log_each_row_once_and_log_verify_flags_a_duplicate() {
    use index_schema::envelope::SecretKey;

    let (store, other, u, ns, _held) = crate::storage::two_handles_with_alice().await;
    // Keys as a hub older than the log left them: rows without `log_index`.
    const KEYS: u64 = 500;
    for i in 0..KEYS {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&i.to_le_bytes());
        let key = SecretKey::from_seed(&seed).public_key();
        sqlx::query(
            "INSERT INTO publisher_keys (namespace_id, key_id, public_key, added_by, added_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(ns.id)
        .bind(key.key_id().to_string())
        .bind(key.to_string())
        .bind(u.id)
        .bind(1_i64)
        .execute(store.db().write())
        .await
        .unwrap();
    }
    let (a, b) = tokio::join!(store.log_backfill(), other.log_backfill());
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(
        a + b,
        KEYS,
        "one backfill logs every key, the other none: {a} + {b}"
    );
    let report = store.log_verify().await.unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.size, KEYS);
    assert_eq!(store.log_backfill().await.unwrap(), 0);

    // One key's row forgets where it was logged: the backfill logs it a second time, and the
    // check says so.
    let (id, key_id): (i64, String) =
        sqlx::query_as("SELECT id, key_id FROM publisher_keys ORDER BY id LIMIT 1")
            .fetch_one(store.db().write())
            .await
            .unwrap();
    sqlx::query("UPDATE publisher_keys SET log_index = NULL WHERE id = $1")
        .bind(id)
        .execute(store.db().write())
        .await
        .unwrap();
    assert_eq!(store.log_backfill().await.unwrap(), 1);
    let problems = store.log_verify().await.unwrap().problems.join("\n");
    assert!(
        problems.contains(&format!(
            "entry {KEYS} adds key {key_id} of `alice` again (first at entry 0)"
        )),
        "{problems}"
    );
}
