//! Benchmark (not a test): N `ofc-hub serve` replicas (the release binary next to this example)
//! on one fresh PostgreSQL database and one distribution-registry prefix, behind haproxy with
//! `deploy/haproxy.cfg` unchanged (BENCHMARKS.md, "Several replicas through haproxy").
//!
//!   cargo build --release -p hub-server --bin ofc-hub
//!   cargo run --release -p hub-server --example bench_replicas -- REPLICAS [PUBLISHES] [SEARCHES] [CLIENTS] [FRESHNESS]
//!
//! REPLICAS is 1 to 3 (the config names three servers; with fewer, several names share one
//! address). Measures publishes/s and searches/s through haproxy (CLIENTS concurrent clients),
//! then search freshness across replicas: FRESHNESS publishes to replica 1 directly, each timed
//! from its acknowledgement until replica 2's search finds it (polled every 5 ms). Prints the
//! CPU time of the replicas, PostgreSQL, haproxy and this load generator for each phase.
//! Bounded: each phase stops after its count or 120 s; a publish not found within 10 s counts
//! as not found. `OFC_BENCH_BLOBS=dir` puts the blobs in one shared directory instead of the
//! distribution registry.

use std::future::Future;
use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use index_schema::envelope::SecretKey;
use ofc_test_kit::{Replicas, publish_body, remote_manifest};
use serde_json::Value;

const PHASE_BOUND: Duration = Duration::from_secs(120);
const FOUND_BOUND: Duration = Duration::from_secs(10);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `scripts/peers/NAME`; its stdout.
fn peer(name: &str) -> anyhow::Result<String> {
    let out = Command::new(repo().join("scripts/peers").join(name))
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("run scripts/peers/{name}"))?;
    if !out.status.success() {
        bail!("scripts/peers/{name} failed ({})", out.status);
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// haproxy with `deploy/haproxy.cfg`; killed on drop.
struct Balancer {
    child: Child,
    socket: PathBuf,
    url: String,
}

impl Balancer {
    fn start(bin: &str, dir: &Path, replicas: &[String]) -> anyhow::Result<Balancer> {
        let port = free_port();
        let socket = dir.join("lb.sock");
        let mut cmd = Command::new(bin);
        cmd.args(["-db", "-f"])
            .arg(repo().join("deploy/haproxy.cfg"))
            .env("OFC_LB_LISTEN", format!("127.0.0.1:{port}"))
            .env("OFC_LB_ADMIN_SOCKET", &socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for i in 0..3 {
            cmd.env(format!("OFC_HUB_{}", i + 1), &replicas[i % replicas.len()]);
        }
        let lb = Balancer {
            child: cmd.spawn().context("start haproxy")?,
            socket,
            url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while lb.up() < 3 {
            if Instant::now() > deadline {
                bail!("haproxy never saw its three servers up");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(lb)
    }

    /// How many servers haproxy's `show stat` reports UP.
    fn up(&self) -> usize {
        let Ok(mut s) = UnixStream::connect(&self.socket) else {
            return 0;
        };
        let mut out = String::new();
        if s.write_all(b"show stat\n").is_err() || s.read_to_string(&mut out).is_err() {
            return 0;
        }
        out.lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f.len() > 17 && f[0] == "replicas" && f[1].starts_with("hub"))
            .filter(|f| f[17] == "UP")
            .count()
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// utime + stime of a process, in clock ticks (0 when it is gone).
fn ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
}

/// The processes whose name is `postgres` (the server of scripts/peers/postgres and its
/// backends — also those serving anything else on this machine).
fn postgres_ticks() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "postgres")
        })
        .map(ticks)
        .sum()
}

/// Busy ticks of the whole machine (all CPUs, idle and iowait excluded).
fn machine_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    f.iter().take(8).sum::<u64>() - f.get(3).unwrap_or(&0) - f.get(4).unwrap_or(&0)
}

/// CPU ticks so far of: the replicas, PostgreSQL, haproxy, this process, the machine.
#[derive(Clone, Copy)]
struct Cpu([u64; 5]);

impl Cpu {
    fn now(hubs: &[u32], haproxy: u32) -> Cpu {
        Cpu([
            hubs.iter().map(|p| ticks(*p)).sum(),
            postgres_ticks(),
            ticks(haproxy),
            ticks(std::process::id()),
            machine_ticks(),
        ])
    }

    fn since(&self, before: Cpu, wall: Duration) -> String {
        let hz = clock_ticks();
        let names = [
            "replicas",
            "postgres",
            "haproxy",
            "load generator",
            "machine",
        ];
        let parts: Vec<String> = names
            .iter()
            .zip(self.0.iter().zip(before.0))
            .map(|(n, (a, b))| {
                format!(
                    "{n} {:.0}%",
                    100.0 * (a - b) as f64 / hz / wall.as_secs_f64()
                )
            })
            .collect();
        format!("CPU (100% = one core): {}", parts.join(", "))
    }
}

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
        .unwrap_or(100.0)
}

/// `(p50, p99)` in milliseconds.
fn percentiles(lat: &mut [Duration]) -> (f64, f64) {
    if lat.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    lat.sort();
    let at = |q: f64| lat[((lat.len() as f64 * q).ceil() as usize).clamp(1, lat.len()) - 1];
    (at(0.50).as_secs_f64() * 1e3, at(0.99).as_secs_f64() * 1e3)
}

/// Runs `op(i)` for i in 0..count over `clients` concurrent tasks; the successes' latencies,
/// the failures, and the time taken.
/// What a phase of load gave: the latencies of the operations that succeeded, the failures
/// (the first few of them described) and how long it took.
struct Loaded {
    lat: Vec<Duration>,
    failed: usize,
    why: Vec<String>,
    took: Duration,
}

async fn load<F, Fut>(count: usize, clients: usize, op: F) -> Loaded
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let why = Arc::new(std::sync::Mutex::new(Vec::new()));
    let start = Instant::now();
    let deadline = start + PHASE_BOUND;
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (op, next, failed, why) = (op.clone(), next.clone(), failed.clone(), why.clone());
            tokio::spawn(async move {
                let mut lat = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= count || Instant::now() > deadline {
                        return lat;
                    }
                    let t = Instant::now();
                    match op(i).await {
                        Ok(()) => lat.push(t.elapsed()),
                        Err(e) => {
                            failed.fetch_add(1, Ordering::SeqCst);
                            let mut why = why.lock().unwrap_or_else(|p| p.into_inner());
                            if why.len() < 5 {
                                why.push(format!("after {:?}: {e}", t.elapsed()));
                            }
                        }
                    }
                }
            })
        })
        .collect();
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.expect("a load task"));
    }
    let why = why.lock().unwrap_or_else(|p| p.into_inner()).clone();
    Loaded {
        lat,
        failed: failed.load(Ordering::SeqCst),
        why,
        took: start.elapsed(),
    }
}

/// An answer with `want`, or why not.
async fn expect(r: reqwest::Result<reqwest::Response>, want: u16) -> Result<(), String> {
    match r {
        Ok(r) if r.status() == want => Ok(()),
        Ok(r) => {
            let status = r.status();
            let body = r.text().await.unwrap_or_default();
            Err(format!(
                "{status}: {}",
                body.chars().take(200).collect::<String>()
            ))
        }
        Err(e) => Err(e.to_string()),
    }
}

fn usize_arg(args: &[String], i: usize, name: &str, default: usize) -> anyhow::Result<usize> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => s
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .with_context(|| format!("{name} must be a positive integer, not {s:?}")),
    }
}

#[allow(clippy::print_stdout)]
fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() || args.len() > 5 {
        bail!("usage: bench_replicas REPLICAS(1-3) [PUBLISHES] [SEARCHES] [CLIENTS] [FRESHNESS]");
    }
    let n = usize_arg(&args, 0, "REPLICAS", 1)?;
    if n > 3 {
        bail!("REPLICAS must be 1 to 3 (deploy/haproxy.cfg names three servers), not {n}");
    }
    let publishes = usize_arg(&args, 1, "PUBLISHES", 2000)?;
    let searches = usize_arg(&args, 2, "SEARCHES", 5000)?;
    let clients = usize_arg(&args, 3, "CLIENTS", 8)?;
    let fresh = usize_arg(&args, 4, "FRESHNESS", 200)?;

    let haproxy = peer("haproxy")?
        .strip_prefix("haproxy=")
        .context("scripts/peers/haproxy printed no haproxy=PATH")?
        .to_string();
    let registry = format!(
        "http://{}/ofc-bench-{}",
        peer("registry")?,
        uuid::Uuid::new_v4().simple()
    );
    let tmp = tempfile::tempdir()?;
    // One fresh database, one log key, then the replicas; their blobs in the registry, or
    // (OFC_BENCH_BLOBS=dir, to tell the registry's part of a publish from the rest) in one
    // shared directory.
    let mut replicas = Replicas::new("");
    let blobs = std::env::var("OFC_BENCH_BLOBS").unwrap_or_else(|_| "registry".into());
    match blobs.as_str() {
        "registry" => replicas.set_env("OFC_HUB__UPSTREAM_REGISTRY", &registry),
        "dir" => {
            let dir = tmp.path().join("blobs");
            std::fs::create_dir_all(&dir)?;
            replicas.set_env(
                "OFC_HUB__BLOB_DIR",
                dir.to_str().context("a UTF-8 temp dir")?,
            );
        }
        other => bail!("OFC_BENCH_BLOBS must be `registry` or `dir`, not {other:?}"),
    }
    replicas.set_env("OFC_HUB__TRUSTED_PROXIES", "127.0.0.1");
    replicas.log_key();
    for _ in 0..n {
        replicas.add();
    }
    let addrs: Vec<String> = replicas
        .hubs
        .iter()
        .map(|h| h.url.trim_start_matches("http://").to_string())
        .collect();
    let lb = Balancer::start(&haproxy, tmp.path(), &addrs)?;
    let user = replicas[0].new_user("bench");
    let pids: Vec<u32> = replicas.hubs.iter().filter_map(|h| h.pid()).collect();
    let cpu = || Cpu::now(&pids, lb.child.id());
    println!(
        "{n} replica(s) on PostgreSQL, blobs in the {blobs}, haproxy {}, {clients} clients, load average {}",
        lb.url,
        std::fs::read_to_string("/proc/loadavg")?.trim()
    );

    let rt = tokio::runtime::Runtime::new()?;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let key: Arc<SecretKey> = Arc::new(user.key.clone());
    let (token, name) = (user.token.clone(), user.name.clone());

    // Publishes through haproxy: versions of 50 agents.
    let put = {
        let (client, key, token, name) = (client.clone(), key.clone(), token.clone(), name);
        move |url: String, agent: String, version: String| {
            let (client, key, token) = (client.clone(), key.clone(), token.clone());
            let agent = format!("{name}/{agent}");
            async move {
                let body = publish_body(&remote_manifest(&agent, &version), &key);
                let r = client
                    .put(format!("{url}/api/v1/agents/{agent}/versions/{version}"))
                    .bearer_auth(&*token)
                    .json(&body)
                    .send()
                    .await;
                expect(r, 201).await
            }
        }
    };
    let before = cpu();
    let Loaded {
        mut lat,
        failed,
        why,
        took,
    } = rt.block_on(load(publishes, clients, {
        let (put, url) = (put.clone(), lb.url.clone());
        move |i| put(url.clone(), format!("agent-{}", i % 50), format!("1.0.{i}"))
    }));
    let (p50, p99) = percentiles(&mut lat);
    println!(
        "publish: {} ok, {failed} failed in {:.2} s = {:.0} publishes/s; latency p50 {p50:.1} ms, p99 {p99:.1} ms",
        lat.len(),
        took.as_secs_f64(),
        lat.len() as f64 / took.as_secs_f64()
    );
    println!("  {}", cpu().since(before, took));
    for w in why {
        println!("  failed {w}");
    }

    // Searches through haproxy.
    let before = cpu();
    let Loaded {
        mut lat,
        failed,
        why,
        took,
    } = rt.block_on(load(searches, clients, {
        let (client, url) = (client.clone(), lb.url.clone());
        move |i| {
            let q = ["scripts", "code assistant", "agent-7", "send anything"][i % 4];
            let req = client.get(format!("{url}/api/v1/search?q={q}&limit=20"));
            async move { expect(req.send().await, 200).await }
        }
    }));
    let (p50, p99) = percentiles(&mut lat);
    println!(
        "search: {} ok, {failed} failed in {:.2} s = {:.0} searches/s; latency p50 {p50:.1} ms, p99 {p99:.1} ms",
        lat.len(),
        took.as_secs_f64(),
        lat.len() as f64 / took.as_secs_f64()
    );
    println!("  {}", cpu().since(before, took));
    for w in why {
        println!("  failed {w}");
    }

    // Freshness: publish on replica 1, find by search on replica 2 (the same one with one).
    let (a, b) = (replicas[0].url.clone(), replicas[n.min(2) - 1].url.clone());
    let (mut lat, mut lost) = (Vec::new(), 0usize);
    let start = Instant::now();
    for i in 0..fresh {
        if start.elapsed() > PHASE_BOUND {
            break;
        }
        let agent = format!("fresh{i}");
        if let Err(e) = rt.block_on(put(a.clone(), agent.clone(), "1.0.0".into())) {
            bail!("publishing {agent} on replica 1 failed: {e}");
        }
        let acked = Instant::now();
        let full = format!("{}/{agent}", user.name);
        let found = rt.block_on(async {
            while acked.elapsed() < FOUND_BOUND {
                let r = client
                    .get(format!("{b}/api/v1/search?q={agent}&limit=10"))
                    .send()
                    .await;
                if let Ok(r) = r
                    && let Ok(v) = r.json::<Value>().await
                    && v["hits"]
                        .as_array()
                        .is_some_and(|h| h.iter().any(|h| h["name"] == full.as_str()))
                {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            false
        });
        if found {
            lat.push(acked.elapsed());
        } else {
            lost += 1;
        }
    }
    let (p50, p99) = percentiles(&mut lat);
    println!(
        "freshness (publish acknowledged by replica 1 → found by search on replica {}): {} found, {lost} not within {} s; p50 {p50:.1} ms, p99 {p99:.1} ms, max {:.1} ms",
        n.min(2),
        lat.len(),
        FOUND_BOUND.as_secs(),
        lat.last().map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
    );
    drop(lb);
    drop(replicas);
    Ok(())
}
