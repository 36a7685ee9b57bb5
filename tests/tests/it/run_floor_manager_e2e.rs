//! `ofc run`'s built-in `@floor-manager`, end to end: the real `ofc-hub` with the example
//! agents published, and the real `ofc` asked who can do something.

use serde_json::Value;

use crate::common::Ofc;
use crate::common::run::blueprint;
use crate::run_e2e::{ModelServer, pieces};

/// `@floor-manager`, built into every floor: asked who can do something, it searches the hub.
#[test]
fn the_floor_manager_finds_agents_on_the_hub_by_what_they_can_do() {
    use crate::common::Publishers as _;
    let hub = ofc_test_kit::TestHub::process(ofc_test_kit::ProcessOptions::default());
    let alice = hub.publisher("alice", &["ofc-examples"]);
    alice.publish_examples();
    hub.wait_for_search("q=data+analysis", |h| h.len() >= 2);
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model = ModelServer::start(&[("m", vec![pieces(&["hi"])])]);
    blueprint(
        proj.path(),
        &format!(
            "defaults:\n  endpoint: {}\n  model: m\nagents:\n  - {{id: \"@analyst\"}}\n",
            model.endpoint
        ),
    );
    let ofc = Ofc::new(home.path(), &hub.url);
    let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args([
        "--json",
        "run",
        "@floor-manager? who can do data analysis?",
    ]));
    r.assert_code(0);
    let answer = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "message" && e["message"]["from"] == "@floor-manager")
        .map(|e| e["message"]["content"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(answer.starts_with("@user these agents on"), "{answer}");
    assert!(
        answer.contains("\"data analysis\"")
            && answer.contains("- `ofc-examples/data-analyst@")
            && answer.contains("add it under `agents:`"),
        "{answer}"
    );
    // Nothing on the hub matches: said so.
    let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args([
        "--json",
        "run",
        "@floor-manager? who can zzqxv-no-such-skill?",
    ]));
    r.assert_code(0);
    assert!(
        r.stdout.contains("no agent on") && r.stdout.contains("zzqxv-no-such-skill"),
        "{}",
        r.stdout
    );
}
