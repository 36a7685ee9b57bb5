//! Look-alike namespaces refused atomically (migration 0027, a unique index on the skeleton):
//! many look-alike names created at the same moment over HTTP, each by a user of its own (so
//! no owner's row serialises them) — exactly one is created and every other is refused naming
//! it; on SQLite and PostgreSQL. And the migration on a database holding what 0024 left:
//! look-alikes made before it (kept, the younger left out of the index) and a namespace an
//! older binary made without a skeleton (given one) — new look-alikes of both are refused.

use std::borrow::Cow;

use hub_core::store::db::Db;
use hub_core::store::{Actor, Store, StoreError};
use ofc_test_kit::{Backend, TestHub};
use reqwest::Method;
use rstest::rstest;
use serde_json::json;

/// Users of their own for the racers; no `i`, `l`, `0`, `1`, so their own namespaces do not
/// read alike.
const RACERS: [&str; 16] = [
    "racer-a", "racer-b", "racer-c", "racer-d", "racer-e", "racer-f", "racer-g", "racer-h",
    "racer-j", "racer-k", "racer-m", "racer-n", "racer-p", "racer-q", "racer-s", "racer-t",
];

/// 16 names reading as `base`: it with `-` or `_` after each of its first 7 letters, and it.
fn lookalikes(base: &str) -> Vec<String> {
    let mut names = vec![base.to_string()];
    for sep in ['-', '_'] {
        for k in 1..8 {
            names.push(format!("{}{sep}{}", &base[..k], &base[k..]));
        }
    }
    names.push(base.replace('m', "rn"));
    names.truncate(RACERS.len());
    names
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_lookalikes_created_at_once_exactly_one_is_created(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let mut tokens = Vec::new();
    for r in RACERS {
        tokens.push(app.new_user(r, false).await.token);
    }
    // Rounds of 16 at once (bounded: 4 rounds, each request bounded by the client's timeout).
    for base in ["acmelabs", "nimbusmq", "quartzmb", "velvetam"] {
        let names = lookalikes(base);
        assert_eq!(names.len(), RACERS.len());
        let calls = names.iter().zip(&tokens).map(|(name, token)| {
            let app = &app;
            async move {
                let (s, v) = tokio::time::timeout(
                    std::time::Duration::from_secs(30),
                    app.call(
                        Method::POST,
                        "/api/v1/namespaces",
                        Some(token.as_str()),
                        Some(json!({ "name": name })),
                    ),
                )
                .await
                .expect("a creation answered within 30 s");
                (name.clone(), s, v)
            }
        });
        let answers = futures::future::join_all(calls).await;
        let created: Vec<&String> = answers
            .iter()
            .filter(|(_, s, _)| *s == 201)
            .map(|(n, _, _)| n)
            .collect();
        assert_eq!(created.len(), 1, "{base}: {answers:?}");
        let winner = created[0];
        for (name, s, v) in &answers {
            if name == winner {
                continue;
            }
            assert_eq!(
                (*s, v["code"].as_str()),
                (409, Some("namespace_lookalike")),
                "{name}: {v}"
            );
            let m = v["message"].as_str().unwrap_or_default();
            assert!(
                m.contains(&format!(
                    "`{name}` looks like the existing namespace `{winner}`"
                )),
                "{name}: {m}"
            );
            let (s, _) = app.get(&format!("/api/v1/namespaces/{name}")).await;
            assert_eq!(s, 404, "{name} exists");
        }
        let (s, v) = app.get(&format!("/api/v1/namespaces/{winner}")).await;
        assert_eq!(s, 200, "{v}");
    }
}

/// Migration 0027 on a database holding look-alikes 0024 kept and a namespace with no
/// skeleton: it runs, keeps them all, and new look-alikes of them are refused by name.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn migration_0027_keeps_existing_lookalikes(#[case] backend: Backend) {
    sqlx::any::install_default_drivers();
    let dir = tempfile::tempdir().unwrap();
    let _pg;
    let (url, pool_url, mut before) = match backend {
        Backend::Sqlite => {
            let url = format!("sqlite://{}", dir.path().join("m.db").display());
            let pool_url = format!("{url}?mode=rwc");
            (url, pool_url, sqlx::migrate!("../migrations/sqlite"))
        }
        Backend::Postgres => {
            let pg = ofc_test_kit::PgDatabase::create().await;
            let url = pg.url.clone();
            _pg = pg;
            (url.clone(), url, sqlx::migrate!("../migrations/postgres"))
        }
    };
    {
        let pool = sqlx::AnyPool::connect(&pool_url).await.unwrap();
        let older: Vec<_> = before
            .migrations
            .iter()
            .filter(|m| m.version < 27)
            .cloned()
            .collect();
        assert!(older.len() < before.migrations.len(), "no migration 0027");
        before.migrations = Cow::Owned(older);
        before.run(&pool).await.unwrap();
        sqlx::query("INSERT INTO users (name, created_at) VALUES ('old', 0)")
            .execute(&pool)
            .await
            .unwrap();
        // Look-alikes from before 0024 (it gave both the skeleton `acmelabs`), and a namespace
        // an older binary inserted after 0024 ran (no skeleton).
        for (name, skeleton) in [
            ("acme-labs", Some("acmelabs")),
            ("acme_labs", Some("acmelabs")),
            ("acmelabs", Some("acmelabs")),
            ("g00gle", None),
        ] {
            sqlx::query(
                "INSERT INTO namespaces (name, created_by, created_at, skeleton) \
                 VALUES ($1, (SELECT id FROM users WHERE name = 'old'), 0, $2)",
            )
            .bind(name)
            .bind(skeleton)
            .execute(&pool)
            .await
            .unwrap();
        }
        pool.close().await;
    }
    let db = Db::connect(&url, 4).await.unwrap();
    db.migrate().await.unwrap();
    let store = Store::new(db);
    for kept in ["acme-labs", "acme_labs", "acmelabs", "g00gle"] {
        assert!(store.namespace(kept).await.unwrap().is_some(), "{kept}");
    }
    let op = Actor::operator();
    let owner = store
        .create_user(&op, "newcomer", None, false, false)
        .await
        .unwrap()
        .id;
    for (name, like) in [
        ("acme--labs", "acme-labs"),
        ("acrne-labs", "acme-labs"),
        ("google", "g00gle"),
        ("goog1e", "g00gle"),
    ] {
        match store.create_namespace(&op, name, owner, None).await {
            Err(StoreError::Lookalike(m)) => assert!(
                m.contains(&format!(
                    "`{name}` looks like the existing namespace `{like}`"
                )),
                "{name}: {m}"
            ),
            other => panic!("{name}: {other:?}"),
        }
    }
    assert!(matches!(
        store.create_namespace(&op, "acme_labs", owner, None).await,
        Err(StoreError::Conflict(m)) if m.contains("exists already")
    ));
    store
        .create_namespace(&op, "acme-lab", owner, None)
        .await
        .unwrap();
}
