//! [`Replicas`]: several real `ofc-hub serve` processes, each with its own data directory, on
//! one PostgreSQL database — a hub run as replicas, as behind a load balancer.

use std::path::{Path, PathBuf};

use crate::postgres::PgDatabase;
use crate::process::{HubProcess, ProcessOptions};

/// `n` replicas of one hub on one fresh PostgreSQL database (dropped with the value). Every
/// replica's `hub.toml` is the settings given plus `log_key_file`, one key file for all (the
/// first replica to start creates it), so they serve one log.
#[derive(Debug)]
pub struct Replicas {
    /// The replicas, in the order they were started.
    pub hubs: Vec<HubProcess>,
    hub_toml: String,
    env: Vec<(String, String)>,
    key_file: PathBuf,
    db: PgDatabase,
    root: tempfile::TempDir,
}

impl Replicas {
    /// Starts `n` replicas one after the other with `hub_toml` as their settings.
    pub fn start(n: usize, hub_toml: &str) -> Replicas {
        let mut r = Replicas::new(hub_toml);
        for _ in 0..n {
            r.add();
        }
        r
    }

    /// The database and the settings, no replica started yet.
    pub fn new(hub_toml: &str) -> Replicas {
        let root = tempfile::tempdir().expect("a temp dir for the replicas");
        Replicas {
            hubs: Vec::new(),
            hub_toml: hub_toml.to_string(),
            env: Vec::new(),
            key_file: root.path().join("log-key"),
            db: PgDatabase::create_blocking(),
            root,
        }
    }

    /// The settings replicas started from now on get.
    pub fn set_hub_toml(&mut self, hub_toml: &str) {
        self.hub_toml = hub_toml.to_string();
    }

    /// Sets the environment variable `key` for replicas started from now on (see
    /// [`ProcessOptions::env`]).
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.push((key.to_string(), value.to_string()));
    }

    /// The log's verifier key (`ofc-hub log key` on a replica not started: it creates the
    /// shared key file and records it in the database when neither exists yet).
    pub fn log_key(&self) -> String {
        let out = self.stopped_replica().run(&["log", "key"]);
        assert!(out.status.success(), "ofc-hub log key: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// Prepares a new replica on the database, with the shared settings, without starting it.
    pub fn stopped_replica(&self) -> HubProcess {
        self.stopped_replica_with(&self.hub_toml)
    }

    /// [`Replicas::stopped_replica`] with other settings (the shared `log_key_file` is added
    /// unless they set one, and a `blob_dir` every replica shares unless they set one or an
    /// `upstream_registry`: a replica with a blob store of its own is refused at start).
    pub fn stopped_replica_with(&self, hub_toml: &str) -> HubProcess {
        let mut toml = if hub_toml.contains("log_key_file") {
            hub_toml.to_string()
        } else {
            format!(
                "log_key_file = {:?}\n{hub_toml}\n",
                self.key_file.display().to_string()
            )
        };
        if !hub_toml.contains("blob_dir") && !hub_toml.contains("upstream_registry") {
            toml = format!(
                "blob_dir = {:?}\n{toml}",
                self.blob_dir().display().to_string()
            );
        }
        let mut opts = ProcessOptions::default()
            .database_url(&self.db.url)
            .hub_toml(&toml)
            .stopped();
        for (k, v) in &self.env {
            opts = opts.env(k, v);
        }
        HubProcess::start(opts)
    }

    /// Starts one more replica; its index.
    pub fn add(&mut self) -> usize {
        let mut hub = self.stopped_replica();
        hub.spawn();
        self.hubs.push(hub);
        self.hubs.len() - 1
    }

    /// The shared database's URL.
    pub fn database_url(&self) -> &str {
        &self.db.url
    }

    /// The blob directory replicas share unless their settings name another blob store.
    pub fn blob_dir(&self) -> PathBuf {
        self.root.path().join("blobs")
    }

    /// The log key file every replica signs with.
    pub fn key_file(&self) -> &Path {
        &self.key_file
    }
}

impl std::ops::Index<usize> for Replicas {
    type Output = HubProcess;

    fn index(&self, i: usize) -> &HubProcess {
        &self.hubs[i]
    }
}

impl std::ops::IndexMut<usize> for Replicas {
    fn index_mut(&mut self, i: usize) -> &mut HubProcess {
        &mut self.hubs[i]
    }
}
