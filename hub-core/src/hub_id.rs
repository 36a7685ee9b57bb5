//! The hub id: what ties a blob store to its database.
//!
//! Nothing else says which database a blob store belongs to, and garbage collection deletes
//! every blob its database does not reference — so `ofc-hub gc` run with another database on a
//! shared blob directory deleted the real hub's blobs, and a replica started with a blob store
//! of its own served 500s for everything the others stored. Each hub therefore has one random
//! id (128 bits, hex), recorded in the database (`hub_id`, migration 0028) and in the blob store
//! (`blobs-v1/HUB-ID` in a blob directory; in an upstream registry the tag `hub-id` of
//! `PREFIX/hub-id`, a small manifest whose annotation holds the id). [`check`] runs whenever a
//! hub opens both (serve, gc, import) and refuses to go on when they do not belong together:
//!
//! - both hold the id: fine; different ids: refused, naming both and where they are;
//! - neither holds one: a new hub (neither has data) or an existing one adopting ids (both have
//!   data, and the store has the database's newest blobs): one new id is written to both, the
//!   database first (its insert decides between replicas starting at once), and logged. A
//!   database referencing blobs the store does not have, or a store holding blobs a database
//!   references none of, is refused: they are not one hub's;
//! - the blob store holds an id, the database none: refused (a new or other database on a hub's
//!   store — exactly the one gc would empty);
//! - the database holds an id the store lacks: refused once the id was written to a blob store
//!   (`blobs_marked_at`); before that (a start interrupted between the two writes, or another
//!   replica's start in progress) it is the case above with the id already chosen.
//!
//! [`crate::gc::collect`] checks again, before it deletes anything. An upstream registry that
//! fails or refuses while the id is read or written does not stop a start ([`registry_failed`]:
//! it fails every push then anyway, and a read-only registry served reads before); gc refuses.

use std::sync::Arc;

use anyhow::{Context as _, bail};

use crate::blob::BlobStore;
use crate::store::{RecordedHubId, Store};

/// A new hub id: 128 random bits in hex.
pub fn new_id() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

async fn blocking<T: Send + 'static>(
    blobs: &Arc<dyn BlobStore>,
    f: impl FnOnce(&dyn BlobStore) -> Result<T, crate::blob::BlobError> + Send + 'static,
) -> anyhow::Result<T> {
    let b = blobs.clone();
    let where_ = blobs.location();
    tokio::task::spawn_blocking(move || f(&*b))
        .await
        .context("the blob store task failed")?
        .with_context(|| format!("cannot read the hub id of the {where_}"))
}

/// Checks that `blobs` is the blob store of the database `store` (shown as `database`, a URL
/// without its password or an SQLite path), writing the hub id where it is missing and allowed
/// (see the module's documentation). The hub's id.
pub async fn check(
    store: &Store,
    blobs: &Arc<dyn BlobStore>,
    database: &str,
) -> anyhow::Result<String> {
    let recorded = store
        .hub_id()
        .await
        .with_context(|| format!("cannot read the hub id of the database {database}"))?;
    let in_store = blocking(blobs, |b| b.hub_id()).await?;
    let location = blobs.location();
    match (recorded, in_store) {
        (Some(r), Some(b)) if r.id == b => {
            if !r.blobs_marked {
                store.hub_id_marked().await?;
            }
            Ok(r.id)
        }
        (Some(r), Some(b)) => bail!(
            "the blob store is another hub's: the database {database} has hub id {}, the \
             {location} has hub id {b}. Point blob_dir (or upstream_registry) at the blob store \
             of this database's hub, or database_url at the database of hub {b}",
            r.id
        ),
        (None, Some(b)) => {
            let data = if store.sample_referenced_blobs().await?.is_empty() {
                ""
            } else {
                " and has data of its own"
            };
            bail!(
                "the blob store belongs to another database: the {location} has hub id {b}, the \
                 database {database} has no hub id{data} — a new or other database on a hub's \
                 blob store, whose blobs `ofc-hub gc` would delete. Point database_url at the \
                 database of hub {b}, or blob_dir at a directory of its own. Only if this \
                 database really is that hub's (restored from a backup older than its id), \
                 record the id in it: INSERT INTO hub_id (one, id, created_at, blobs_marked_at) \
                 VALUES (1, '{b}', 0, 0)"
            )
        }
        (Some(r), None) if r.blobs_marked => bail!(
            "the blob store is not this hub's: the database {database} has hub id {}, the \
             {location} has no hub id — every replica of a hub must use the blob store the hub \
             id was written to (the same blob_dir or upstream_registry; README, \"Several \
             replicas\"). Point blob_dir (or upstream_registry) at the store holding hub id {}",
            r.id,
            r.id
        ),
        (recorded, None) => adopt(store, blobs, database, recorded).await,
    }
}

/// Neither side holds an id yet (or the database's was not written to a blob store yet):
/// writes one to both when they may belong together.
async fn adopt(
    store: &Store,
    blobs: &Arc<dyn BlobStore>,
    database: &str,
    recorded: Option<RecordedHubId>,
) -> anyhow::Result<String> {
    let location = blobs.location();
    let sample = store.sample_referenced_blobs().await?;
    let holds = blocking(blobs, |b| b.holds_blobs()).await?;
    if !sample.is_empty() {
        let digests: Vec<index_schema::name::Digest> =
            sample.iter().filter_map(|d| d.parse().ok()).collect();
        let found = blocking(blobs, move |b| {
            for d in &digests {
                if b.contains(d)? {
                    return Ok(true);
                }
            }
            Ok(false)
        })
        .await?;
        if !found {
            bail!(
                "the blob store is not this database's: the database {database} references \
                 blobs ({}) the {location} does not have, and neither records a hub id yet. \
                 Point blob_dir (or upstream_registry) at the blob store the hub's blobs are in \
                 (the one its other replicas use)",
                sample.join(", ")
            );
        }
    } else if holds {
        bail!(
            "the blob store is not this database's: the {location} holds blobs while the \
             database {database} references none, and neither records a hub id yet — a new \
             database on another hub's blob store, whose blobs `ofc-hub gc` would delete. Point \
             database_url at that hub's database, or blob_dir at a directory of its own (empty \
             the directory first if its blobs are leftovers nobody needs)"
        );
    }
    let adopting = !sample.is_empty() || holds;
    let recorded = match recorded {
        Some(r) => r,
        None => store.record_hub_id(&new_id()).await?,
    };
    let id = recorded.id.clone();
    if recorded.blobs_marked {
        // Another replica finished first: its blob store holds the id, which must be this one.
        let now = blocking(blobs, |b| b.hub_id()).await?;
        if now.as_deref() != Some(id.as_str()) {
            bail!(
                "the blob store is not this hub's: the database {database} has hub id {id} \
                 (written by another replica starting at the same time), the {location} has {}. \
                 Every replica must use the same blob_dir or upstream_registry",
                now.as_deref().unwrap_or("none")
            );
        }
        return Ok(id);
    }
    let marked = {
        let id = id.clone();
        blocking(blobs, move |b| b.mark_hub_id(&id)).await?
    };
    if marked != id {
        bail!(
            "the blob store is another hub's: the database {database} has hub id {id}, the \
             {location} has hub id {marked} (written by another hub starting at the same time). \
             Point blob_dir (or upstream_registry) at the blob store of this database's hub"
        );
    }
    store.hub_id_marked().await?;
    if adopting {
        tracing::info!(
            hub_id = %id,
            database,
            blobs = %location,
            "adopted a hub id: the database and the blob store held data and no id; both now \
             hold this one"
        );
    } else {
        tracing::info!(hub_id = %id, database, blobs = %location, "new hub id");
    }
    Ok(id)
}

/// Whether [`check`] failed because an upstream registry failed or refused to answer (not
/// because the two sides differ): the start goes on without the check, as it went on before
/// with a registry that refuses pushes; `gc` refuses until the check passes.
pub fn registry_failed(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<crate::blob::BlobError>(),
            Some(crate::blob::BlobError::Upstream(_) | crate::blob::BlobError::Refused(_))
        )
    })
}

/// For [`crate::gc::collect`]: an error unless the database and the blob store hold the same
/// hub id, or neither holds one (a hub built without [`check`], as unit tests do).
pub async fn same_hub(store: &Store, blobs: &Arc<dyn BlobStore>) -> anyhow::Result<()> {
    let recorded = store.hub_id().await?.map(|r| r.id);
    let in_store = blocking(blobs, |b| b.hub_id()).await?;
    if recorded != in_store {
        bail!(
            "the database has hub id {} and the {} has {}: they are not one hub's, so nothing \
             was deleted",
            recorded.as_deref().unwrap_or("none"),
            blobs.location(),
            in_store.as_deref().unwrap_or("none")
        );
    }
    Ok(())
}
