//! Sentence embeddings computed by the hub itself: all-MiniLM-L6-v2 (a 6-layer BERT, 384
//! dimensions) run on the CPU with candle, tokenised with the Hugging Face `tokenizers` crate,
//! from three local files — no network, no Python.
//!
//! [`Embedder::embed`] does what sentence-transformers does for this model (its
//! `modules.json`: Transformer → mean Pooling → Normalize): WordPiece tokens with `[CLS]` and
//! `[SEP]`, truncated to [`Embedder::MAX_TOKENS`] (its `sentence_bert_config.json`
//! `max_seq_length`), the last hidden state averaged over the attention mask, then scaled to
//! unit length. So the dot product of two embeddings is their cosine similarity.
//!
//! [`agent_text`] is what an agent is embedded from; [`store`] keeps the vectors beside the
//! index, quantised to `i8`; [`follow`] keeps them up to date from the hub's outbox.

pub mod follow;
pub mod store;

use std::fmt;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use sha2::{Digest as _, Sha256};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::doc::SearchDoc;

/// The model's weights (safetensors).
pub const MODEL_FILE: &str = "model.safetensors";
/// The tokenizer (Hugging Face `tokenizer.json`).
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// The BERT configuration (Hugging Face `config.json`).
pub const CONFIG_FILE: &str = "config.json";

/// Largest `config.json` or `tokenizer.json` read (the real ones are 0.6 KB and 0.5 MB).
const MAX_SMALL_FILE_BYTES: u64 = 16 << 20;
/// Largest weights file read (all-MiniLM-L6-v2's is 91 MB).
const MAX_MODEL_FILE_BYTES: u64 = 1 << 30;

/// Texts run through the model at once: sorted by length first, so a batch pads little.
const BATCH: usize = 32;

/// Why the model could not be loaded or run. Loading errors name the file.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A model file is absent.
    #[error("the embedding model file {} is missing (search_model_dir must hold {MODEL_FILE}, {TOKENIZER_FILE} and {CONFIG_FILE})", .0.display())]
    Missing(PathBuf),
    /// A model file could not be read.
    #[error("cannot read the embedding model file {}: {}", .0.display(), .1)]
    Read(PathBuf, #[source] std::io::Error),
    /// A model file is not what it should be (truncated, not JSON, wrong shapes…).
    #[error("the embedding model file {} is not usable: {}", .0.display(), .1)]
    Corrupt(PathBuf, String),
    /// Tokenising a text failed.
    #[error("embedding: tokenising failed: {0}")]
    Tokenize(String),
    /// Running the model failed.
    #[error("embedding: the model failed: {0}")]
    Model(String),
}

/// A loaded sentence-embedding model. Thread-safe (`Send + Sync`): share it in an `Arc`.
pub struct Embedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    model_id: String,
}

impl fmt::Debug for Embedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embedder")
            .field("model_id", &self.model_id)
            .finish_non_exhaustive()
    }
}

fn read_file(dir: &Path, name: &str, max: u64) -> Result<(PathBuf, Vec<u8>), EmbedError> {
    let path = dir.join(name);
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(EmbedError::Missing(path));
        }
        Err(e) => return Err(EmbedError::Read(path, e)),
    };
    if !meta.is_file() {
        return Err(EmbedError::Corrupt(path, "not a regular file".into()));
    }
    if meta.len() > max {
        return Err(EmbedError::Corrupt(
            path,
            format!("{} bytes, more than the {max} accepted", meta.len()),
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| EmbedError::Read(path.clone(), e))?;
    Ok((path, bytes))
}

impl Embedder {
    /// Dimensions of an embedding.
    pub const DIM: usize = 384;
    /// Tokens per text, `[CLS]` and `[SEP]` included; the rest is cut off.
    pub const MAX_TOKENS: usize = 256;

    /// Loads the model from `dir` ([`MODEL_FILE`], [`TOKENIZER_FILE`], [`CONFIG_FILE`]). The
    /// error names the file that is missing or unusable.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let (config_path, config_bytes) = read_file(dir, CONFIG_FILE, MAX_SMALL_FILE_BYTES)?;
        let (tok_path, tok_bytes) = read_file(dir, TOKENIZER_FILE, MAX_SMALL_FILE_BYTES)?;
        let (model_path, model_bytes) = read_file(dir, MODEL_FILE, MAX_MODEL_FILE_BYTES)?;

        let config: BertConfig = serde_json::from_slice(&config_bytes)
            .map_err(|e| EmbedError::Corrupt(config_path.clone(), e.to_string()))?;
        let hidden = serde_json::from_slice::<serde_json::Value>(&config_bytes)
            .ok()
            .and_then(|v| v.get("hidden_size").and_then(serde_json::Value::as_u64));
        if hidden != Some(Self::DIM as u64) {
            return Err(EmbedError::Corrupt(
                config_path,
                format!(
                    "hidden_size is {}, the hub's embeddings have {} dimensions (all-MiniLM-L6-v2)",
                    hidden.map_or_else(|| "absent".to_owned(), |h| h.to_string()),
                    Self::DIM
                ),
            ));
        }

        let mut tokenizer = Tokenizer::from_bytes(&tok_bytes)
            .map_err(|e| EmbedError::Corrupt(tok_path.clone(), e.to_string()))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: Self::MAX_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| EmbedError::Corrupt(tok_path.clone(), e.to_string()))?;
        tokenizer.with_padding(None);

        let mut id = Sha256::new();
        for bytes in [&config_bytes, &tok_bytes, &model_bytes] {
            id.update(Sha256::digest(bytes));
        }
        let model_id = format!(
            "all-MiniLM-L6-v2/sha256:{}",
            &hex::encode(id.finalize())[..16]
        );

        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(model_bytes, DType::F32, &device)
            .map_err(|e| EmbedError::Corrupt(model_path.clone(), e.to_string()))?;
        let model = BertModel::load(vb, &config)
            .map_err(|e| EmbedError::Corrupt(model_path.clone(), e.to_string()))?;
        let embedder = Self {
            model,
            tokenizer,
            device,
            model_id,
        };
        // Weights of the right names but wrong shapes load lazily in places: one run proves
        // the file usable now rather than at the first agent.
        embedder
            .embed(&["ofc"])
            .map_err(|e| EmbedError::Corrupt(model_path, format!("the model does not run: {e}")))?;
        Ok(embedder)
    }

    /// Names the model and the exact files loaded (a hash over them): vectors made under
    /// another id are not comparable and are rebuilt.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Embeds each text: unit-length vectors of [`Embedder::DIM`] values, in input order.
    /// CPU-bound (milliseconds per text): keep it off async workers.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = texts
            .iter()
            .map(|t| {
                self.tokenizer
                    .encode(*t, true)
                    .map_err(|e| EmbedError::Tokenize(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let ids: Vec<&[u32]> = chunk.iter().map(|&i| encodings[i].get_ids()).collect();
            let vectors = self
                .run(&ids)
                .map_err(|e| EmbedError::Model(e.to_string()))?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// One padded batch through BERT, mean-pooled over the real tokens, normalised.
    fn run(&self, ids: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let len = ids.iter().map(|i| i.len()).max().unwrap_or(0).max(1);
        let mut flat = Vec::with_capacity(ids.len() * len);
        let mut mask = Vec::with_capacity(ids.len() * len);
        for row in ids {
            flat.extend_from_slice(row);
            flat.extend(std::iter::repeat_n(0u32, len - row.len()));
            mask.extend(std::iter::repeat_n(1u32, row.len()));
            mask.extend(std::iter::repeat_n(0u32, len - row.len()));
        }
        let shape = (ids.len(), len);
        let input = Tensor::from_vec(flat, shape, &self.device)?;
        let mask = Tensor::from_vec(mask, shape, &self.device)?;
        let types = input.zeros_like()?;
        let hidden = self.model.forward(&input, &types, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let mut rows = mean.to_vec2::<f32>()?;
        for r in &mut rows {
            normalize(r);
        }
        Ok(rows)
    }
}

/// Scales `v` to unit length (left as is when it is all zeros), as sentence-transformers'
/// Normalize does.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
}

/// The text an agent is embedded from: its display name and the words of its name, tagline,
/// description, then each capability's name (underscores and dots as spaces) and description.
/// Keywords are left to the keyword index. Long texts are cut at [`Embedder::MAX_TOKENS`]
/// tokens, so the most telling parts come first.
pub fn agent_text(doc: &SearchDoc) -> String {
    let m = &doc.manifest;
    let words = |s: &str| s.replace(['_', '-', '.'], " ");
    let mut parts = vec![
        m.display_name.clone(),
        words(m.name.agent()),
        m.tagline.clone(),
        m.description.clone(),
    ];
    for c in &m.capabilities {
        parts.push(words(&c.name));
        parts.push(c.description.clone());
    }
    parts.retain(|p| !p.trim().is_empty());
    parts.join(". ")
}

/// The hash of an agent's text that [`store::VectorStore`] keeps per vector: an upsert whose
/// text did not change (a statistics update) is not embedded again.
pub fn text_hash(text: &str) -> u64 {
    let d = Sha256::digest(text.as_bytes());
    u64::from_le_bytes(d[..8].try_into().expect("8 bytes"))
}
