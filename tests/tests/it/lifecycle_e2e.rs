//! Deprecate and unpublish (issue 33) with the real `ofc` against the real `ofc-hub`, on
//! SQLite and PostgreSQL: `ofc deprecate` → the warning (naming the successor) on `ofc pull`
//! and `ofc run`, the marker and filter of `ofc search`, `ofc info`; `ofc unpublish` → the
//! tombstone in `ofc audit` (verified against the signed log), a pull of it refused with 410,
//! its number refused to `ofc publish` again, `--undo` of a deprecation; a locked and cached
//! agent's run warns too (it asks the hub) and, with the hub down, runs with one note; `ofc info`
//! shows the trust signals.

use crate::common::Publishers as _;
use crate::common::run::{blueprint, run_in, tag};
use crate::common::{Ofc, bin};
use ofc_test_kit::{Backend, ProcessOptions, TestHub};

/// A process agent `acme/NAME` at `version`, answering as the run e2e's test agents do.
fn agent_dir(root: &std::path::Path, name: &str, version: &str, args: &str) -> std::path::PathBuf {
    let dir = root.join(format!("{name}-{version}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "id: \"@{name}\"\nname: {name}\npackage: acme/{name}\nversion: {version}\n\
             tagline: A test agent\ndescription: Lifecycle tests ({}).\ncommand: {:?}\nargs: {args}\n",
            tag("lifecycle"),
            bin("ofc-test-agent").display().to_string()
        ),
    )
    .unwrap();
    dir
}

fn deprecate_and_unpublish(backend: Backend) {
    let mut hub = TestHub::process(ProcessOptions::new(backend));
    let acme = hub.publisher("acme", &[]);
    let work = tempfile::tempdir().unwrap();
    let teller = agent_dir(
        work.path(),
        "teller",
        "1.0.0",
        "[\"--name\", \"teller\", \"--behaviour\", \"delegate\", \"--target\", \"helper\", \"--wake\"]",
    );
    let helper = agent_dir(
        work.path(),
        "helper",
        "1.0.0",
        "[\"--name\", \"helper\", \"--activation\", \"mention\"]",
    );
    for d in [&teller, &helper] {
        acme.ofc.ok(&["publish", d.to_str().unwrap()]);
    }

    // A project that runs acme/teller before its deprecation: locked and cached.
    let locked_home = tempfile::tempdir().unwrap();
    let locked_runner = Ofc::new(locked_home.path(), &hub.url);
    let locked_proj = tempfile::tempdir().unwrap();
    blueprint(
        locked_proj.path(),
        "agents:\n  - acme/teller@^1\n  - acme/helper\n",
    );
    let r = run_in(&locked_runner, locked_proj.path(), &["run", "what is new?"]);
    r.assert_code(0);
    assert!(!r.stderr.contains("deprecated"), "{}", r.stderr);

    // Deprecate every version of acme/teller, naming the successor.
    let out = acme.ofc.ok(&[
        "deprecate",
        "acme/teller",
        "--message",
        "replaced by the helper",
        "--use",
        "acme/helper",
    ]);
    assert_eq!(out, "deprecated acme/teller@1.0.0\n");
    // Again: nothing to change, nothing logged.
    let again = acme.ofc.json(&[
        "deprecate",
        "acme/teller",
        "--message",
        "replaced by the helper",
        "--use",
        "acme/helper",
    ]);
    assert_eq!(again["changed"], serde_json::json!([]), "{again}");
    let warning =
        "warning: acme/teller 1.0.0 is deprecated: replaced by the helper; use acme/helper instead";

    // `ofc pull` warns, and pulls.
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = tempfile::tempdir().unwrap();
    let r = run_in(&ofc, proj.path(), &["pull", "acme/teller"]);
    r.assert_code(0);
    assert!(r.stderr.contains(warning), "{}", r.stderr);

    // `ofc run` of a blueprint naming it warns, and runs.
    let run_home = tempfile::tempdir().unwrap();
    let runner = Ofc::new(run_home.path(), &hub.url);
    let run_proj = tempfile::tempdir().unwrap();
    blueprint(
        run_proj.path(),
        "agents:\n  - acme/teller@^1\n  - acme/helper\n",
    );
    let r = run_in(&runner, run_proj.path(), &["run", "what is new?"]);
    r.assert_code(0);
    assert!(r.stderr.contains(warning), "{}", r.stderr);
    assert!(r.stdout.contains("@teller: teller reports"), "{}", r.stdout);

    // The locked, cached project runs it without fetching, and still warns: it asked the hub.
    let r = run_in(
        &locked_runner,
        locked_proj.path(),
        &["run", "--locked", "what is new?"],
    );
    r.assert_code(0);
    assert!(r.stderr.contains(warning), "{}", r.stderr);
    assert!(r.stdout.contains("@teller: teller reports"), "{}", r.stdout);

    // `ofc info` names the successor and shows the trust signals; `ofc search` marks it and
    // filters it.
    let info = ofc.ok(&["info", "acme/teller"]);
    assert!(
        info.contains("use instead") && info.contains("acme/helper"),
        "{info}"
    );
    assert!(info.contains("trust signals:"), "{info}");
    assert!(
        info.contains("less than a day before this version"),
        "{info}"
    );
    assert!(
        info.contains("proven by the hub under its checkpoint"),
        "{info}"
    );
    assert!(
        info.contains("deprecation     replaced by the helper (use acme/helper)"),
        "{info}"
    );
    assert!(info.contains("downloads/week"), "{info}");
    let j = ofc.json(&["info", "acme/teller"]);
    let t = &j["version"]["trust"];
    assert_eq!(t["log"]["verified"], true, "{j}");
    assert_eq!(t["deprecated"]["successor"], "acme/helper", "{j}");
    // Pulled twice (by the pull and the runs above), each from 127.0.0.1 today: counted once,
    // in this week.
    assert_eq!(t["downloads_per_week"][7]["downloads"], 1, "{j}");
    assert_eq!(j["agent"]["trust"]["version"], "1.0.0", "{j}");
    hub.wait_for_search("q=lifecycle", |h| h.iter().any(|h| h["deprecated"] == true));
    let shown = ofc.ok(&["search", "lifecycle"]);
    assert!(shown.contains("[deprecated] A test agent"), "{shown}");
    let hidden = ofc.json(&["search", "lifecycle", "--deprecated", "exclude"]);
    let names: Vec<&str> = hidden["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["acme/helper"], "{hidden}");

    // Undo: pulls no longer warn.
    assert_eq!(
        acme.ofc.ok(&["deprecate", "acme/teller", "--undo"]),
        "undeprecated acme/teller@1.0.0\n"
    );
    let proj2 = tempfile::tempdir().unwrap();
    let r = run_in(&ofc, proj2.path(), &["pull", "acme/teller"]);
    r.assert_code(0);
    assert!(!r.stderr.contains("deprecated"), "{}", r.stderr);

    // Unpublish a fresh version: gone with a tombstone, which `ofc audit` verifies and shows.
    let gone = agent_dir(work.path(), "gone", "1.0.0", "[\"--name\", \"gone\"]");
    acme.ofc.ok(&["publish", gone.to_str().unwrap()]);
    assert_eq!(
        acme.ofc.ok(&["unpublish", "acme/gone@1.0.0"]),
        "unpublished acme/gone@1.0.0\n"
    );
    let audit = ofc.ok(&["audit", "acme/gone"]);
    let lines: Vec<&str> = audit.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("publish acme/gone 1.0.0 sha256:")),
        "{audit}"
    );
    let last = lines.last().unwrap();
    assert!(
        last.contains("remove acme/gone 1.0.0 sha256:")
            && last.ends_with("unpublished (tombstone)"),
        "{audit}"
    );
    let j = ofc.json(&["audit", "acme/helper"]);
    assert!(
        j["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| !e["entry"].as_str().unwrap().contains(" remove ")),
        "a version that was never removed has no tombstone: {j}"
    );

    // Pulled by anyone: 410, naming the reason class; never published again.
    let proj3 = tempfile::tempdir().unwrap();
    let r = run_in(&ofc, proj3.path(), &["pull", "acme/gone@1.0.0"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("unpublished"), "{}", r.stderr);
    let r = acme.ofc.fails(1, &["publish", gone.to_str().unwrap()]);
    assert!(
        r.stderr.contains("never be published again"),
        "{}",
        r.stderr
    );
    // Unpublishing needs an exact version.
    let r = acme.ofc.fails(1, &["unpublish", "acme/helper"]);
    assert!(r.stderr.contains("gives no version"), "{}", r.stderr);

    // The hub gone: the locked, cached project still runs; one line says the check could not
    // be made.
    hub.kill();
    let r = run_in(
        &locked_runner,
        locked_proj.path(),
        &["run", "--locked", "what is new?"],
    );
    r.assert_code(0);
    assert!(r.stdout.contains("@teller: teller reports"), "{}", r.stdout);
    let notes: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("note: could not ask"))
        .collect();
    assert_eq!(notes.len(), 1, "{}", r.stderr);
    assert!(
        notes[0].contains("whether locked agents were deprecated since"),
        "{}",
        r.stderr
    );
}

#[test]
fn deprecate_and_unpublish_on_sqlite() {
    deprecate_and_unpublish(Backend::Sqlite);
}

#[test]
fn deprecate_and_unpublish_on_postgres() {
    deprecate_and_unpublish(Backend::Postgres);
}
