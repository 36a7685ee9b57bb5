//! The setting `search_model_dir`: a missing or unusable model file stops the hub at start,
//! naming the file; with the real model (all-MiniLM-L6-v2, installed by
//! `scripts/peers/search-model`, which this test runs and fails without) published agents get
//! vectors beside the index and a yank removes them; without the setting no model is loaded
//! and no vectors are kept.

use std::path::Path;
use std::time::{Duration, Instant};

use hub_search::embed::store::FILE_NAME;
use hub_search::embed::{CONFIG_FILE, Embedder, MODEL_FILE, TOKENIZER_FILE};
use index_schema::manifest::Manifest;
use ofc_test_kit::{Backend, TestHub, remote_manifest, search_model_dir};
use serde_json::json;

fn manifest(name: &str, tagline: &str) -> Manifest {
    let mut v = serde_json::to_value(remote_manifest(name, "1.0.0")).unwrap();
    v["tagline"] = json!(tagline);
    Manifest::from_value(&v).unwrap()
}

/// A copy of the model directory with the weights and the other files linked, `name` written
/// with `content` (or left out).
fn broken_model(real: &Path, name: &str, content: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in [MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE] {
        if f != name {
            std::os::unix::fs::symlink(real.join(f), dir.path().join(f)).unwrap();
        }
    }
    if let Some(c) = content {
        std::fs::write(dir.path().join(name), c).unwrap();
    }
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_loads_at_start_or_the_hub_refuses_naming_the_file() {
    let real = search_model_dir();
    let files = tempfile::tempdir().unwrap();
    for (name, content, says) in [
        (TOKENIZER_FILE, None, "is missing"),
        (MODEL_FILE, None, "is missing"),
        (CONFIG_FILE, Some("{\"hidden_size\": "), "not usable"),
        (MODEL_FILE, Some("garbage"), "not usable"),
    ] {
        let broken = broken_model(&real, name, content);
        let cfg = hub_core::config::Config {
            data_dir: files.path().join("data"),
            search_model_dir: Some(broken.path().to_path_buf()),
            ..Default::default()
        };
        let e = format!("{:#}", hub_server::build_state(cfg).await.unwrap_err());
        let path = broken.path().join(name).display().to_string();
        assert!(e.contains(&path) && e.contains(says), "{name}: {e}");
        assert!(e.contains("search_model_dir"), "{e}");
    }

    // Without the setting: no model, no vectors, keyword search as before.
    let plain = TestHub::in_process(Backend::Sqlite).await;
    assert!(
        plain
            .state
            .core
            .search
            .as_ref()
            .unwrap()
            .embedder()
            .is_none()
    );
    let (t, k) = (plain.user.token.clone(), plain.user.key.clone());
    let (s, v) = plain
        .publish(&t, &k, &manifest("alice/plain", "Reads invoices"), None)
        .await;
    assert_eq!(s, 201, "{v}");
    let index_dir = hub_core::search::index_dir(&plain.data_dir);
    assert!(index_dir.is_dir());
    assert!(!index_dir.join(FILE_NAME).exists());
    plain.stop().await;

    // With the real model: agents get vectors; a yank removes the agent's.
    let app = TestHub::in_process_with(Backend::Sqlite, |c| {
        c.search_model_dir = Some(real.clone());
    })
    .await;
    let search = app.state.core.search.clone().unwrap();
    let embedder: Embedder = Embedder::load(&real).unwrap();
    assert_eq!(search.embedder().unwrap().model_id(), embedder.model_id());
    let (t, k) = (app.user.token.clone(), app.user.key.clone());
    for (name, tagline) in [
        ("alice/invoices", "Reads invoices and fills a spreadsheet"),
        ("alice/weather", "Tells tomorrow's weather"),
    ] {
        let (s, v) = app.publish(&t, &k, &manifest(name, tagline), None).await;
        assert_eq!(s, 201, "{v}");
    }
    let vectors = search.vectors().unwrap().clone();
    let start = Instant::now();
    while vectors.read().unwrap().len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "agents not embedded: {:?}",
            vectors.read().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let query = embedder
        .embed(&["something that processes my bills into a table"])
        .unwrap()
        .remove(0);
    {
        let v = vectors.read().unwrap();
        let bills = v.get("alice/invoices").unwrap().dot(&query);
        let weather = v.get("alice/weather").unwrap().dot(&query);
        assert!(
            bills > weather + 0.1,
            "invoices {bills} vs weather {weather}"
        );
    }
    let (s, v) = app
        .yank(&t, "alice/weather", "1.0.0", json!({"reason": "test"}))
        .await;
    assert!(s == 200 || s == 204, "{s} {v}");
    let start = Instant::now();
    while vectors.read().unwrap().get("alice/weather").is_some() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "yanked agent kept"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        hub_core::search::index_dir(&app.data_dir)
            .join(FILE_NAME)
            .is_file()
    );
    app.stop().await;
}
