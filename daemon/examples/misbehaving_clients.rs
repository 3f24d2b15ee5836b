//! Load generator: what misbehaving clients can make the daemon spend,
//! and what they do to everyone else's turns.
//!
//! ```text
//! cargo build --release -p crabtalkd --bins --examples
//! target/release/examples/misbehaving_clients
//! ```
//!
//! It starts two instant scripted LLMs (a short reply for the agent
//! `crab`, a 320 KB reply in 1 KB pieces for the agent `flood`) and the
//! real `crabtalkd` (release build, next to this example), then:
//!
//! 1. runs honest turns (8 clients, 25 short turns each) and prints their
//!    latency percentiles: the usual latency;
//! 2. has 100 clients run 2 `flood` turns each and read them: what the work
//!    itself costs (the conversations stay in memory), for comparison;
//! 3. starts 100 other clients that each begin 2 `flood` turns and never read a
//!    byte, and 100 clients that connect over TCP, announce a frame of
//!    16 MiB − 1 bytes before any `Hello` and keep sending (reconnecting
//!    whenever they are closed);
//! 4. runs the same honest turns again while those 200 misbehave, sampling
//!    the daemon's RSS every 50 ms, and prints the percentiles and the
//!    peak RSS;
//! 5. lets the misbehaving clients go and prints the RSS once the daemon
//!    has settled.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crabtalk_proto::Client;
use crabtalk_proto::codec::{MAX_FRAME_LEN, encode_frame};
use crabtalk_proto::msg::{
    ClientMessage, CreateAgentMsg, StreamMsg, client_message, stream_event::Event,
};
use crabtalk_testkit::usage::Usage;
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, daemon_binary};
use futures::StreamExt;
use tokio::io::AsyncWriteExt;

const HONEST_CLIENTS: usize = 8;
const HONEST_TURNS: usize = 25;
const NON_READERS: usize = 100;
const TURNS_PER_NON_READER: u64 = 2;
const STRANGERS: usize = 100;
const MB: f64 = 1024.0 * 1024.0;

#[tokio::main]
async fn main() {
    let short = ScriptedLlm::start().await;
    short.set_default(Reply::text(
        "Sure — here is a short answer to your question.",
    ));
    short.stop_recording();
    let long = ScriptedLlm::start().await;
    long.set_default(Reply::Pieces {
        text: "x".repeat(320 * 1024),
        piece: 1024,
    });
    long.stop_recording();
    let config = format!(
        "default_model = \"short\"\n\n\
         [[providers]]\nname = \"short\"\nkind = \"openai-compatible\"\nbase_url = \"{}\"\nmodels = [\"short\"]\n\n\
         [[providers]]\nname = \"long\"\nkind = \"openai-compatible\"\nbase_url = \"{}\"\nmodels = [\"long\"]\n\n\
         [transport]\ntcp = \"127.0.0.1:0\"\n",
        short.base_url(),
        long.base_url()
    );
    let daemon = TestDaemon::start(daemon_binary(), &config).await;
    let client = daemon.client().await;
    client
        .create_agent(CreateAgentMsg {
            name: "flood".into(),
            config: r#"{"model": "long"}"#.into(),
            prompt: "Answer at length.".into(),
        })
        .await
        .expect("the flood agent");
    let pid = daemon.pid();
    let addr = daemon.tcp_addr().await;
    println!("daemon idle RSS: {:.1} MB", rss(pid));

    let baseline = honest_turns(&daemon, "before").await;
    print_percentiles("honest turns, nobody misbehaving", &baseline);
    println!("daemon RSS after them: {:.1} MB", rss(pid));

    // The same long turns by clients that read them: what the work itself
    // costs (their conversations stay in memory), for comparison.
    let readers: Vec<_> = (0..NON_READERS)
        .map(|n| tokio::spawn(reader(daemon.home(), n)))
        .collect();
    for reader in readers {
        reader.await.expect("a reading client");
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!(
        "\n{NON_READERS} clients that read {TURNS_PER_NON_READER} turns of 320 KB each: daemon RSS 5 s later {:.1} MB",
        rss(pid)
    );

    let stop = Arc::new(AtomicBool::new(false));
    let refusals = Arc::new(AtomicU64::new(0));
    let mut attackers = Vec::new();
    for n in 0..NON_READERS {
        attackers.push(tokio::spawn(non_reader(daemon.home(), n, stop.clone())));
    }
    for _ in 0..STRANGERS {
        attackers.push(tokio::spawn(stranger(
            addr.clone(),
            stop.clone(),
            refusals.clone(),
        )));
    }
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = tokio::spawn({
        let (peak, stop) = (peak.clone(), stop.clone());
        async move {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(usage) = Usage::of(pid) {
                    peak.fetch_max(usage.rss_bytes, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    // Let the misbehaving clients get going before measuring.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let under_attack = honest_turns(&daemon, "during").await;
    println!(
        "\n{NON_READERS} clients that never read ({TURNS_PER_NON_READER} turns of 320 KB each) \
         and {STRANGERS} that never say Hello (16 MiB frames), meanwhile:"
    );
    print_percentiles("honest turns", &under_attack);
    println!(
        "daemon peak RSS: {:.1} MB; strangers refused {} times",
        peak.load(Ordering::Relaxed) as f64 / MB,
        refusals.load(Ordering::Relaxed)
    );

    stop.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    for attacker in attackers {
        let _ = attacker.await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!("daemon RSS 5 s after they left: {:.1} MB", rss(pid));
}

/// `HONEST_TURNS` short turns in each of `HONEST_CLIENTS` conversations.
async fn honest_turns(daemon: &TestDaemon, tag: &str) -> Vec<Duration> {
    let tasks: Vec<_> = (0..HONEST_CLIENTS)
        .map(|n| {
            let home = daemon.home();
            let sender = format!("honest-{tag}-{n}");
            tokio::spawn(async move {
                let client = Client::connect_uds(home.socket_path())
                    .await
                    .expect("an honest connection");
                let mut latencies = Vec::new();
                for turn in 0..=HONEST_TURNS {
                    let started = Instant::now();
                    one_turn(&client, &sender).await.expect("an honest turn");
                    // Turn 0 creates the conversation's files.
                    if turn > 0 {
                        latencies.push(started.elapsed());
                    }
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("an honest client"));
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
        if let Some(Event::End(end)) = event.map_err(|err| err.to_string())?.event {
            return if end.error.is_empty() {
                Ok(())
            } else {
                Err(end.error)
            };
        }
    }
    Err("the stream ended without StreamEnd".into())
}

/// Runs the long turns and reads them to their end.
async fn reader(home: crabtalk_home::Home, n: usize) {
    let client = Client::connect_uds(home.socket_path())
        .await
        .expect("a reading connection");
    for _ in 0..TURNS_PER_NON_READER {
        let request = StreamMsg {
            agent: "flood".into(),
            sender: Some(format!("reader-{n}")),
            content: "everything, please".into(),
            ..Default::default()
        };
        let mut events = client.stream(request).await.expect("a long turn");
        while let Some(event) = events.next().await {
            event.expect("an event of a long turn");
        }
    }
}

/// Starts long turns and never reads a byte, until told to stop.
async fn non_reader(home: crabtalk_home::Home, n: usize, stop: Arc<AtomicBool>) {
    let Ok(mut stream) = tokio::net::UnixStream::connect(home.socket_path()).await else {
        return;
    };
    let mut frames = Vec::new();
    for turn in 0..TURNS_PER_NON_READER {
        let request = ClientMessage::from(client_message::Msg::Stream(StreamMsg {
            agent: "flood".into(),
            sender: Some(format!("non-reader-{n}")),
            content: "everything, please".into(),
            ..Default::default()
        }))
        .with_request_id(turn + 1);
        encode_frame(&request, &mut frames).expect("a frame");
    }
    let _ = stream.write_all(&frames).await;
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Connects over TCP, announces a 16 MiB frame before any Hello and keeps
/// sending; reconnects when closed; until told to stop.
async fn stranger(addr: String, stop: Arc<AtomicBool>, refusals: Arc<AtomicU64>) {
    let block = vec![0x0a; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut stream) = tokio::net::TcpStream::connect(&addr).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let _ = stream
            .write_all(&((MAX_FRAME_LEN - 1) as u32).to_be_bytes())
            .await;
        while !stop.load(Ordering::Relaxed) {
            let sent =
                tokio::time::timeout(Duration::from_millis(500), stream.write_all(&block)).await;
            match sent {
                Ok(Ok(())) => {}
                Ok(Err(_)) => {
                    refusals.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Err(_) => {}
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn rss(pid: u32) -> f64 {
    Usage::of(pid).map_or(0.0, |usage| usage.rss_bytes as f64 / MB)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn print_percentiles(label: &str, latencies: &[Duration]) {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    println!(
        "{label} ({} turns): p50 {:?}  p90 {:?}  p99 {:?}  max {:?}",
        sorted.len(),
        percentile(&sorted, 0.5),
        percentile(&sorted, 0.9),
        percentile(&sorted, 0.99),
        sorted.last().unwrap()
    );
}
