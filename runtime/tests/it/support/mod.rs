//! Real agent processes for floor tests: `ofc-test-agent` started on loopback ports.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use runtime::agent::{HttpAgent, ProcessAgent, ProcessCommand};
use runtime::floor::{FloorAgent, FloorEvent, FloorSettings};
use runtime::{Activation, Handle};

pub fn handle(name: &str) -> Handle {
    Handle::new(name).unwrap()
}

/// Starts `ofc-test-agent --name NAME ARGS…` and waits until it answers `/ofc/info`.
pub async fn process(name: &str, args: &[&str]) -> Arc<ProcessAgent> {
    let command = ProcessCommand::new(env!("CARGO_BIN_EXE_ofc-test-agent"))
        .args(["--name", name])
        .args(args.iter().copied());
    Arc::new(
        ProcessAgent::spawn(&command, HttpAgent::default_client())
            .await
            .unwrap_or_else(|e| panic!("agent {name} did not start: {e}")),
    )
}

/// A floor agent backed by a process.
pub async fn agent(name: &str, args: &[&str]) -> FloorAgent {
    let process = process(name, args).await;
    FloorAgent {
        handle: handle(name),
        activation: Activation::Mention,
        endpoint: Some(process.endpoint().to_owned()),
        info: Some(process.startup_info().clone()),
        agent: process,
    }
}

/// Settings with short deadlines, so a misbehaving agent costs little test time.
pub fn settings() -> FloorSettings {
    FloorSettings {
        should_wake_deadline: Duration::from_millis(500),
        respond_deadline: Duration::from_secs(5),
        ..FloorSettings::default()
    }
}

/// Receives events until `stop` says so, for at most `limit` events and 20 s.
pub async fn events_until(
    events: &mut tokio::sync::broadcast::Receiver<FloorEvent>,
    limit: usize,
    mut stop: impl FnMut(&FloorEvent) -> bool,
) -> Vec<FloorEvent> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while seen.len() < limit {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("events stopped coming")
            .expect("the event stream broke");
        let last = stop(&event);
        seen.push(event);
        if last {
            break;
        }
    }
    seen
}
