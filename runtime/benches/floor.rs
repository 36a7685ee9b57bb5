//! Floor benchmarks (not tests): `cargo bench -p runtime --bench floor`.
//!
//! (a) turn overhead with 50 trivial agents, in-process and over loopback HTTP;
//! (b) one should-wake round with 50 loopback HTTP agents that each take 100 ms;
//! (c) messages/s through a floor of trivial agents, in-process and over loopback HTTP
//!     (compare with `bench/autogen_roundrobin.py`).
//!
//! Every floor writes its transcript (to a temporary directory), as `ofc floor serve` does.

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use index_schema::wire::{
    AgentInfo, RespondRequest, RespondResponse, ShouldWakeRequest, ShouldWakeResponse, WakeReason,
};
use runtime::agent::{Agent, AgentError, AgentServer, Deltas, HttpAgent, serve};
use runtime::floor::{Floor, FloorAgent, FloorSettings};
use runtime::{Handle, Limits};

/// An agent that does nothing worth measuring.
#[derive(Debug)]
struct Trivial {
    wake: bool,
    should_wake_delay: Duration,
    /// Whom to ask next in a chain (`@next? go`), unless the chain is coming back.
    next: Option<String>,
}

#[async_trait]
impl Agent for Trivial {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        Ok(AgentInfo::default())
    }

    async fn should_wake(&self, _: &ShouldWakeRequest) -> Result<ShouldWakeResponse, AgentError> {
        if !self.should_wake_delay.is_zero() {
            tokio::time::sleep(self.should_wake_delay).await;
        }
        Ok(if self.wake {
            ShouldWakeResponse::wake("me")
        } else {
            ShouldWakeResponse::sleep()
        })
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        _: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        Ok(match &self.next {
            Some(next) if request.wake_reason != Some(WakeReason::DelegationReturned) => {
                RespondResponse::reply(format!("@{next}? go"))
            }
            _ => RespondResponse::reply("ok"),
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Transport {
    InProcess,
    Http,
}

struct Agents {
    members: Vec<FloorAgent>,
    _servers: Vec<AgentServer>,
}

async fn agents(transport: Transport, specs: Vec<(String, Trivial)>) -> Agents {
    let client = HttpAgent::default_client();
    let mut members = Vec::new();
    let mut servers = Vec::new();
    for (name, agent) in specs {
        let agent: Arc<dyn Agent> = Arc::new(agent);
        let agent: Arc<dyn Agent> = match transport {
            Transport::InProcess => agent,
            Transport::Http => {
                let server = serve(agent, "127.0.0.1:0").await.expect("bind");
                let http = HttpAgent::new(server.url(), client.clone());
                servers.push(server);
                Arc::new(http)
            }
        };
        members.push(FloorAgent::new(Handle::new(&name).expect("handle"), agent));
    }
    Agents {
        members,
        _servers: servers,
    }
}

fn settings(dir: &std::path::Path) -> FloorSettings {
    FloorSettings {
        transcript_dir: Some(dir.to_owned()),
        ..FloorSettings::default()
    }
}

struct Stats {
    p50: Duration,
    p99: Duration,
    max: Duration,
    mean: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at =
        |q: f64| samples[((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1];
    let total: Duration = samples.iter().sum();
    Stats {
        p50: at(0.50),
        p99: at(0.99),
        max: *samples.last().expect("samples"),
        mean: total / samples.len() as u32,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn row(name: &str, n: usize, s: &Stats) {
    println!(
        "| {name} | {n} | {} | {} | {} | {} |",
        ms(s.p50),
        ms(s.p99),
        ms(s.max),
        ms(s.mean)
    );
}

/// (a): the time of a whole turn, from posting to the turn's end, with agents that answer at
/// once: that is time spent in ofc (and, over HTTP, in the loopback HTTP stack).
async fn overhead(transport: Transport, content: &str, count: usize) -> Stats {
    let dir = tempfile::tempdir().expect("tempdir");
    let specs = (0..50)
        .map(|i| {
            (
                format!("a{i}"),
                Trivial {
                    wake: i == 0,
                    should_wake_delay: Duration::ZERO,
                    next: None,
                },
            )
        })
        .collect();
    let agents = agents(transport, specs).await;
    let floor = Floor::open("bench-a", None, agents.members, settings(dir.path())).expect("floor");
    for _ in 0..count / 10 {
        floor.post_and_wait(content).await.expect("warm-up turn");
    }
    let mut samples = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        floor.post_and_wait(content).await.expect("turn");
        samples.push(started.elapsed());
    }
    floor.close().await.expect("close");
    stats(samples)
}

/// (b): one round with 50 agents that take 100 ms each and say no.
async fn slow_round(count: usize) -> Stats {
    let dir = tempfile::tempdir().expect("tempdir");
    let specs = (0..50)
        .map(|i| {
            (
                format!("s{i}"),
                Trivial {
                    wake: false,
                    should_wake_delay: Duration::from_millis(100),
                    next: None,
                },
            )
        })
        .collect();
    let agents = agents(Transport::Http, specs).await;
    let settings = FloorSettings {
        should_wake_deadline: Duration::from_secs(1),
        ..settings(dir.path())
    };
    let floor = Floor::open("bench-b", None, agents.members, settings).expect("floor");
    floor.post_and_wait("anyone?").await.expect("warm-up");
    let mut samples = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        let summary = floor.post_and_wait("anyone?").await.expect("turn");
        assert_eq!(summary.hops, 0, "nobody should wake");
        samples.push(started.elapsed());
    }
    floor.close().await.expect("close");
    stats(samples)
}

/// (c): a chain of `n` agents (`a0` asks `a1`, … the last answers, the answers come back):
/// `2n` messages per user message (the user's and `2n - 1` agents'), deterministic order like
/// a round-robin group chat. Returns messages per second.
async fn throughput(transport: Transport, n: usize, user_messages: usize) -> (usize, Duration) {
    let dir = tempfile::tempdir().expect("tempdir");
    let specs = (0..n)
        .map(|i| {
            (
                format!("a{i}"),
                Trivial {
                    wake: false,
                    should_wake_delay: Duration::ZERO,
                    next: (i + 1 < n).then(|| format!("a{}", i + 1)),
                },
            )
        })
        .collect();
    let agents = agents(transport, specs).await;
    let settings = FloorSettings {
        limits: Limits {
            max_hops: 1000,
            max_pair_exchanges: 1000,
            ..Limits::default()
        },
        ..settings(dir.path())
    };
    let floor = Floor::open("bench-c", None, agents.members, settings).expect("floor");
    floor.post_and_wait("@a0? go").await.expect("warm-up");
    let started = Instant::now();
    let mut messages = 0;
    for _ in 0..user_messages {
        let summary = floor.post_and_wait("@a0? go").await.expect("turn");
        messages += summary.messages.len();
    }
    let elapsed = started.elapsed();
    floor.close().await.expect("close");
    (messages, elapsed)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        println!("## (a) turn overhead, 50 trivial agents\n");
        println!("| turn | messages | p50 | p99 | max | mean |");
        println!("|---|---|---|---|---|---|");
        row(
            "in-process, `@a0? hi` (1 respond call)",
            2000,
            &overhead(Transport::InProcess, "@a0? hi", 2000).await,
        );
        row(
            "in-process, open floor (2 polls of 50 + 1 respond)",
            2000,
            &overhead(Transport::InProcess, "anyone?", 2000).await,
        );
        row(
            "loopback HTTP, `@a0? hi` (1 respond call)",
            1000,
            &overhead(Transport::Http, "@a0? hi", 1000).await,
        );
        row(
            "loopback HTTP, open floor (2 polls of 50 + 1 respond)",
            300,
            &overhead(Transport::Http, "anyone?", 300).await,
        );

        println!("\n## (b) one should-wake round, 50 loopback HTTP agents taking 100 ms each\n");
        println!("| round | rounds | p50 | p99 | max | mean |");
        println!("|---|---|---|---|---|---|");
        row("50 × 100 ms, deadline 1 s", 30, &slow_round(30).await);

        println!("\n## (c) messages/s, chain of 4 trivial agents (8 messages per user message)\n");
        println!("| transport | messages | seconds | messages/s |");
        println!("|---|---|---|---|");
        for (name, transport, users) in [
            ("in-process", Transport::InProcess, 5000),
            ("loopback HTTP", Transport::Http, 1000),
        ] {
            let (messages, elapsed) = throughput(transport, 4, users).await;
            println!(
                "| {name} | {messages} | {:.3} | {:.0} |",
                elapsed.as_secs_f64(),
                messages as f64 / elapsed.as_secs_f64()
            );
        }
    });
}
