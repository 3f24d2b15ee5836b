//! kill -9 at random moments never leaves an unreadable memory file, and never
//! loses an op that was acknowledged.
//!
//! The test re-runs this test binary as a child (filtered to
//! `crash_child_writer`, with an environment variable telling it where to
//! write). The child applies ops in a loop and prints `ack N` after op N
//! returned; the parent kills it with SIGKILL some time after a random ack,
//! then opens the file.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crabtalk_memory::{EntryKind, Memory, Op};

const CHILD_ENV: &str = "CRABTALKD_TEST_CRASH_CHILD";

/// The child's loop. Does nothing unless started by the parent test.
#[test]
fn crash_child_writer() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (path, round) = spec.rsplit_once('|').expect("path|round");
    let mut memory = Memory::open(path).expect("the file must open in the child too");
    // Big enough that a write takes a while: the kill lands mid-write often.
    let filler = "lorem ipsum dolor sit amet ".repeat(800);
    for i in 0u64.. {
        memory
            .apply(Op::Add {
                name: format!("r{round}-{i}"),
                content: format!("{i} {filler}"),
                aliases: vec![],
                kind: EntryKind::Note,
            })
            .unwrap();
        if i >= 5 {
            memory
                .apply(Op::Remove {
                    name: format!("r{round}-{}", i - 5),
                })
                .unwrap();
        }
        let counter = Op::Update {
            name: "counter".into(),
            content: format!("{round}:{i}"),
            aliases: vec![],
            rename: None,
        };
        if memory.get("counter").is_some() {
            memory.apply(counter).unwrap();
        } else {
            memory
                .apply(Op::Add {
                    name: "counter".into(),
                    content: format!("{round}:{i}"),
                    aliases: vec![],
                    kind: EntryKind::Note,
                })
                .unwrap();
        }
        println!("ack {i}");
    }
}

/// xorshift64, seeded from the clock: a different schedule every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn kill_9_between_writes_never_leaves_an_unreadable_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crab.crmem");
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = Rng(seed);
    for round in 0..5 {
        let target = 2 + rng.below(6);
        let delay = Duration::from_micros(rng.below(20_000));
        let acked = run_and_kill(&path, round, target, delay, seed);
        let memory = Memory::open(&path).unwrap_or_else(|err| {
            panic!("round {round} (seed {seed}): unreadable after kill: {err}")
        });
        // Every acknowledged op is durable.
        let counter = &memory.get("counter").expect("counter").content;
        let (counter_round, n) = counter.split_once(':').unwrap();
        assert_eq!(counter_round, round.to_string(), "seed {seed}");
        assert!(n.parse::<u64>().unwrap() >= acked, "seed {seed}");
        assert!(
            memory.get(&format!("r{round}-{acked}")).is_some(),
            "seed {seed}"
        );
        if acked >= 5 {
            assert!(memory.get(&format!("r{round}-{}", acked - 5)).is_none());
        }
    }
}

/// Runs a child on `path` until it acknowledged op `target`, waits `delay`,
/// kills it with SIGKILL. Returns the last acknowledged op.
fn run_and_kill(path: &Path, round: u32, target: u64, delay: Duration, seed: u64) -> u64 {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "memory_crash::crash_child_writer",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, format!("{}|{round}", path.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(n) = line.strip_prefix("ack ")
                && tx.send(n.trim().parse::<u64>().unwrap()).is_err()
            {
                break;
            }
        }
    });
    let mut acked = None;
    while acked.is_none_or(|n| n < target) {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(n) => acked = Some(n),
            Err(err) => {
                let _ = child.kill();
                panic!("round {round} (seed {seed}): the child stopped acknowledging: {err}");
            }
        }
    }
    std::thread::sleep(delay);
    // Acks that arrived during the delay are durable too.
    while let Ok(n) = rx.try_recv() {
        acked = Some(n);
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    acked.unwrap()
}
