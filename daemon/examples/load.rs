//! Load generator: the daemon's own cost per streamed turn.
//!
//! ```text
//! cargo build --release -p crabtalkd --bins --examples
//! target/release/examples/load [turns-per-conversation]
//! target/release/examples/load tail [turns] [turns-per-conversation]
//! ```
//!
//! It starts an instant scripted LLM and the real `crabtalkd` (release
//! build, next to this example), then measures:
//!
//! 1. streamed turns through the daemon at 1 and at 64 concurrent
//!    conversations (each conversation's history grows turn by turn);
//! 2. the direct LLM latency for the same work: the same number of
//!    concurrent conversations sending requests with the same growing
//!    histories, through the same provider code, without the daemon. The
//!    daemon's overhead at each percentile is the turn latency minus the
//!    direct latency at that percentile. The direct calls run twice: bare
//!    (the default system prompt and the messages), and with the request
//!    the daemon itself sends (its system prompt and the agent's tool
//!    definitions, taken from one turn the model recorded), so that the
//!    second overhead is the daemon's alone;
//! 3. 1,000 streamed turns started at once (errors and timeouts counted);
//! 4. the daemon's RSS when idle and after the load, and what it spent per
//!    turn: CPU time, time it was ready to run but waited for a CPU, and
//!    context switches (all its threads, from `/proc`);
//! 5. start-up time to the first accepted connection with 1,000
//!    conversations on disk.
//!
//! `load tail` measures only one conversation's turns, one at a time, many
//! of them (2,000 by default), in conversations of a bounded length (200
//! turns by default: a new sender then starts, its warm-up turn not
//! counted), so that the tail is not the history's growth. It prints the
//! percentiles of the turns and of the direct calls, and the slowest turns
//! with the time each started, to line up with a trace. With
//! `LOAD_ATTACH_SECS=n` it prints the daemon's pid and waits n seconds
//! before the turns, for `perf` or `strace` to attach.
//!
//! With more than one conversation it also prints how the turns' time
//! grows through a conversation (the history the model is sent grows) and
//! their spread without that growth: each turn against the median of the
//! turns at the same point of their conversations.
//!
//! `LOAD_PACE_US=n` makes the scripted model wait n microseconds before
//! each piece of its reply, as a real model does, instead of sending the
//! whole reply at once.
//!
//! `LOAD_WORKERS=n` runs the load (client and scripted model) on n tokio
//! workers; 0 puts it on one thread, which is what `load tail` does
//! unless told otherwise. The other modes use a worker per core.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crabllm_core::{ChatCompletionRequest, Message, Role};
use crabtalk_proto::Client;
use crabtalk_proto::msg::{StreamMsg, stream_event::Event};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, daemon_binary};
use crabtalkd::config::DaemonConfig;
use crabtalkd::provider::{Environment, ModelRegistry};
use futures::StreamExt;

const REPLY: &str = "Sure — here is a short answer to your question.";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tail = args.first().map(String::as_str) == Some("tail");
    load_runtime(tail).block_on(run(args));
}

/// The load's own runtime: the client and the scripted model run on it.
/// `load tail` drives one conversation at a time, and runs on one thread
/// unless `LOAD_WORKERS` says otherwise: on two cores, a second worker of
/// the load's only competes with the daemon for a CPU (see
/// `docs/src/benchmarks.md`, "The load's own threads"). `LOAD_WORKERS=n`
/// gives it n workers; 0 is one thread.
fn load_runtime(tail: bool) -> tokio::runtime::Runtime {
    let workers = std::env::var("LOAD_WORKERS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok());
    match workers.or(tail.then_some(0)) {
        Some(0) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Some(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build(),
        None => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    }
    .expect("the load's runtime")
}

async fn run(args: Vec<String>) {
    if args.first().map(String::as_str) == Some("tail") {
        let number = |i: usize, default| {
            args.get(i)
                .and_then(|n: &String| n.parse().ok())
                .unwrap_or(default)
        };
        return tail(number(1, 2000), number(2, 200).max(1)).await;
    }
    let turns: usize = args.first().and_then(|n| n.parse().ok()).unwrap_or(200);
    let llm = scripted_model().await;
    let config_text = TestDaemon::config_for(&llm.base_url());

    let mut daemon = TestDaemon::start(daemon_binary(), &config_text).await;
    println!("daemon idle RSS (1 agent): {}", rss(daemon.pid()));
    let shape = daemon_request(&daemon, &llm).await;
    for concurrency in [1, 64] {
        let direct = direct_latencies(&config_text, concurrency, turns, None).await;
        let same = direct_latencies(&config_text, concurrency, turns, Some(&shape)).await;
        let before = Spent::of(daemon.pid());
        let latencies = turn_latencies(&daemon, concurrency, turns).await;
        let spent = Spent::of(daemon.pid()).since(&before);
        println!("\n{concurrency} concurrent conversation(s), {turns} turns each");
        print_percentiles("  direct LLM (no daemon)", &direct);
        print_percentiles("  turn through the daemon", &latencies);
        print_overhead("  daemon overhead", &latencies, &direct);
        spent.print_per_turn(concurrency * (turns + 1));
        print_percentiles("  direct LLM, the daemon's request", &same);
        print_overhead("  daemon overhead over the same request", &latencies, &same);
    }
    let (ok, failed, elapsed) = thousand_at_once(&daemon).await;
    println!(
        "\n1000 streamed turns started at once: {ok} ok, {failed} failed, all done in {elapsed:?}"
    );
    println!("daemon RSS after the load: {}", rss(daemon.pid()));
    daemon.stop().await;

    let startup = startup_with_conversations(&config_text, 1000).await;
    println!("\nstart to first accepted connection, 1000 conversations on disk: {startup:?}");
}

/// The scripted model every mode uses, paced if `LOAD_PACE_US` says so.
async fn scripted_model() -> ScriptedLlm {
    let llm = ScriptedLlm::start().await;
    llm.set_default(Reply::text(REPLY));
    if let Some(micros) = std::env::var("LOAD_PACE_US")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        llm.pace_streams(Duration::from_micros(micros));
    }
    llm
}

/// The request the daemon sends the model, to send the same directly: one
/// turn of its own conversation, recorded by the model, keeps its system
/// prompt and tool definitions and drops the messages after them. The
/// model stops recording request bodies from then on.
async fn daemon_request(daemon: &TestDaemon, llm: &ScriptedLlm) -> ChatCompletionRequest {
    let client = daemon.client().await;
    one_turn(&client, "shape")
        .await
        .expect("the turn that shows the request");
    let body = llm
        .requests()
        .pop()
        .expect("the daemon's request to the model");
    llm.stop_recording();
    let mut request: ChatCompletionRequest =
        serde_json::from_value(body).expect("the daemon's request parses");
    let first_user = request
        .messages
        .iter()
        .position(|message| matches!(message.role, Role::User))
        .unwrap_or(request.messages.len());
    request.messages.truncate(first_user);
    request
}

/// One conversation at a time: `turns` turns in conversations of `per`
/// turns each, through the daemon and directly.
async fn tail(turns: usize, per: usize) {
    let llm = scripted_model().await;
    let config_text = TestDaemon::config_for(&llm.base_url());
    let mut daemon = TestDaemon::start(daemon_binary(), &config_text).await;
    let up = Instant::now();
    let conversations = turns.div_ceil(per);
    let shape = daemon_request(&daemon, &llm).await;

    let mut direct = Vec::with_capacity(turns);
    let mut same = Vec::with_capacity(turns);
    for _ in 0..conversations {
        direct.extend(direct_latencies(&config_text, 1, per, None).await);
        same.extend(direct_latencies(&config_text, 1, per, Some(&shape)).await);
    }
    if let Some(secs) = std::env::var("LOAD_ATTACH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        println!("daemon pid {}; the turns start in {secs} s", daemon.pid());
        tokio::time::sleep(Duration::from_secs(secs)).await;
    }
    let client = daemon.client().await;
    let before = Spent::of(daemon.pid());
    let started = Instant::now();
    let after_start = started - up;
    let mut timed = Vec::with_capacity(turns);
    for conversation in 0..conversations {
        let sender = format!("tail-{conversation}");
        let warm_up = Instant::now();
        one_turn(&client, &sender).await.expect("warm-up turn");
        if conversation == 0 {
            println!(
                "the first turn (a new conversation): {:?}",
                warm_up.elapsed()
            );
        }
        for _ in 0..per {
            let at = started.elapsed();
            one_turn(&client, &sender).await.expect("a turn");
            timed.push((at, started.elapsed() - at));
        }
    }
    let phase = started.elapsed();
    let spent = Spent::of(daemon.pid()).since(&before);
    daemon.stop().await;

    let latencies: Vec<Duration> = timed.iter().map(|(_, latency)| *latency).collect();
    println!(
        "{} turns, one at a time, in {conversations} conversation(s) of {per}, in {phase:?}",
        latencies.len()
    );
    print_percentiles("  direct LLM (no daemon)", &direct);
    print_percentiles("  turn through the daemon", &latencies);
    print_overhead("  daemon overhead", &latencies, &direct);
    spent.print_per_turn(turns + conversations);
    print_percentiles("  direct LLM, the daemon's request", &same);
    print_overhead("  daemon overhead over the same request", &latencies, &same);
    let ratio = |samples: &[Duration]| {
        let mut sorted = samples.to_vec();
        sorted.sort();
        percentile(&sorted, 0.99).as_secs_f64() / percentile(&sorted, 0.5).as_secs_f64()
    };
    println!(
        "  p99 / p50: direct {:.2}, through the daemon {:.2}, direct with the daemon's request {:.2}",
        ratio(&direct),
        ratio(&latencies),
        ratio(&same)
    );
    if conversations > 1 {
        let turns: Vec<Duration> = latencies.clone();
        print_growth(&turns, &same, per);
    }
    let mut slowest = timed.clone();
    slowest.sort_by_key(|(_, latency)| std::cmp::Reverse(*latency));
    println!("  slowest turns (started at, after the daemon answered {after_start:.1?}; took):");
    for (at, latency) in slowest.iter().take(10) {
        println!("    {at:>12.3?}  {latency:?}");
    }
}

/// What the daemon does without the daemon: `concurrency` conversations,
/// each sending `turns` streamed requests whose history grows by a user
/// message and a reply every time, through the daemon's own provider code.
/// With `shape`, each request is that one (the daemon's system prompt and
/// tools) with the conversation's messages after its own.
async fn direct_latencies(
    config_text: &str,
    concurrency: usize,
    turns: usize,
    shape: Option<&ChatCompletionRequest>,
) -> Vec<Duration> {
    let config: DaemonConfig = toml::from_str(config_text).expect("the load config");
    let registry = Arc::new(ModelRegistry::new(&config, &Environment::default()));
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let registry = registry.clone();
            let shape = shape.cloned();
            tokio::spawn(async move {
                let mut messages = match &shape {
                    Some(shape) => shape.messages.clone(),
                    None => vec![Message::system(crabtalkd::config::agent::DEFAULT_PROMPT)],
                };
                let mut latencies = Vec::with_capacity(turns);
                for turn in 0..=turns {
                    messages.push(Message::user("hello there"));
                    let mut request = match &shape {
                        Some(shape) => ChatCompletionRequest {
                            messages: messages.clone(),
                            ..shape.clone()
                        },
                        None => ChatCompletionRequest {
                            model: "scripted".into(),
                            messages: messages.clone(),
                            ..Default::default()
                        },
                    };
                    let started = Instant::now();
                    let (mut stream, _) = registry
                        .stream(&mut request)
                        .await
                        .expect("a direct stream");
                    let mut reply = String::new();
                    while let Some(chunk) = stream.next().await {
                        if let Some(text) = chunk.expect("a chunk").content() {
                            reply.push_str(text);
                        }
                    }
                    // Turn 0 warms up, as in the daemon run.
                    if turn > 0 {
                        latencies.push(started.elapsed());
                    }
                    messages.push(Message::assistant(reply));
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("a direct task"));
    }
    all
}

/// `turns` sequential turns in each of `concurrency` conversations.
async fn turn_latencies(daemon: &TestDaemon, concurrency: usize, turns: usize) -> Vec<Duration> {
    let client = Arc::new(daemon.client().await);
    let tasks: Vec<_> = (0..concurrency)
        .map(|task| {
            let client = client.clone();
            tokio::spawn(async move {
                let sender = format!("load-{concurrency}-{task}");
                // One warm-up turn creates the conversation's files.
                one_turn(&client, &sender).await.expect("warm-up turn");
                let mut latencies = Vec::with_capacity(turns);
                for _ in 0..turns {
                    let started = Instant::now();
                    one_turn(&client, &sender).await.expect("a turn");
                    latencies.push(started.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("a load task"));
    }
    all
}

async fn one_turn(client: &Client, sender: &str) -> Result<(), String> {
    let request = StreamMsg {
        agent: "crab".into(),
        sender: Some(sender.into()),
        content: "hello there".into(),
        ..Default::default()
    };
    let mut events = client
        .stream(request)
        .await
        .map_err(|err| err.to_string())?;
    while let Some(event) = events.next().await {
        match event.map_err(|err| err.to_string())?.event {
            Some(Event::End(end)) if !end.error.is_empty() => return Err(end.error),
            Some(Event::End(_)) => return Ok(()),
            _ => {}
        }
    }
    Err("the stream ended without StreamEnd".into())
}

async fn thousand_at_once(daemon: &TestDaemon) -> (usize, usize, Duration) {
    let client = Arc::new(daemon.client().await);
    let started = Instant::now();
    let tasks: Vec<_> = (0..1000)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                tokio::time::timeout(
                    Duration::from_secs(60),
                    one_turn(&client, &format!("burst-{i}")),
                )
                .await
            })
        })
        .collect();
    let (mut ok, mut failed) = (0, 0);
    for task in tasks {
        match task.await {
            Ok(Ok(Ok(()))) => ok += 1,
            _ => failed += 1,
        }
    }
    (ok, failed, started.elapsed())
}

async fn startup_with_conversations(config_text: &str, count: usize) -> Duration {
    let seed = TestDaemon::start(daemon_binary(), config_text).await;
    let client = seed.client().await;
    for i in 0..count {
        one_turn(&client, &format!("stored-{i}"))
            .await
            .expect("a seeding turn");
    }
    drop(client);
    let mut seed = seed;
    seed.stop().await;
    let started = Instant::now();
    seed.spawn().await;
    started.elapsed()
}

/// How the turns' time grows through a conversation, and how much they
/// spread without that growth: each turn over the median of the turns at
/// the same point of their conversations. `turns` and `same` (the direct
/// calls with the daemon's request) hold conversations of `per` turns one
/// after another.
fn print_growth(turns: &[Duration], same: &[Duration], per: usize) {
    let fifths = |samples: &[Duration]| {
        (0..5)
            .map(|fifth| {
                let mut part: Vec<Duration> = samples
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| (i % per) * 5 / per == fifth)
                    .map(|(_, latency)| *latency)
                    .collect();
                part.sort();
                format!("{:.0?}", percentile(&part, 0.5))
            })
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let against_its_point = |samples: &[Duration]| {
        let medians: Vec<f64> = (0..per)
            .map(|point| {
                let mut at: Vec<Duration> =
                    samples.iter().skip(point).step_by(per).copied().collect();
                at.sort();
                percentile(&at, 0.5).as_secs_f64()
            })
            .collect();
        let mut ratios: Vec<f64> = samples
            .iter()
            .enumerate()
            .map(|(i, latency)| latency.as_secs_f64() / medians[i % per])
            .collect();
        ratios.sort_by(f64::total_cmp);
        ratios[((ratios.len() - 1) as f64 * 0.99).round() as usize]
    };
    println!(
        "  p50 in each fifth of the conversations: through the daemon {}; direct with the daemon's request {}",
        fifths(turns),
        fifths(same)
    );
    println!(
        "  p99 of each turn over the median at its point of the conversation: through the daemon {:.2}, direct with the daemon's request {:.2}",
        against_its_point(turns),
        against_its_point(same)
    );
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn print_percentiles(label: &str, latencies: &[Duration]) {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    println!(
        "{label}: p50 {:?}  p90 {:?}  p99 {:?}  p99.9 {:?}  max {:?}",
        percentile(&sorted, 0.5),
        percentile(&sorted, 0.9),
        percentile(&sorted, 0.99),
        percentile(&sorted, 0.999),
        sorted.last().unwrap()
    );
}

fn print_overhead(label: &str, turns: &[Duration], direct: &[Duration]) {
    let (mut turns, mut direct) = (turns.to_vec(), direct.to_vec());
    turns.sort();
    direct.sort();
    let overhead = |p| percentile(&turns, p).saturating_sub(percentile(&direct, p));
    println!("{label}: p50 {:?}  p99 {:?}", overhead(0.5), overhead(0.99));
}

fn rss(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS:"))
                .map(|line| line[6..].trim().to_owned())
        })
        .unwrap_or_else(|| "unknown (no /proc)".into())
}

/// What the daemon has spent so far, summed over its threads (from
/// `/proc/<pid>/task/*/schedstat` and `status`; zero where there is no
/// `/proc`).
#[derive(Default)]
struct Spent {
    /// Time on a CPU.
    cpu: Duration,
    /// Time ready to run, waiting for a CPU.
    waited: Duration,
    /// Context switches, voluntary (it slept) and not (it was preempted).
    switches: u64,
}

impl Spent {
    fn of(pid: u32) -> Self {
        let mut spent = Self::default();
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return spent;
        };
        for task in tasks.flatten() {
            let path = task.path();
            if let Ok(schedstat) = std::fs::read_to_string(path.join("schedstat")) {
                let mut fields = schedstat.split_whitespace().map(|f| f.parse().unwrap_or(0));
                spent.cpu += Duration::from_nanos(fields.next().unwrap_or(0));
                spent.waited += Duration::from_nanos(fields.next().unwrap_or(0));
            }
            if let Ok(status) = std::fs::read_to_string(path.join("status")) {
                spent.switches += status
                    .lines()
                    .filter(|line| line.contains("ctxt_switches:"))
                    .filter_map(|line| line.split(':').nth(1)?.trim().parse::<u64>().ok())
                    .sum::<u64>();
            }
        }
        spent
    }

    fn since(&self, before: &Self) -> Self {
        Self {
            cpu: self.cpu.saturating_sub(before.cpu),
            waited: self.waited.saturating_sub(before.waited),
            switches: self.switches.saturating_sub(before.switches),
        }
    }

    fn print_per_turn(&self, turns: usize) {
        let turns = turns.max(1);
        println!(
            "  the daemon per turn: CPU {:?}, waiting for a CPU {:?}, {:.1} context switches",
            self.cpu / turns as u32,
            self.waited / turns as u32,
            self.switches as f64 / turns as f64
        );
    }
}
