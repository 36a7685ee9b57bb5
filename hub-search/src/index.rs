//! Opening the index, writing to it (one writer, commits that carry the last applied outbox
//! sequence) and checking it against a source of truth.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use serde::{Deserialize, Serialize};
use tantivy::collector::DocSetCollector;
use tantivy::directory::MmapDirectory;
use tantivy::index::SegmentId;
use tantivy::indexer::{LogMergePolicy, NoMergePolicy};
use tantivy::query::AllQuery;
use tantivy::schema::Value as _;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::doc::SearchDoc;
use crate::error::{Error, Result};
use crate::mapping::{self, Fields, field};
use crate::outbox::{Change, OutboxEntry};
use crate::popularity::PopularityCache;
use crate::synonyms::Synonyms;

/// Version of the index layout. Bumped whenever [`mapping::MAPPING`] changes in a way old
/// segments cannot serve; an index written with another version is refused (rebuild it).
/// 4: the fingerprint is stored only (no longer a term) and the string columns' dictionaries
/// are not zstd-compressed. 5: the sort keys (downloads, last update) are columns only. 6: no
/// positions in the text field (no query reads them; `mapping::TEXT_POSITIONS`).
pub const INDEX_FORMAT: u32 = 6;

/// Directory name under the hub's data directory; carries the format so that a new layout never
/// reads old files.
pub const INDEX_DIR_NAME: &str = "search-v6";

/// The directory names of earlier formats, oldest first: never read as an index. A hub moves
/// the agents' embeddings out of the newest one (their file's format is its own, unchanged).
pub const EARLIER_INDEX_DIR_NAMES: &[&str] = &[
    "search-v1",
    "search-v2",
    "search-v3",
    "search-v4",
    "search-v5",
];

/// What every commit records (Tantivy's commit payload, JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitPayload {
    /// [`INDEX_FORMAT`] at the time of the commit.
    pub format: u32,
    /// The last outbox sequence whose effect is in this commit.
    pub seq: u64,
    /// The mark of that outbox entry, when the source gave one (see [`crate::outbox::Mark`]):
    /// the follower compares it with the outbox's row at `seq` to notice a restored database
    /// that handed the sequence out again. Absent in commits made before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
}

/// Writer settings.
#[derive(Debug, Clone, Copy)]
pub struct WriterConfig {
    /// Total indexing memory budget in bytes, shared by the threads.
    pub heap_bytes: usize,
    /// Indexing threads.
    pub threads: usize,
}

impl Default for WriterConfig {
    /// The follower's: small commits, one thread.
    fn default() -> Self {
        Self {
            heap_bytes: 128 << 20,
            threads: 1,
        }
    }
}

impl WriterConfig {
    /// For [`Indexer::rebuild`] (`ofc-hub reindex`, and the benchmarks that time it): two
    /// indexing threads when there are two cores, 200 MiB. At a million agents on 2 cores this
    /// builds in about two thirds of the time of the follower's one thread and 128 MiB (32-34
    /// against 48 s, see BENCHMARKS.md).
    ///
    /// The heap also shapes the merged segment: the threads take documents in turn, so each
    /// flushed segment holds every other document of a stretch of the popularity order, and the
    /// merge puts those stretches one after the other. A bigger heap makes longer stretches,
    /// further from most-downloaded-first, and relevance pruning skips less: at 300 MiB
    /// misspelled queries were 15-20 % slower than at 200 MiB.
    pub fn rebuild() -> Self {
        Self {
            heap_bytes: 200 << 20,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(2)),
        }
    }
}

/// The search index: a Tantivy index built from [`mapping::MAPPING`] and a reader on it.
#[derive(Clone)]
pub struct SearchIndex {
    pub(crate) index: Index,
    pub(crate) reader: IndexReader,
    pub(crate) fields: Fields,
    /// Per-segment popularity bounds for pruning (see [`PopularityCache`]).
    pub(crate) bounds: Arc<PopularityCache>,
    /// Query-time settings, changed without reindexing.
    pub(crate) tuning: Arc<RwLock<Tuning>>,
}

/// Query-time settings of a [`SearchIndex`]: they change what a search does, not the index.
#[derive(Debug, Clone)]
pub struct Tuning {
    /// Synonym sets ([`crate::synonyms`]); the hub's default set unless replaced.
    pub synonyms: Arc<Synonyms>,
    /// When every word together finds fewer agents than this, agents that match only some of
    /// the words follow them, ranked below every full match (0: never).
    pub fewer_words_below: usize,
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            synonyms: Arc::new(Synonyms::default_set()),
            fewer_words_below: DEFAULT_FEWER_WORDS_BELOW,
        }
    }
}

/// [`Tuning::fewer_words_below`] by default.
pub const DEFAULT_FEWER_WORDS_BELOW: usize = 10;

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex").finish_non_exhaustive()
    }
}

impl SearchIndex {
    /// Opens the index in `dir`, creating it (empty, sequence 0) when absent.
    pub fn open_or_create(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::Io(dir.display().to_string(), e))?;
        let mmap = MmapDirectory::open(dir).map_err(|e| Error::Tantivy(e.into()))?;
        let index = Index::open_or_create(mmap, mapping::schema())?;
        Self::from_index(index)
    }

    /// The query-time settings in use.
    pub fn tuning(&self) -> Tuning {
        self.tuning
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the query-time settings; the next search uses them (no reindexing).
    pub fn set_tuning(&self, tuning: Tuning) {
        *self.tuning.write().unwrap_or_else(PoisonError::into_inner) = tuning;
    }

    /// An index in memory (tests, benchmarks).
    pub fn in_ram() -> Result<Self> {
        Self::from_index(Index::create_in_ram(mapping::schema()))
    }

    /// An index in memory whose text fields index positions (tests of the phrase machinery;
    /// the hub's mapping has none, `mapping::TEXT_POSITIONS`).
    #[cfg(test)]
    pub(crate) fn in_ram_with_positions() -> Result<Self> {
        Self::open_index(Index::create_in_ram(mapping::schema_with_positions()))
    }

    fn from_index(index: Index) -> Result<Self> {
        if index.schema() != mapping::schema() {
            return Err(Error::Format(
                "the index on disk was built from another mapping".into(),
            ));
        }
        Self::open_index(index)
    }

    /// Opens an index whose schema is the mapping's (or, in tests, a variant of it).
    fn open_index(index: Index) -> Result<Self> {
        mapping::prepare(&index);
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::OnCommitWithDelay)
            .try_into()?;
        let fields = Fields::new(&index.schema());
        let this = Self {
            index,
            reader,
            fields,
            bounds: Arc::default(),
            tuning: Arc::default(),
        };
        // Refuse an index written by another format now rather than at the first search.
        this.committed_seq()?;
        Ok(this)
    }

    /// The last outbox sequence whose effect is committed (0 for a new index).
    pub fn committed_seq(&self) -> Result<u64> {
        Ok(self.committed()?.map_or(0, |p| p.seq))
    }

    /// The mark of the last outbox entry committed, when recorded.
    pub fn committed_mark(&self) -> Result<Option<String>> {
        Ok(self.committed()?.and_then(|p| p.mark))
    }

    /// The last commit's payload (None for a new index).
    fn committed(&self) -> Result<Option<CommitPayload>> {
        let metas = self.index.load_metas()?;
        match metas.payload {
            None => Ok(None),
            Some(text) => {
                let p: CommitPayload = serde_json::from_str(&text).map_err(|e| {
                    Error::Format(format!("commit payload `{text}` is not ours: {e}"))
                })?;
                if p.format != INDEX_FORMAT {
                    return Err(Error::Format(format!(
                        "index format {} but this hub reads format {INDEX_FORMAT}; rebuild it",
                        p.format
                    )));
                }
                Ok(Some(p))
            }
        }
    }

    /// Opens the single writer. Tantivy holds a lock file, so a second writer on the same
    /// directory fails instead of corrupting the index.
    pub fn writer(&self, config: WriterConfig) -> Result<Indexer> {
        let writer: IndexWriter<TantivyDocument> = self
            .index
            .writer_with_num_threads(config.threads.max(1), config.heap_bytes)?;
        let (seq, mark) = self.committed()?.map_or((0, None), |p| (p.seq, p.mark));
        Ok(Indexer {
            writer,
            fields: self.fields.clone(),
            reader: self.reader.clone(),
            committed: seq,
            applied: seq,
            committed_mark: mark.clone(),
            applied_mark: mark,
            pending: 0,
        })
    }

    /// Makes the latest commit visible to searches now instead of after the reload delay.
    pub fn refresh(&self) -> Result<()> {
        Ok(self.reader.reload()?)
    }

    /// Segments visible to searches.
    pub fn segment_count(&self) -> usize {
        self.reader.searcher().segment_readers().len()
    }

    /// Every document's name and fingerprint, from the committed index.
    pub fn contents(&self) -> Result<BTreeMap<String, String>> {
        let searcher = self.reader.searcher();
        let name = self.fields.get(field::NAME);
        let fp = self.fields.get(field::FINGERPRINT);
        let mut out = BTreeMap::new();
        for addr in searcher.search(&AllQuery, &DocSetCollector)? {
            let doc: TantivyDocument = searcher.doc(addr)?;
            let text = |f| {
                doc.get_first(f)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            if out.insert(text(name), text(fp)).is_some() {
                return Err(Error::Format(format!(
                    "two documents for agent `{}`",
                    text(name)
                )));
            }
        }
        Ok(out)
    }

    /// Compares the committed index with the documents it should hold (every agent with a
    /// visible version, as the database says) — the `check` command.
    pub fn check<'a>(&self, expected: impl IntoIterator<Item = &'a SearchDoc>) -> Result<Check> {
        self.refresh()?;
        let mut actual = self.contents()?;
        let mut report = Check::default();
        for doc in expected {
            if doc.stats.yanked {
                continue;
            }
            let name = doc.name().to_string();
            match actual.remove(&name) {
                None => report.missing.push(name),
                Some(fp) if fp != doc.fingerprint() => report.stale.push(name),
                Some(_) => report.matching += 1,
            }
        }
        report.extra = actual.into_keys().collect();
        Ok(report)
    }
}

/// Sorts documents for [`Indexer::rebuild`]: most downloaded first, then by name.
pub fn by_popularity(docs: &mut [SearchDoc]) {
    docs.sort_by(|a, b| {
        b.stats
            .downloads
            .cmp(&a.stats.downloads)
            .then_with(|| a.name().cmp(b.name()))
    });
}

/// The outcome of [`SearchIndex::check`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Documents equal to the source of truth.
    pub matching: usize,
    /// Agents the index lacks.
    pub missing: Vec<String>,
    /// Agents indexed with other content (another version or other statistics).
    pub stale: Vec<String>,
    /// Agents indexed that should not be.
    pub extra: Vec<String>,
}

impl Check {
    /// The index equals the source of truth.
    pub fn is_consistent(&self) -> bool {
        self.missing.is_empty() && self.stale.is_empty() && self.extra.is_empty()
    }
}

/// The single index writer: applies outbox entries in sequence order and commits with the last
/// applied sequence in the commit payload, so that what is committed and where to resume are
/// one atomic fact.
pub struct Indexer {
    writer: IndexWriter<TantivyDocument>,
    reader: IndexReader,
    fields: Fields,
    committed: u64,
    applied: u64,
    /// The marks of the entries at `committed` and `applied`, when known.
    committed_mark: Option<String>,
    applied_mark: Option<String>,
    pending: usize,
}

impl std::fmt::Debug for Indexer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexer")
            .field("committed", &self.committed)
            .field("applied", &self.applied)
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl Indexer {
    /// The last sequence committed.
    pub fn committed_seq(&self) -> u64 {
        self.committed
    }

    /// The last sequence applied (committed or not).
    pub fn applied_seq(&self) -> u64 {
        self.applied
    }

    /// The mark of the entry at the committed sequence, when known.
    pub fn committed_mark(&self) -> Option<&str> {
        self.committed_mark.as_deref()
    }

    /// Records `mark` as the mark of the entry at `seq`, when that is the last one applied:
    /// the next commit carries it.
    pub fn mark(&mut self, seq: u64, mark: String) {
        if seq == self.applied {
            self.applied_mark = Some(mark);
        }
    }

    /// Entries applied since the last commit.
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// Applies one outbox entry. Entries at or below the applied sequence are skipped (a source
    /// may deliver again after a restart); a sequence may jump (rolled-back transactions leave
    /// holes).
    pub fn apply(&mut self, entry: &OutboxEntry) -> Result<()> {
        if entry.seq <= self.applied {
            return Ok(());
        }
        match &entry.change {
            Change::Upsert(doc) => self.upsert(doc)?,
            Change::Delete(name) => {
                self.writer.delete_term(Term::from_field_text(
                    self.fields.get(field::NAME),
                    &name.to_string(),
                ));
            }
        }
        self.applied = entry.seq;
        self.applied_mark = None;
        self.pending += 1;
        Ok(())
    }

    fn upsert(&mut self, doc: &SearchDoc) -> Result<()> {
        let name = doc.name().to_string();
        self.writer
            .delete_term(Term::from_field_text(self.fields.get(field::NAME), &name));
        if !doc.stats.yanked {
            self.writer.add_document(self.fields.document(doc))?;
        }
        Ok(())
    }

    /// Commits everything applied, recording the applied sequence. Returns it.
    pub fn commit(&mut self) -> Result<u64> {
        let payload = serde_json::to_string(&CommitPayload {
            format: INDEX_FORMAT,
            seq: self.applied,
            mark: self.applied_mark.clone(),
        })
        .expect("payload serializes");
        let mut prepared = self.writer.prepare_commit()?;
        prepared.set_payload(&payload);
        prepared.commit()?;
        self.committed = self.applied;
        self.committed_mark = self.applied_mark.clone();
        self.pending = 0;
        Ok(self.committed)
    }

    /// Commits and makes the commit visible to searches immediately.
    pub fn commit_and_refresh(&mut self) -> Result<u64> {
        let seq = self.commit()?;
        self.reader.reload()?;
        Ok(seq)
    }

    /// Replaces the whole index with `docs`, as of outbox sequence `seq` (`ofc-hub reindex`:
    /// the hub reads the current max sequence and every visible agent in one transaction).
    /// Nothing is visible until the final commit; a crash in between leaves the old index.
    ///
    /// Documents keep the order they come in. Give the most downloaded first (see
    /// [`by_popularity`]): relevance pruning bounds the popularity factor of the documents
    /// *after* the current one, so with the popular agents first most of the index is
    /// skipped. Any order gives the same results.
    pub fn rebuild(&mut self, seq: u64, docs: impl IntoIterator<Item = SearchDoc>) -> Result<u64> {
        self.rebuild_marked(seq, None, docs)
    }

    /// [`Indexer::rebuild`], recording `mark` as the mark of the outbox entry at `seq`.
    pub fn rebuild_marked(
        &mut self,
        seq: u64,
        mark: Option<String>,
        docs: impl IntoIterator<Item = SearchDoc>,
    ) -> Result<u64> {
        // No background merges while rebuilding: every segment is merged into one at the end
        // (a merge started meanwhile would hold segments the final merge needs).
        self.writer.set_merge_policy(Box::new(NoMergePolicy));
        self.writer.delete_all_documents()?;
        for doc in docs {
            if !doc.stats.yanked {
                self.writer.add_document(self.fields.document(&doc))?;
            }
        }
        self.applied = seq;
        self.applied_mark = mark;
        let seq = self.commit()?;
        self.merge_all()?;
        self.writer
            .set_merge_policy(Box::new(LogMergePolicy::default()));
        Ok(seq)
    }

    /// Merges every committed segment into one and waits for it (after a rebuild: a query
    /// visits every segment, so one segment answers fastest). The merged segment replaces the
    /// others in a new commit that keeps the commit payload. Segments are concatenated most
    /// downloaded first (each flushed segment of a rebuild holds a run of the input order).
    pub fn merge_all(&mut self) -> Result<()> {
        let segments = self.writer.index().searchable_segments()?;
        if segments.len() > 1 {
            let mut keyed = Vec::with_capacity(segments.len());
            for segment in &segments {
                let reader = tantivy::SegmentReader::open(segment)?;
                let downloads = reader.fast_fields().u64(field::DOWNLOADS)?;
                let first = if reader.max_doc() > 0 {
                    downloads.first(0).unwrap_or(0)
                } else {
                    0
                };
                keyed.push((std::cmp::Reverse(first), segment.id()));
            }
            keyed.sort();
            drop(segments);
            let ids: Vec<SegmentId> = keyed.into_iter().map(|(_, id)| id).collect();
            self.writer.merge(&ids).wait()?;
            // The merged-away segments' files (Tantivy's own pass after a merge may skip
            // them while something still held them).
            self.writer.garbage_collect_files().wait()?;
        }
        Ok(())
    }

    /// Drops what was applied since the last commit.
    pub fn rollback(&mut self) -> Result<()> {
        self.writer.rollback()?;
        self.applied = self.committed;
        self.applied_mark = self.committed_mark.clone();
        self.pending = 0;
        Ok(())
    }

    /// Waits for background merges and releases the writer lock.
    pub fn close(self) -> Result<()> {
        self.writer.wait_merging_threads()?;
        Ok(())
    }
}
