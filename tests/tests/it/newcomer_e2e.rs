//! A newcomer's first steps with the real `ofc` and `ofc-hub`, as the README tells them:
//! `ofc init`, `ofc publish`, then at once `ofc search` and `ofc pull`.

use crate::common::Publishers as _;
use ofc_test_kit::{ProcessOptions, TestHub};

/// `ofc init` fills in `package:` with the logged-in user's namespace (as cargo and npm
/// default to you), so the first `ofc publish` works; and `ofc publish` returns only once the
/// hub's search finds the version, so a search and a pull right after it succeed (it used to
/// return ~250 ms before search could find it).
#[test]
fn init_then_publish_then_at_once_search_and_pull() {
    let hub = TestHub::process(ProcessOptions::default());
    let alice = hub.publisher("alice", &[]);
    let work = tempfile::tempdir().unwrap();
    // Words far apart (no typo of one another), so each search can only find its own agent.
    for (folder, word) in [
        ("quick-helper", "zebrafinch"),
        ("second-helper", "kookaburra"),
        ("third-helper", "pangolin"),
    ] {
        let dir = work.path().join(folder);
        alice.ofc.ok(&["init", dir.to_str().unwrap()]);
        let text = std::fs::read_to_string(dir.join("agent.yaml")).unwrap();
        assert!(
            text.lines()
                .any(|l| l == format!("package: alice/{folder}")),
            "{text}"
        );
        assert!(!text.contains("# package:"), "{text}");
        std::fs::write(
            dir.join("agent.yaml"),
            text.replace(
                "Say what to send me in one line",
                &format!("Finds {word} rows"),
            ),
        )
        .unwrap();
        alice.ofc.ok(&["publish", dir.to_str().unwrap()]);
        let found = alice.ofc.json(&["search", word]);
        let names: Vec<&str> = found["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, [format!("alice/{folder}")], "{found}");
        let pulled = alice.ofc.json(&["pull", &format!("alice/{folder}")]);
        assert_eq!(pulled["pulled"][0]["version"], "0.1.0", "{pulled}");
    }
    // `--no-wait` is there for scripts that do not need it.
    let dir = work.path().join("no-wait");
    alice.ofc.ok(&["init", dir.to_str().unwrap()]);
    let v = alice
        .ofc
        .json(&["publish", "--no-wait", dir.to_str().unwrap()]);
    assert!(v["searchable"].is_null(), "{v}");

    // The hub's log at its default level holds the hub's own lines, not the search
    // library's commits and merges.
    let log = hub.log();
    assert!(log.contains("listening"), "{log}");
    assert!(
        !log.contains("tantivy"),
        "library chatter in the hub's log:\n{log}"
    );
}

/// `ofc init` without a login leaves `package:` for the user, and says why.
#[test]
fn init_without_a_login_says_package_is_left_to_fill_in() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let ofc = crate::common::Ofc::new(home.path(), "http://127.0.0.1:9");
    let dir = work.path().join("lonely");
    let r = ofc.run(&["init", dir.to_str().unwrap()]);
    r.assert_code(0);
    assert!(r.stderr.contains("not logged in"), "{}", r.stderr);
    let text = std::fs::read_to_string(dir.join("agent.yaml")).unwrap();
    assert!(text.contains("# package: your-publisher/lonely"), "{text}");
}
