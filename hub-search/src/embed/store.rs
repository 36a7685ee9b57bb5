//! The agents' embeddings beside the index: one vector per agent name, quantised to `i8`, held
//! in memory and persisted as an append-only log in the index directory ([`FILE_NAME`]).
//!
//! **Why `i8`.** An f32 vector of 384 dimensions is 1,536 bytes: 1.5 GB at a million agents.
//! Each vector is unit length, so its components are small and evenly spread; scaling by the
//! largest component to ±127 keeps cosine similarities within ≈ 0.001 of the f32 ones (tested
//! below) for 388 bytes (384 codes + one f32 scale), 4× less than f32 and 2× less than f16,
//! and an exact scan is integer-friendly. An approximate index, if one is built, goes on top
//! of [`VectorStore::iter`].
//!
//! **Format** (little endian). A header — `OFCVECS1`, `u32` dimensions, `u16` length and the
//! UTF-8 model id ([`super::Embedder::model_id`]) — then blocks, one per commit: `u32` magic
//! `OFCB`, `u64` outbox sequence, `u32` payload length, the payload, and the first 16 bytes of
//! SHA-256 over sequence and payload. The payload is operations: `1`, `u16` key length, key,
//! `u64` text hash, `f32` scale, the codes (an upsert); or `2`, `u16` key length, key (a
//! delete). Replaying the blocks gives the state; a torn last block (a crash during the append)
//! is cut off, which loses nothing: blocks are synced before the index commits the same
//! sequence, so the follower replays it. When dead records outnumber live ones the file is
//! rewritten as one block (to a temporary file, renamed over).
//!
//! **Consistency with the index.** The follower commits this store before the Tantivy index,
//! each with the outbox sequence applied. At start it follows from the lower of the two, so a
//! store that is behind (absent, made with another model, or older than an `ofc-hub reindex`)
//! is brought up to date by replaying the outbox, whose entries are idempotent.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::Embedder;

/// The store's file in the index directory.
pub const FILE_NAME: &str = "embeddings-v1.bin";

const MAGIC: &[u8; 8] = b"OFCVECS1";
const BLOCK_MAGIC: u32 = u32::from_le_bytes(*b"OFCB");
const UPSERT: u8 = 1;
const DELETE: u8 = 2;
const DIM: usize = Embedder::DIM;
/// Block header: magic, sequence, payload length.
const BLOCK_HEAD: usize = 4 + 8 + 4;
const CHECK: usize = 16;

/// A vector store failure: the file and what went wrong.
#[derive(Debug, thiserror::Error)]
#[error("embedding store {}: {source}", path.display())]
pub struct StoreError {
    path: PathBuf,
    #[source]
    source: std::io::Error,
}

/// One stored vector: `codes[i] × scale` approximates the unit vector's component `i`.
#[derive(Debug, Clone, Copy)]
pub struct VectorRef<'a> {
    /// The quantised components.
    pub codes: &'a [i8],
    /// The factor back to the vector's scale.
    pub scale: f32,
}

impl VectorRef<'_> {
    /// Dot product with an f32 vector (the cosine similarity when `query` is unit length,
    /// as [`Embedder::embed`] returns).
    pub fn dot(&self, query: &[f32]) -> f32 {
        let s: f32 = self
            .codes
            .iter()
            .zip(query)
            .map(|(&c, &q)| f32::from(c) * q)
            .sum();
        s * self.scale
    }

    /// The vector back in f32.
    pub fn to_f32(&self) -> Vec<f32> {
        self.codes
            .iter()
            .map(|&c| f32::from(c) * self.scale)
            .collect()
    }
}

/// Quantises a vector to `i8` codes and a scale (largest magnitude ↦ 127).
pub fn quantize(v: &[f32]) -> (Vec<i8>, f32) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        return (vec![0; v.len()], 0.0);
    }
    let scale = max / 127.0;
    #[allow(clippy::cast_possible_truncation)] // rounded and clamped to the i8 range
    let codes = v
        .iter()
        .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (codes, scale)
}

enum Op {
    Upsert(String, u64, f32, Vec<i8>),
    Delete(String),
}

/// The agents' vectors (see the module documentation). Not synchronised: the follower's writer
/// mutates it under a write lock, searches read it under a read lock ([`SharedVectors`]).
pub struct VectorStore {
    path: PathBuf,
    model_id: String,
    seq: u64,
    slots: HashMap<String, u32>,
    keys: Vec<Option<String>>,
    hashes: Vec<u64>,
    scales: Vec<f32>,
    codes: Vec<i8>,
    free: Vec<u32>,
    pending: Vec<Op>,
    /// Records in the file (live or dead), to decide when to rewrite it.
    file_records: usize,
    /// The file's length up to its last valid block (`None`: it must be written anew).
    file_len: Option<u64>,
    reset_reason: Option<String>,
    /// Changes applied since the store was opened (upserts and removes, committed or not):
    /// an IVF snapshot taken at the same generation holds exactly these vectors.
    generation: u64,
}

/// The store as the follower and the searches share it.
pub type SharedVectors = std::sync::Arc<std::sync::RwLock<VectorStore>>;

impl std::fmt::Debug for VectorStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorStore")
            .field("path", &self.path)
            .field("model_id", &self.model_id)
            .field("seq", &self.seq)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl VectorStore {
    /// Opens the store in `dir` for vectors of `model_id`. A file made with another model, of
    /// another format, or absent gives an empty store at sequence 0 ([`Self::reset_reason`]
    /// says why), rewritten at the first commit.
    pub fn open(dir: &Path, model_id: &str) -> Result<Self, StoreError> {
        let path = dir.join(FILE_NAME);
        let mut store = Self {
            path: path.clone(),
            model_id: model_id.to_owned(),
            seq: 0,
            slots: HashMap::new(),
            keys: Vec::new(),
            hashes: Vec::new(),
            scales: Vec::new(),
            codes: Vec::new(),
            free: Vec::new(),
            pending: Vec::new(),
            file_records: 0,
            file_len: None,
            reset_reason: None,
            generation: 0,
        };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                store.reset_reason = Some("no embeddings stored yet".into());
                return Ok(store);
            }
            Err(e) => return Err(StoreError { path, source: e }),
        };
        let Some(body) = header_end(&bytes, model_id) else {
            store.reset_reason = Some(format!(
                "{FILE_NAME} was made with another model or format than {model_id}"
            ));
            return Ok(store);
        };
        let mut at = body;
        while let Some((seq, payload, next)) = block(&bytes, at) {
            let ops = parse_ops(payload).ok_or_else(|| StoreError {
                path: path.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("a block at byte {at} has a valid checksum but unreadable records"),
                ),
            })?;
            store.file_records += ops.len();
            for op in ops {
                store.apply(op);
            }
            store.seq = seq;
            at = next;
        }
        if at < bytes.len() {
            tracing::warn!(
                file = %path.display(),
                kept = at,
                dropped = bytes.len() - at,
                "embedding store: cutting off a torn last block"
            );
        }
        store.file_len = Some(at as u64);
        Ok(store)
    }

    /// Why the store opened empty, if it did.
    pub fn reset_reason(&self) -> Option<&str> {
        self.reset_reason.as_deref()
    }

    /// The model the vectors were made with.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The outbox sequence whose changes are all committed here.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Changes applied since the store was opened, committed or not.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Agents with a vector.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// No vector at all.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Bytes of vector data held in memory (codes and scales, dead slots included).
    pub fn vector_bytes(&self) -> usize {
        self.codes.len() + self.scales.len() * 4
    }

    /// The vector of agent `key` (its `publisher/agent` name).
    pub fn get(&self, key: &str) -> Option<VectorRef<'_>> {
        self.slots.get(key).map(|&s| self.at(s))
    }

    /// The hash of the text agent `key`'s vector was made from ([`super::text_hash`]).
    pub fn text_hash(&self, key: &str) -> Option<u64> {
        self.slots.get(key).map(|&s| self.hashes[s as usize])
    }

    /// Every agent and its vector, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, VectorRef<'_>)> {
        self.keys
            .iter()
            .enumerate()
            .filter_map(|(s, k)| k.as_deref().map(|k| (k, self.at(s as u32))))
    }

    fn at(&self, slot: u32) -> VectorRef<'_> {
        let s = slot as usize;
        VectorRef {
            codes: &self.codes[s * DIM..(s + 1) * DIM],
            scale: self.scales[s],
        }
    }

    /// Sets agent `key`'s vector (a unit vector of [`Embedder::DIM`] values) made from a text
    /// of hash `text_hash`; written at the next [`Self::commit`].
    ///
    /// # Panics
    /// If `vector` does not have [`Embedder::DIM`] values.
    pub fn upsert(&mut self, key: &str, text_hash: u64, vector: &[f32]) {
        assert_eq!(vector.len(), DIM, "embedding dimensions");
        let (codes, scale) = quantize(vector);
        let op = Op::Upsert(key.to_owned(), text_hash, scale, codes);
        self.apply_ref(&op);
        self.pending.push(op);
    }

    /// Removes agent `key`'s vector (nothing when it has none).
    pub fn remove(&mut self, key: &str) {
        if self.slots.contains_key(key) {
            let op = Op::Delete(key.to_owned());
            self.apply_ref(&op);
            self.pending.push(op);
        }
    }

    fn apply(&mut self, op: Op) {
        self.apply_ref(&op);
    }

    fn apply_ref(&mut self, op: &Op) {
        self.generation += 1;
        match op {
            Op::Upsert(key, hash, scale, codes) => {
                let slot = match self.slots.get(key) {
                    Some(&s) => s,
                    None => {
                        let s = match self.free.pop() {
                            Some(s) => s,
                            None => {
                                self.keys.push(None);
                                self.hashes.push(0);
                                self.scales.push(0.0);
                                self.codes.extend(std::iter::repeat_n(0, DIM));
                                u32::try_from(self.keys.len() - 1).expect("fewer than 2^32 agents")
                            }
                        };
                        self.slots.insert(key.clone(), s);
                        self.keys[s as usize] = Some(key.clone());
                        s
                    }
                } as usize;
                self.hashes[slot] = *hash;
                self.scales[slot] = *scale;
                self.codes[slot * DIM..(slot + 1) * DIM].copy_from_slice(codes);
            }
            Op::Delete(key) => {
                if let Some(s) = self.slots.remove(key) {
                    self.keys[s as usize] = None;
                    self.free.push(s);
                }
            }
        }
    }

    /// Makes the changes since the last commit durable as outbox sequence `seq` (synced to
    /// disk before it returns). Rewrites the file when it is new, made for another model, or
    /// mostly dead records. The same as [`Self::write`] then [`Self::finish`].
    pub fn commit(&mut self, seq: u64) -> Result<(), StoreError> {
        let written = self.write(seq)?;
        self.finish(written);
        Ok(())
    }

    /// The file part of [`Self::commit`]: writes and syncs the changes since the last commit
    /// as sequence `seq`, needing only shared access — so searches holding the read lock go on
    /// while a large file is rewritten. Nothing may change the store until [`Self::finish`]
    /// takes the result (the follower is the one writer).
    pub fn write(&self, seq: u64) -> Result<Written, StoreError> {
        let rewrite = match self.file_len {
            None => true,
            Some(_) => self.file_records + self.pending.len() > 2 * self.len() + 1024,
        };
        let written = if rewrite {
            self.rewrite(seq)
        } else if !self.pending.is_empty() || seq != self.seq {
            self.append(seq)
        } else {
            Ok((self.file_len, self.file_records))
        };
        let (file_len, file_records) = written.map_err(|source| StoreError {
            path: self.path.clone(),
            source,
        })?;
        Ok(Written {
            seq,
            file_len,
            file_records,
            ops: self.pending.len(),
        })
    }

    /// Records a [`Self::write`] as committed.
    ///
    /// # Panics
    /// If the store changed since that write.
    pub fn finish(&mut self, written: Written) {
        assert_eq!(
            written.ops,
            self.pending.len(),
            "the embedding store changed between write and finish"
        );
        self.file_len = written.file_len;
        self.file_records = written.file_records;
        self.pending.clear();
        self.seq = written.seq;
        self.reset_reason = None;
    }

    /// Appends the pending changes as one block: the file's new length and record count.
    fn append(&self, seq: u64) -> std::io::Result<(Option<u64>, usize)> {
        let mut payload = Vec::new();
        for op in &self.pending {
            encode_op(&mut payload, op);
        }
        let len = self.file_len.expect("the file exists when appending");
        let mut f = OpenOptions::new().write(true).open(&self.path)?;
        // Anything after the last valid block is a torn append: overwrite it.
        f.set_len(len)?;
        f.seek(SeekFrom::Start(len))?;
        let block = encode_block(seq, &payload);
        f.write_all(&block)?;
        f.sync_data()?;
        Ok((
            Some(len + block.len() as u64),
            self.file_records + self.pending.len(),
        ))
    }

    /// Writes the live vectors as a new file, renamed over the old one.
    fn rewrite(&self, seq: u64) -> std::io::Result<(Option<u64>, usize)> {
        let mut payload = Vec::with_capacity(self.len() * (DIM + 64));
        for (s, key) in self.keys.iter().enumerate() {
            if let Some(key) = key {
                let op = Op::Upsert(
                    key.clone(),
                    self.hashes[s],
                    self.scales[s],
                    self.codes[s * DIM..(s + 1) * DIM].to_vec(),
                );
                encode_op(&mut payload, &op);
            }
        }
        let mut bytes = header(&self.model_id);
        bytes.extend(encode_block(seq, &payload));
        let tmp = self.path.with_extension("bin.tmp");
        {
            let mut f = File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok((Some(bytes.len() as u64), self.len()))
    }
}

/// A [`VectorStore::write`] done, for [`VectorStore::finish`].
#[derive(Debug)]
#[must_use = "a write is committed only when finished"]
pub struct Written {
    seq: u64,
    file_len: Option<u64>,
    file_records: usize,
    ops: usize,
}

fn header(model_id: &str) -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    h.extend((DIM as u32).to_le_bytes());
    let id = model_id.as_bytes();
    h.extend(
        u16::try_from(id.len())
            .expect("short model id")
            .to_le_bytes(),
    );
    h.extend(id);
    h
}

/// Where the blocks start, when the header is this build's for `model_id`.
fn header_end(bytes: &[u8], model_id: &str) -> Option<usize> {
    let want = header(model_id);
    bytes.starts_with(&want).then_some(want.len())
}

fn checksum(seq: u64, payload: &[u8]) -> [u8; CHECK] {
    let mut h = Sha256::new();
    h.update(seq.to_le_bytes());
    h.update(payload);
    h.finalize()[..CHECK].try_into().expect("16 bytes")
}

fn encode_block(seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(BLOCK_HEAD + payload.len() + CHECK);
    b.extend(BLOCK_MAGIC.to_le_bytes());
    b.extend(seq.to_le_bytes());
    b.extend(
        u32::try_from(payload.len())
            .expect("a commit under 4 GiB")
            .to_le_bytes(),
    );
    b.extend(payload);
    b.extend(checksum(seq, payload));
    b
}

/// The block at `at`: its sequence, payload and the offset after it; `None` when there is no
/// whole, valid block there.
fn block(bytes: &[u8], at: usize) -> Option<(u64, &[u8], usize)> {
    let head = bytes.get(at..at + BLOCK_HEAD)?;
    if u32::from_le_bytes(head[..4].try_into().ok()?) != BLOCK_MAGIC {
        return None;
    }
    let seq = u64::from_le_bytes(head[4..12].try_into().ok()?);
    let len = u32::from_le_bytes(head[12..16].try_into().ok()?) as usize;
    let start = at + BLOCK_HEAD;
    let payload = bytes.get(start..start + len)?;
    let check = bytes.get(start + len..start + len + CHECK)?;
    (check == checksum(seq, payload)).then_some((seq, payload, start + len + CHECK))
}

fn encode_op(out: &mut Vec<u8>, op: &Op) {
    let key = |out: &mut Vec<u8>, k: &str| {
        out.extend(
            u16::try_from(k.len())
                .expect("agent names are short")
                .to_le_bytes(),
        );
        out.extend(k.as_bytes());
    };
    match op {
        Op::Upsert(k, hash, scale, codes) => {
            out.push(UPSERT);
            key(out, k);
            out.extend(hash.to_le_bytes());
            out.extend(scale.to_le_bytes());
            out.extend(codes.iter().map(|&c| c.to_le_bytes()[0]));
        }
        Op::Delete(k) => {
            out.push(DELETE);
            key(out, k);
        }
    }
}

fn parse_ops(mut p: &[u8]) -> Option<Vec<Op>> {
    fn take<'a>(p: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (a, b) = p.split_at_checked(n)?;
        *p = b;
        Some(a)
    }
    let mut ops = Vec::new();
    while let Some((&kind, rest)) = p.split_first() {
        p = rest;
        let klen = u16::from_le_bytes(take(&mut p, 2)?.try_into().ok()?) as usize;
        let key = std::str::from_utf8(take(&mut p, klen)?).ok()?.to_owned();
        match kind {
            UPSERT => {
                let hash = u64::from_le_bytes(take(&mut p, 8)?.try_into().ok()?);
                let scale = f32::from_le_bytes(take(&mut p, 4)?.try_into().ok()?);
                let codes = take(&mut p, DIM)?
                    .iter()
                    .map(|&b| i8::from_le_bytes([b]))
                    .collect();
                ops.push(Op::Upsert(key, hash, scale, codes));
            }
            DELETE => ops.push(Op::Delete(key)),
            _ => return None,
        }
    }
    Some(ops)
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
