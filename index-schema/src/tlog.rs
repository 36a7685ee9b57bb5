//! The hub's transparency log as documents, no I/O: log entries, C2SP `tlog-tiles` paths,
//! `tlog-checkpoint`s signed as C2SP `signed-note`s, and the RFC 6962 proofs.
//!
//! The Merkle arithmetic (leaf and node hashes, the stored-hash layout, proofs) comes from the
//! `tlog_tiles` crate, a port of Go's `golang.org/x/mod/sumdb/tlog`; note parsing from
//! `signed_note`. Signatures are made and checked here, with the crate's ed25519 keys
//! (`verify_strict`, weak keys refused), through `signed_note`'s `Verifier`/`Signer` traits.
//!
//! **Entries** are one line of UTF-8 text, fields separated by one space, ending in `\n`:
//!
//! ```text
//! ofc-log/v1 publish <publisher>/<agent> <version> sha256:<manifest digest> <key id>
//! ofc-log/v1 key-add <publisher> <key id> ed25519:<public key>
//! ofc-log/v1 key-revoke <publisher> <key id>
//! ofc-log/v1 yank <publisher>/<agent> <version>
//! ofc-log/v1 unyank <publisher>/<agent> <version>
//! ofc-log/v1 delete <publisher>/<agent> <version>
//! ofc-log/v1 deprecate <publisher>/<agent> <version> <successor or -> <message, base64url>
//! ofc-log/v1 undeprecate <publisher>/<agent> <version>
//! ofc-log/v1 remove <publisher>/<agent> <version> sha256:<manifest digest> <reason class>
//! ofc-log/v1 trusted-publish <publisher>/<agent> <version> sha256:<manifest digest> <issuer, base64url> <subject, base64url>
//! ```
//!
//! Every field is in its canonical form (names lowercase, the manifest digest as the envelope's
//! payload digest, key ids as 32 hex digits), so the same fact always has the same bytes.
//! A deprecation's message is free text, so it is written as unpadded base64url of its UTF-8
//! bytes (one field, no spaces). `delete` is an operator's deletion as logged before reason
//! classes existed; `remove` is the tombstone of an unpublish (`unpublished`) or an operator's
//! takedown (a [`RemovalReason`]), naming the digest that is gone. `trusted-publish` follows
//! the `publish` entry of a version published by trusted publishing (issue 33), in the same
//! transaction, naming the OIDC issuer and subject (free text, so base64url as a message is);
//! the `publish` entry itself is unchanged, so clients that check it need nothing new. Kinds were only ever added:
//! a log written by an older hub parses with this module unchanged.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest as _, Sha256};

use crate::envelope::{PublicKey, SecretKey};

pub use tlog_tiles::{
    EMPTY_HASH, HASH_SIZE, Hash, HashReader, record_hash, split_stored_hash_index,
    stored_hash_count, stored_hash_index,
};

/// Tile height of C2SP `tlog-tiles`: a tile holds up to 2^8 hashes.
pub const TILE_HEIGHT: u8 = 8;
/// Hashes (or entries) in a full tile.
pub const TILE_WIDTH: u64 = 1 << TILE_HEIGHT;
/// The first field of every entry: the entry format's version.
pub const ENTRY_FORMAT: &str = "ofc-log/v1";
/// Hash-tile levels served: level 7 tiles cover 2^64 entries.
pub const MAX_TILE_LEVEL: u8 = 7;

/// What can be wrong with a log document or proof.
#[derive(Debug, thiserror::Error)]
pub enum TlogError {
    /// An entry does not follow the entry format.
    #[error("log entry: {0}")]
    Entry(String),
    /// A tile path does not follow `tlog-tiles`.
    #[error("tile path `{path}`: {why}")]
    TilePath {
        /// The path as given.
        path: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A log key (secret or verifier) is malformed.
    #[error("log key: {0}")]
    Key(String),
    /// A checkpoint is malformed, or not signed by the log's key.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// An inclusion proof does not prove the entry under the checkpoint.
    #[error(
        "inclusion proof: entry {index} is not proven in the tree of size {size} with root {root}"
    )]
    Inclusion {
        /// Entry index.
        index: u64,
        /// Tree size.
        size: u64,
        /// Root, base64.
        root: String,
    },
    /// A consistency proof does not prove that the newer tree extends the older one.
    #[error(
        "consistency proof: the tree of size {new_size} ({new_root}) does not extend the tree of \
         size {old_size} ({old_root})"
    )]
    Consistency {
        /// Older size.
        old_size: u64,
        /// Older root, base64.
        old_root: String,
        /// Newer size.
        new_size: u64,
        /// Newer root, base64.
        new_root: String,
    },
    /// The Merkle arithmetic refused its input.
    #[error("log arithmetic: {0}")]
    Math(String),
}

/// Result of this module.
pub type Result<T> = std::result::Result<T, TlogError>;

/// Base64 (standard, padded) of a hash, as checkpoints and the API write it.
pub fn hash_b64(h: &Hash) -> String {
    STANDARD.encode(h.0)
}

/// Parses a base64 hash.
pub fn parse_hash_b64(s: &str) -> Result<Hash> {
    let bytes = STANDARD
        .decode(s)
        .map_err(|e| TlogError::Math(format!("hash `{s}` is not base64: {e}")))?;
    let arr = <[u8; HASH_SIZE]>::try_from(bytes.as_slice())
        .map_err(|_| TlogError::Math(format!("hash `{s}` is not {HASH_SIZE} bytes")))?;
    Ok(Hash(arr))
}

/// RFC 6962 interior node hash: SHA-256(0x01 ‖ left ‖ right).
pub fn node_hash(left: Hash, right: Hash) -> Hash {
    tlog_tiles::node_hash(left, right)
}

pub use entry::{Entry, RemovalReason};

// ---- tiles ----

/// What a tile holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TileKind {
    /// Hashes of level `8 × level` of the tree.
    Hashes {
        /// Tile level, 0..=[`MAX_TILE_LEVEL`].
        level: u8,
    },
    /// Entries (an entry bundle: each entry prefixed by its length, 2 bytes big-endian).
    Entries,
}

/// A tile's coordinates: `tile/<L>/<N>[.p/<W>]` or `tile/entries/<N>[.p/<W>]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileId {
    /// Hashes or entries.
    pub kind: TileKind,
    /// Index of the tile within its level.
    pub index: u64,
    /// Hashes (or entries) it holds, 1..=256.
    pub width: u16,
}

impl TileId {
    /// Whether the tile is full (and so never changes).
    pub fn is_full(&self) -> bool {
        u64::from(self.width) == TILE_WIDTH
    }

    /// The leaves a tree needs for this tile to exist.
    pub fn needs_tree_size(&self) -> Option<u64> {
        let end = self
            .index
            .checked_mul(TILE_WIDTH)?
            .checked_add(u64::from(self.width))?;
        match self.kind {
            TileKind::Entries => Some(end),
            TileKind::Hashes { level } => {
                end.checked_mul(1u64.checked_shl(u32::from(level) * u32::from(TILE_HEIGHT))?)
            }
        }
    }

    /// The stored-hash indexes ([`stored_hash_index`]) of a hash tile's hashes, in order.
    pub fn hash_indexes(&self) -> Vec<u64> {
        let TileKind::Hashes { level } = self.kind else {
            return Vec::new();
        };
        let first = self.index * TILE_WIDTH;
        (0..u64::from(self.width))
            .map(|i| stored_hash_index(level * TILE_HEIGHT, first + i))
            .collect()
    }

    /// The path below the log's prefix.
    pub fn path(&self) -> String {
        let mut n = self.index;
        let mut out = format!("{:03}", n % 1000);
        while n >= 1000 {
            n /= 1000;
            out = format!("x{:03}/{out}", n % 1000);
        }
        let level = match self.kind {
            TileKind::Hashes { level } => level.to_string(),
            TileKind::Entries => "entries".to_string(),
        };
        let partial = if self.is_full() {
            String::new()
        } else {
            format!(".p/{}", self.width)
        };
        format!("tile/{level}/{out}{partial}")
    }

    /// Parses a path below the log's prefix (`tile/…`); only the canonical spelling is taken.
    pub fn parse(path: &str) -> Result<Self> {
        let bad = |why| TlogError::TilePath {
            path: path.chars().take(80).collect(),
            why,
        };
        if path.len() > 64 {
            return Err(bad("too long"));
        }
        let rest = path
            .strip_prefix("tile/")
            .ok_or_else(|| bad("not under tile/"))?;
        let (level, rest) = rest.split_once('/').ok_or_else(|| bad("no tile index"))?;
        let kind = if level == "entries" {
            TileKind::Entries
        } else {
            let l: u8 = level.parse().map_err(|_| bad("level is not a number"))?;
            if l.to_string() != level || l > MAX_TILE_LEVEL {
                return Err(bad("level out of range or not canonical"));
            }
            TileKind::Hashes { level: l }
        };
        let (index_part, width) = match rest.split_once(".p/") {
            Some((i, w)) => {
                let width: u16 = w.parse().map_err(|_| bad("width is not a number"))?;
                if width.to_string() != w || width == 0 || u64::from(width) >= TILE_WIDTH {
                    return Err(bad("partial width must be 1..255, no leading zeros"));
                }
                (i, width)
            }
            None => (rest, TILE_WIDTH as u16),
        };
        let parts: Vec<&str> = index_part.split('/').collect();
        let mut index: u64 = 0;
        for (i, part) in parts.iter().enumerate() {
            let digits = if i + 1 < parts.len() {
                part.strip_prefix('x')
                    .ok_or_else(|| bad("index elements before the last start with x"))?
            } else {
                part
            };
            if digits.len() != 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("index elements are three digits"));
            }
            let d: u64 = digits.parse().map_err(|_| bad("index is not a number"))?;
            index = index
                .checked_mul(1000)
                .and_then(|x| x.checked_add(d))
                .ok_or_else(|| bad("index too large"))?;
        }
        let tile = TileId { kind, index, width };
        if tile.path() != path {
            return Err(bad("not the canonical spelling"));
        }
        Ok(tile)
    }
}

/// Appends an entry to an entry bundle (`tile/entries/…`): its length, 2 bytes big-endian, then
/// its bytes.
pub fn push_bundle_entry(bundle: &mut Vec<u8>, entry: &[u8]) -> Result<()> {
    let len = u16::try_from(entry.len())
        .map_err(|_| TlogError::Entry(format!("{} bytes is over 65535", entry.len())))?;
    bundle.extend_from_slice(&len.to_be_bytes());
    bundle.extend_from_slice(entry);
    Ok(())
}

// ---- hashes read on demand ----

/// A [`HashReader`] over hashes the caller read beforehand. A computation that asks for
/// hashes it lacks fails and records them; the caller reads those (from its database, its
/// tiles) and runs the computation again ([`HashCache::attempt`]). This lets the synchronous
/// `tlog_tiles` arithmetic run over an asynchronous store.
#[derive(Debug, Default)]
pub struct HashCache {
    hashes: HashMap<u64, Hash>,
    missing: RefCell<Vec<u64>>,
}

/// What [`HashCache::attempt`] gives.
#[derive(Debug)]
pub enum Attempt<T> {
    /// The computation's result.
    Done(T),
    /// Read these stored-hash indexes, [`HashCache::insert`] them, and try again.
    Need(Vec<u64>),
}

impl HashCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a hash at a stored-hash index.
    pub fn insert(&mut self, index: u64, hash: Hash) {
        self.hashes.insert(index, hash);
    }

    /// Runs `f` over the cached hashes.
    pub fn attempt<T>(
        &self,
        f: impl FnOnce(&Self) -> std::result::Result<T, tlog_tiles::Error>,
    ) -> Result<Attempt<T>> {
        self.missing.borrow_mut().clear();
        let out = f(self);
        let missing = std::mem::take(&mut *self.missing.borrow_mut());
        match out {
            Ok(v) => Ok(Attempt::Done(v)),
            Err(_) if !missing.is_empty() => Ok(Attempt::Need(missing)),
            Err(e) => Err(TlogError::Math(e.to_string())),
        }
    }
}

impl HashReader for HashCache {
    fn read_hashes(&self, indexes: &[u64]) -> std::result::Result<Vec<Hash>, tlog_tiles::Error> {
        let mut out = Vec::with_capacity(indexes.len());
        let mut missing = Vec::new();
        for i in indexes {
            match self.hashes.get(i) {
                Some(h) => out.push(*h),
                None => missing.push(*i),
            }
        }
        if missing.is_empty() {
            Ok(out)
        } else {
            self.missing.borrow_mut().extend(missing);
            Err(tlog_tiles::Error::IndexesNotInTree)
        }
    }
}

/// The hashes to store when the entry with leaf hash `leaf` is appended at index `n`
/// (`stored_hash_index(0, n)` onwards, in order).
pub fn stored_hashes_for(
    n: u64,
    leaf: Hash,
    r: &impl HashReader,
) -> std::result::Result<Vec<Hash>, tlog_tiles::Error> {
    tlog_tiles::stored_hashes_for_record_hash(n, leaf, r)
}

/// What appending one entry to a tree does, computed from the tree's right edge alone (the
/// roots of its perfect subtrees, largest first: one per set bit of the size).
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeAppend {
    /// The hashes to store from `stored_hash_index(0, n)` on (as [`stored_hashes_for`]).
    pub stored: Vec<Hash>,
    /// The right edge of the tree of size `n + 1`.
    pub edge: Vec<Hash>,
    /// The root of the tree of size `n + 1`.
    pub root: Hash,
}

/// Appends the entry with leaf hash `leaf` at index `n` to the tree whose right edge is `edge`.
/// An edge that does not fit `n` (not `popcount(n)` hashes) is an error.
pub fn append_to_edge(edge: &[Hash], n: u64, leaf: Hash) -> Result<EdgeAppend> {
    if edge.len() != n.count_ones() as usize {
        return Err(TlogError::Math(format!(
            "a tree of size {n} has {} edge hashes, not {}",
            n.count_ones(),
            edge.len()
        )));
    }
    // The left siblings of the new leaf's ancestors are the smallest edge subtrees.
    let merges = n.trailing_ones() as usize;
    let mut h = leaf;
    let mut stored = vec![h];
    for left in edge.iter().rev().take(merges) {
        h = node_hash(*left, h);
        stored.push(h);
    }
    let mut new_edge = edge[..edge.len() - merges].to_vec();
    new_edge.push(h);
    let mut root = h;
    for left in new_edge.iter().rev().skip(1) {
        root = node_hash(*left, root);
    }
    Ok(EdgeAppend {
        stored,
        edge: new_edge,
        root,
    })
}

/// The root of the tree of size `n`.
pub fn tree_hash(n: u64, r: &impl HashReader) -> std::result::Result<Hash, tlog_tiles::Error> {
    tlog_tiles::tree_hash(n, r)
}

/// The RFC 6962 inclusion proof of entry `n` in the tree of size `t`.
pub fn prove_inclusion(
    t: u64,
    n: u64,
    r: &impl HashReader,
) -> std::result::Result<Vec<Hash>, tlog_tiles::Error> {
    tlog_tiles::prove_record(t, n, r)
}

/// The RFC 6962 consistency proof from the tree of size `n` to the tree of size `t`.
pub fn prove_consistency(
    t: u64,
    n: u64,
    r: &impl HashReader,
) -> std::result::Result<Vec<Hash>, tlog_tiles::Error> {
    tlog_tiles::prove_tree(t, n, r)
}

/// Checks that `proof` proves `entry` at `index` in the tree of `size` and `root`.
pub fn check_inclusion(
    proof: &[Hash],
    size: u64,
    root: Hash,
    index: u64,
    entry: &[u8],
) -> Result<()> {
    tlog_tiles::check_record(&proof.to_vec(), size, root, index, record_hash(entry)).map_err(|_| {
        TlogError::Inclusion {
            index,
            size,
            root: hash_b64(&root),
        }
    })
}

/// Checks that `proof` proves that the tree (`new_size`, `new_root`) extends (`old_size`,
/// `old_root`).
pub fn check_consistency(
    proof: &[Hash],
    old_size: u64,
    old_root: Hash,
    new_size: u64,
    new_root: Hash,
) -> Result<()> {
    let err = || TlogError::Consistency {
        old_size,
        old_root: hash_b64(&old_root),
        new_size,
        new_root: hash_b64(&new_root),
    };
    if old_size == 0 {
        // Every tree extends the empty one, whose root is fixed.
        return if old_root == EMPTY_HASH && proof.is_empty() {
            Ok(())
        } else {
            Err(err())
        };
    }
    if old_size > new_size {
        return Err(err());
    }
    if old_size == new_size {
        return if old_root == new_root && proof.is_empty() {
            Ok(())
        } else {
            Err(err())
        };
    }
    tlog_tiles::check_tree(&proof.to_vec(), new_size, new_root, old_size, old_root)
        .map_err(|_| err())
}

// ---- checkpoints and the log key ----

/// The signature type byte of Ed25519 signed-note keys.
const ALG_ED25519: u8 = 1;

/// A signed-note key id: the first 4 bytes of SHA-256(name ‖ `\n` ‖ 0x01 ‖ public key).
fn note_key_id(name: &str, key: &PublicKey) -> u32 {
    key_id_of(ALG_ED25519, name, key)
}

/// The signed-note key id of a key of signature type `alg`: the first 4 bytes of
/// SHA-256(name ‖ `\n` ‖ alg ‖ public key).
fn key_id_of(alg: u8, name: &str, key: &PublicKey) -> u32 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update(b"\n");
    h.update([alg]);
    h.update(key.to_bytes());
    let d = h.finalize();
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// Parses a signed-note secret key `PRIVATE+KEY+<name>+<key id hex>+<base64(alg ‖ seed)>`
/// (surrounding whitespace ignored) of signature type `alg`, checking its key id.
fn parse_secret_text(s: &str, alg: u8) -> Result<(String, SecretKey)> {
    let rest = s
        .trim()
        .strip_prefix("PRIVATE+KEY+")
        .ok_or_else(|| TlogError::Key("does not start with PRIVATE+KEY+".into()))?;
    // The name holds no `+`; the base64 key may.
    let mut parts = rest.splitn(3, '+');
    let (Some(name), Some(id), Some(b64)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(TlogError::Key("expected <name>+<id>+<key>".into()));
    };
    check_origin(name)?;
    let bytes = STANDARD
        .decode(b64)
        .map_err(|e| TlogError::Key(format!("secret is not base64: {e}")))?;
    let seed: [u8; 32] = match bytes.split_first() {
        Some((&a, seed)) if a == alg => seed
            .try_into()
            .map_err(|_| TlogError::Key("secret is not 1 + 32 bytes".into()))?,
        _ => return Err(TlogError::Key(format!("not a key of type 0x{alg:02x}"))),
    };
    let key = SecretKey::from_seed(&seed);
    if format!("{:08x}", key_id_of(alg, name, &key.public_key())) != id {
        return Err(TlogError::Key(format!(
            "key id {id} does not match the key and name"
        )));
    }
    Ok((name.to_string(), key))
}

/// The secret key text [`parse_secret_text`] reads.
fn secret_text(alg: u8, name: &str, key: &SecretKey) -> String {
    let mut bytes = vec![alg];
    bytes.extend_from_slice(&key.seed());
    format!(
        "PRIVATE+KEY+{name}+{:08x}+{}",
        key_id_of(alg, name, &key.public_key()),
        STANDARD.encode(bytes)
    )
}

/// Key text as it may be shown in a message: a secret key (`PRIVATE+KEY+…`, given where a
/// verifier key belongs by mistake) is never repeated.
pub fn shown_key(s: &str) -> &str {
    if s.trim_start().starts_with("PRIVATE+KEY+") {
        "PRIVATE+KEY+… (a secret key, not shown)"
    } else {
        s
    }
}

/// Parses a signed-note verifier key `<name>+<key id hex>+<base64(alg ‖ public key)>` of
/// signature type `alg`, checking its key id.
fn parse_verifier_text(s: &str, alg: u8) -> Result<(String, u32, PublicKey)> {
    let s = s.trim();
    if s.starts_with("PRIVATE+KEY+") {
        return Err(TlogError::Key(
            "this is a secret key, not a verifier key: keep it secret, and give the verifier \
             key its owner prints"
                .into(),
        ));
    }
    // The name holds no `+`; the base64 key may.
    let mut parts = s.splitn(3, '+');
    let (Some(name), Some(id), Some(b64)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(TlogError::Key(format!(
            "`{s}` is not <name>+<key id>+<key>"
        )));
    };
    check_origin(name)?;
    let bytes = STANDARD
        .decode(b64)
        .map_err(|e| TlogError::Key(format!("key is not base64: {e}")))?;
    let key: [u8; 32] = match bytes.split_first() {
        Some((&a, key)) if a == alg => key
            .try_into()
            .map_err(|_| TlogError::Key("key is not 1 + 32 bytes".into()))?,
        Some((&a, _)) => {
            return Err(TlogError::Key(format!(
                "a key of type 0x{a:02x}, not 0x{alg:02x}"
            )));
        }
        None => return Err(TlogError::Key("empty key".into())),
    };
    let key = PublicKey::from_bytes(&key).map_err(|e| TlogError::Key(e.to_string()))?;
    let want = key_id_of(alg, name, &key);
    if format!("{want:08x}") != id {
        return Err(TlogError::Key(format!(
            "key id {id} does not match the key and name"
        )));
    }
    Ok((name.to_string(), want, key))
}

/// The verifier key text [`parse_verifier_text`] reads.
fn verifier_text(alg: u8, name: &str, id: u32, key: &PublicKey) -> String {
    let mut bytes = vec![alg];
    bytes.extend_from_slice(&key.to_bytes());
    format!("{name}+{id:08x}+{}", STANDARD.encode(bytes))
}

fn check_origin(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 255
        || name.contains('+')
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(TlogError::Key(format!(
            "log origin `{name}` must be non-empty, without spaces, `+` or control characters"
        )));
    }
    Ok(())
}

/// The log's signing key; its name is the log's origin.
pub struct LogSigner {
    origin: String,
    key: SecretKey,
}

impl fmt::Debug for LogSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogSigner")
            .field("verifier", &self.verifier().to_string())
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl LogSigner {
    /// A new key for `origin`.
    pub fn generate(origin: &str, rng: &mut impl rand_core::CryptoRngCore) -> Result<Self> {
        check_origin(origin)?;
        Ok(LogSigner {
            origin: origin.to_string(),
            key: SecretKey::generate(rng),
        })
    }

    /// Parses the signed-note secret key form
    /// `PRIVATE+KEY+<origin>+<key id hex>+<base64(0x01 ‖ seed)>` (surrounding whitespace
    /// ignored).
    pub fn from_secret_text(s: &str) -> Result<Self> {
        let (origin, key) = parse_secret_text(s, ALG_ED25519)?;
        Ok(LogSigner { origin, key })
    }

    /// The secret key text; whoever has it can sign checkpoints for this log.
    pub fn to_secret_text(&self) -> String {
        secret_text(ALG_ED25519, &self.origin, &self.key)
    }

    /// The log's origin (the key's name).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The public half.
    pub fn verifier(&self) -> LogVerifier {
        let key = self.key.public_key();
        LogVerifier {
            id: note_key_id(&self.origin, &key),
            origin: self.origin.clone(),
            key,
        }
    }

    /// A key for another use of the hub, derived from this one: its seed is
    /// SHA-256(`"ofc derived key\0"` ‖ `purpose` ‖ `"\0"` ‖ this key's seed). Whoever holds the
    /// log key holds it too, and no signature of one verifies under the other.
    pub fn derived_key(&self, purpose: &str) -> SecretKey {
        let mut h = Sha256::new();
        h.update(b"ofc derived key\0");
        h.update(purpose.as_bytes());
        h.update(b"\0");
        h.update(self.key.seed());
        SecretKey::from_seed(&h.finalize().into())
    }

    /// The signed checkpoint note of the tree (`size`, `root`).
    pub fn sign_checkpoint(&self, size: u64, root: Hash) -> String {
        let text = format!("{}\n{size}\n{}\n", self.origin, hash_b64(&root));
        let sig = self.key.sign(text.as_bytes());
        let mut blob = self.verifier().id.to_be_bytes().to_vec();
        blob.extend_from_slice(&sig);
        format!(
            "{text}\n\u{2014} {} {}\n",
            self.origin,
            STANDARD.encode(blob)
        )
    }
}

/// The log's verifier key, `<origin>+<key id hex>+<base64(0x01 ‖ public key)>` (signed-note).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogVerifier {
    origin: String,
    id: u32,
    key: PublicKey,
}

/// A verified checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The log's origin.
    pub origin: String,
    /// Tree size.
    pub size: u64,
    /// Tree root.
    pub root: Hash,
}

impl LogVerifier {
    /// Parses the verifier key text.
    pub fn parse(s: &str) -> Result<Self> {
        let (origin, id, key) = parse_verifier_text(s, ALG_ED25519)?;
        Ok(LogVerifier { origin, id, key })
    }

    /// The log's origin.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Checks a signed checkpoint note: signed by this key, of this origin.
    pub fn verify_checkpoint(&self, note: &str) -> Result<Checkpoint> {
        self.open(note).map(|(cp, _, _)| cp)
    }

    /// Checks a signed checkpoint note and returns it with the signatures of keys other than
    /// the log's (witness cosignatures among them), unverified.
    fn open(
        &self,
        note: &str,
    ) -> Result<(Checkpoint, signed_note::Note, Vec<signed_note::Signature>)> {
        let parsed = signed_note::Note::from_bytes(note.as_bytes())
            .map_err(|e| TlogError::Checkpoint(format!("not a signed note: {e}")))?;
        let verifiers =
            signed_note::VerifierList::new(vec![Box::new(OwnedNoteVerifier(self.clone()))]);
        let (_, others) = parsed
            .verify(&verifiers)
            .map_err(|e| TlogError::Checkpoint(format!("not signed by the log key {self}: {e}")))?;
        let cp = tlog_tiles::Checkpoint::from_bytes(parsed.text())
            .map_err(|e| TlogError::Checkpoint(e.to_string()))?;
        if cp.origin() != self.origin {
            return Err(TlogError::Checkpoint(format!(
                "origin `{}` is not the log's origin `{}`",
                cp.origin(),
                self.origin
            )));
        }
        let cp = Checkpoint {
            origin: cp.origin().to_string(),
            size: cp.size(),
            root: *cp.hash(),
        };
        Ok((cp, parsed, others))
    }
}

struct OwnedNoteVerifier(LogVerifier);

impl signed_note::Verifier for OwnedNoteVerifier {
    fn name(&self) -> &str {
        &self.0.origin
    }
    fn key_id(&self) -> u32 {
        self.0.id
    }
    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        self.0.key.verify(msg, sig)
    }
}

impl fmt::Display for LogVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&verifier_text(
            ALG_ED25519,
            &self.origin,
            self.id,
            &self.key,
        ))
    }
}

mod cosign;
mod entry;
pub use cosign::{
    AddCheckpoint, Cosignature, MAX_PROOF_LINES, WitnessSigner, WitnessVerifier, body_of,
    checkpoint_text, cosignature_lines, origin_of,
};

#[cfg(test)]
mod tests;
