//! Sandbox workstation start time and `bash` round trips (not a test):
//! `cargo bench -p runtime --bench sandbox [-- STARTS CALLS]` (defaults 10 and 200). Needs
//! podman and the static busybox of `scripts/install-test-deps` (`scripts/peers/podman`).
//!
//! - `build (cold)`: the first start of a FROM-scratch busybox image, built from its
//!   Dockerfile (a fresh context, so a new content hash: a real build);
//! - `start (warm)`: a start whose image is already built (hash the context, `image exists`,
//!   `run -d`) — what every `ofc run` of an unchanged blueprint pays per sandbox;
//! - `stop`: removing the container;
//! - `bash round trip`: `Toolbox::call("bash", {"command": "echo ok"})` — `exec` of the
//!   wrapper shell, its pid line, the command, the output back.

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use index_schema::blueprint::Blueprint;
use runtime::furniture::{Furniture, FurnitureSettings};
use runtime::llm::Toolbox;
use serde_json::json;

fn percentiles(mut v: Vec<Duration>) -> String {
    v.sort();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3;
    format!(
        "p50 {:.1} ms  p90 {:.1} ms  p99 {:.1} ms  max {:.1} ms  (n={})",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0),
        v.len()
    )
}

#[tokio::main]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let starts = args.first().copied().unwrap_or(10).max(1);
    let calls = args.get(1).copied().unwrap_or(200).max(1);
    assert!(
        std::path::Path::new("/bin/busybox").is_file(),
        "busybox-static is missing: run scripts/install-test-deps (or scripts/peers/podman)"
    );
    let dir = tempfile::tempdir().unwrap();
    let ctx = dir.path().join("sandbox");
    std::fs::create_dir_all(&ctx).unwrap();
    std::fs::copy("/bin/busybox", ctx.join("busybox")).unwrap();
    // A unique line: a new content hash, so the first start really builds.
    std::fs::write(
        ctx.join("Dockerfile"),
        format!(
            "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\nENV OFC_BENCH={}\nCMD [\"/bin/busybox\", \"sh\"]\n",
            std::process::id()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let ws = Blueprint::from_yaml(
        "agents: []\nworkstations:\n  - {type: sandbox, name: bench, dockerfile: ./sandbox, mount: ./ws:/workspace}\n",
    )
    .unwrap()
    .workstations[0]
        .clone();
    let settings = FurnitureSettings {
        working_dir: Some(dir.path().to_owned()),
        ..FurnitureSettings::default()
    };

    let t = Instant::now();
    let first = Furniture::workstation(&ws, &settings)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let cold = t.elapsed();
    let image = first.as_sandbox().unwrap().image().to_owned();
    first.shutdown().await;
    println!("image {image}");
    println!("build (cold)      {:.1} ms", cold.as_secs_f64() * 1e3);

    let mut warm = Vec::new();
    let mut stops = Vec::new();
    for _ in 0..starts {
        let t = Instant::now();
        let piece = Furniture::workstation(&ws, &settings).await.unwrap();
        warm.push(t.elapsed());
        let t = Instant::now();
        piece.shutdown().await;
        stops.push(t.elapsed());
    }
    println!("start (warm)      {}", percentiles(warm));
    println!("stop              {}", percentiles(stops));

    let piece = Furniture::workstation(&ws, &settings).await.unwrap();
    let args = json!({"command": "echo ok"}).as_object().unwrap().clone();
    let mut trips = Vec::new();
    for _ in 0..calls {
        let t = Instant::now();
        let out = piece.call("bash", args.clone()).await.unwrap();
        trips.push(t.elapsed());
        assert_eq!(out, json!("ok"));
    }
    println!("bash round trip   {}", percentiles(trips));
    // The toolbox is what an agent's guard calls; listing it costs nothing measurable.
    let _ = piece.as_sandbox().unwrap().tools().await.unwrap();
    piece.shutdown().await;
}
