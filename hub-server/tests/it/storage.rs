//! The storage suite: the same cases on SQLite and PostgreSQL.

use hub_core::store::{Actor, NewVersion, StoreError};
use index_schema::envelope::SecretKey;
use index_schema::tlog::Entry;
use ofc_test_kit::{Backend, fresh_store};
use rstest::rstest;

fn version(ns: i64, agent: &str, v: &str, key: &str) -> NewVersion {
    NewVersion {
        namespace_id: ns,
        agent: agent.into(),
        handle: "code".into(),
        version: v.into(),
        manifest_digest: format!("sha256:{}", "0".repeat(64)),
        envelope: "{}".into(),
        key_id: key.into(),
        source_kind: "remote".into(),
        bundle_digest: None,
        bundle_size: None,
        trusted: None,
        may_update: true,
    }
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn storage_suite(#[case] backend: Backend) {
    let (store, _dir, _pg) = fresh_store(backend).await;
    let op = Actor::operator();
    // users and namespaces: unique, and names are stored normalized.
    let u = store
        .create_user(&op, "alice", None, false, true)
        .await
        .unwrap();
    assert!(matches!(
        store.create_user(&op, "alice", None, false, true).await,
        Err(StoreError::Conflict(_))
    ));
    let bob = store
        .create_user(&op, "bob", None, false, false)
        .await
        .unwrap();
    assert!(matches!(
        store.create_namespace(&op, "alice", bob.id, None).await,
        Err(StoreError::Conflict(_))
    ));
    let ns = store.namespace("alice").await.unwrap().unwrap();
    assert_eq!(
        store.role(ns.id, u.id).await.unwrap().as_deref(),
        Some("owner")
    );
    assert_eq!(store.role(ns.id, bob.id).await.unwrap(), None);
    // the last owner stays
    assert!(matches!(
        store
            .set_member(&op, &ns, u.id, "alice", "maintainer")
            .await,
        Err(StoreError::Conflict(_))
    ));
    assert!(matches!(
        store.remove_member(&op, &ns, u.id, "alice").await,
        Err(StoreError::Conflict(_))
    ));
    store
        .set_member(&op, &ns, bob.id, "bob", "publisher")
        .await
        .unwrap();
    assert_eq!(store.members(ns.id).await.unwrap().len(), 2);

    // tokens: found by hash, revocable
    let t = store
        .create_token(&op, u.id, "t", "hash1", "yank", "*", None)
        .await
        .unwrap();
    let (found, user) = store.token_by_hash("hash1").await.unwrap().unwrap();
    assert_eq!((found.id, user.name.as_str()), (t.id, "alice"));
    assert!(store.token_by_hash("hash2").await.unwrap().is_none());
    assert!(
        !store.revoke_token(&op, Some(bob.id), t.id).await.unwrap(),
        "not bob's token"
    );
    assert!(store.revoke_token(&op, Some(u.id), t.id).await.unwrap());
    assert!(
        store
            .token_by_hash("hash1")
            .await
            .unwrap()
            .unwrap()
            .0
            .revoked_at
            .is_some()
    );

    // keys
    let key1 = SecretKey::from_seed(&[1; 32]).public_key();
    let key2 = SecretKey::from_seed(&[2; 32]).public_key();
    let (k1, k2) = (key1.key_id().to_string(), key2.key_id().to_string());
    let (k1, k2) = (k1.as_str(), k2.as_str());
    store
        .add_key(&op, &ns, k1, &key1.to_string(), u.id)
        .await
        .unwrap();
    assert!(matches!(
        store.add_key(&op, &ns, k1, &key1.to_string(), u.id).await,
        Err(StoreError::Conflict(_))
    ));
    store
        .add_key(&op, &ns, k2, &key2.to_string(), u.id)
        .await
        .unwrap();
    assert!(store.revoke_key(&op, &ns, k2, Some(u.id)).await.unwrap());
    // A second revoke changes nothing and logs nothing.
    assert!(store.revoke_key(&op, &ns, k2, Some(u.id)).await.unwrap());
    assert!(!store.revoke_key(&op, &ns, "nope", None).await.unwrap());
    assert_eq!(
        store.log_head().await.unwrap().0,
        3,
        "two key-add, one key-revoke"
    );

    let op = Actor {
        user_id: Some(u.id),
        user_name: "alice".into(),
        token_id: Some(t.id),
    };
    // publish: versions unique, revoked key refused in the transaction, outbox gapless
    let (s1, _, l1) = store
        .publish(&op, &version(ns.id, "alice/code", "1.0.0", k1))
        .await
        .unwrap();
    let (s2, _, l2) = store
        .publish(&op, &version(ns.id, "alice/code", "2.0.0-rc.1", k1))
        .await
        .unwrap();
    assert!(matches!(
        store
            .publish(&op, &version(ns.id, "alice/code", "1.0.0", k1))
            .await,
        Err(StoreError::VersionExists)
    ));
    assert!(matches!(
        store
            .publish(&op, &version(ns.id, "alice/code", "1.0.1", k2))
            .await,
        Err(StoreError::KeyRevoked)
    ));
    let (s3, _, l3) = store
        .publish(&op, &version(ns.id, "alice/other", "0.1.0", k1))
        .await
        .unwrap();
    assert_eq!((s1, s2, s3), (1, 2, 3));
    // The log: refused publishes left no entry; indexes are commit order without gaps.
    assert_eq!((l1.index, l2.index, l3.index), (3, 4, 5));
    assert_eq!(store.log_head().await.unwrap(), (6, l3.root));
    // A publisher allowed to create agents but not to add to one (no `publish-update`) adds
    // nothing to an agent that exists — as when another publish created it first.
    let mut only_new = version(ns.id, "alice/other", "0.2.0", k1);
    only_new.may_update = false;
    assert!(matches!(
        store.publish(&op, &only_new).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(store.log_head().await.unwrap(), (6, l3.root));
    let a = store.agent("alice/code").await.unwrap().unwrap();
    assert_eq!(a.latest_version.as_deref(), Some("1.0.0"));
    assert_eq!(store.versions(a.id).await.unwrap().len(), 2);

    // yank / deprecate / delete, each with an outbox row
    assert!(
        store
            .set_yanked(&op, &a, "1.0.0", Some("bad"))
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .agent("alice/code")
            .await
            .unwrap()
            .unwrap()
            .latest_version
            .as_deref(),
        Some("2.0.0-rc.1")
    );
    assert!(
        !store
            .set_yanked(&op, &a, "9.9.9", Some("bad"))
            .await
            .unwrap()
    );
    assert!(
        store
            .set_deprecated(
                &op,
                &a,
                "1.0.0",
                Some(hub_core::store::Deprecation {
                    message: "old",
                    successor: None
                })
            )
            .await
            .unwrap()
    );
    assert!(store.delete_version(&op, &a, "2.0.0-rc.1").await.unwrap());
    assert_eq!(
        store
            .agent("alice/code")
            .await
            .unwrap()
            .unwrap()
            .latest_version,
        None
    );
    let seqs: Vec<i64> = store
        .outbox_after(0, 100)
        .await
        .unwrap()
        .iter()
        .map(|o| o.seq)
        .collect();
    assert_eq!(seqs, (1..=6).collect::<Vec<_>>());
    let kinds: Vec<String> = store
        .outbox_after(3, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.kind)
        .collect();
    assert_eq!(kinds, ["yank", "deprecate", "delete_version"]);

    // The log holds every key event, publish, yank and deletion, in commit order, and
    // recomputes.
    let entries: Vec<String> = store
        .log_entries_of("alice", None, None, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            let entry = Entry::parse(&e.data).unwrap();
            entry.to_string().split(' ').nth(1).unwrap().to_string()
        })
        .collect();
    assert_eq!(
        entries,
        [
            "key-add",
            "key-add",
            "key-revoke",
            "publish",
            "publish",
            "publish",
            "yank",
            "deprecate",
            "delete"
        ]
    );
    let report = store.log_verify().await.unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.size, 9);

    // listing: cursor order and updated_since
    let page1 = store.list_agents(i64::MIN, 0, 1).await.unwrap();
    assert_eq!(page1.len(), 1);
    let page2 = store
        .list_agents(page1[0].updated_at, page1[0].id, 10)
        .await
        .unwrap();
    assert_eq!(page2.len(), 1);
    assert_ne!(page1[0].name, page2[0].name);
    let since = store.list_agents(i64::MAX, 0, 10).await.unwrap();
    assert!(since.is_empty());

    // downloads and audit
    let v = store.version(a.id, "1.0.0").await.unwrap().unwrap();
    store.count_download(a.id, v.id, "client-a").await.unwrap();
    // The same client again the same day counts once; another client counts.
    store.count_download(a.id, v.id, "client-a").await.unwrap();
    assert_eq!(
        store
            .version(a.id, "1.0.0")
            .await
            .unwrap()
            .unwrap()
            .downloads,
        1
    );
    store.count_download(a.id, v.id, "client-b").await.unwrap();
    assert_eq!(
        store
            .version(a.id, "1.0.0")
            .await
            .unwrap()
            .unwrap()
            .downloads,
        2
    );
    assert_eq!(
        store
            .version(a.id, "1.0.0")
            .await
            .unwrap()
            .unwrap()
            .downloads,
        2
    );
    let log = store.audit_log(Some("alice/code"), 100).await.unwrap();
    assert_eq!(log.first().unwrap().action, "version.delete");
    assert!(
        store
            .audit_log(Some("alice/code_"), 100)
            .await
            .unwrap()
            .is_empty(),
        "LIKE wildcards are escaped"
    );
    assert!(store.delete_agent(&op, "alice/code").await.unwrap());
    assert!(store.agent("alice/code").await.unwrap().is_none());
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn token_use_is_recorded_at_most_once_a_minute(#[case] backend: Backend) {
    use hub_core::store::TOKEN_USE_PRECISION_MS;
    let (store, _dir, _pg) = fresh_store(backend).await;
    let c = hub_core::admin::create_user(&store, "alice", None, false, true)
        .await
        .unwrap();
    let id = c.token_row.id;
    let last_used = |store: hub_core::store::Store| async move {
        store
            .list_tokens(c.user.id)
            .await
            .unwrap()
            .into_iter()
            .find(|t| t.id == id)
            .unwrap()
            .last_used_at
    };
    assert_eq!(last_used(store.clone()).await, None);
    let t0 = 1_700_000_000_000;
    assert!(store.touch_token(id, t0).await.unwrap());
    assert_eq!(last_used(store.clone()).await, Some(t0));
    // Within the minute: no write.
    assert!(
        !store
            .touch_token(id, t0 + TOKEN_USE_PRECISION_MS - 1)
            .await
            .unwrap()
    );
    assert_eq!(last_used(store.clone()).await, Some(t0));
    assert!(
        store
            .touch_token(id, t0 + TOKEN_USE_PRECISION_MS)
            .await
            .unwrap()
    );
    assert_eq!(
        last_used(store.clone()).await,
        Some(t0 + TOKEN_USE_PRECISION_MS)
    );
    // An unknown token is no write.
    assert!(!store.touch_token(id + 1000, t0).await.unwrap());
}

/// Migration 0017 indexes the blob references of manifests stored before it (garbage
/// collection and blob deletes rely on that index, so a miss here would lose blobs).
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn migration_0017_indexes_existing_manifests(#[case] backend: Backend) {
    use std::borrow::Cow;
    let d = |c: char| format!("sha256:{}", c.to_string().repeat(64));
    let image = serde_json::json!({
        "schemaVersion": 2,
        "config": {"mediaType": "a", "digest": d('1'), "size": 1},
        "layers": [{"mediaType": "b", "digest": d('2'), "size": 1},
                   {"mediaType": "b", "digest": d('3'), "size": 1}],
    })
    .to_string();
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "m", "digest": d('4'), "size": 1}],
    })
    .to_string();
    let odd =
        serde_json::json!({"config": {"digest": 7}, "layers": {"digest": d('5')}}).to_string();
    let rows = [
        ("alice/a", d('a'), image),
        ("alice/a", d('b'), index),
        ("bob/b", d('c'), odd),
    ];
    let insert = "INSERT INTO oci_manifests (repository, digest, media_type, content, created_at) \
                  VALUES ($1, $2, 'x', $3, 0)";
    let query = "SELECT repository, manifest_digest, blob_digest FROM oci_blob_refs \
                 ORDER BY repository, manifest_digest, blob_digest";
    macro_rules! run {
        ($pool:expr, $migrator:expr) => {{
            let pool = $pool;
            let mut before = $migrator;
            before.migrations = Cow::Owned(
                before
                    .migrations
                    .iter()
                    .filter(|m| m.version < 17)
                    .cloned()
                    .collect(),
            );
            before.run(&pool).await.unwrap();
            for (r, dg, c) in &rows {
                sqlx::query(insert)
                    .bind(*r)
                    .bind(dg)
                    .bind(c.as_bytes())
                    .execute(&pool)
                    .await
                    .unwrap();
            }
            $migrator.run(&pool).await.unwrap();
            let got: Vec<(String, String, String)> =
                sqlx::query_as(query).fetch_all(&pool).await.unwrap();
            got
        }};
    }
    let dir = tempfile::tempdir().unwrap();
    let _pg;
    let got = match backend {
        Backend::Sqlite => {
            let opts = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(dir.path().join("m.db"))
                .create_if_missing(true)
                .foreign_keys(true);
            run!(
                sqlx::SqlitePool::connect_with(opts).await.unwrap(),
                sqlx::migrate!("../migrations/sqlite")
            )
        }
        Backend::Postgres => {
            let pg = ofc_test_kit::PgDatabase::create().await;
            let pool = sqlx::PgPool::connect(&pg.url).await.unwrap();
            _pg = pg;
            run!(pool, sqlx::migrate!("../migrations/postgres"))
        }
    };
    let want: Vec<(String, String, String)> = ['1', '2', '3']
        .iter()
        .map(|c| ("alice/a".to_string(), d('a'), d(*c)))
        .collect();
    assert_eq!(got, want);
}

/// Web sessions: found by their hash while unexpired, joined to their token's hash, gone once
/// deleted (answering the token id, so logout can revoke it).
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn web_sessions(#[case] backend: Backend) {
    let (store, _dir, _pg) = fresh_store(backend).await;
    let op = Actor::operator();
    let u = store
        .create_user(&op, "carol", None, false, false)
        .await
        .unwrap();
    let t = store
        .create_token(&op, u.id, "web session", "tokenhash", "yank", "*", None)
        .await
        .unwrap();
    let now = hub_core::store::now_ms();
    store
        .create_web_session("live", t.id, "csrf-1", now + 60_000)
        .await
        .unwrap();
    store
        .create_web_session("old", t.id, "csrf-2", now - 1)
        .await
        .unwrap();
    let s = store.web_session("live").await.unwrap().expect("stored");
    assert_eq!(
        (s.token_hash.as_str(), s.token_id, s.csrf.as_str()),
        ("tokenhash", t.id, "csrf-1")
    );
    assert!(store.web_session("old").await.unwrap().is_none(), "expired");
    assert!(store.web_session("nope").await.unwrap().is_none());
    assert_eq!(store.delete_web_session("live").await.unwrap(), Some(t.id));
    assert!(store.web_session("live").await.unwrap().is_none());
    assert_eq!(store.delete_web_session("live").await.unwrap(), None);
    // Deleting one session swept the expired one.
    assert_eq!(store.delete_web_session("old").await.unwrap(), None);

    // Trimming keeps the newest sessions of the user, and only of that user.
    let dave = store
        .create_user(&op, "dave", None, false, false)
        .await
        .unwrap();
    let other = store
        .create_token(&op, dave.id, "web session", "davehash", "yank", "*", None)
        .await
        .unwrap();
    store
        .create_web_session("dave-1", other.id, "c", now + 60_000)
        .await
        .unwrap();
    let mut tokens = Vec::new();
    for i in 0..4 {
        let t = store
            .create_token(
                &op,
                u.id,
                "web session",
                &format!("h{i}"),
                "yank",
                "*",
                None,
            )
            .await
            .unwrap();
        store
            .create_web_session(&format!("s{i}"), t.id, "c", now + 60_000)
            .await
            .unwrap();
        tokens.push(t.id);
        // Distinct creation times.
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    let mut ended = store.trim_web_sessions(&op, u.id, 2).await.unwrap();
    ended.sort();
    assert_eq!(ended, tokens[..2].to_vec(), "the two oldest");
    assert!(store.web_session("s0").await.unwrap().is_none());
    assert!(store.web_session("s1").await.unwrap().is_none());
    assert!(store.web_session("s3").await.unwrap().is_some());
    assert!(store.web_session("dave-1").await.unwrap().is_some());
    assert!(
        store
            .trim_web_sessions(&op, u.id, 2)
            .await
            .unwrap()
            .is_empty()
    );
}

/// Two store handles on one fresh PostgreSQL database (two replicas), with the user `alice`
/// and her namespace; the last element keeps the data dir and the database alive.
pub(crate) async fn two_handles_with_alice() -> (
    hub_core::store::Store,
    hub_core::store::Store,
    hub_core::store::User,
    hub_core::store::Namespace,
    (tempfile::TempDir, Option<ofc_test_kit::PgDatabase>),
) {
    let (store, dir, pg) = fresh_store(Backend::Postgres).await;
    let other = hub_core::start::open_store(&ofc_test_kit::test_config(&dir, pg.as_ref()))
        .await
        .unwrap();
    let u = store
        .create_user(&Actor::operator(), "alice", None, false, true)
        .await
        .unwrap();
    let ns = store.namespace("alice").await.unwrap().unwrap();
    (store, other, u, ns, (dir, pg))
}

/// Two first publishes of one new agent (1.0.0 and 1.1.0) through two handles on one database
/// (two replicas) at once on PostgreSQL, a bounded number of rounds: both land, the agent has
/// both versions.
#[tokio::test]
async fn concurrent_first_publishes_of_a_new_agent_both_land() {
    let (store, other, u, ns, _held) = two_handles_with_alice().await;
    let op = Actor::operator();
    let key = SecretKey::from_seed(&[1; 32]).public_key();
    let k = key.key_id().to_string();
    store
        .add_key(&op, &ns, &k, &key.to_string(), u.id)
        .await
        .unwrap();
    let op = Actor {
        user_id: Some(u.id),
        user_name: "alice".into(),
        token_id: None,
    };
    const ROUNDS: usize = 20;
    for round in 0..ROUNDS {
        let name = format!("alice/new-{round}");
        let (one, two) = (
            version(ns.id, &name, "1.0.0", &k),
            version(ns.id, &name, "1.1.0", &k),
        );
        let (a, b) = tokio::join!(store.publish(&op, &one), other.publish(&op, &two));
        a.unwrap_or_else(|e| panic!("round {round}, 1.0.0: {e}"));
        b.unwrap_or_else(|e| panic!("round {round}, 1.1.0: {e}"));
        let agent = store.agent(&name).await.unwrap().unwrap();
        assert_eq!(store.versions(agent.id).await.unwrap().len(), 2);
    }
}

/// The failure limiter over the database (what replicas share): attempts in flight count
/// against the limit, a success gives its place back, a refusal by one key reserves nothing on
/// the others, and windows end.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn the_failure_limiter_counts_in_the_database(#[case] backend: Backend) {
    use std::sync::Arc;
    use std::time::Duration;

    use hub_core::auth::FailureLimiter;
    use hub_core::limits::Limiter;

    let (store, _dir, _pg) = fresh_store(backend).await;
    let l = Arc::new(Limiter::new(
        FailureLimiter::new(3, Duration::from_secs(600)),
        store.clone(),
    ));
    let a = l.reserve(&["ip", "ip+user"]).await.unwrap();
    let b = l.reserve(&["ip"]).await.unwrap();
    let c = l.reserve(&["ip"]).await.unwrap();
    // Three checks running: a fourth is refused before it starts.
    let e = l.reserve(&["ip"]).await.unwrap_err();
    assert_eq!(
        e.code,
        index_schema::hub_api::ErrorCode::TooManyAuthFailures
    );
    assert!(l.blocked("ip").await.unwrap().is_some());
    // A success gives its place back; a failure keeps it.
    a.succeeded().await.unwrap();
    assert!(l.blocked("ip+user").await.unwrap().is_none());
    b.failed().await.unwrap();
    c.failed().await.unwrap();
    let d = l.reserve(&["ip"]).await.unwrap();
    d.failed().await.unwrap();
    assert!(l.reserve(&["ip"]).await.is_err());
    // Another limiter on the same database (another replica) sees the same windows.
    let other = Arc::new(Limiter::new(
        FailureLimiter::new(3, Duration::from_secs(600)),
        store.clone(),
    ));
    assert!(other.reserve(&["ip"]).await.is_err());
    // A refusal by one key reserves nothing on the others.
    other.fail("x").await.unwrap();
    other.fail("x").await.unwrap();
    other.fail("x").await.unwrap();
    assert!(l.reserve(&["y", "x"]).await.is_err());
    assert!(l.blocked("y").await.unwrap().is_none());
    // A window of 0 s has always ended: nothing is ever blocked, and ended windows go.
    let brief = Arc::new(Limiter::new(
        FailureLimiter::new(1, Duration::ZERO),
        store.clone(),
    ));
    brief.fail("z").await.unwrap();
    assert!(brief.blocked("z").await.unwrap().is_none());
    assert!(
        store
            .limiter_forget(hub_core::store::now_ms(), 0)
            .await
            .unwrap()
            >= 1
    );
}

/// A replica killed while checking logins leaves its attempts in flight in the database (the
/// rows written, nobody to settle them): they count as attempts running for a bound
/// ([`hub_core::limits::IN_FLIGHT_BOUND`], short here), then no longer, so a correct login
/// later is not refused for the rest of the window. On PostgreSQL, as replicas run.
#[tokio::test]
async fn attempts_left_in_flight_by_a_killed_replica_stop_counting_after_a_bound() {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use hub_core::auth::FailureLimiter;
    use hub_core::limits::{IN_FLIGHT_BOUND, Limiter};

    assert!(IN_FLIGHT_BOUND >= Duration::from_secs(30));
    let (store, _dir, _pg) = fresh_store(Backend::Postgres).await;
    const BOUND: Duration = Duration::from_millis(400);
    let rules = FailureLimiter::new(3, Duration::from_secs(600));
    let killed = Arc::new(Limiter::new(rules, store.clone()).with_in_flight_bound(BOUND));
    let reserved = Instant::now();
    for _ in 0..3 {
        // Never settled, never dropped: the process is gone.
        std::mem::forget(
            killed
                .reserve(&["10.9.7.73", "10.9.7.73+alice"])
                .await
                .unwrap(),
        );
    }
    let other = Arc::new(Limiter::new(rules, store.clone()).with_in_flight_bound(BOUND));
    // Within the bound they count: the limit is reached.
    let refused = other.reserve(&["10.9.7.73", "10.9.7.73+alice"]).await;
    if reserved.elapsed() < BOUND {
        assert!(refused.is_err(), "three attempts in flight, limit 3");
        assert!(other.blocked("10.9.7.73").await.unwrap().is_some());
    }
    // After it, a login goes through (bounded wait: the bound and a margin).
    let deadline = Instant::now() + BOUND + Duration::from_secs(5);
    let login = loop {
        match other.reserve(&["10.9.7.73", "10.9.7.73+alice"]).await {
            Ok(r) => break r,
            Err(_) => {
                assert!(Instant::now() < deadline, "still refused after the bound");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    assert!(reserved.elapsed() >= BOUND);
    login.succeeded().await.unwrap();
    assert!(other.blocked("10.9.7.73").await.unwrap().is_none());
    // Failures still count, and the killed replica's rows go with the sweep.
    for _ in 0..3 {
        other
            .reserve(&["10.9.7.73"])
            .await
            .unwrap()
            .failed()
            .await
            .unwrap();
    }
    assert!(other.reserve(&["10.9.7.73"]).await.is_err());
    store
        .limiter_forget(0, hub_core::store::now_ms())
        .await
        .unwrap();
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM auth_in_flight")
        .fetch_one(store.db().write())
        .await
        .unwrap();
    assert_eq!(left, 0);
}
