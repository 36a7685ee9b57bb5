//! Sentence embeddings computed by the hub itself: all-MiniLM-L6-v2 (a 6-layer BERT, 384
//! dimensions) run on the CPU by the hub's own forward pass (crate `sentence_model`), tokenised with the
//! Hugging Face `tokenizers` crate, from three local files — no network, no Python.
//!
//! [`Embedder::embed`] does what sentence-transformers does for this model (its
//! `modules.json`: Transformer → mean Pooling → Normalize): WordPiece tokens with `[CLS]` and
//! `[SEP]`, truncated to [`Embedder::MAX_TOKENS`] (its `sentence_bert_config.json`
//! `max_seq_length`), the last hidden state averaged over the tokens, then scaled to unit
//! length. So the dot product of two embeddings is their cosine similarity.
//!
//! [`agent_text`] is what an agent is embedded from; [`store`] keeps the vectors beside the
//! index, quantised to `i8`; [`follow`] keeps them up to date from the hub's outbox.

pub mod follow;
pub mod store;

use std::fmt;
use std::path::{Path, PathBuf};

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

/// Threads [`Embedder::embed`] spreads a batch of texts over, at most.
const MAX_THREADS: usize = 8;

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
    model: sentence_model::Bert,
    tokenizer: Tokenizer,
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

        let shape = bert_shape(&config_path, &config_bytes)?;

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

        let model = sentence_model::Bert::from_safetensors(&model_bytes, shape)
            .map_err(|e| EmbedError::Corrupt(model_path.clone(), e))?;
        let embedder = Self {
            model,
            tokenizer,
            model_id,
        };
        // Names and shapes are checked above; one run proves the numbers usable (weights that
        // are not finite give no vector) now rather than at the first agent.
        let probe = embedder.embed_one("ofc").map_err(|e| {
            EmbedError::Corrupt(model_path.clone(), format!("the model does not run: {e}"))
        })?;
        if !probe.iter().all(|x| x.is_finite()) || probe.iter().all(|x| *x == 0.0) {
            return Err(EmbedError::Corrupt(
                model_path,
                "the model's output is not a usable vector (weights not finite or all zero)".into(),
            ));
        }
        Ok(embedder)
    }

    /// Names the model and the exact files loaded (a hash over them): vectors made under
    /// another id are not comparable and are rebuilt.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Embeds each text: unit-length vectors of [`Embedder::DIM`] values, in input order.
    /// CPU-bound (milliseconds per text; several texts are spread over the machine's cores):
    /// keep it off async workers.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .clamp(1, MAX_THREADS)
            .min(texts.len());
        if threads <= 1 {
            return texts.iter().map(|t| self.embed_one(t)).collect();
        }
        // Every thread takes every `threads`-th text: long and short texts mix evenly.
        type Part = Result<Vec<(usize, Vec<f32>)>, EmbedError>;
        let parts: Vec<Part> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|start| {
                    scope.spawn(move || {
                        (start..texts.len())
                            .step_by(threads)
                            .map(|i| Ok((i, self.embed_one(texts[i])?)))
                            .collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("an embedding thread panicked"))
                .collect()
        });
        let mut out = vec![Vec::new(); texts.len()];
        for part in parts {
            for (i, v) in part? {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Embeds one text on the calling thread: what a search query needs, in a few
    /// milliseconds.
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let encoding = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        self.model
            .forward(encoding.get_ids())
            .map_err(EmbedError::Model)
    }
}

/// The shape values of `config.json` the single-text pass needs; a missing or odd one is
/// named.
fn bert_shape(path: &Path, bytes: &[u8]) -> Result<sentence_model::BertShape, EmbedError> {
    let v: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| EmbedError::Corrupt(path.to_owned(), e.to_string()))?;
    let int = |key: &str| -> Result<usize, EmbedError> {
        v.get(key)
            .and_then(serde_json::Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                EmbedError::Corrupt(
                    path.to_owned(),
                    format!("{key} is absent or not a positive integer"),
                )
            })
    };
    #[allow(clippy::cast_possible_truncation)] // an epsilon like 1e-12
    let eps = v
        .get("layer_norm_eps")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(1e-12) as f32;
    if v.get("hidden_act")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("gelu")
        != "gelu"
    {
        return Err(EmbedError::Corrupt(
            path.to_owned(),
            "hidden_act is not \"gelu\" (all-MiniLM-L6-v2 uses the exact GELU)".into(),
        ));
    }
    let hidden = v.get("hidden_size").and_then(serde_json::Value::as_u64);
    if hidden != Some(Embedder::DIM as u64) {
        return Err(EmbedError::Corrupt(
            path.to_owned(),
            format!(
                "hidden_size is {}, the hub's embeddings have {} dimensions (all-MiniLM-L6-v2)",
                hidden.map_or_else(|| "absent".to_owned(), |h| h.to_string()),
                Embedder::DIM
            ),
        ));
    }
    // What the pass does not do is refused rather than computed another way.
    match v
        .get("position_embedding_type")
        .map(serde_json::Value::as_str)
    {
        None | Some(Some("absolute")) => {}
        Some(other) => {
            return Err(EmbedError::Corrupt(
                path.to_owned(),
                format!(
                    "position_embedding_type is {}, the hub computes \"absolute\" only",
                    other.map_or_else(|| "not a string".to_owned(), |o| format!("{o:?}"))
                ),
            ));
        }
    }
    let max_positions = int("max_position_embeddings")?;
    if max_positions < Embedder::MAX_TOKENS {
        return Err(EmbedError::Corrupt(
            path.to_owned(),
            format!(
                "max_position_embeddings is {max_positions}, fewer than the {} tokens a text \
                 is cut at",
                Embedder::MAX_TOKENS
            ),
        ));
    }
    if !eps.is_finite() || eps <= 0.0 {
        return Err(EmbedError::Corrupt(
            path.to_owned(),
            format!("layer_norm_eps is {eps}, not a small positive number"),
        ));
    }
    Ok(sentence_model::BertShape {
        hidden: Embedder::DIM,
        layers: int("num_hidden_layers")?,
        heads: int("num_attention_heads")?,
        intermediate: int("intermediate_size")?,
        eps,
        max_positions,
        vocab: int("vocab_size")?,
    })
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
