//! The hub's side of search: the outbox source the `hub-search` follower reads, the index under
//! `<data>/search-v6` (earlier formats' directories: [`adopt_earlier_index_dirs`]), and the
//! database snapshot that `ofc-hub reindex` and `ofc-hub search-check` use.
//!
//! An outbox row only names an agent; the source resolves it to the agent's *current* state
//! (the manifest of `agents.latest_version`, the highest non-yanked version, plus statistics),
//! or to a delete when nothing is visible, so a replay after a crash is idempotent.
//!
//! `hub-server` wakes the follower after every successful non-GET request (and this crate after
//! each publish), so a change is searchable after the follower's next commit (≤ 200 ms) rather
//! than its next poll; `/readyz` reports `search_lag` and `search_seq` (and with a model
//! `embedding_lag`, which never makes the hub not ready); a failing database is
//! retried by the follower, not fatal. `ofc-hub reindex` reads `max(seq)` and every visible agent
//! in one transaction and rebuilds the index, most downloaded first (the hub must be stopped: one
//! writer); `ofc-hub search-check` compares the committed index with the database and exits 1 on
//! a difference. Known gaps: downloads are counted without an outbox row, so the indexed
//! download counts (which `search-check` fingerprints) drift until the agent's next outbox event
//! or a `reindex`; unsigned registry registrations have no manifest and are not indexed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use hub_search::embed::Embedder;
use hub_search::embed::follow::{VectorFollowConfig, VectorFollower, VectorStatus};
use hub_search::embed::store::FILE_NAME as EMBEDDINGS_FILE_NAME;
use hub_search::embed::store::{SharedVectors, VectorStore};
use hub_search::follow::{MarkedEntries, Snapshot, SourceError};
use hub_search::hybrid::{HybridError, Semantic};
use hub_search::index::{EARLIER_INDEX_DIR_NAMES, INDEX_DIR_NAME};
use hub_search::{
    AgentStats, Change, Check, FollowConfig, FollowStatus, Follower, OutboxEntry, OutboxSource,
    SearchDoc, SearchIndex, SearchQuery, SearchResults, Synonyms, Tuning, WriterConfig,
};
use index_schema::envelope::Envelope;
use index_schema::manifest::Manifest;
use index_schema::name::AgentName;
use serde::Serialize;

use crate::store::{Store, VisibleAgent};

/// Where the index lives under the data directory.
pub fn index_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(INDEX_DIR_NAME)
}

/// After an upgrade that changed the index format: moves the agents' embeddings (whose file
/// format did not change) from the newest earlier index directory into the current one, so they
/// are not computed again, and says that each earlier directory is no longer read. The new
/// index fills from the outbox like a new hub's (`ofc-hub reindex`, with the hub stopped, builds
/// it faster). Returns the earlier directories found.
pub fn adopt_earlier_index_dirs(data_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let dir = index_dir(data_dir);
    let mut found = Vec::new();
    for name in EARLIER_INDEX_DIR_NAMES.iter().rev() {
        let old = data_dir.join(name);
        if !old.is_dir() {
            continue;
        }
        let vectors = old.join(EMBEDDINGS_FILE_NAME);
        let target = dir.join(EMBEDDINGS_FILE_NAME);
        if vectors.is_file() && !target.exists() {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            std::fs::rename(&vectors, &target).with_context(|| {
                format!(
                    "cannot move the search embeddings {} to {}",
                    vectors.display(),
                    target.display()
                )
            })?;
            tracing::info!(
                from = %vectors.display(),
                to = %target.display(),
                "search embeddings moved to the current index directory"
            );
        }
        tracing::warn!(
            dir = %old.display(),
            current = %dir.display(),
            "a search index of an earlier format is no longer read (the current one fills from \
             the outbox; `ofc-hub reindex` with the hub stopped builds it faster): delete it to \
             free its space"
        );
        found.push(old);
    }
    Ok(found)
}

/// The running search: the index (for queries) and the follower that keeps it up to date.
#[derive(Debug)]
pub struct Search {
    /// Queries run on it.
    pub index: SearchIndex,
    status: Arc<FollowStatus>,
    follower: std::sync::Mutex<Option<Follower>>,
    /// Re-reads the synonym file when it changes; aborted at shutdown.
    reloader: Option<tokio::task::AbortHandle>,
    /// With `search_model_dir`: the model, the agents' vectors and their follower.
    semantic: Option<SemanticParts>,
    /// With `search_model_dir`: asks the vectors' follower to replay the outbox when the
    /// keyword index's follower finds the outbox's history changed; aborted at shutdown.
    replays: Option<tokio::task::AbortHandle>,
}

/// The meaning side of search when a model is configured.
#[derive(Debug)]
struct SemanticParts {
    /// The meaning side of hybrid search over `embedder` and `vectors` (its IVF index too).
    hybrid: Semantic,
    embedder: Arc<Embedder>,
    vectors: SharedVectors,
    status: Arc<VectorStatus>,
    follower: std::sync::Mutex<Option<VectorFollower>>,
}

/// Where the query-time settings come from.
#[derive(Debug, Clone, Default)]
pub struct TuningSource {
    /// The synonym file (None: hub-search's default set).
    pub synonyms_file: Option<PathBuf>,
    /// See `Config::search_fewer_words_below`.
    pub fewer_words_below: usize,
    /// See `Config::search_model_dir` (None: keyword search only, no model loaded).
    pub model_dir: Option<PathBuf>,
}

/// How often the synonym file is looked at for changes.
const SYNONYMS_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// Largest synonym file read (the default set is ≈ 3 KiB).
pub const MAX_SYNONYMS_FILE_BYTES: u64 = 1 << 20;

/// Reads and checks a synonym file; the error names the file and the line.
pub fn read_synonyms(path: &Path) -> anyhow::Result<Synonyms> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("cannot read the synonym file {}", path.display()))?
        .len();
    if len > MAX_SYNONYMS_FILE_BYTES {
        anyhow::bail!(
            "the synonym file {} is {len} bytes, more than the {MAX_SYNONYMS_FILE_BYTES} accepted",
            path.display()
        );
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the synonym file {}", path.display()))?;
    Ok(Synonyms::parse(&text, &path.display().to_string())?)
}

/// What identifies a version of a file for reloading: modification time and length.
fn stamp(path: &Path) -> Option<(std::time::SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

impl Search {
    /// Opens the index in `data_dir` and starts following the outbox of `store`, looking at it
    /// every `poll` when no write of this hub wakes the follower ([`Search::wake`]).
    pub fn start(
        store: Store,
        data_dir: &Path,
        poll: std::time::Duration,
        tuning: TuningSource,
    ) -> anyhow::Result<Search> {
        adopt_earlier_index_dirs(data_dir)?;
        let dir = index_dir(data_dir);
        let index = SearchIndex::open_or_create(&dir)
            .with_context(|| format!("cannot open the search index {}", dir.display()))?;
        let config = FollowConfig {
            poll_interval: poll,
            ..FollowConfig::default()
        };
        let synonyms = match &tuning.synonyms_file {
            Some(p) => read_synonyms(p)?,
            None => Synonyms::default_set(),
        };
        index.set_tuning(Tuning {
            synonyms: Arc::new(synonyms),
            fewer_words_below: tuning.fewer_words_below,
        });
        let reloader = tuning.synonyms_file.clone().map(|path| {
            let index = index.clone();
            let mut seen = stamp(&path);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(SYNONYMS_POLL).await;
                    let now = stamp(&path);
                    if now == seen {
                        continue;
                    }
                    seen = now;
                    // A broken edit keeps the set in use (and says why); the next save retries.
                    match read_synonyms(&path) {
                        Ok(s) => {
                            let words = s.len();
                            let mut t = index.tuning();
                            t.synonyms = Arc::new(s);
                            index.set_tuning(t);
                            tracing::info!(file = %path.display(), words, "search synonyms reloaded");
                        }
                        Err(e) => tracing::error!(
                            error = %format!("{e:#}"),
                            "synonym file not reloaded; the previous set stays in use"
                        ),
                    }
                }
            })
            .abort_handle()
        });
        // The model loads before the follower takes the index's writer lock: a bad model
        // file stops the hub at start, naming the file.
        let semantic = match &tuning.model_dir {
            Some(model_dir) => Some(start_semantic(&store, model_dir, &dir, poll)?),
            None => None,
        };
        let follower = Follower::start(index.clone(), HubOutbox { store }, config)
            .context("cannot start the search follower (is another hub using this data dir?)")?;
        // The keyword index checks the outbox's history (a mark of the entry it applied); the
        // vectors follow the same outbox and go back with it.
        let replays = semantic.as_ref().and_then(|s| {
            let replayer = s
                .follower
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .as_ref()?
                .replayer();
            let status = follower.status();
            Some(
                tokio::spawn(async move {
                    let mut seen = status.rebuilds();
                    loop {
                        tokio::time::sleep(poll).await;
                        let now = status.rebuilds();
                        if now != seen {
                            seen = now;
                            replayer.replay();
                        }
                    }
                })
                .abort_handle(),
            )
        });
        Ok(Search {
            index,
            status: follower.status(),
            follower: std::sync::Mutex::new(Some(follower)),
            reloader,
            semantic,
            replays,
        })
    }

    /// The embedding model, when `search_model_dir` is set.
    pub fn embedder(&self) -> Option<&Arc<Embedder>> {
        self.semantic.as_ref().map(|s| &s.embedder)
    }

    /// The agents' vectors (kept up to date from the outbox), when `search_model_dir` is set.
    pub fn vectors(&self) -> Option<&SharedVectors> {
        self.semantic.as_ref().map(|s| &s.vectors)
    }

    /// The meaning side of `mode=semantic|hybrid`, when `search_model_dir` is set (see
    /// [`hub_search::hybrid`]).
    pub fn semantic(&self) -> Option<&Semantic> {
        self.semantic.as_ref().map(|s| &s.hybrid)
    }

    /// Progress of the embeddings, when `search_model_dir` is set.
    pub fn vector_status(&self) -> Option<&VectorStatus> {
        self.semantic.as_ref().map(|s| &*s.status)
    }

    /// Tells the follower the outbox grew (after a publish, yank, … commits).
    pub fn wake(&self) {
        if let Some(f) = self
            .follower
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
        {
            f.wake();
        }
        if let Some(s) = &self.semantic
            && let Some(f) = s
                .follower
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .as_ref()
        {
            f.wake();
        }
    }

    /// Outbox entries not yet searchable.
    pub fn lag(&self) -> u64 {
        self.status.lag()
    }

    /// With a model: outbox entries whose vectors are not in yet, counted to the newest outbox
    /// head either follower saw (the keyword follower looks more often, so a change shows here
    /// before the embedding follower reads it).
    pub fn embedding_lag(&self) -> Option<u64> {
        let v = self.vector_status()?;
        let behind_keyword = self.status.head_seq().saturating_sub(v.committed_seq());
        Some(v.lag().max(behind_keyword))
    }

    /// Progress of the follower.
    pub fn status(&self) -> &FollowStatus {
        &self.status
    }

    /// Stops the follower after committing what it applied.
    pub async fn shutdown(&self) -> anyhow::Result<()> {
        for task in [&self.reloader, &self.replays].into_iter().flatten() {
            task.abort();
        }
        let f = self
            .follower
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(f) = f {
            f.shutdown().await.context("search follower")?;
        }
        let v = self.semantic.as_ref().and_then(|s| {
            s.follower
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
        });
        if let Some(v) = v {
            v.shutdown().await.context("embedding follower")?;
        }
        Ok(())
    }
}

impl Search {
    /// Runs `q` in its mode (`mode=`; the default is hybrid with a model, keyword without):
    /// blocking work, keep it off async workers.
    pub fn run(&self, q: &SearchQuery) -> Result<SearchResults, HybridError> {
        self.index.search_with(q, self.semantic())
    }
}

/// Loads the model in `model_dir`, opens the vectors in the index directory `index_dir` and
/// starts their follower.
fn start_semantic(
    store: &Store,
    model_dir: &Path,
    index_dir: &Path,
    poll: std::time::Duration,
) -> anyhow::Result<SemanticParts> {
    let t0 = std::time::Instant::now();
    let embedder = Arc::new(Embedder::load(model_dir).with_context(|| {
        format!(
            "cannot load the search model (search_model_dir = {})",
            model_dir.display()
        )
    })?);
    let vectors = VectorStore::open(index_dir, embedder.model_id())?;
    tracing::info!(
        model = embedder.model_id(),
        load_ms = t0.elapsed().as_millis() as u64,
        agents = vectors.len(),
        seq = vectors.seq(),
        rebuild = vectors.reset_reason().unwrap_or("no"),
        "search model loaded"
    );
    let vectors: SharedVectors = Arc::new(std::sync::RwLock::new(vectors));
    let follower = VectorFollower::start(
        HubOutbox {
            store: store.clone(),
        },
        Arc::clone(&embedder),
        Arc::clone(&vectors),
        VectorFollowConfig {
            poll_interval: poll,
            ..VectorFollowConfig::default()
        },
    );
    Ok(SemanticParts {
        hybrid: Semantic::new(Arc::clone(&embedder), Arc::clone(&vectors)),
        embedder,
        vectors,
        status: follower.status(),
        follower: std::sync::Mutex::new(Some(follower)),
    })
}

/// The outbox as [`OutboxSource`].
#[derive(Debug, Clone)]
pub struct HubOutbox {
    /// The database.
    pub store: Store,
}

fn source_err(e: impl std::error::Error + Send + Sync + 'static) -> SourceError {
    Box::new(e)
}

fn msg_err(m: String) -> SourceError {
    m.into()
}

fn doc_of(r: &VisibleAgent) -> Result<SearchDoc, SourceError> {
    let env = Envelope::from_json(&r.envelope)
        .map_err(|d| msg_err(format!("envelope of `{}`: {d}", r.name)))?;
    let text = std::str::from_utf8(&env.payload)
        .map_err(|e| msg_err(format!("manifest of `{}`: {e}", r.name)))?;
    let manifest =
        Manifest::from_json(text).map_err(|d| msg_err(format!("manifest of `{}`: {d}", r.name)))?;
    Ok(SearchDoc::new(
        manifest,
        AgentStats {
            downloads: u64::try_from(r.downloads).unwrap_or(0),
            updated_at: r.updated_at_ms.div_euclid(1000),
            yanked: false,
            deprecated: r.deprecated,
        },
    ))
}

impl HubOutbox {
    /// Entries after `after` resolved to changes, with the marks of the row at `after` and of
    /// the last entry.
    async fn read(&self, after: u64, limit: usize) -> Result<MarkedEntries, SourceError> {
        let after = i64::try_from(after).map_err(source_err)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let (read, states) = self
            .store
            .outbox_with_states(after, limit)
            .await
            .map_err(source_err)?;
        let mut docs: HashMap<&str, SearchDoc> = HashMap::new();
        let mut out = Vec::with_capacity(read.entries.len());
        for (seq, agent) in &read.entries {
            let change = match states.get(agent) {
                Some(row) => {
                    let doc = match docs.get(agent.as_str()) {
                        Some(d) => d.clone(),
                        None => {
                            let d = doc_of(row)?;
                            docs.insert(agent, d.clone());
                            d
                        }
                    };
                    Change::Upsert(Box::new(doc))
                }
                None => Change::Delete(
                    agent
                        .parse::<AgentName>()
                        .map_err(|e| msg_err(format!("outbox {seq}: agent `{agent}`: {e}")))?,
                ),
            };
            out.push(OutboxEntry {
                seq: u64::try_from(*seq).map_err(source_err)?,
                change,
            });
        }
        Ok(MarkedEntries {
            entries: out,
            at_after: read.at_after,
            last: read.last,
        })
    }
}

impl OutboxSource for HubOutbox {
    async fn entries_after(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, SourceError> {
        Ok(self.read(after, limit).await?.entries)
    }

    async fn entries_after_marked(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<MarkedEntries, SourceError> {
        self.read(after, limit).await
    }

    async fn head(&self) -> Result<u64, SourceError> {
        let head = self.store.outbox_head().await.map_err(source_err)?;
        u64::try_from(head).map_err(source_err)
    }

    async fn snapshot(&self) -> Result<Option<Snapshot>, SourceError> {
        let (seq, mark, docs) = snapshot_marked(&self.store)
            .await
            .map_err(|e| msg_err(format!("{e:#}")))?;
        Ok(Some(Snapshot { seq, mark, docs }))
    }
}

/// Every visible agent's document and the outbox head, read in one transaction.
pub async fn snapshot(store: &Store) -> anyhow::Result<(u64, Vec<SearchDoc>)> {
    let (head, _, docs) = snapshot_marked(store).await?;
    Ok((head, docs))
}

/// [`snapshot`] with the mark of the head's outbox row (what a rebuilt index records).
async fn snapshot_marked(store: &Store) -> anyhow::Result<(u64, Option<String>, Vec<SearchDoc>)> {
    let (head, mark, rows) = store.visible_agents().await?;
    let docs = rows
        .iter()
        .map(doc_of)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((u64::try_from(head)?, mark, docs))
}

/// The outcome of `ofc-hub search-check`.
#[derive(Debug, Serialize)]
pub struct CheckReport {
    /// The last outbox sequence the index committed.
    pub index_seq: u64,
    /// The outbox head in the database.
    pub database_seq: u64,
    /// The comparison.
    #[serde(flatten)]
    pub check: Check,
}

impl CheckReport {
    /// The index equals the database.
    pub fn is_consistent(&self) -> bool {
        self.check.is_consistent()
    }
}

/// Compares the committed index in `data_dir` with the database.
pub async fn check(store: &Store, data_dir: &Path) -> anyhow::Result<CheckReport> {
    let dir = index_dir(data_dir);
    let index = SearchIndex::open_or_create(&dir)
        .with_context(|| format!("cannot open the search index {}", dir.display()))?;
    let index_seq = index.committed_seq()?;
    let (database_seq, docs) = snapshot(store).await?;
    let check = tokio::task::spawn_blocking(move || index.check(&docs)).await??;
    Ok(CheckReport {
        index_seq,
        database_seq,
        check,
    })
}

/// Rebuilds the index in `data_dir` from the database (the hub must not be running: the index
/// has one writer, which a serving hub's follower holds). Takes the writer lock before reading
/// the database, so it fails at once while a hub serves. Returns the sequence the index now
/// carries and the document count.
pub async fn reindex(store: &Store, data_dir: &Path) -> anyhow::Result<(u64, usize)> {
    let dir = index_dir(data_dir);
    let index = SearchIndex::open_or_create(&dir)
        .with_context(|| format!("cannot open the search index {}", dir.display()))?;
    let mut w = index.writer(WriterConfig::rebuild()).with_context(|| {
        format!(
            "cannot take the search index's writer lock in {} (the index has one writer: is a \
             hub serving this data dir? stop it, run `ofc-hub reindex`, then start the hub \
             again)",
            dir.display()
        )
    })?;
    let (seq, mark, mut docs) = snapshot_marked(store).await?;
    // Most downloaded first: relevance pruning skips more of an index in that order.
    hub_search::index::by_popularity(&mut docs);
    let n = docs.len();
    let seq = tokio::task::spawn_blocking(move || -> anyhow::Result<u64> {
        let seq = w.rebuild_marked(seq, mark, docs)?;
        w.close()?;
        Ok(seq)
    })
    .await??;
    Ok((seq, n))
}

#[cfg(test)]
mod synonym_file_tests {
    use super::{MAX_SYNONYMS_FILE_BYTES, read_synonyms};

    #[test]
    fn a_synonym_file_is_bounded_and_its_mistakes_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.txt");
        let line = "alpha, beta\n";
        std::fs::write(
            &big,
            line.repeat((MAX_SYNONYMS_FILE_BYTES as usize) / line.len() + 1),
        )
        .unwrap();
        let e = format!("{:#}", read_synonyms(&big).unwrap_err());
        assert!(e.contains("more than the 1048576 accepted"), "{e}");
        let bad = dir.path().join("bad.txt");
        std::fs::write(&bad, "alpha, beta\nnot valid, x y\n").unwrap();
        let e = format!("{:#}", read_synonyms(&bad).unwrap_err());
        assert!(e.contains("bad.txt:2:"), "{e}");
        let e = format!(
            "{:#}",
            read_synonyms(&dir.path().join("none.txt")).unwrap_err()
        );
        assert!(e.contains("cannot read the synonym file"), "{e}");
    }
}

#[cfg(test)]
mod earlier_index_dir_tests {
    use super::{EMBEDDINGS_FILE_NAME, adopt_earlier_index_dirs, index_dir};

    /// The embeddings of the newest earlier directory move into the current one; an earlier
    /// directory's index files stay where they are (never read) and are reported.
    #[test]
    fn the_embeddings_move_from_the_newest_earlier_index_dir() {
        let data = tempfile::tempdir().unwrap();
        for (name, bytes) in [("search-v2", "old"), ("search-v3", "newest")] {
            let dir = data.path().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(EMBEDDINGS_FILE_NAME), bytes).unwrap();
            std::fs::write(dir.join("meta.json"), "{}").unwrap();
        }
        let found = adopt_earlier_index_dirs(data.path()).unwrap();
        assert_eq!(
            found,
            [data.path().join("search-v3"), data.path().join("search-v2")]
        );
        let current = index_dir(data.path());
        assert_eq!(
            std::fs::read_to_string(current.join(EMBEDDINGS_FILE_NAME)).unwrap(),
            "newest"
        );
        assert!(
            !data
                .path()
                .join("search-v3")
                .join(EMBEDDINGS_FILE_NAME)
                .exists()
        );
        assert!(data.path().join("search-v3/meta.json").exists());
        // Only the newest earlier directory's embeddings move; the current ones are never
        // replaced (the second call below).
        assert_eq!(
            std::fs::read_to_string(data.path().join("search-v2").join(EMBEDDINGS_FILE_NAME))
                .unwrap(),
            "old"
        );
        adopt_earlier_index_dirs(data.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(current.join(EMBEDDINGS_FILE_NAME)).unwrap(),
            "newest"
        );
    }

    #[test]
    fn a_data_dir_without_earlier_index_dirs_is_left_alone() {
        let data = tempfile::tempdir().unwrap();
        assert!(adopt_earlier_index_dirs(data.path()).unwrap().is_empty());
        assert!(!index_dir(data.path()).exists());
    }
}
