//! Blobs kept in an existing OCI registry (distribution, Harbor, GHCR, …) through
//! `oci-client`, with the data dir as a verified read-through cache.
//!
//! Configured as `http[s]://HOST/PREFIX`. Every blob lives in the upstream repository
//! `PREFIX/blobs` (hub repositories have two segments or more, so it never collides): a blob is
//! uploaded there before it counts as stored, and a blob missing from the cache is downloaded
//! (the client checks its digest), fsynced and renamed into the cache before it is served.
//! Manifests are mirrored to `PREFIX/<repository>` with their tag, their blobs mounted from
//! `PREFIX/blobs`, so the upstream registry holds complete, pullable artifacts (and its own
//! garbage collection sees the blobs referenced). Garbage collection here removes cached
//! copies; upstream copies are the upstream registry's to manage.
//!
//! [`BlobStore`] is synchronous (the local store is plain file I/O called from blocking
//! threads), so the registry client runs on a small runtime of its own and callers wait for it.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use futures::TryStreamExt as _;
use index_schema::name::Digest;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use hub_core::blob::{BlobError, BlobStore, FsBlobStore};
use hub_core::store::db::redact_url;

/// The repository holding the hub id (`PREFIX/hub-id`: one segment, like `blobs` and
/// `uploads`, so no hub repository — two segments or more — is it).
const HUB_ID_REPO: &str = "hub-id";
/// The tag of the hub id's manifest in [`HUB_ID_REPO`].
const HUB_ID_TAG: &str = "hub-id";
/// The annotation of that manifest holding the id.
const HUB_ID_ANNOTATION: &str = "dev.ofc.hub-id";
/// The OCI empty descriptor's content (`{}`) and digest: the manifest's config and layer.
const EMPTY_JSON: &[u8] = b"{}";
const EMPTY_JSON_DIGEST: &str =
    "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

/// Blobs in an upstream OCI registry, cached in the data dir.
pub struct UpstreamBlobStore {
    cache: FsBlobStore,
    client: Client,
    reference: Reference,
    /// `HOST/PREFIX`.
    base: String,
    auth: RegistryAuth,
    /// The configured URL without credentials.
    url: String,
    rt: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for UpstreamBlobStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamBlobStore")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Drop for UpstreamBlobStore {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which is not allowed on an async thread.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

fn upstream(e: impl std::fmt::Display) -> BlobError {
    BlobError::Upstream(e.to_string())
}

/// The registry's error as a blob error: a refusal retrying will not change (a 4xx other than
/// 408 and 429, an authentication it rejects, an error envelope other than
/// `TOOMANYREQUESTS`) is [`BlobError::Refused`]; anything else (no answer, a 5xx, a broken
/// connection) is [`BlobError::Upstream`], worth retrying.
fn registry(e: OciDistributionError) -> BlobError {
    let refused = match &e {
        OciDistributionError::ServerError { code, .. } => {
            (400..500).contains(code) && *code != 408 && *code != 429
        }
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => true,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().all(|x| {
            !matches!(
                x.code,
                OciErrorCode::Toomanyrequests | OciErrorCode::Other(_)
            )
        }),
        _ => false,
    };
    if refused {
        BlobError::Refused(e.to_string())
    } else {
        BlobError::Upstream(e.to_string())
    }
}

impl UpstreamBlobStore {
    /// A store over `url` (`http[s]://HOST[:PORT]/REPOSITORY`), caching under `dir`.
    pub fn open(
        dir: &Path,
        url: &str,
        username: Option<&str>,
        password: Option<&str>,
    ) -> Result<Self, BlobError> {
        // Shown in errors and `Debug` without credentials (a URL may carry some).
        let shown = redact_url(url);
        let (protocol, rest) = if let Some(r) = url.strip_prefix("http://") {
            (ClientProtocol::Http, r)
        } else if let Some(r) = url.strip_prefix("https://") {
            (ClientProtocol::Https, r)
        } else {
            return Err(upstream(format!(
                "`{shown}` must start with http:// or https://"
            )));
        };
        // No repository name holds an `@`: one here is userinfo (a password may hold a `/`).
        if rest.contains('@') {
            return Err(upstream(format!(
                "`{shown}` names credentials in the URL: give them as upstream_username and \
                 upstream_password (OFC_HUB__UPSTREAM_USERNAME, OFC_HUB__UPSTREAM_PASSWORD) instead"
            )));
        }
        let base = rest.trim_end_matches('/').to_string();
        let reference: Reference = format!("{base}/blobs")
            .parse()
            .map_err(|_| upstream(format!("`{shown}` is not HOST/PREFIX")))?;
        let client = Client::new(ClientConfig {
            protocol,
            use_monolithic_push: true,
            ..ClientConfig::default()
        });
        let auth = match (username, password) {
            (Some(u), Some(p)) => RegistryAuth::Basic(u.to_string(), p.to_string()),
            _ => RegistryAuth::Anonymous,
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ofc-upstream")
            .enable_all()
            .build()?;
        let store = UpstreamBlobStore {
            cache: FsBlobStore::open(dir)?,
            client,
            reference,
            base,
            auth: auth.clone(),
            url: shown,
            rt: Some(rt),
        };
        let (c, r) = (store.client.clone(), store.reference.clone());
        store.run(async move {
            c.store_auth_if_needed(r.resolve_registry(), &auth).await;
            // Fails early on an unreachable or refusing registry.
            c.auth(&r, &auth, oci_client::RegistryOperation::Push)
                .await
                .map(|_| ())
                .map_err(registry)
        })?;
        Ok(store)
    }

    /// Runs `fut` on the store's runtime and waits for it (from any thread).
    fn run<T: Send + 'static>(&self, fut: impl Future<Output = T> + Send + 'static) -> T {
        let rt = self.rt.as_ref().expect("runtime lives until drop");
        futures::executor::block_on(rt.spawn(fut)).expect("upstream task panicked")
    }

    fn exists_upstream(&self, digest: &Digest) -> Result<bool, BlobError> {
        let (c, r, d) = (
            self.client.clone(),
            self.reference.clone(),
            digest.to_string(),
        );
        self.run(async move { c.blob_exists(&r, &d).await.map_err(registry) })
    }

    /// Uploads the file at `path` (whose bytes hash to `digest`).
    fn upload(&self, digest: &Digest, path: &Path) -> Result<(), BlobError> {
        if self.exists_upstream(digest)? {
            return Ok(());
        }
        let size = std::fs::metadata(path)?.len();
        let (c, r, d, p) = (
            self.client.clone(),
            self.reference.clone(),
            digest.to_string(),
            path.to_path_buf(),
        );
        self.run(async move {
            let file = tokio::fs::File::open(&p).await?;
            let stream = tokio_util::io::ReaderStream::with_capacity(file, 1 << 20)
                .map_err(OciDistributionError::from);
            c.push_blob_stream(&r, stream, &d, Some(size))
                .await
                .map(|_| ())
                .map_err(registry)
        })
    }

    /// Uploads `digest` from the local cache to `PREFIX/blobs` (the registry lost its copy).
    fn restore_from_cache(&self, digest: &Digest) -> Result<(), BlobError> {
        let Some((mut file, _)) = self.cache.open(digest)? else {
            return Err(upstream(format!(
                "neither the registry nor this replica's cache has {digest}"
            )));
        };
        let tmp = self
            .cache
            .staging_dir()
            .join(format!("restore-{}", uuid::Uuid::new_v4().simple()));
        let copied = std::fs::File::create(&tmp)
            .and_then(|mut out| std::io::copy(&mut file, &mut out).map(|_| ()));
        let done = copied
            .map_err(BlobError::from)
            .and_then(|()| self.upload(digest, &tmp));
        let _ = std::fs::remove_file(&tmp);
        done
    }

    /// The tag holding the hub id (`PREFIX/hub-id:hub-id`).
    fn hub_id_ref(&self) -> Result<Reference, BlobError> {
        format!("{}/{HUB_ID_REPO}:{HUB_ID_TAG}", self.base)
            .parse()
            .map_err(|e| upstream(format!("cannot name the hub id's tag: {e}")))
    }

    /// The upstream repository holding the chunks of upload sessions (`PREFIX/uploads`).
    fn uploads_repo(&self) -> Result<Reference, BlobError> {
        format!("{}/uploads", self.base)
            .parse()
            .map_err(|e| upstream(format!("cannot name the uploads repository: {e}")))
    }

    /// Downloads a blob into the cache. Whether upstream had it.
    fn fetch(&self, digest: &Digest) -> Result<bool, BlobError> {
        if !self.exists_upstream(digest)? {
            return Ok(false);
        }
        let tmp: PathBuf = self
            .cache
            .staging_dir()
            .join(format!("fetch-{}", uuid::Uuid::new_v4().simple()));
        let (c, r, d, p) = (
            self.client.clone(),
            self.reference.clone(),
            digest.to_string(),
            tmp.clone(),
        );
        let r = self.run(async move {
            let mut file = tokio::fs::File::create(&p).await?;
            // `pull_blob` checks the bytes against the digest.
            c.pull_blob(&r, d.as_str(), &mut file)
                .await
                .map_err(registry)?;
            file.sync_all().await?;
            Ok::<_, BlobError>(())
        });
        if let Err(e) = r {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        self.cache.put_file(digest, &tmp)?;
        Ok(true)
    }
}

impl BlobStore for UpstreamBlobStore {
    fn put(&self, digest: &Digest, bytes: &[u8]) -> Result<(), BlobError> {
        let actual = Digest::of(bytes);
        if actual != *digest {
            return Err(BlobError::DigestMismatch {
                expected: *digest,
                actual,
            });
        }
        // Upstream first: a blob counts as stored only once the registry has it.
        let tmp = self
            .cache
            .staging_dir()
            .join(format!("put-{}", uuid::Uuid::new_v4().simple()));
        let mut f = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut f, bytes)?;
        f.sync_all()?;
        drop(f);
        self.put_file(digest, &tmp)
    }

    fn put_part(&self, _upload: &str, digest: &Digest, file: &Path) -> Result<String, BlobError> {
        // A content-addressed blob of `PREFIX/uploads`: every replica reaches it by digest.
        let r = self.uploads_repo().and_then(|repo| {
            let size = std::fs::metadata(file)?.len();
            let (c, d, p) = (self.client.clone(), digest.to_string(), file.to_path_buf());
            self.run(async move {
                if c.blob_exists(&repo, &d).await.map_err(registry)? {
                    return Ok(());
                }
                let f = tokio::fs::File::open(&p).await?;
                let stream = tokio_util::io::ReaderStream::with_capacity(f, 1 << 20)
                    .map_err(OciDistributionError::from);
                c.push_blob_stream(&repo, stream, &d, Some(size))
                    .await
                    .map(|_| ())
                    .map_err(registry)
            })
        });
        let _ = std::fs::remove_file(file);
        r.map(|()| digest.to_string())
    }

    fn read_part(
        &self,
        _upload: &str,
        _name: &str,
        digest: &Digest,
        out: &mut std::fs::File,
    ) -> Result<(), BlobError> {
        let repo = self.uploads_repo()?;
        let (c, d) = (self.client.clone(), digest.to_string());
        let mut file = tokio::fs::File::from_std(out.try_clone()?);
        self.run(async move {
            // `pull_blob` checks the bytes against the digest.
            c.pull_blob(&repo, d.as_str(), &mut file)
                .await
                .map_err(registry)?;
            tokio::io::AsyncWriteExt::flush(&mut file).await?;
            Ok(())
        })
    }

    fn drop_part(&self, _upload: &str, _name: &str) -> Result<(), BlobError> {
        // Parts are content-addressed and may be shared by sessions: the upstream registry's
        // own garbage collection removes them (no manifest references them).
        Ok(())
    }

    fn drop_parts(&self, _upload: &str) -> Result<(), BlobError> {
        Ok(())
    }

    fn sweep_staging(&self, age: std::time::Duration) -> Result<usize, BlobError> {
        self.cache.sweep_staging(age)
    }

    fn get(&self, digest: &Digest) -> Result<Option<Vec<u8>>, BlobError> {
        match self.cache.get(digest)? {
            Some(b) => Ok(Some(b)),
            None if self.fetch(digest)? => self.cache.get(digest),
            None => Ok(None),
        }
    }

    fn size(&self, digest: &Digest) -> Result<Option<u64>, BlobError> {
        match self.cache.size(digest)? {
            Some(s) => Ok(Some(s)),
            None if self.fetch(digest)? => self.cache.size(digest),
            None => Ok(None),
        }
    }

    fn staging_dir(&self) -> PathBuf {
        self.cache.staging_dir()
    }

    fn put_file(&self, digest: &Digest, file: &Path) -> Result<(), BlobError> {
        if let Err(e) = self.upload(digest, file) {
            let _ = std::fs::remove_file(file);
            return Err(e);
        }
        self.cache.put_file(digest, file)
    }

    fn open(&self, digest: &Digest) -> Result<Option<(std::fs::File, u64)>, BlobError> {
        match self.cache.open(digest)? {
            Some(f) => Ok(Some(f)),
            None if self.fetch(digest)? => self.cache.open(digest),
            None => Ok(None),
        }
    }

    fn touch(&self, digest: &Digest) -> Result<bool, BlobError> {
        if self.cache.touch(digest)? {
            return Ok(true);
        }
        self.fetch(digest)
    }

    fn list(&self) -> Result<Vec<(Digest, SystemTime)>, BlobError> {
        self.cache.list()
    }

    fn delete(&self, digest: &Digest) -> Result<bool, BlobError> {
        self.cache.delete(digest)
    }

    fn mirror_manifest(
        &self,
        repository: &str,
        reference: &str,
        media_type: &str,
        bytes: &[u8],
        blobs: &[Digest],
    ) -> Result<(), BlobError> {
        let sep = if reference.contains(':') { '@' } else { ':' };
        let target: Reference = format!("{}/{repository}{sep}{reference}", self.base)
            .parse()
            .map_err(|e| upstream(format!("cannot name the mirror of {repository}: {e}")))?;
        let content_type = axum::http::HeaderValue::from_str(media_type).map_err(upstream)?;
        let (c, source, auth, body) = (
            self.client.clone(),
            self.reference.clone(),
            self.auth.clone(),
            bytes.to_vec(),
        );
        let digests: Vec<String> = blobs.iter().map(ToString::to_string).collect();
        let mount = |digests: Vec<String>| {
            let (c, source, auth, target) =
                (c.clone(), source.clone(), auth.clone(), target.clone());
            self.run(async move {
                c.auth(&target, &auth, oci_client::RegistryOperation::Push)
                    .await
                    .map_err(registry)?;
                // Mounted straight away: one request per blob, where asking first made two
                // (a publish spent ~6 ms per registry request; BENCHMARKS.md). A registry
                // answers 201 also for a blob the repository has; one that will not mount
                // (202), or has no copy to mount from, is asked whether the repository has
                // it after all. Answers those it has not.
                let mut missing = Vec::new();
                for d in digests {
                    if c.mount_blob(&target, &source, &d).await.is_err()
                        && !c.blob_exists(&target, &d).await.map_err(registry)?
                    {
                        missing.push(d);
                    }
                }
                Ok::<_, BlobError>(missing)
            })
        };
        let missing = mount(digests)?;
        if !missing.is_empty() {
            // The registry lost its copy (its garbage collection took a blob nothing named
            // yet), while the hub's cache has the bytes: stored again, then mounted.
            for d in &missing {
                let digest: Digest = d.parse().map_err(|_| upstream(format!("bad digest {d}")))?;
                self.restore_from_cache(&digest)?;
            }
            let still = mount(missing)?;
            if !still.is_empty() {
                return Err(upstream(format!(
                    "the registry has no copy of {} to mount into {repository}",
                    still.join(", ")
                )));
            }
        }
        self.run(async move {
            c.auth(&target, &auth, oci_client::RegistryOperation::Push)
                .await
                .map_err(registry)?;
            c.push_manifest_raw(&target, body, content_type)
                .await
                .map(|_| ())
                .map_err(registry)
        })
    }

    fn mirrors(&self) -> bool {
        true
    }

    fn hub_id(&self) -> Result<Option<String>, BlobError> {
        let target = self.hub_id_ref()?;
        let (c, auth) = (self.client.clone(), self.auth.clone());
        let got = self.run(async move {
            c.pull_manifest_raw(
                &target,
                &auth,
                &[oci_client::manifest::OCI_IMAGE_MEDIA_TYPE],
            )
            .await
        });
        let bytes = match got {
            Ok((bytes, _)) => bytes,
            Err(e) if not_found(&e) => return Ok(None),
            Err(e) => return Err(registry(e)),
        };
        let id = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|m| {
                m.pointer(&format!("/annotations/{HUB_ID_ANNOTATION}"))
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            })
            .filter(|id| !id.is_empty());
        match id {
            Some(id) => Ok(Some(id)),
            None => Err(upstream(format!(
                "the manifest tagged {HUB_ID_TAG} in {}/{HUB_ID_REPO} holds no hub id",
                self.base
            ))),
        }
    }

    fn mark_hub_id(&self, id: &str) -> Result<String, BlobError> {
        // A registry has no create-if-absent for tags: the database chose the id (its insert
        // decides between replicas starting at once), so writers of one hub write one id, and
        // what is read back after the push is what counts.
        if let Some(existing) = self.hub_id()? {
            return Ok(existing);
        }
        let target = self.hub_id_ref()?;
        let empty = serde_json::json!({
            "mediaType": "application/vnd.oci.empty.v1+json",
            "digest": EMPTY_JSON_DIGEST,
            "size": EMPTY_JSON.len(),
        });
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": oci_client::manifest::OCI_IMAGE_MEDIA_TYPE,
            "config": empty,
            "layers": [empty],
            "annotations": { HUB_ID_ANNOTATION: id },
        });
        let body = serde_json::to_vec(&manifest).map_err(upstream)?;
        let (c, auth) = (self.client.clone(), self.auth.clone());
        self.run(async move {
            c.auth(&target, &auth, oci_client::RegistryOperation::Push)
                .await
                .map_err(registry)?;
            if !c
                .blob_exists(&target, EMPTY_JSON_DIGEST)
                .await
                .map_err(registry)?
            {
                c.push_blob(&target, EMPTY_JSON.to_vec(), EMPTY_JSON_DIGEST)
                    .await
                    .map_err(registry)?;
            }
            c.push_manifest_raw(
                &target,
                body,
                axum::http::HeaderValue::from_static(oci_client::manifest::OCI_IMAGE_MEDIA_TYPE),
            )
            .await
            .map(|_| ())
            .map_err(registry)
        })?;
        self.hub_id()?
            .ok_or_else(|| upstream("the hub id's tag is missing right after it was pushed"))
    }

    fn holds_blobs(&self) -> Result<bool, BlobError> {
        // The distribution API cannot list a repository's blobs: the cache answers, and
        // `contains` asks the registry for the blobs the database names.
        self.cache.holds_blobs()
    }

    fn contains(&self, digest: &Digest) -> Result<bool, BlobError> {
        Ok(self.cache.size(digest)?.is_some() || self.exists_upstream(digest)?)
    }

    fn location(&self) -> String {
        format!(
            "upstream registry {} (hub id in the tag {HUB_ID_TAG} of {}/{HUB_ID_REPO})",
            self.url, self.base
        )
    }

    fn mirrored_tag(&self, repository: &str, tag: &str) -> Result<Option<Digest>, BlobError> {
        let target: Reference = format!("{}/{repository}:{tag}", self.base)
            .parse()
            .map_err(|e| upstream(format!("cannot name the mirror of {repository}: {e}")))?;
        let (c, auth) = (self.client.clone(), self.auth.clone());
        let found = self.run(async move { c.fetch_manifest_digest(&target, &auth).await });
        match found {
            Ok(d) => d
                .parse()
                .map(Some)
                .map_err(|_| upstream(format!("the registry names {repository}:{tag} `{d}`"))),
            Err(e) if not_found(&e) => Ok(None),
            Err(e) => Err(registry(e)),
        }
    }
}

/// Whether the registry said the manifest (or the whole repository) is not there.
fn not_found(e: &OciDistributionError) -> bool {
    use oci_client::errors::{OciDistributionError as E, OciErrorCode as C};
    match e {
        E::RegistryError { envelope, .. } => envelope
            .errors
            .iter()
            .any(|e| matches!(e.code, C::ManifestUnknown | C::NameUnknown | C::NotFound)),
        E::ServerError { code, .. } => *code == 404,
        E::ImageManifestNotFoundError(_) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::UpstreamBlobStore;

    /// scale-findings item 5: no credential of the configured URL in the error.
    #[test]
    fn credentials_in_the_url_are_refused_without_being_shown() {
        let dir = tempfile::tempdir().unwrap();
        for url in [
            "http://regu:RegSecret77@127.0.0.1:1/ofc",
            "https://regu:Reg/Secret77@127.0.0.1:1/ofc",
            "ftp://regu:RegSecret77@127.0.0.1:1/ofc",
        ] {
            let e = UpstreamBlobStore::open(dir.path(), url, None, None)
                .unwrap_err()
                .to_string();
            assert!(!e.contains("RegSecret77") && !e.contains("Secret77"), "{e}");
            assert!(e.contains("regu:***@127.0.0.1:1/ofc"), "{e}");
        }
    }
}
