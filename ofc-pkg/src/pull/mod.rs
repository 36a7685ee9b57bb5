//! Pulling agents into the verified cache.
//!
//! For each reference, in parallel:
//!
//! 1. **Resolve.** A locked entry that satisfies the reference wins (no network when its
//!    manifest and bundle are cached, but one bounded question whether the version was
//!    deprecated or removed since, which warns; a hub that does not answer is noted, not
//!    fatal: `deprecation.rs`). Otherwise the hub's version list gives the highest non-yanked
//!    version matching the selector (pre-releases only when the requirement names one), an
//!    exact version, or the version whose manifest has the pinned `@sha256:` digest.
//!    `--offline` resolves from the cache alone.
//! 2. **Verify.** The signed envelope must verify with a key pinned for the publisher; the first
//!    pull of a publisher pins the key that signed it (trust on first use). The signed manifest
//!    must name the agent and version asked for and hash to the digest the hub listed (and the
//!    lock recorded). A version lower than the highest pulled before, where that one should
//!    match, is refused as a rollback.
//! 3. **Fetch and install.** The bundle is streamed with progress, capped at the signed size,
//!    hashed and compared with the signed digest before anything is unpacked; the cache unpacks
//!    it safely into a temp dir and renames it into place under a per-entry lock. `remote`
//!    sources are probed at `{endpoint}/ofc/info`; `local` paths are used in place.
//! 4. **Record.** Pins and the highest version go to the trust store; the project's `ofc.lock`
//!    gets the exact version, manifest digest, key and source.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use index_schema::envelope::{Envelope, EnvelopeError, KeyId, PublicKey, verify_manifest};
use index_schema::lockfile::{LockedAgent, LockedSource, Lockfile};
use index_schema::manifest::Manifest;
use index_schema::name::{AgentName, Digest, Reference, VersionSelector};
use semver::Version;

use crate::cache::Cache;
use crate::config::Paths;
use crate::credentials::{Credentials, TokenSource};
use crate::hub::Hub;
use crate::hub_url::{HubUrl, normalize_hub};
use crate::output::{UserError, truncate};
use crate::project;
use crate::trust::TrustStore;

mod context;
mod deprecation;
pub(crate) mod log;
mod source;

use context::{Ctx, Progress};
pub use context::{MAX_BYTES_ENV, MAX_ENTRIES_ENV, Origin, PullOptions, Pulled, limits_from_env};
use deprecation::deprecation_warning;
use source::{Installed, Job};

/// How many agents are fetched at once.
const PARALLEL: usize = 4;

/// What to pull: an agent on a hub, or a local folder or file used in place.
#[derive(Debug, Clone)]
pub enum Request {
    /// `publisher/agent[@selector]`, optionally with a hub host.
    Hub(Reference),
    /// A path (`./dir`, `../x/agent.yaml`, `/abs`).
    Local(PathBuf),
}

impl Request {
    /// Parses a command-line argument: paths start with `.` or `/`.
    pub fn parse(s: &str) -> Result<Request> {
        if s.starts_with('.') || s.starts_with('/') {
            return Ok(Request::Local(PathBuf::from(s)));
        }
        Reference::parse(s).map(Request::Hub).map_err(|e| {
            UserError::new(format!("invalid reference `{s}`: {e}"))
                .hint("write `publisher/agent`, `publisher/agent@^1.2`, `publisher/agent@1.2.3` or `publisher/agent@sha256:<hex>`; local folders start with `./`")
                .into()
        })
    }
}

/// The outcome of a pull.
#[derive(Debug)]
pub struct PullReport {
    /// One per request, in request order.
    pub pulled: Vec<Pulled>,
    /// The lockfile written, if it changed.
    pub lockfile_written: Option<PathBuf>,
}

/// Pulls every request; fails on the first error (nothing half-installed stays visible).
pub fn pull(
    paths: &Paths,
    hub: &Hub,
    requests: &[Request],
    opts: &PullOptions,
) -> Result<PullReport> {
    let cache = Cache::new(&paths.cache);
    let lock = match &opts.lockfile {
        Some(p) => project::read(p)?,
        None => Lockfile::default(),
    };
    let progress = Progress::new(opts.progress);
    let rt = crate::hub::runtime()?;
    let pulled = rt.block_on(async {
        let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(PARALLEL));
        let mut tasks = Vec::new();
        for r in requests {
            let ctx = Ctx {
                paths: paths.clone(),
                hub: hub.clone(),
                cache: cache.clone(),
                lock: lock.clone(),
                opts: opts.clone(),
                progress: progress.clone(),
            };
            let r = r.clone();
            let sem = sem.clone();
            tasks.push(tokio::spawn(async move {
                let _permit = sem.acquire_owned().await;
                ctx.pull_one(&r).await
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.map_err(|e| anyhow!("a pull task failed: {e}"))??);
        }
        Ok::<_, anyhow::Error>(out)
    })?;
    progress.clear();

    let mut lockfile_written = None;
    if let Some(path) = &opts.lockfile {
        let _guard = project::lock(path)?;
        // Re-read under the lock: another pull in this project may have written meanwhile.
        let mut current = project::read(path)?;
        let before = current.clone();
        for p in &pulled {
            let entry = locked_entry(p, path);
            if current.get(&p.name) == Some(&entry) {
                continue;
            }
            if opts.locked {
                bail!(
                    UserError::new(format!(
                        "{} would change: {}",
                        path.display(),
                        describe_change(current.get(&p.name), &entry)
                    ))
                    .hint("run without --locked to update the lockfile")
                );
            }
            current
                .upsert(entry)
                .map_err(|d| anyhow!("cannot record {} in {}: {d}", p.name, path.display()))?;
        }
        if current != before {
            project::write(path, &current)?;
            lockfile_written = Some(path.clone());
        }
    }
    Ok(PullReport {
        pulled,
        lockfile_written,
    })
}

fn locked_entry(p: &Pulled, lockfile: &Path) -> LockedAgent {
    let mut source = p.source.clone();
    if let LockedSource::Local { path, .. } = &mut source {
        // Recorded relative to the lockfile's directory (`..` where needed), so the project
        // can move; absolute only when there is no relative way (another drive).
        let base = lockfile.parent().filter(|b| !b.as_os_str().is_empty());
        let base = base.unwrap_or(Path::new("."));
        if let (Ok(abs), Ok(base)) = (Path::new(path).canonicalize(), base.canonicalize()) {
            *path = relative_to(&abs, &base)
                .map(|r| format!("./{}", r.display()))
                .unwrap_or_else(|| abs.display().to_string());
        }
    }
    LockedAgent {
        name: p.name.clone(),
        version: p.version.clone(),
        manifest_digest: p.manifest_digest,
        hub: p.hub.clone(),
        signed_by: p.key_id,
        source,
    }
}

/// What differs between a lock entry and what a pull found, in words.
fn describe_change(old: Option<&LockedAgent>, new: &LockedAgent) -> String {
    let Some(old) = old else {
        return format!("{} {} is not in it", new.name, new.version);
    };
    let mut what = Vec::new();
    if old.version != new.version {
        what.push(format!("version {} → {}", old.version, new.version));
    }
    if old.manifest_digest != new.manifest_digest {
        what.push("manifest digest".to_string());
    }
    if old.hub != new.hub {
        what.push(format!(
            "hub {} → {}",
            old.hub.as_deref().unwrap_or("none"),
            new.hub.as_deref().unwrap_or("none")
        ));
    }
    if old.signed_by != new.signed_by {
        what.push("signing key".to_string());
    }
    if old.source != new.source {
        what.push(match (&old.source, &new.source) {
            (LockedSource::Remote { .. }, LockedSource::Remote { .. }) => {
                "the remote agent's /ofc/info document changed since it was locked".to_string()
            }
            _ => format!("source ({} → {})", old.source.kind(), new.source.kind()),
        });
    }
    format!("{}: {}", new.name, what.join(", "))
}

/// `path` relative to `base` (both absolute and canonical), with `..` components as needed.
fn relative_to(path: &Path, base: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let p: Vec<Component<'_>> = path.components().collect();
    let b: Vec<Component<'_>> = base.components().collect();
    if p.first() != b.first() {
        return None;
    }
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c.as_os_str());
    }
    Some(out)
}

/// What resolution decided.
struct Resolved {
    version: Version,
    /// The manifest digest the hub listed (or the lock recorded).
    digest: Digest,
}

/// What the cache holds for one manifest digest.
enum Lookup {
    /// Everything is there and verifies.
    Hit(Box<Pulled>),
    /// Something is missing or does not verify: the reason, for `--offline` errors.
    Miss(String),
}

/// The verified manifest of a fetch, and the key to pin once it is installed.
struct Verified {
    manifest: Manifest,
    key_id: KeyId,
    digest: Digest,
    /// First use: the key that signed, pinned only after the install succeeded.
    pin: Option<PublicKey>,
}

impl Ctx {
    async fn pull_one(&self, req: &Request) -> Result<Pulled> {
        match req {
            Request::Local(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || source::local::pull_local(&path))
                    .await
                    .map_err(|e| anyhow!("local pull failed: {e}"))?
            }
            Request::Hub(r) => self.pull_ref(r).await.map_err(|e| {
                let unreachable = e
                    .chain()
                    .any(|c| c.downcast_ref::<reqwest::Error>().is_some());
                let mut u = UserError::new(format!("cannot pull {r}"));
                if crate::hub::hub_error(&e)
                    .is_some_and(|h| h.status == reqwest::StatusCode::NOT_FOUND)
                {
                    u = u.hint(format!(
                        "check the name; `ofc search {}` lists agents with similar names",
                        r.name().agent()
                    ));
                }
                if unreachable {
                    u = u.hint(
                        "in a project whose ofc.lock holds it, a cached agent needs no hub; `--offline` pulls from the cache alone",
                    );
                }
                crate::output::explain(e, u)
            }),
        }
    }

    /// The hub a reference names: the configured one, or `https://HOST` (`http` for loopback)
    /// with only the token stored for that URL (never `OFC_TOKEN`, which is for the configured
    /// hub).
    fn hub_for(&self, r: &Reference) -> Result<Hub> {
        let Some(host) = r.host() else {
            return Ok(self.hub.clone());
        };
        let url = normalize_hub(host);
        if url == normalize_hub(&self.hub.url) {
            return Ok(self.hub.clone());
        }
        let stored = Credentials::load(&self.paths)?;
        let url = HubUrl::parse(&url)?;
        let token = stored
            .token_for(&url)
            .map(|c| (c.token.clone(), TokenSource::File));
        Hub::with_url(url, token)
    }

    /// ` --hub URL` when `hub` is not the configured one, for hints.
    fn hub_flag(&self, hub: &Hub) -> String {
        if normalize_hub(&hub.url) == normalize_hub(&self.hub.url) {
            String::new()
        } else {
            format!(" --hub {}", hub.url)
        }
    }

    async fn pull_ref(&self, r: &Reference) -> Result<Pulled> {
        let hub = self.hub_for(r)?;
        let name = r.name().clone();
        let sel = r.selector();

        // 1. A locked entry that satisfies the reference.
        let entry = self.lock.get(&name);
        let same_hub = |e: &LockedAgent| {
            e.hub
                .as_deref()
                .is_some_and(|h| normalize_hub(h) == normalize_hub(&hub.url))
        };
        let locked = entry.filter(|e| {
            same_hub(e)
                && match sel {
                    VersionSelector::Digest(d) => e.manifest_digest.as_ref() == Some(d),
                    // No selector keeps whatever was locked, a pre-release included (it was
                    // locked because nothing else existed then).
                    VersionSelector::Latest => true,
                    s => s.matches_version(&e.version),
                }
        });
        if self.opts.locked && locked.is_none() {
            let what = match &self.opts.lockfile {
                Some(p) => format!(
                    "{} has no entry for {name} from {} that satisfies `{r}`",
                    p.display(),
                    hub.url
                ),
                None => "--locked needs a project lockfile (ofc.lock)".to_string(),
            };
            bail!(UserError::new(what).hint("run without --locked to resolve and record it"));
        }
        if let Some(e) = entry
            && !same_hub(e)
        {
            eprintln!(
                "warning: ofc.lock has {name} from {}; it will now come from {}",
                e.hub.as_deref().unwrap_or("no hub (a local agent)"),
                hub.url
            );
        }
        if let Some(entry) = locked
            && let Some(digest) = entry.manifest_digest
        {
            let reason =
                match self.cached(&hub, &name, &digest, Some(entry), Some(&entry.version))? {
                    Lookup::Hit(p) => {
                        if !self.opts.offline {
                            self.warn_if_deprecated(&hub, &name, &entry.version).await;
                        }
                        return Ok(*p);
                    }
                    Lookup::Miss(reason) => reason,
                };
            if self.opts.offline {
                bail!(
                    UserError::new(format!(
                        "{name} {} is locked, but {reason}; --offline forbids fetching it",
                        entry.version
                    ))
                    .hint("run once without --offline to fill the cache")
                );
            }
            let resolved = Resolved {
                version: entry.version.clone(),
                digest,
            };
            return self.fetch(&hub, &name, resolved, entry.signed_by).await;
        }

        // 2. Offline: the best cached version.
        if self.opts.offline {
            return self.cached_only(&hub, r);
        }

        // 3. The hub's versions.
        let resolved = self.resolve(&hub, r).await?;
        if let Lookup::Hit(p) =
            self.cached(&hub, &name, &resolved.digest, None, Some(&resolved.version))?
        {
            // The cache holds exactly this signed manifest; still record it as seen.
            self.commit_trust(&hub, &name, &p.version, None, None)?;
            return Ok(*p);
        }
        self.fetch(&hub, &name, resolved, None).await
    }

    /// Picks the version from the hub's list, refusing rollbacks.
    async fn resolve(&self, hub: &Hub, r: &Reference) -> Result<Resolved> {
        let name = r.name();
        let info = hub.agent(name).await?;
        let mut versions = Vec::new();
        let mut deprecations = std::collections::HashMap::new();
        for v in info.versions {
            if let Some(message) = v.deprecated.clone() {
                deprecations.insert(v.version.clone(), (message, v.deprecated_successor.clone()));
            }
            // One entry this client cannot read must not block the others.
            match (
                Version::parse(&v.version),
                Digest::parse(&v.manifest_digest),
            ) {
                (Ok(version), Ok(digest)) => versions.push((version, digest, v.yanked)),
                _ => eprintln!(
                    "warning: {} lists an unreadable version of {name} (`{}`, `{}`); skipped",
                    hub.url,
                    truncate(&v.version, 40),
                    truncate(&v.manifest_digest, 80)
                ),
            }
        }
        versions.sort_by(|a, b| b.0.cmp(&a.0));
        let sel = r.selector();
        // The same rule as the hub's `latest` (index_schema::version::select).
        let pick = match sel {
            VersionSelector::Digest(d) => versions.iter().find(|v| &v.1 == d),
            s => index_schema::version::select(versions.iter().map(|v| (&v.0, v.2)), s)
                .and_then(|p| versions.iter().find(|v| &v.0 == p)),
        };
        let Some((version, digest, yanked)) = pick.cloned() else {
            // An exact version the list lacks may have been removed: the hub's version URL
            // says so (410, naming the reason class), which is worth more than "no match".
            if let VersionSelector::Exact(v) = sel
                && let Err(e) = hub.version(name, &v.to_string()).await
                && crate::hub::hub_error(&e).is_some_and(|h| h.status == reqwest::StatusCode::GONE)
            {
                return Err(e);
            }
            let listed: Vec<String> = versions
                .iter()
                .take(8)
                .map(|v| format!("{}{}", v.0, if v.2 { " (yanked)" } else { "" }))
                .collect();
            let mut e = UserError::new(format!(
                "no version of {name} on {} matches `{}`",
                hub.url,
                if sel.is_latest() {
                    "latest".to_string()
                } else {
                    sel.to_string()
                }
            ));
            e = if listed.is_empty() {
                e.hint("the agent has no versions")
            } else {
                e.hint(format!("available: {}", listed.join(", ")))
            };
            if versions.iter().any(|v| !v.0.pre.is_empty()) {
                e = e.hint("pre-releases are only chosen when asked for or when no release exists, e.g. `@1.0.0-beta.1` or `@>=1.0.0-0`");
            }
            return Err(e.into());
        };
        if yanked {
            eprintln!(
                "warning: {name} {version} is yanked; pulled because it was asked for exactly"
            );
        }
        if let Some((message, successor)) = deprecations.get(&version.to_string()) {
            eprintln!(
                "{}",
                deprecation_warning(name, &version, message, successor.as_deref())
            );
        }
        // Rollback: when the selector would match the highest version pulled before, that
        // version must still be listed, and must not be passed over.
        let trust = TrustStore::load(&self.paths)?;
        if let Some(high) = trust.highest(&hub.url, name)
            && sel.matches_version(&high)
        {
            match versions.iter().find(|v| v.0 == high) {
                None => bail!(
                    UserError::new(format!(
                        "{} no longer lists {name} {high}, which was pulled from it before; refusing a possible rollback",
                        hub.url
                    ))
                    .hint(format!(
                        "if the publisher deleted it on purpose, run `ofc trust forget {name}{}`",
                        self.hub_flag(hub)
                    ))
                ),
                Some(h) if version < high && !h.2 => bail!(
                    UserError::new(format!(
                        "{} offers {name} {version} for `{r}`, older than {high} pulled before; refusing a rollback",
                        hub.url
                    ))
                    .hint(format!("pull an older version explicitly with `{name}@{version}`"))
                ),
                // The yanked flag is not signed: honouring it would let a hostile hub roll
                // clients back below what they have seen.
                Some(_) if version < high && !self.opts.allow_yanked_rollback => bail!(
                    UserError::new(format!(
                        "{} marks {name} {high}, pulled before, as yanked and offers {version} for `{r}`; the yanked flag is not signed, so this could be a rollback",
                        hub.url
                    ))
                    .hint(format!(
                        "if the publisher yanked {high}, take {version} with `--allow-yanked-rollback`, or pin it with `{name}@{version}`"
                    ))
                ),
                Some(_) if version < high => eprintln!(
                    "warning: {name} {high}, pulled before, is now yanked on {}; taking {version} (--allow-yanked-rollback)",
                    hub.url
                ),
                _ => {}
            }
        }
        Ok(Resolved { version, digest })
    }

    /// The agent from the cache alone, when its manifest (and bundle) are there and verify
    /// with the pinned keys and name `version` (when given).
    fn cached(
        &self,
        hub: &Hub,
        name: &AgentName,
        digest: &Digest,
        locked: Option<&LockedAgent>,
        version: Option<&Version>,
    ) -> Result<Lookup> {
        let _hold = self.cache.hold()?;
        let Ok((envelope, _)) = self.cache.manifest_envelope(digest) else {
            return Ok(Lookup::Miss(format!(
                "its signed manifest {digest} is not in the cache"
            )));
        };
        let trust = TrustStore::load(&self.paths)?;
        let pins: Vec<PublicKey> = trust
            .pinned(&hub.url, name.publisher())
            .into_iter()
            .map(|k| k.public_key)
            .collect();
        if pins.is_empty() {
            return Ok(Lookup::Miss(format!(
                "no key of publisher `{}` is pinned to check the cached copy with",
                name.publisher()
            )));
        }
        let (manifest, key_id, _) = match verify_manifest(&envelope, &pins) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Lookup::Miss(format!(
                    "the cached manifest does not verify with the pinned keys ({e})"
                )));
            }
        };
        // The same checks as a fetch: a signed manifest of another agent or version (a list
        // that maps a newer version to an older digest) is not this one.
        if check_identity(&manifest, name, version).is_err() {
            return Ok(Lookup::Miss(format!(
                "the cached manifest {digest} is {} {}, not the one asked for",
                manifest.name, manifest.version
            )));
        }
        let job = Job {
            hub,
            name,
            manifest: &manifest,
            digest,
            locked: locked.map(|l| &l.source),
        };
        let Installed {
            source,
            path,
            start,
            ..
        } = match source::of(&manifest.source).cached(self, &job)? {
            Ok(i) => i,
            Err(why) => return Ok(Lookup::Miss(why)),
        };
        Ok(Lookup::Hit(Box::new(Pulled {
            name: name.clone(),
            version: manifest.version.clone(),
            manifest_digest: Some(*digest),
            key_id: Some(key_id),
            pinned_now: false,
            source,
            path,
            origin: Origin::Cache,
            downloaded: 0,
            extracted: false,
            hub: Some(hub.url.to_string()),
            start,
        })))
    }

    /// `--offline` without a lock entry: the highest cached version that matches.
    fn cached_only(&self, hub: &Hub, r: &Reference) -> Result<Pulled> {
        let name = r.name();
        let listing = self.cache.list()?;
        let ours: Vec<_> = listing
            .manifests
            .iter()
            .filter(|m| &m.manifest.name == name)
            .collect();
        // No selector falls back to cached pre-releases when no release is cached, as online.
        let only_pre =
            r.selector().is_latest() && ours.iter().all(|m| !m.manifest.version.pre.is_empty());
        let mut candidates: Vec<_> = ours
            .into_iter()
            .filter(|m| match r.selector() {
                VersionSelector::Digest(d) => &m.digest == d,
                VersionSelector::Latest if only_pre => true,
                s => s.matches_version(&m.manifest.version),
            })
            .collect();
        candidates.sort_by(|a, b| b.manifest.version.cmp(&a.manifest.version));
        let mut reasons = Vec::new();
        for c in candidates {
            match self.cached(hub, name, &c.digest, None, Some(&c.manifest.version))? {
                Lookup::Hit(p) => return Ok(*p),
                Lookup::Miss(why) => reasons.push(format!("{}: {why}", c.manifest.version)),
            }
        }
        let mut e = UserError::new(format!(
            "{r} is not in the cache, and --offline forbids fetching it"
        ))
        .hint("run once without --offline to fill the cache");
        for why in reasons {
            e = e.hint(format!("cached version {why}"));
        }
        Err(e.into())
    }

    /// Pins `pin` (first use) and records `version` as seen, in one update of the trust store.
    /// Returns whether the key was pinned now.
    fn commit_trust(
        &self,
        hub: &Hub,
        name: &AgentName,
        version: &Version,
        pin: Option<&PublicKey>,
        logged: Option<&log::Checked>,
    ) -> Result<bool> {
        let publisher = name.publisher();
        TrustStore::update(&self.paths, |t| {
            if let Some(l) = logged {
                t.saw_checkpoint(&hub.url, &l.key, &l.checkpoint, l.size)?;
            }
            let mut pinned_now = false;
            if let Some(key) = pin {
                let pins = t.pinned(&hub.url, publisher);
                if pins.is_empty() {
                    pinned_now = t.pin(&hub.url, publisher, key);
                } else if !pins.iter().any(|k| k.key_id == key.key_id()) {
                    // Another pull pinned a different key for this publisher meanwhile.
                    bail!(
                        UserError::new(format!(
                            "{name} is signed by key {}, but meanwhile key {} was pinned for publisher `{publisher}`; refusing it",
                            key.key_id(),
                            pins[0].key_id
                        ))
                        .hint(format!("`ofc trust list{}` shows the pinned keys", self.hub_flag(hub)))
                    );
                }
            }
            t.saw(&hub.url, name, version);
            Ok(pinned_now)
        })
    }

    /// Fetches, verifies and installs one resolved version. `signer`: the key id the lockfile
    /// recorded, which a first-use key must match.
    async fn fetch(
        &self,
        hub: &Hub,
        name: &AgentName,
        resolved: Resolved,
        signer: Option<KeyId>,
    ) -> Result<Pulled> {
        let log_before = log::before(&self.paths, &hub.url)?;
        let witnesses = log::witnesses(&self.paths, &hub.url)?;
        let vi = hub
            .version_since(
                name,
                &resolved.version.to_string(),
                log_before.as_ref().map(log::Before::size),
            )
            .await?;
        let envelope = vi.envelope.parse().map_err(|d| {
            anyhow!(
                "the hub sent an invalid signed manifest for {name} {}: {d}",
                resolved.version
            )
        })?;

        let Verified {
            manifest,
            key_id,
            digest,
            pin,
        } = self.verify(hub, name, &envelope, &vi, signer)?;
        if digest != resolved.digest {
            bail!(
                UserError::new(format!(
                    "the hub served a manifest for {name} {} with digest {digest}, but {} says {}",
                    resolved.version,
                    if self.lock.get(name).is_some() {
                        "the lock or the version list"
                    } else {
                        "its version list"
                    },
                    resolved.digest
                ))
                .hint("the hub's data changed under a published version; nothing was installed — report it to the hub's operator")
            );
        }
        check_identity(&manifest, name, Some(&resolved.version))?;
        let logged = log::check(
            hub,
            log_before.as_ref(),
            &witnesses,
            name,
            &resolved.version,
            &digest,
            &key_id,
            &vi,
        )
        .await?;

        // From here to the manifest's write the cache is held: `gc` cannot take the bundle
        // away between its install and the manifest that refers to it.
        let hold = self.cache.hold()?;
        let job = Job {
            hub,
            name,
            manifest: &manifest,
            digest: &digest,
            locked: self.lock.get(name).map(|l| &l.source),
        };
        let Installed {
            source,
            path,
            downloaded,
            extracted,
            start,
        } = source::of(&manifest.source).install(self, &job).await?;
        // Only now, with everything verified and installed, does the manifest enter the cache,
        // and only then is a first-use key pinned.
        let cache = self.cache.clone();
        let env2 = envelope.clone();
        tokio::task::spawn_blocking(move || cache.put_manifest(&env2))
            .await
            .map_err(|e| anyhow!("{e}"))??;
        drop(hold);
        let pinned_now =
            self.commit_trust(hub, name, &manifest.version, pin.as_ref(), Some(&logged))?;
        Ok(Pulled {
            name: name.clone(),
            version: manifest.version.clone(),
            manifest_digest: Some(digest),
            key_id: Some(key_id),
            pinned_now,
            source,
            path,
            origin: Origin::Hub,
            downloaded,
            extracted,
            hub: Some(hub.url.to_string()),
            start,
        })
    }

    /// Verifies the envelope with the pinned keys, or on first use with the key the hub names
    /// (which must be the lock's `signer` when the lock recorded one). Pins nothing.
    fn verify(
        &self,
        hub: &Hub,
        name: &AgentName,
        envelope: &Envelope,
        vi: &index_schema::hub_api::VersionInfo,
        signer: Option<KeyId>,
    ) -> Result<Verified> {
        let publisher = name.publisher();
        let pins = TrustStore::load(&self.paths)?.pinned(&hub.url, publisher);
        if pins.is_empty() {
            let text = vi.key.public_key.as_deref().ok_or_else(|| {
                anyhow!(
                    "the hub did not send the public key {} that signed {name}",
                    truncate(&vi.key.key_id, 40)
                )
            })?;
            let key = PublicKey::parse(text)
                .map_err(|e| anyhow!("the hub sent an invalid public key for {name}: {e}"))?;
            if let Some(expected) = signer
                && key.key_id() != expected
            {
                bail!(
                    UserError::new(format!(
                        "ofc.lock says {name} was signed by key {expected}, but the hub offers key {}; refusing it",
                        key.key_id()
                    ))
                    .hint("if the publisher really changed its key (ask them), pin it with `ofc trust add` and pull without --locked")
                );
            }
            let (manifest, key_id, digest) = verify_manifest(envelope, std::slice::from_ref(&key))
                .map_err(|e| signature_error(name, publisher, e, false, &self.hub_flag(hub)))?;
            return Ok(Verified {
                manifest,
                key_id,
                digest,
                pin: Some(key),
            });
        }
        let keys: Vec<PublicKey> = pins.iter().map(|k| k.public_key).collect();
        let (manifest, key_id, digest) = verify_manifest(envelope, &keys)
            .map_err(|e| signature_error(name, publisher, e, true, &self.hub_flag(hub)))?;
        Ok(Verified {
            manifest,
            key_id,
            digest,
            pin: None,
        })
    }
}

fn signature_error(
    name: &AgentName,
    publisher: &str,
    e: EnvelopeError,
    pinned: bool,
    hub_flag: &str,
) -> anyhow::Error {
    match e {
        EnvelopeError::UntrustedKey { keyids } if pinned => anyhow!(
            UserError::new(format!(
                "{name} is signed by key {}, which is not a key pinned for publisher `{publisher}`; refusing it",
                keyids.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ))
            .hint(format!("`ofc trust list {publisher}{hub_flag}` shows the pinned keys"))
            .hint(format!(
                "if `{publisher}` really changed its key (ask them), pin the new one with `ofc trust add {publisher} <public-key>{hub_flag}`"
            ))
        ),
        other => anyhow!(
            UserError::new(format!(
                "the signature of {name} does not verify: {other}; refusing it"
            ))
            .hint("the hub or a proxy altered the manifest; nothing was installed")
        ),
    }
}

fn check_identity(m: &Manifest, name: &AgentName, version: Option<&Version>) -> Result<()> {
    if &m.name != name {
        bail!(
            UserError::new(format!(
                "the signed manifest is for {}, not {name}; refusing it",
                m.name
            ))
            .hint("the hub served another agent's manifest; report it to the hub's operator")
        );
    }
    if let Some(v) = version
        && &m.version != v
    {
        bail!(UserError::new(format!(
            "the signed manifest of {name} is version {}, not the {v} asked for; refusing it",
            m.version
        ))
        .hint("the hub served another version's manifest (a downgrade?); report it to the hub's operator"));
    }
    Ok(())
}

/// A summary of pulled agents by name, for the JSON output.
pub fn summary(p: &Pulled) -> serde_json::Value {
    let mut m = BTreeMap::new();
    m.insert("name", serde_json::json!(p.name.to_string()));
    m.insert("version", serde_json::json!(p.version.to_string()));
    m.insert(
        "manifestDigest",
        serde_json::json!(p.manifest_digest.map(|d| d.to_string())),
    );
    m.insert("keyId", serde_json::json!(p.key_id.map(|k| k.to_string())));
    m.insert("keyPinnedNow", serde_json::json!(p.pinned_now));
    m.insert(
        "source",
        serde_json::to_value(&p.source).unwrap_or_default(),
    );
    m.insert(
        "path",
        serde_json::json!(p.path.as_ref().map(|x| x.display().to_string())),
    );
    m.insert("origin", serde_json::to_value(p.origin).unwrap_or_default());
    m.insert("downloadedBytes", serde_json::json!(p.downloaded));
    m.insert("extracted", serde_json::json!(p.extracted));
    m.insert("hub", serde_json::json!(p.hub));
    m.insert("start", serde_json::to_value(&p.start).unwrap_or_default());
    serde_json::to_value(m).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_changes_are_described() {
        let d = |b: u8| Digest::from_bytes([b; 32]);
        let entry = |v: &str, info: u8| LockedAgent {
            name: AgentName::parse("acme/x").unwrap(),
            version: Version::parse(v).unwrap(),
            manifest_digest: Some(d(1)),
            hub: Some("http://h".into()),
            signed_by: None,
            source: LockedSource::Remote {
                endpoint: "http://a".into(),
                info_digest: d(info),
            },
        };
        assert_eq!(
            describe_change(None, &entry("1.0.0", 2)),
            "acme/x 1.0.0 is not in it"
        );
        let msg = describe_change(Some(&entry("1.0.0", 2)), &entry("1.1.0", 3));
        assert!(msg.contains("version 1.0.0 → 1.1.0"), "{msg}");
        assert!(msg.contains("/ofc/info document changed"), "{msg}");
    }

    #[test]
    fn local_paths_are_relative_to_the_lockfile() {
        let rel = |p: &str, b: &str| relative_to(Path::new(p), Path::new(b)).unwrap();
        assert_eq!(rel("/p/agents/a", "/p"), PathBuf::from("agents/a"));
        assert_eq!(rel("/other/a", "/p/sub"), PathBuf::from("../../other/a"));
        assert_eq!(rel("/p", "/p"), PathBuf::from(""));
    }

    #[test]
    fn requests_are_paths_or_references() {
        assert!(matches!(Request::parse("./x").unwrap(), Request::Local(_)));
        assert!(matches!(
            Request::parse("/abs/x").unwrap(),
            Request::Local(_)
        ));
        assert!(matches!(
            Request::parse("acme/x@^1").unwrap(),
            Request::Hub(_)
        ));
        let e = Request::parse("acme").unwrap_err();
        let u = e
            .chain()
            .find_map(|c| c.downcast_ref::<UserError>())
            .unwrap();
        assert!(
            u.message.contains("invalid reference `acme`"),
            "{}",
            u.message
        );
    }
}
