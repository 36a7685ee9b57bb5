//! The one-shot `ofc-hub` commands against the data dir and database of a hub that is serving
//! them: `gc`, the `admin` verbs, `migrate` and `search-check` run beside it (they never take the
//! search index's writer lock the hub's follower holds), and `reindex`, which needs that lock,
//! fails at once with a message telling the operator to stop the hub. On SQLite and PostgreSQL.

use base64::Engine as _;
use index_schema::name::Digest;
use ofc_test_kit::{Backend, HubProcess as Hub, ProcessOptions, TestHub, assert_status};
use reqwest::Method;
use rstest::rstest;
use serde_json::Value;

/// Runs `ofc-hub ARGS` on the hub's data (and database): (exit code, stdout, stderr).
fn run(hub: &Hub, args: &[&str]) -> (Option<i32>, String, String) {
    let out = hub.run(args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `ofc-hub ARGS`, expects exit 0 and returns stdout.
fn ok(hub: &Hub, args: &[&str]) -> String {
    let (code, stdout, stderr) = run(hub, args);
    assert_eq!(
        code,
        Some(0),
        "`ofc-hub {}` beside a serving hub failed:\n{stderr}",
        args.join(" ")
    );
    stdout
}

fn json_of(args: &[&str], stdout: &str) -> Value {
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("`ofc-hub {}` printed {stdout:?}: {e}", args.join(" ")))
}

/// Runs `ofc-hub ARGS`, expects exit 0 and JSON on stdout.
fn ok_json(hub: &Hub, args: &[&str]) -> Value {
    json_of(args, &ok(hub, args))
}

fn basic(token: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("u:{token}"))
    )
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shot_commands_run_while_the_hub_serves(#[case] backend: Backend) {
    let mut hub = TestHub::process(ProcessOptions::new(backend));
    let http = reqwest::Client::new();

    // admin: a user created beside the hub can use the hub at once.
    let args = ["admin", "create-user", "x", "--json"];
    let created = ok_json(&hub, &args);
    assert_eq!(created["user"], "x", "{created}");
    assert_eq!(created["namespace"], "x", "{created}");
    assert_eq!(created["admin"], false, "{created}");
    let token = created["token"].as_str().expect("a token").to_string();
    assert!(token.starts_with("ofc_"), "{created}");
    let me = assert_status(
        hub.request(Method::GET, "/api/v1/me")
            .token(&token)
            .send()
            .await,
        200,
    );
    assert_eq!(me["user"], "x", "{me}");

    // The other admin verbs.
    let args = ["admin", "create-token", "x", "--name", "second", "--json"];
    let second = ok_json(&hub, &args);
    assert_eq!(second["user"], "x", "{second}");
    let second_id = second["token_id"].as_i64().expect("a token id");
    ok(&hub, &["admin", "create-user", "owner", "--no-namespace"]);
    ok(&hub, &["admin", "set-admin", "owner", "true"]);
    ok(
        &hub,
        &["admin", "create-namespace", "team", "--owner", "owner"],
    );
    ok(
        &hub,
        &["admin", "set-member", "team", "x", "--role", "publisher"],
    );
    ok(&hub, &["admin", "disable-user", "owner"]);
    ok(&hub, &["admin", "disable-user", "owner", "--enable"]);
    ok(&hub, &["admin", "revoke-token", &second_id.to_string()]);
    let users = ok_json(&hub, &["admin", "list-users", "--json"]);
    let mut names: Vec<(&str, bool)> = users
        .as_array()
        .expect("a list")
        .iter()
        .map(|u| {
            (
                u["name"].as_str().unwrap(),
                u["is_admin"].as_bool().unwrap(),
            )
        })
        .collect();
    names.sort_unstable();
    assert_eq!(names, [("owner", true), ("x", false)], "{users}");
    let tokens = ok_json(&hub, &["admin", "list-tokens", "x", "--json"]);
    assert_eq!(tokens.as_array().map(Vec::len), Some(2), "{tokens}");
    let audit = ok_json(&hub, &["admin", "audit", "--json"]);
    let actions: Vec<&str> = audit
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| r["action"].as_str().unwrap())
        .collect();
    assert!(actions.contains(&"user.create"), "{audit}");
    assert!(actions.contains(&"token.revoke"), "{audit}");
    // The hub sees the namespace membership the CLI granted.
    let me = assert_status(
        hub.request(Method::GET, "/api/v1/me")
            .token(&token)
            .send()
            .await,
        200,
    );
    let namespaces: Vec<&str> = me["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert!(namespaces.contains(&"team"), "{me}");

    // gc: with two fresh unreferenced blobs pushed through the serving hub.
    let auth = basic(&token);
    let mut pushed = Vec::new();
    for bytes in [&b"first unreferenced blob"[..], &b"second one"[..]] {
        let d = Digest::of(bytes);
        let r = http
            .post(format!("{}/v2/x/g/blobs/uploads/?digest={d}", hub.url))
            .header("authorization", &auth)
            .body(bytes.to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 201, "{}", r.text().await.unwrap());
        pushed.push((d, bytes.len()));
    }
    let blob_status = |d: Digest| {
        let (http, url, auth) = (http.clone(), hub.url.clone(), auth.clone());
        async move {
            http.get(format!("{url}/v2/x/g/blobs/{d}"))
                .header("authorization", auth)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    // Within the grace period: examined, kept.
    let args = ["gc", "--grace-secs", "3600", "--json"];
    let r = ok_json(&hub, &args);
    assert_eq!(r["blobs_deleted"], 0, "{r}");
    assert_eq!(r["bytes_freed"], 0, "{r}");
    assert!(r["blobs_seen"].as_u64().unwrap() >= 2, "{r}");
    for (d, _) in &pushed {
        assert_eq!(blob_status(*d).await, 200, "{d} after gc --grace-secs 3600");
    }
    // Without a grace period: both go, and the serving hub no longer has them.
    let args = ["gc", "--grace-secs", "0", "--json"];
    let r = ok_json(&hub, &args);
    assert_eq!(r["blobs_deleted"], 2, "{r}");
    let bytes: usize = pushed.iter().map(|(_, n)| n).sum();
    assert_eq!(r["bytes_freed"].as_u64(), Some(bytes as u64), "{r}");
    for (d, _) in &pushed {
        assert_eq!(blob_status(*d).await, 404, "{d} after gc --grace-secs 0");
    }
    // The text form too.
    let text = ok(&hub, &["gc", "--grace-secs", "3600"]);
    assert!(text.contains("blobs removed"), "{text:?}");

    // migrate (a no-op now) and search-check (reads the committed index) run beside it.
    ok(&hub, &["migrate"]);
    let args = ["search-check"];
    let check = json_of(&args, &ok(&hub, &args));
    assert!(check["index_seq"].is_u64(), "{check}");

    // reindex needs the index's one writer, which the hub holds: a clear refusal, exit 1.
    let (code, stdout, stderr) = run(&hub, &["reindex"]);
    assert_eq!(
        code,
        Some(1),
        "reindex beside a serving hub: {stdout}\n{stderr}"
    );
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("writer lock") && stderr.contains("stop it, run `ofc-hub reindex`"),
        "{stderr}"
    );

    // The hub served on, unharmed, and logged no error.
    let r = http
        .get(format!("{}/readyz", hub.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let log = hub.log();
    assert!(!log.contains("ERROR"), "the hub logged errors:\n{log}");
    hub.kill();
    // Stopped, reindex takes the lock.
    let r = ok_json(&hub, &["reindex"]);
    assert!(r["seq"].is_u64(), "{r}");
}
