//! The `ofc` client verbs against the real `ofc-hub`: login/logout, key register/list/revoke,
//! publish of every example agent, search (every flag), info, yank/undo, completions, and the
//! errors (hub down, not logged in, bad input: exit 1; bad usage: exit 2). Human output of
//! search, info and errors is snapshotted (see `snapshots/`), with ports, digests, key ids and
//! times redacted.

use std::fs;

use crate::common::Publishers as _;
use crate::common::{Ofc, example_dirs, redact};
use ofc_test_kit::{ProcessOptions, TestHub};
use reqwest::Method;
use serde_json::{Value, json};

fn names(v: &Value) -> Vec<String> {
    v["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| h["name"].as_str().unwrap().to_string())
        .collect()
}

fn hit_names(hits: &[Value]) -> Vec<&str> {
    hits.iter().map(|h| h["name"].as_str().unwrap()).collect()
}

#[test]
fn login_checks_the_token_stores_it_privately_and_logout_forgets_it() {
    let hub = TestHub::process(ProcessOptions::default());
    let token = hub.create_user_with_password("alice", "correct horse");
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let creds = home.path().join("config/credentials.toml");

    // A token the hub does not know is refused before anything is stored.
    let r = Ofc::finish(
        ofc.cmd()
            .args(["login", "--token-stdin"])
            .write_stdin("ofc_not-a-real-token\n"),
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(!creds.exists(), "a refused token was stored");
    insta::assert_snapshot!("login_wrong_token", redact(&r.stderr, &hub.url, &[]));

    let r = Ofc::finish(
        ofc.cmd()
            .args(["login", "--token-stdin"])
            .write_stdin(format!("{token}\n")),
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        r.stdout,
        format!(
            "logged in to {} as alice\nnamespaces: alice (owner)\n",
            hub.url
        )
    );
    assert!(
        !r.stdout.contains(&token) && !r.stderr.contains(&token),
        "the token was printed"
    );
    let stored = fs::read_to_string(&creds).unwrap();
    assert!(
        stored.contains(&token) && stored.contains(&hub.url),
        "{stored}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = fs::metadata(&creds).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "credentials.toml mode {mode:o}");
    }

    // The stored token is what later commands use (`key list` asks `/me` for the namespace).
    let r = ofc.run(&["key", "list"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stderr.contains("namespace `alice` has no keys"), "{r:?}");

    // OFC_TOKEN wins over the file, and a bad one is named in the hint.
    let r = Ofc::finish(
        ofc.cmd()
            .env("OFC_TOKEN", "ofc_bogus")
            .args(["key", "list"]),
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stderr.contains("401") && r.stderr.contains("hint: OFC_TOKEN"),
        "{}",
        r.stderr
    );

    // Logout forgets it; a second logout has nothing to do; then a token is needed again.
    assert_eq!(
        ofc.ok(&["logout"]),
        format!("logged out of {} (alice)\n", hub.url)
    );
    assert!(!fs::read_to_string(&creds).unwrap().contains(&token));
    let r = ofc.run(&["logout"]);
    assert_eq!(r.code, Some(0));
    assert!(r.stderr.contains("nothing to do"), "{r:?}");
    let r = ofc.fails(1, &["key", "list"]);
    assert!(
        r.stderr.contains("needs an API token") && r.stderr.contains("hint: run `ofc login`"),
        "{}",
        r.stderr
    );

    // A user name and password: the hub mints a token for ofc.
    let r = Ofc::finish(
        ofc.cmd()
            .args(["login", "--username", "alice", "--password-stdin"])
            .write_stdin("wrong horse\n"),
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stderr.contains("wrong user name or password")
            && r.stderr.contains("hint: check the user name and password"),
        "{}",
        r.stderr
    );
    let r = Ofc::finish(
        ofc.cmd()
            .args(["login", "--username", "alice", "--password-stdin"])
            .write_stdin("correct horse\n"),
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    let minted = fs::read_to_string(&creds)
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("token = \"")
                .map(|t| t.trim_end_matches('"').to_string())
        })
        .expect("a stored token");
    assert_ne!(minted, token);
    assert!(!r.stdout.contains(&minted) && !r.stderr.contains(&minted));
    assert_eq!(
        hub.api(Method::GET, "/api/v1/me", Some(&minted), None).0,
        200
    );

    // `--revoke` revokes it on the hub too; the admin-made token is untouched.
    let out = ofc.ok(&["logout", "--revoke"]);
    assert!(out.contains("the token is revoked"), "{out}");
    assert_eq!(
        hub.api(Method::GET, "/api/v1/me", Some(&minted), None).0,
        401
    );
    assert_eq!(
        hub.api(Method::GET, "/api/v1/me", Some(&token), None).0,
        200
    );
    let r = ofc.fails(1, &["logout", "--revoke"]);
    assert!(r.stderr.contains("no token is stored"), "{}", r.stderr);

    // `--hub` picks the hub; a malformed URL is named.
    let r = ofc.fails(1, &["login", "--hub", "localhost:8733", "--token", &token]);
    assert!(
        r.stderr.contains("invalid hub URL `localhost:8733`"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains(&token));
    // Without a token flag, a token piped on stdin is read.
    let r = Ofc::finish(
        ofc.cmd()
            .args(["login", "--hub", &format!("{}/", hub.url)])
            .write_stdin(format!("{token}\n")),
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        fs::read_to_string(&creds)
            .unwrap()
            .contains(&format!("\"{}\"", hub.url))
    );
}

#[test]
fn keys_are_registered_listed_and_revoked() {
    let hub = TestHub::process(ProcessOptions::default());
    let token = hub.create_user("bob");
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);

    // Registering needs a token, and a key.
    let r = ofc.fails(1, &["key", "register"]);
    assert!(
        r.stderr.contains("no signing key `default`"),
        "{}",
        r.stderr
    );
    let key = ofc.json(&["keygen"]);
    let id = key["keyId"].as_str().unwrap().to_string();
    let r = ofc.fails(1, &["key", "register"]);
    assert!(
        r.stderr.contains("registering a key needs an API token"),
        "{}",
        r.stderr
    );

    ofc.ok(&["login", "--token", &token]);
    let out = ofc.ok(&["key", "register"]);
    assert_eq!(
        out,
        format!("registered key {id} (`default`) for namespace bob\n")
    );
    let r = ofc.fails(1, &["key", "register"]);
    assert!(
        r.stderr.contains("409") && r.stderr.contains("hint: it is registered already"),
        "{}",
        r.stderr
    );
    let r = ofc.fails(1, &["key", "register", "--namespace", "nobody-here"]);
    assert!(r.stderr.contains("404"), "{}", r.stderr);
    let r = ofc.fails(1, &["key", "register", "--namespace", "Not Valid"]);
    assert!(
        r.stderr.contains("invalid namespace `Not Valid`"),
        "{}",
        r.stderr
    );

    let listed = ofc.json(&["key", "list"]);
    assert_eq!(listed["namespace"], "bob");
    assert_eq!(listed["keys"][0]["keyId"], id.as_str());
    assert_eq!(listed["keys"][0]["revokedAt"], Value::Null);
    let table = ofc.ok(&["key", "list", "bob"]);
    assert!(table.starts_with("KEY ID"), "{table}");
    assert!(table.contains(&id), "{table}");

    let r = ofc.fails(1, &["key", "revoke", "not-hex"]);
    assert!(
        r.stderr.contains("invalid key id `not-hex`"),
        "{}",
        r.stderr
    );
    let out = ofc.ok(&["key", "revoke", &id]);
    assert_eq!(out, format!("revoked key {id} of namespace bob\n"));
    let listed = ofc.json(&["key", "list", "bob"]);
    assert!(listed["keys"][0]["revokedAt"].is_i64(), "{listed}");
    insta::assert_snapshot!(
        "key_list_revoked",
        redact(&ofc.ok(&["key", "list"]), &hub.url, &[])
    );

    // What the revoked key signs is refused, with what to do instead.
    let summarizer = example_dirs()
        .into_iter()
        .find(|d| d.ends_with("summarizer"))
        .unwrap();
    let r = Ofc::finish(ofc.cmd().arg("publish").arg(&summarizer).args([
        "--name",
        "bob/summarizer",
        "--version",
        "1.0.0",
    ]));
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stderr.contains("the hub refused bob/summarizer@1.0.0")
            && r.stderr.contains("hint: that key is revoked"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_examples_publish_and_are_found_shown_and_yanked() {
    let hub = TestHub::process(ProcessOptions::default());
    let alice = hub.publisher("alice", &["ofc-examples"]);
    let published = alice.publish_examples();
    assert_eq!(published.len(), example_dirs().len());
    assert!(published.len() >= 6, "{published:?}");
    hub.wait_for_search("publisher=ofc-examples&limit=100", |h| {
        h.len() == published.len()
    });

    // Searching needs no login.
    let anon_home = tempfile::tempdir().unwrap();
    let anon = Ofc::new(anon_home.path(), &hub.url);

    // The acceptance check: the data analyst comes first for "data analysis".
    let out = anon.ok(&["search", "data analysis"]);
    let first = out.lines().nth(1).expect("a hit");
    assert!(first.starts_with("ofc-examples/data-analyst "), "{out}");
    insta::assert_snapshot!("search_data_analysis", redact(&out, &hub.url, &[]));

    // Every flag reaches the hub and filters.
    let s = |args: &[&str]| {
        let mut all = vec!["search"];
        all.extend_from_slice(args);
        names(&anon.json(&all))
    };
    assert_eq!(
        s(&["--capability", "analyze_dataset"]),
        ["ofc-examples/data-analyst"]
    );
    assert_eq!(
        s(&[
            "--capability",
            "analyze_dataset",
            "--capability",
            "significance_test"
        ]),
        ["ofc-examples/data-analyst"]
    );
    assert_eq!(
        s(&[
            "--capability",
            "analyze_dataset",
            "--capability",
            "run_python"
        ]),
        Vec::<String>::new()
    );
    assert_eq!(
        s(&["--capability", "run_python"]),
        ["ofc-examples/code-runner"]
    );
    assert_eq!(
        s(&["--keyword", "web scraping"]),
        ["ofc-examples/web-scraper"]
    );
    assert_eq!(s(&["--kind", "pip"]), ["ofc-examples/web-scraper"]);
    let bundles = s(&["--kind", "bundle", "--limit", "100"]);
    assert_eq!(bundles.len(), published.len() - 1, "{bundles:?}");
    assert!(!bundles.contains(&"ofc-examples/web-scraper".to_string()));
    let mut all = s(&["--publisher", "ofc-examples", "--limit", "100"]);
    all.sort();
    assert_eq!(all, published);
    assert!(s(&["--publisher", "alice"]).is_empty());
    let mut updated = s(&["--sort", "updated", "--limit", "100"]);
    updated.sort();
    assert_eq!(updated, published);
    assert_eq!(s(&["--limit", "2"]).len(), 2);
    let r = anon.run(&["search", "--limit", "2"]);
    assert_eq!(r.stdout.lines().count(), 3, "{r:?}");
    assert!(r.stderr.contains("showing the first 2"), "{r:?}");
    // Facets: over every match, not only the page.
    let j = anon.json(&["search", "--facets", "--limit", "1"]);
    let kinds: u64 = j["facets"]["kind"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["count"].as_u64().unwrap())
        .sum();
    assert_eq!(kinds as usize, published.len(), "{j}");
    assert_eq!(j["facets"]["publisher"][0]["value"], "ofc-examples", "{j}");
    let r = anon.run(&["search", "--facets", "--limit", "1"]);
    assert!(r.stdout.contains("\nkind: "), "{r:?}");
    assert!(
        anon.json(&["search", "--limit", "1"])
            .get("facets")
            .is_none()
    );
    let r = anon.run(&["search", "statistics", "--kind", "docker"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), ""), "{r:?}");
    assert!(r.stderr.contains("drop a filter"), "{r:?}");
    let r = anon.run(&["search", "qqqzzzxxx"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), ""), "{r:?}");
    insta::assert_snapshot!("search_no_match", r.stderr);
    // A misspelling: the hub's own spelling comes back as a command to copy.
    let r = anon.run(&["search", "statistcs"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stderr
            .contains("did you mean `ofc search \"statistics\"`?"),
        "{r:?}"
    );
    let r = anon.fails(1, &["search", "x", "--capability", "a,b"]);
    assert!(
        r.stderr.contains("invalid --capability `a,b`"),
        "{}",
        r.stderr
    );

    // Info: the latest version and everything about it.
    let out = anon.ok(&["info", "ofc-examples/data-analyst"]);
    insta::assert_snapshot!("info_data_analyst", redact(&out, &hub.url, &[]));
    let j = anon.json(&["info", "ofc-examples/data-analyst"]);
    assert_eq!(j["agent"]["name"], "ofc-examples/data-analyst");
    assert_eq!(j["version"]["version"], "1.0.0");
    assert_eq!(j["version"]["source_kind"], "bundle");

    // A second version, yanked with a reason, and a deprecated first version.
    let copy = tempfile::tempdir().unwrap();
    let src = example_dirs()
        .into_iter()
        .find(|d| d.ends_with("data-analyst"))
        .unwrap();
    let yaml = fs::read_to_string(src.join("agent.yaml")).unwrap();
    assert!(yaml.contains("\nversion: 1.0.0\n"));
    fs::write(
        copy.path().join("agent.yaml"),
        yaml.replace("\nversion: 1.0.0\n", "\nversion: 1.1.0\n"),
    )
    .unwrap();
    alice.ofc.ok(&["publish", copy.path().to_str().unwrap()]);
    assert_eq!(
        anon.json(&["info", "ofc-examples/data-analyst"])["version"]["version"],
        "1.1.0"
    );
    let out = alice.ofc.ok(&[
        "yank",
        "ofc-examples/data-analyst@1.1.0",
        "--reason",
        "wrong statistics in the prompt",
    ]);
    assert_eq!(out, "yanked ofc-examples/data-analyst@1.1.0\n");
    let (status, body) = hub.api(
        Method::PUT,
        "/api/v1/agents/ofc-examples/data-analyst/versions/1.0.0/deprecation",
        Some(&alice.token),
        Some(json!({ "message": "use ofc-examples/code-runner for scripts" })),
    );
    assert_eq!(status, 204, "{body}");
    let out = anon.ok(&["info", "ofc-examples/data-analyst"]);
    insta::assert_snapshot!("info_yanked_and_deprecated", redact(&out, &hub.url, &[]));
    let out = anon.ok(&["info", "ofc-examples/data-analyst@1.1.0"]);
    assert!(
        out.contains("\nyanked        wrong statistics in the prompt\n"),
        "{out}"
    );
    let j = anon.json(&["info", "ofc-examples/data-analyst@^1"]);
    assert_eq!(
        j["version"]["version"], "1.0.0",
        "a range skips yanked versions"
    );

    // Yanking needs an exact version, and rights.
    let r = alice
        .ofc
        .fails(1, &["yank", "ofc-examples/data-analyst@^1"]);
    assert!(r.stderr.contains("not one exact version"), "{}", r.stderr);
    let r = anon.fails(1, &["yank", "ofc-examples/data-analyst@1.0.0"]);
    assert!(r.stderr.contains("needs an API token"), "{}", r.stderr);
    let r = alice
        .ofc
        .fails(1, &["yank", "ofc-examples/data-analyst@9.9.9"]);
    assert!(
        r.stderr.contains("404") && r.stderr.contains("lists its versions"),
        "{}",
        r.stderr
    );
    let out = alice
        .ofc
        .ok(&["yank", "--undo", "ofc-examples/data-analyst@1.1.0"]);
    assert_eq!(out, "unyanked ofc-examples/data-analyst@1.1.0\n");
    assert_eq!(
        anon.json(&["info", "ofc-examples/data-analyst"])["version"]["version"],
        "1.1.0"
    );

    // A yanked only version leaves search; unyanked, it is back.
    alice
        .ofc
        .ok(&["yank", "ofc-examples/web-scraper@2.1.0", "--reason", "gone"]);
    hub.wait_for_search("q=scraping&limit=100", |h| {
        !hit_names(h).contains(&"ofc-examples/web-scraper")
    });
    assert!(!anon.ok(&["search", "web scraping"]).contains("web-scraper"));
    alice
        .ofc
        .ok(&["yank", "--undo", "ofc-examples/web-scraper@2.1.0"]);
    hub.wait_for_search("q=scraping&limit=100", |h| {
        hit_names(h).contains(&"ofc-examples/web-scraper")
    });

    // Downloads count bundle downloads (once per client and day: three downloads from two
    // addresses are 2) and order `--sort downloads`. The index takes them on the agent's next
    // change (a yank and its undo here).
    for from in [[127, 0, 0, 1], [127, 0, 0, 2], [127, 0, 0, 2]] {
        hub.get_bytes_from(
            "/api/v1/agents/ofc-examples/code-runner/versions/0.3.1/bundle",
            from,
        );
    }
    alice.ofc.ok(&["yank", "ofc-examples/code-runner@0.3.1"]);
    alice
        .ofc
        .ok(&["yank", "--undo", "ofc-examples/code-runner@0.3.1"]);
    hub.wait_for_search("sort=downloads&limit=100", |h| {
        h.first()
            .is_some_and(|f| f["name"] == "ofc-examples/code-runner" && f["downloads"] == 2)
    });
    let out = anon.ok(&["search", "--sort", "downloads"]);
    let first: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        first[..3],
        ["ofc-examples/code-runner", "0.3.1", "2"],
        "{out}"
    );
    let j = anon.json(&["info", "ofc-examples/code-runner"]);
    assert_eq!(j["version"]["downloads"], 2);
}

#[test]
fn errors_say_what_failed_and_exit_1_or_2() {
    let mut hub = TestHub::process(ProcessOptions::default());
    let token = hub.create_user("carol");
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    ofc.ok(&["login", "--token", &token]);

    // Usage errors: clap's message, exit 2.
    for args in [
        &["search", "--limit", "0"][..],
        &["search", "--limit", "101"],
        &["search", "--sort", "best"],
        &["frobnicate"],
        &["completions", "tcsh"],
        &["login", "--token", "x", "--token-stdin"],
        &["login", "--username", "carol"],
        &["yank"],
        &["yank", "a/b@1.0.0", "--undo", "--reason", "x"],
        &["key", "revoke"],
        &["info"],
    ] {
        let r = ofc.fails(2, args);
        assert!(r.stderr.contains("error:"), "{args:?}: {}", r.stderr);
    }

    // Bad input: exit 1, the value named, a hint.
    let r = ofc.fails(1, &["yank", "carol/bot"]);
    insta::assert_snapshot!("yank_needs_exact_version", r.stderr);
    let r = ofc.fails(1, &["info", "not-a-reference"]);
    insta::assert_snapshot!("info_invalid_reference", r.stderr);
    let r = ofc.fails(1, &["info", "carol/nothing"]);
    insta::assert_snapshot!("info_unknown_agent", redact(&r.stderr, &hub.url, &[]));
    let r = Ofc::finish(
        ofc.cmd()
            .env("OFC_HUB", "localhost:8733")
            .args(["search", "x"]),
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    insta::assert_snapshot!("invalid_hub_url", r.stderr);

    // Not logged in.
    let other = tempfile::tempdir().unwrap();
    let stranger = Ofc::new(other.path(), &hub.url);
    let r = stranger.fails(1, &["yank", "carol/bot@1.0.0"]);
    insta::assert_snapshot!("yank_not_logged_in", redact(&r.stderr, &hub.url, &[]));
    let data_analyst = example_dirs()
        .into_iter()
        .find(|d| d.ends_with("data-analyst"))
        .unwrap();
    let r = stranger.fails(1, &["publish", data_analyst.to_str().unwrap()]);
    insta::assert_snapshot!("publish_not_logged_in", redact(&r.stderr, &hub.url, &[]));

    // The hub is down: a clear error and a hint, exit 1; back up, the stored login works.
    hub.kill();
    let r = ofc.fails(1, &["search", "data"]);
    insta::assert_snapshot!("hub_down", redact(&r.stderr, &hub.url, &[]));
    let r = ofc.fails(1, &["key", "list"]);
    assert!(r.stderr.contains("cannot reach the hub"), "{}", r.stderr);
    hub.restart();
    let r = ofc.run(&["key", "list"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stderr.contains("namespace `carol` has no keys"), "{r:?}");
}

#[test]
fn completions_exist_for_every_shell() {
    let home = tempfile::tempdir().unwrap();
    // No hub is needed: the script comes from the command's own definitions.
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = ofc.ok(&["completions", shell]);
        assert!(out.len() > 1000, "{shell}: {} bytes", out.len());
        for verb in ["search", "login", "yank", "publish"] {
            assert!(out.contains(verb), "{shell} completion lacks `{verb}`");
        }
    }
}
