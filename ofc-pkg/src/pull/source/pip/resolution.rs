//! What pip resolved for an agent, the environment's key made of it, and the marker that names
//! it inside a complete environment.

use std::collections::BTreeSet;

use index_schema::name::Digest;
use serde::{Deserialize, Serialize};

/// The marker written inside a complete environment, last, before it is renamed into place.
pub(crate) use crate::cache::layout::ENV_MARKER as MARKER;

/// What pip resolved: the interpreter and every distribution, sorted by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Resolution {
    /// `3.11.7`.
    pub(crate) python: String,
    pub(crate) dists: Vec<Dist>,
}

/// One resolved distribution file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Dist {
    /// Normalized name (PEP 503).
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) sha256: Digest,
    pub(crate) url: String,
    pub(crate) filename: String,
}

impl Resolution {
    /// What the environment is keyed by: the interpreter and every file's hash, not where the
    /// files came from.
    pub(crate) fn key(&self) -> Digest {
        // v2: environments are checked and relocatable (v1 ones had scripts naming `tmp-v1/`).
        let mut text = format!("ofc-pip-env-v2\npython {}\n", self.python);
        for d in &self.dists {
            text.push_str(&format!("{}=={} {}\n", d.name, d.version, d.sha256));
        }
        Digest::of(text.as_bytes())
    }

    pub(crate) fn hashes(&self) -> BTreeSet<Digest> {
        self.dists.iter().map(|d| d.sha256).collect()
    }
}

/// PEP 503 name normalization.
pub(crate) fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut sep = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
        } else {
            if sep && !out.is_empty() {
                out.push('-');
            }
            sep = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}
