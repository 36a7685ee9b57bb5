//! Where every kind of entry lives in the cache: the one place its layout is written. The
//! cache (list, verify, rm, gc) and each source kind of `pull` (which installs the entries)
//! both find their files here. Each top directory carries a version in its name, so a format
//! change never reads old bytes as new.
//!
//! ```text
//! <cache>/
//!   bundles-v1/sha256/<hex>/bundle.tar.gz    the bundle as downloaded
//!                           files/           its unpacked tree
//!                           tree.blake3      digest of the unpacked tree
//!   manifests-v1/sha256/<hex>.json           signed envelopes, by manifest digest
//!   docker-v1/images/<hex>/                  an OCI image layout, by pinned image digest, with
//!                          ofc-image.json    its marker: every blob, written when complete
//!   pip-v1/envs/<key>/                       a Python environment, by resolution, with
//!                     ofc-resolution.json    its marker, written when complete
//!          by-manifest/<hex>.json            which environment a signed manifest installed
//!          files/<sha256>/                   the distribution files downloaded
//!   npm-v1/envs/<key>/                       an npm prefix, by resolution (same marker)
//!          by-manifest/<hex>.json            which prefix a signed manifest installed
//!          npm-cache/                        npm's own download cache
//!   remote-info-v1/<hex>.json                a remote agent's `/ofc/info`, by manifest digest
//!   tmp-v1/                                  work in progress, renamed into place when done
//!   locks-v1/                                one lock file per entry
//!   .lock                                    shared by writers, exclusive for rm and gc
//! ```

use std::path::{Path, PathBuf};

use index_schema::name::Digest;

/// Work in progress, renamed into place when done.
pub const TMP: &str = "tmp-v1";
/// One lock file per entry.
pub const LOCKS: &str = "locks-v1";
/// The lock writers hold shared and `rm`/`gc` exclusively.
pub const CACHE_LOCK: &str = ".lock";
/// A bundle entry's download.
pub const BUNDLE_FILE: &str = "bundle.tar.gz";
/// A bundle entry's unpacked tree.
pub const FILES_DIR: &str = "files";
/// A bundle entry's tree digest.
pub const TREE_FILE: &str = "tree.blake3";
/// The marker a complete container image layout carries.
pub const IMAGE_MARKER: &str = "ofc-image.json";
/// The marker a complete pip or npm environment carries (its resolution), written last.
pub const ENV_MARKER: &str = "ofc-resolution.json";

/// The bundle entries, one directory per digest.
pub fn bundles_dir(root: &Path) -> PathBuf {
    root.join("bundles-v1").join("sha256")
}

/// The bundle entry of `digest`.
pub fn bundle_dir(root: &Path, digest: &Digest) -> PathBuf {
    bundles_dir(root).join(digest.hex())
}

/// The signed envelopes, one file per manifest digest.
pub fn manifests_dir(root: &Path) -> PathBuf {
    root.join("manifests-v1").join("sha256")
}

/// The signed envelope of manifest `digest`.
pub fn manifest_file(root: &Path, digest: &Digest) -> PathBuf {
    manifests_dir(root).join(format!("{}.json", digest.hex()))
}

/// The container image layouts, one directory per pinned image digest.
pub fn images_dir(root: &Path) -> PathBuf {
    root.join("docker-v1").join("images")
}

/// The image layout pinned to `digest`.
pub fn image_dir(root: &Path, digest: &Digest) -> PathBuf {
    images_dir(root).join(digest.hex())
}

/// The environments of one installer kind (pip, npm): `<kind>-v1/`, with `envs/<key>/` and
/// `by-manifest/<hex>.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envs {
    /// The kind's name (`pip`, `npm`).
    pub kind: &'static str,
    dir: &'static str,
}

/// pip environments.
pub const PIP: Envs = Envs {
    kind: "pip",
    dir: "pip-v1",
};

/// npm prefixes.
pub const NPM: Envs = Envs {
    kind: "npm",
    dir: "npm-v1",
};

impl Envs {
    /// The kind's directory.
    pub fn root(&self, root: &Path) -> PathBuf {
        root.join(self.dir)
    }

    /// The environments, one directory per key.
    pub fn envs_dir(&self, root: &Path) -> PathBuf {
        self.root(root).join("envs")
    }

    /// The environment of `key`.
    pub fn env_dir(&self, root: &Path, key: &Digest) -> PathBuf {
        self.envs_dir(root).join(key.hex())
    }

    /// The records of which environment each signed manifest installed.
    pub fn records_dir(&self, root: &Path) -> PathBuf {
        self.root(root).join("by-manifest")
    }

    /// The record of manifest `manifest`.
    pub fn record_file(&self, root: &Path, manifest: &Digest) -> PathBuf {
        self.records_dir(root)
            .join(format!("{}.json", manifest.hex()))
    }
}

/// The distribution files pip agents downloaded, one directory per sha256.
pub fn pip_files_dir(root: &Path) -> PathBuf {
    PIP.root(root).join("files")
}

/// npm's own download cache.
pub fn npm_cache_dir(root: &Path) -> PathBuf {
    NPM.root(root).join("npm-cache")
}

/// A remote agent's `/ofc/info` answer, by manifest digest.
pub fn remote_info_file(root: &Path, manifest: &Digest) -> PathBuf {
    root.join("remote-info-v1")
        .join(format!("{}.json", manifest.hex()))
}
