//! `ofc floor replay`: a transcript written by a real floor replays; an edited one does not.

use std::process::Command;
use std::sync::Arc;

use index_schema::wire::{RespondRequest, RespondResponse, WakeReason};
use runtime::Handle;
use runtime::agent::FnAgent;
use runtime::floor::{Floor, FloorAgent, FloorSettings};

fn ofc(args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ofc"))
        .args(args)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[tokio::test]
async fn a_recorded_floor_replays_and_an_edited_one_diverges() {
    let dir = tempfile::tempdir().unwrap();
    let lead = FnAgent::new("lead", |request: RespondRequest| async move {
        Ok(RespondResponse::reply(
            if request.wake_reason == Some(WakeReason::DelegationReturned) {
                "thanks, done"
            } else {
                "@helper? can you check"
            },
        ))
    });
    let helper = FnAgent::new("helper", |_| async {
        Ok(RespondResponse::reply("checked"))
    });
    let floor = Floor::open(
        "recorded",
        None,
        vec![
            FloorAgent::new(Handle::new("lead").unwrap(), Arc::new(lead)),
            FloorAgent::new(Handle::new("helper").unwrap(), Arc::new(helper)),
        ],
        FloorSettings {
            transcript_dir: Some(dir.path().to_owned()),
            ..FloorSettings::default()
        },
    )
    .unwrap();
    let summary = floor.post_and_wait("@lead? please look").await.unwrap();
    assert_eq!(summary.messages.len(), 4);
    floor.post_and_wait("and now?").await.unwrap();
    floor.close().await.unwrap();

    let path = dir.path().join("recorded.jsonl");
    let (ok, stdout) = ofc(&["floor", "replay", path.to_str().unwrap()]);
    assert!(ok, "{stdout}");
    assert!(stdout.contains("ok (2 turns"), "{stdout}");

    // The helper's recorded answer now asks @lead back: the controller refuses the cycle,
    // which the recording does not show.
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replacen(
        "\"content\":\"checked\"",
        "\"content\":\"@lead? really?\"",
        2,
    );
    assert_ne!(edited, text);
    let edited_path = dir.path().join("edited.jsonl");
    std::fs::write(&edited_path, edited).unwrap();
    let (ok, stdout) = ofc(&["floor", "replay", edited_path.to_str().unwrap()]);
    assert!(!ok, "{stdout}");
    assert!(stdout.contains("the replay diverges"), "{stdout}");

    let (ok, _) = ofc(&["floor", "replay", "/nonexistent/transcript.jsonl"]);
    assert!(!ok);
}
