//! The heads of the log the hub proves against: the checkpoints its witnesses cosigned (the
//! cosigner in `hub-server` submits each new head and keeps their answers here), or the
//! current head, signed now.

use std::sync::Arc;
use std::time::Instant;

use index_schema::tlog::Hash;

/// A checkpoint with the witnesses' cosignatures.
#[derive(Debug, Clone)]
pub struct Cosigned {
    /// Tree size.
    pub size: u64,
    /// Tree root.
    pub root: Hash,
    /// The log-signed note with the cosignature lines appended.
    pub note: String,
    /// How many witnesses cosigned it.
    pub count: usize,
    /// When the round that cosigned it ended.
    pub at: Instant,
}

/// The cosigned checkpoints the hub serves: the latest, and the latest that every configured
/// witness cosigned (older when a witness is down), so that a witness failing does not take
/// its cosignature away from the entries it did cosign.
#[derive(Debug, Clone, Default)]
pub struct CosignedHeads {
    /// The latest checkpoint any witness cosigned.
    pub latest: Option<Cosigned>,
    /// The latest checkpoint every witness cosigned.
    pub full: Option<Cosigned>,
}

/// A head to prove against, with its note when witnesses cosigned it.
#[derive(Debug, Clone)]
pub struct Head {
    /// Tree size.
    pub size: u64,
    /// Tree root.
    pub root: Hash,
    pub(crate) cosigned: Option<String>,
}

impl Head {
    /// The signed checkpoint note: the cosigned one, or one signed now.
    pub fn note(&self, log: &index_schema::tlog::LogSigner) -> String {
        match &self.cosigned {
            Some(n) => n.clone(),
            None => log.sign_checkpoint(self.size, self.root),
        }
    }
}

/// The cosigned checkpoints, shared by the rounds and the handlers.
pub type Shared = Arc<std::sync::RwLock<CosignedHeads>>;

/// `kind` of the stored checkpoint any witness cosigned (`log_cosigned`).
pub const LATEST: &str = "latest";
/// `kind` of the stored checkpoint every witness cosigned.
pub const FULL: &str = "full";

impl CosignedHeads {
    /// The heads as the cosigner stored them (`Store::cosigned`), their ages from the rounds'
    /// Unix times.
    pub fn from_stored(stored: Vec<crate::store::StoredCosigned>) -> CosignedHeads {
        let now = crate::store::now_ms();
        let mut heads = CosignedHeads::default();
        for c in stored {
            let age = std::time::Duration::from_millis(u64::try_from(now - c.at).unwrap_or(0));
            let cosigned = Cosigned {
                size: c.size,
                root: c.root,
                note: c.note,
                count: c.count,
                at: Instant::now().checked_sub(age).unwrap_or_else(Instant::now),
            };
            match c.kind.as_str() {
                FULL => heads.full = Some(cosigned),
                LATEST => heads.latest = Some(cosigned),
                _ => {}
            }
        }
        heads
    }
}
