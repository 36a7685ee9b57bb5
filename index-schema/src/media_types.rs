//! Media types ofc writes and reads: its own (`vnd.ofc.*`) and the OCI and Docker ones the hub
//! serves and accepts.
//!
//! How an agent version is stored on the hub (see DESIGN.md, "The hub is an OCI registry"): an
//! OCI 1.1 image manifest ([`OCI_IMAGE_MANIFEST`]) with `artifactType` [`AGENT_ARTIFACT_V1`], the
//! signed envelope as its config blob ([`AGENT_ENVELOPE_V1`]), and for `bundle` sources the bundle
//! as its single layer ([`AGENT_BUNDLE_V1`]). The envelope's DSSE `payloadType` is
//! [`AGENT_MANIFEST_V1`].

/// DSSE `payloadType` of a signed agent manifest: the payload is the manifest's JSON bytes.
pub const AGENT_MANIFEST_V1: &str = "application/vnd.ofc.agent.manifest.v1+json";

/// OCI `artifactType` of an agent version's image manifest.
pub const AGENT_ARTIFACT_V1: &str = "application/vnd.ofc.agent.v1";

/// OCI config media type of the blob holding the signed envelope (DSSE JSON).
pub const AGENT_ENVELOPE_V1: &str = "application/vnd.ofc.agent.envelope.v1+json";

/// OCI layer media type of a `bundle` source: a gzip-compressed tar with an `agent.yaml` or an
/// AgentCard plus its files. A manifest's `source.mediaType` must equal this.
pub const AGENT_BUNDLE_V1: &str = "application/vnd.ofc.agent.bundle.v1.tar+gzip";

/// OCI image manifest (OCI image spec 1.1).
pub const OCI_IMAGE_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// OCI image index (a list of manifests).
pub const OCI_IMAGE_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// OCI image config of a container image.
pub const OCI_IMAGE_CONFIG: &str = "application/vnd.oci.image.config.v1+json";

/// OCI gzip-compressed tar layer of a container image.
pub const OCI_IMAGE_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// OCI empty descriptor media type (the `{}` blob used as config or layer placeholder).
pub const OCI_EMPTY: &str = "application/vnd.oci.empty.v1+json";

/// The content of the OCI empty blob.
pub const OCI_EMPTY_CONTENT: &[u8] = b"{}";

/// Digest of [`OCI_EMPTY_CONTENT`] (fixed by the OCI image spec).
pub const OCI_EMPTY_DIGEST: &str =
    "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

/// Docker image manifest v2 schema 2 (accepted for `docker` sources pushed by older tools).
pub const DOCKER_MANIFEST_V2: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// Docker manifest list (the Docker counterpart of [`OCI_IMAGE_INDEX`]).
pub const DOCKER_MANIFEST_LIST_V2: &str =
    "application/vnd.docker.distribution.manifest.list.v2+json";

/// DSSE envelope JSON as registered by the in-toto/DSSE project, for tools that look for it.
pub const DSSE_ENVELOPE: &str = "application/vnd.dsse.envelope.v1+json";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::name::Digest;

    #[test]
    fn empty_digest_matches_empty_content() {
        assert_eq!(Digest::of(OCI_EMPTY_CONTENT).to_string(), OCI_EMPTY_DIGEST);
    }

    #[test]
    fn ofc_types_are_vendor_types() {
        for t in [
            AGENT_MANIFEST_V1,
            AGENT_ARTIFACT_V1,
            AGENT_ENVELOPE_V1,
            AGENT_BUNDLE_V1,
        ] {
            assert!(t.starts_with("application/vnd.ofc.agent."), "{t}");
            assert!(!t.contains(char::is_whitespace), "{t}");
        }
    }
}
