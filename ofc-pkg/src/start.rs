//! How a pulled agent is started on a floor: what `ofc pull` leaves behind, in the form
//! `ofc run` needs. Every source kind says here how its agent runs; the runner turns a
//! [`Start`] into a live agent (a built-in LLM agent, a process, a container, or a
//! connection to an agent that already runs).

use std::path::PathBuf;

/// How to start one pulled agent.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Start {
    /// An agent document (`agent.yaml` or an AgentCard) inside a folder: the runner builds the
    /// agent it describes (a built-in LLM agent, or a process from its `command`, run in `dir`).
    AgentFile {
        /// The document.
        file: PathBuf,
        /// The folder it lives in (the unpacked bundle, or the local folder).
        dir: PathBuf,
    },
    /// A program that serves the OFC agent API on the loopback port given in `OFC_PORT`.
    Process {
        /// The program, an absolute path inside the cache.
        program: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment.
        env: Vec<(String, String)>,
        /// Its working directory.
        cwd: PathBuf,
    },
    /// A container image that serves the OFC agent API on `port` inside the container, run
    /// with podman or docker from the verified OCI image layout in the cache.
    Container {
        /// The image as the signed manifest names it, pinned by digest (`repository@sha256:…`).
        image: String,
        /// The container port serving the OFC agent API.
        port: u16,
        /// The OCI image layout directory in the cache.
        layout: PathBuf,
        /// The digest of the image's config: the image id podman and docker give it.
        config: String,
    },
    /// An agent that already runs at an OFC endpoint.
    Remote {
        /// The OFC API root (clients append `/info`, `/should-wake`, `/respond`).
        endpoint: String,
    },
}
