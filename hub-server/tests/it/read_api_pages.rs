//! The read API's listings over HTTP, on SQLite and PostgreSQL: cursor pagination of
//! `GET /api/v1/agents` (every page walked, no duplicate, no gap, one stable order, including
//! ties of `updated_at` across page boundaries and changes made during a walk),
//! `updated_since` for mirrors, and the outbox paged by sequence. Also `ofc-hub migrate` as a
//! command on a fresh data dir or database, run twice, after which the hub serves.

use std::collections::HashMap;
use std::path::Path;
use std::process::Output;

use hub_core::store::db::{Db, Flag};
use ofc_test_kit::{
    Backend, ProcessOptions, TestHub, assert_refused, assert_status, bin, hub_command,
    remote_manifest, strings,
};
use rstest::rstest;
use serde_json::{Value, json};

/// One agent as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    name: String,
    latest: Option<String>,
    updated_at: i64,
}

/// Every page of `/api/v1/agents?{query}`, following `next_cursor` until it is absent. Checks
/// the page invariants on the way (a cursor exactly when the page is full); returns the
/// agents in order and the size of each page.
async fn walk(app: &TestHub, query: &str, limit: usize) -> (Vec<Listed>, Vec<usize>) {
    walk_from(app, query, limit, None).await
}

/// [`walk`] starting at `cursor`.
async fn walk_from(
    app: &TestHub,
    query: &str,
    limit: usize,
    mut cursor: Option<String>,
) -> (Vec<Listed>, Vec<usize>) {
    let mut out = Vec::new();
    let mut sizes = Vec::new();
    loop {
        assert!(sizes.len() <= 1000, "{query}: the walk does not end");
        let mut path = format!("/api/v1/agents?{query}");
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let (s, page) = app.get(&path).await;
        assert_eq!(s, 200, "{path}: {page}");
        let agents = page["agents"].as_array().unwrap();
        assert!(agents.len() <= limit, "{path}: {page}");
        sizes.push(agents.len());
        for a in agents {
            out.push(Listed {
                name: a["name"].as_str().unwrap().to_string(),
                latest: a["latest"].as_str().map(str::to_string),
                updated_at: a["updated_at"].as_i64().unwrap(),
            });
        }
        match page["next_cursor"].as_str() {
            Some(c) => {
                assert_eq!(agents.len(), limit, "{path}: a cursor on a short page");
                cursor = Some(c.to_string());
            }
            None => {
                assert!(agents.len() < limit, "{path}: a full page without a cursor");
                assert!(
                    page.as_object().unwrap().contains_key("next_cursor"),
                    "{path}: next_cursor is present, as null, on the last page"
                );
                return (out, sizes);
            }
        }
    }
}

fn names(l: &[Listed]) -> Vec<String> {
    l.iter().map(|a| a.name.clone()).collect()
}

fn assert_unique(l: &[Listed]) {
    let mut seen = std::collections::HashSet::new();
    for a in l {
        assert!(seen.insert(&a.name), "{} listed twice: {l:?}", a.name);
    }
}

/// The page sizes of walking `total` agents `limit` at a time: full pages, then the rest (an
/// empty page when the last full page ended exactly on the last agent).
fn expected_sizes(total: usize, limit: usize) -> Vec<usize> {
    let mut v = vec![limit; total / limit];
    v.push(total % limit);
    v
}

/// Publishes `alice/agent-NN` (and, every fourth, `bob/tool-NN`), returning the names in
/// publish (= creation) order.
async fn publish_many(app: &TestHub, n: usize) -> Vec<String> {
    let alice = app.user.clone();
    let bob = app.new_user("bob", false).await;
    let mut out = Vec::new();
    for i in 0..n {
        let (u, name) = if i % 4 == 3 {
            (&bob, format!("bob/tool-{i:02}"))
        } else {
            (&alice, format!("alice/agent-{i:02}"))
        };
        let (s, e) = app.publish_as(u, &remote_manifest(&name, "1.0.0")).await;
        assert_eq!(s, 201, "{name}: {e}");
        out.push(name);
    }
    out
}

/// Sets an agent's `updated_at` directly in the database, to build exact orders and ties.
async fn set_updated_at(app: &TestHub, name: &str, at: i64) {
    let r = sqlx::query("UPDATE agents SET updated_at = $1 WHERE name = $2")
        .bind(at)
        .bind(name)
        .execute(app.store().db().write())
        .await
        .unwrap();
    assert_eq!(r.rows_affected(), 1, "{name}");
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn cursor_pages_cover_every_agent_once_in_one_order(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    const N: usize = 23;
    let published = publish_many(&app, N).await;
    let index: HashMap<&str, usize> = published
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();

    let (all, sizes) = walk(&app, "limit=1000", 1000).await;
    assert_eq!(sizes, vec![N]);
    assert_unique(&all);
    let mut sorted = names(&all);
    sorted.sort();
    let mut want = published.clone();
    want.sort();
    assert_eq!(sorted, want, "every agent, nothing else");
    // The order is (updated_at, creation): oldest change first.
    let mut by_key = all.clone();
    by_key.sort_by_key(|a| (a.updated_at, index[a.name.as_str()]));
    assert_eq!(all, by_key, "ordered by (updated_at, id)");
    for a in &all {
        assert_eq!(a.latest.as_deref(), Some("1.0.0"));
        let one = assert_status(app.get(&format!("/api/v1/agents/{}", a.name)).await, 200);
        assert_eq!(one["updated_at"], a.updated_at, "{}", a.name);
    }
    // The default page size (100) holds them all.
    let page = assert_status(app.get("/api/v1/agents").await, 200);
    assert_eq!(page["agents"].as_array().unwrap().len(), N);
    assert_eq!(page["next_cursor"], Value::Null);

    // Any page size walks the same agents in the same order, no duplicate, no gap.
    for limit in [1, 2, 5, 7, 11, 22, 23, 24, 1000] {
        let (got, sizes) = walk(&app, &format!("limit={limit}"), limit).await;
        assert_eq!(got, all, "limit={limit}");
        assert_eq!(sizes, expected_sizes(N, limit), "limit={limit}");
    }
    // A walk repeated gives the same pages.
    let (again, _) = walk(&app, "limit=4", 4).await;
    assert_eq!(again, all);
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn ties_across_pages_and_updated_since(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let published = publish_many(&app, 12).await;
    // Many agents share a time, so ties straddle every page boundary.
    let times = [
        5000, 5000, 3000, 5000, 5000, 9000, 5000, 1000, 3000, 5000, 9000, 5000,
    ];
    for (name, t) in published.iter().zip(times) {
        set_updated_at(&app, name, t).await;
    }
    let mut want: Vec<(i64, usize)> = times.iter().enumerate().map(|(i, t)| (*t, i)).collect();
    want.sort();
    let expect = |since: i64| -> Vec<String> {
        want.iter()
            .filter(|(t, _)| *t >= since)
            .map(|(_, i)| published[*i].clone())
            .collect()
    };
    for limit in 1..=13 {
        let (got, sizes) = walk(&app, &format!("limit={limit}"), limit).await;
        assert_eq!(names(&got), expect(i64::MIN), "limit={limit}");
        assert_eq!(sizes, expected_sizes(12, limit), "limit={limit}");
    }

    // updated_since: changed at or after, in the same order, and pages the same way.
    for (since, count) in [
        (i64::MIN, 12),
        (-1, 12),
        (0, 12),
        (1000, 12),
        (1001, 11),
        (3000, 11),
        (3001, 9),
        (5000, 9),
        (5001, 2),
        (9000, 2),
        (9001, 0),
    ] {
        let want = expect(since);
        assert_eq!(want.len(), count, "since={since}");
        for limit in [1, 2, 3, 100] {
            let (got, sizes) =
                walk(&app, &format!("updated_since={since}&limit={limit}"), limit).await;
            assert_eq!(names(&got), want, "since={since} limit={limit}");
            assert_eq!(sizes, expected_sizes(count, limit), "since={since}");
            assert!(got.iter().all(|a| a.updated_at >= since));
        }
    }

    // A real change moves an agent past everything older: a mirror asking for changes since
    // the newest time it saw gets exactly that agent.
    let u = &app.user;
    let deprecated = app.deprecate(&u.token, &published[2], "1.0.0", "use agent-01");
    assert_status(deprecated.await, 204);
    let (got, _) = walk(&app, "updated_since=9001&limit=10", 10).await;
    assert_eq!(names(&got), vec![published[2].clone()]);
    let (_, one) = app.get(&format!("/api/v1/agents/{}", published[2])).await;
    assert_eq!(one["updated_at"], got[0].updated_at);
    assert_eq!(one["versions"][0]["deprecated"], "use agent-01");

    // updated_since must be a number: the code of every bad query parameter.
    assert_refused(
        app.get("/api/v1/agents?updated_since=yesterday").await,
        400,
        "invalid_parameter",
    );
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn changes_during_a_walk_come_after_the_cursor(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    let published = publish_many(&app, 10).await;
    // Everything in the past, in creation order, so every real change is newer.
    for (i, name) in published.iter().enumerate() {
        set_updated_at(&app, name, 1000 + i as i64).await;
    }
    let page = assert_status(app.get("/api/v1/agents?limit=4").await, 200);
    let first = strings(&page["agents"], "name");
    assert_eq!(
        first,
        published[..4]
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    let cursor = page["next_cursor"].as_str().unwrap().to_string();

    // While the mirror is between pages: an agent it has seen gets a new version, one it has
    // not seen yet is yanked to nothing, and a new agent appears.
    let m = remote_manifest(&published[1], "1.1.0");
    assert_status(app.publish_as(&u, &m).await, 201);
    let reason = json!({"reason": "broken"});
    assert_status(
        app.yank(&u.token, &published[5], "1.0.0", reason).await,
        204,
    );
    let m = remote_manifest("alice/late-comer", "0.1.0");
    assert_status(app.publish_as(&u, &m).await, 201);

    let (rest, _) = walk_from(&app, "limit=4", 4, Some(cursor)).await;
    let rest_names = names(&rest);
    let mut want: Vec<String> = [4, 6, 7, 8, 9]
        .iter()
        .map(|i| published[*i].clone())
        .collect();
    want.extend([
        published[1].clone(),
        published[5].clone(),
        "alice/late-comer".to_string(),
    ]);
    assert_eq!(rest_names, want, "nothing missed, changes at the end");
    assert_unique(&rest);
    let by_name: HashMap<&str, &Listed> = rest.iter().map(|a| (a.name.as_str(), a)).collect();
    assert_eq!(
        by_name[published[1].as_str()].latest.as_deref(),
        Some("1.1.0")
    );
    assert_eq!(by_name[published[5].as_str()].latest, None);
    assert_eq!(by_name["alice/late-comer"].latest.as_deref(), Some("0.1.0"));
    assert!(rest.windows(2).all(|w| w[0].updated_at <= w[1].updated_at));
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn outbox_pages_by_sequence(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let published = publish_many(&app, 9).await;
    let (s, _) = app
        .yank(&app.user.token, &published[0], "1.0.0", json!({}))
        .await;
    assert_eq!(s, 204);
    const TOTAL: i64 = 10;
    for limit in [1i64, 3, 4, 10, 11] {
        let mut after = 0;
        let mut seqs = Vec::new();
        let mut pages = 0;
        loop {
            pages += 1;
            assert!(pages <= 20, "the outbox walk does not end");
            let path = format!("/api/v1/outbox?after={after}&limit={limit}");
            let o = assert_status(app.get(&path).await, 200);
            let entries = o["entries"].as_array().unwrap();
            assert!(entries.len() as i64 <= limit);
            if entries.is_empty() {
                break;
            }
            for e in entries {
                seqs.push(e["seq"].as_i64().unwrap());
            }
            after = *seqs.last().unwrap();
        }
        assert_eq!(seqs, (1..=TOTAL).collect::<Vec<_>>(), "limit={limit}");
    }
    let (_, o) = app.get("/api/v1/outbox?after=9&limit=5").await;
    assert_eq!(o["entries"][0]["kind"], "yank", "{o}");
    assert_eq!(o["entries"][0]["agent"], published[0]);
    assert_eq!(o["entries"].as_array().unwrap().len(), 1);
    app.stop().await;
}

// ---- `ofc-hub migrate` ----

/// The migration versions shipped for `backend` (the numbers in `migrations/<backend>/`).
fn shipped_migrations(backend: &str) -> Vec<i64> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../migrations")
        .join(backend);
    let mut v: Vec<i64> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.split('_').next().unwrap().parse().unwrap()
        })
        .collect();
    v.sort();
    assert!(!v.is_empty());
    v
}

/// `_sqlx_migrations` as (version, success, checksum, installed_on).
async fn applied(url: &str) -> Vec<(i64, bool, Vec<u8>, String)> {
    let db = Db::connect(url, 1)
        .await
        .expect("open the migrated database");
    // SQLite declares `success` BOOLEAN, which the backend-generic driver reads as an integer.
    let rows: Vec<(i64, Flag, Vec<u8>, String)> = sqlx::query_as(
        "SELECT version, CAST(success AS INTEGER), checksum, CAST(installed_on AS TEXT) \
         FROM _sqlx_migrations ORDER BY version",
    )
    .fetch_all(db.read())
    .await
    .expect("read _sqlx_migrations");
    let rows: Vec<(i64, bool, Vec<u8>, String)> = rows
        .into_iter()
        .map(|(v, ok, checksum, at)| (v, ok.into(), checksum, at))
        .collect();
    let tables: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM agents")
        .fetch_one(db.read())
        .await
        .expect("the schema is there");
    assert_eq!(tables, 0);
    db.close().await;
    rows
}

fn run(data: &Path, url: Option<&str>, args: &[&str]) -> Output {
    hub_command(&bin("ofc-hub"), data, url)
        .args(args)
        .output()
        .expect("run ofc-hub")
}

fn assert_ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {:?}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn migrate_a_fresh_data_dir_twice_then_serve(#[case] backend: Backend) {
    // A data dir that does not exist yet, two levels down; stopped until migrated.
    let mut hub = TestHub::process(ProcessOptions::new(backend).data_dir("fresh/hub").stopped());
    let data = hub.data_dir().to_path_buf();
    assert!(!data.exists());
    let db_url = hub.database_url().map(str::to_string);
    let (url, kind) = match &db_url {
        Some(u) => (u.clone(), "postgres"),
        None => (
            format!("sqlite://{}", data.join("hub.sqlite3").display()),
            "sqlite",
        ),
    };

    let o = run(&data, db_url.as_deref(), &["migrate"]);
    assert_ok(&o, "first migrate");
    assert!(
        o.stdout.is_empty(),
        "data on stdout only, and there is none"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("migrations applied"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    if backend == Backend::Sqlite {
        assert!(
            data.join("hub.sqlite3").is_file(),
            "the SQLite file is made"
        );
    }
    let first = applied(&url).await;
    let versions: Vec<i64> = first.iter().map(|r| r.0).collect();
    assert_eq!(versions, shipped_migrations(kind), "every migration, once");
    assert!(first.iter().all(|r| r.1), "all succeeded: {first:?}");

    // Again: nothing to do, nothing re-applied.
    let o = run(&data, db_url.as_deref(), &["migrate"]);
    assert_ok(&o, "second migrate");
    assert_eq!(applied(&url).await, first, "the second run changed nothing");

    // The migrated store serves: a user made by the admin command, the read API answers.
    let o = run(
        &data,
        db_url.as_deref(),
        &["admin", "create-user", "alice", "--json"],
    );
    assert_ok(&o, "create-user");
    let created: Value = serde_json::from_slice(&o.stdout).unwrap();
    let token = created["token"].as_str().unwrap().to_string();
    hub.restart();
    let http = reqwest::Client::new();
    let r = http
        .get(format!("{}/api/v1/agents", hub.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"agents": [], "next_cursor": null})
    );
    let (status, me) = hub
        .request(reqwest::Method::GET, "/api/v1/me")
        .token(&token)
        .send()
        .await;
    assert_eq!(status, 200);
    assert_eq!(me["user"], "alice");
    hub.kill();

    // Migrating a database in use keeps its data.
    let o = run(&data, db_url.as_deref(), &["migrate"]);
    assert_ok(&o, "third migrate");
    assert_eq!(applied(&url).await, first);
    let o = run(&data, db_url.as_deref(), &["admin", "list-users", "--json"]);
    assert_ok(&o, "list-users");
    let users: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        users.to_string().contains("\"alice\""),
        "the user survived: {users}"
    );
}

#[tokio::test]
async fn migrate_failures_exit_1_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    // --data names a file: the data dir cannot be made.
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let o = run(&file, None, &["migrate"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cannot create data dir"), "{err}");

    // A PostgreSQL that refuses the password: the error names the database, never the secret.
    let base = ofc_test_kit::postgres_base_url();
    let (scheme, rest) = base.split_once("://").unwrap();
    let (creds, host) = rest
        .rsplit_once('@')
        .expect("user:password@ in the test URL");
    let user = creds.split(':').next().unwrap();
    let wrong = format!("{scheme}://{user}:S3cret-wrong@{host}");
    let o = run(dir.path(), Some(&wrong), &["migrate"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cannot open database"), "{err}");
    assert!(!err.contains("S3cret-wrong"), "the password leaked: {err}");

    // An unsupported database URL.
    let o = run(dir.path(), Some("mysql://localhost/x"), &["migrate"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("unsupported database URL scheme"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
