//! 100 chats streaming at once through the gateway: the real daemon with
//! a scripted model whose streams take seconds, the fake Bot API, and the
//! release gateway binary. Prints how long each chat waited for its whole
//! reply (percentiles), the most Bot API calls that arrived within any
//! second, and the smallest gap between two messages or edits in one chat.
//!
//! ```sh
//! cargo build -p crabtalkd
//! cargo build --release -p crabtalk-telegram --examples --bins
//! CRABTALKD_BIN=$PWD/target/debug/crabtalkd target/release/examples/telegram_load 100
//! ```

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crabtalk_fake_bot_api::{FakeBotApi, TOKEN, TgUser, pace};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, daemon_binary};
use tokio::time::Instant;

fn binary() -> PathBuf {
    let me = std::env::current_exe().unwrap();
    me.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("crabtalk-telegram")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let chats: i64 = std::env::args().nth(1).map_or(100, |n| n.parse().unwrap());
    let llm = ScriptedLlm::start().await;
    // Every stream is cut into small pieces with a pause between them, so
    // each reply streams for several seconds, as a model's does.
    llm.chop_streams();
    llm.stop_recording();
    let words: Vec<String> = (0..250).map(|i| format!("word{i}")).collect();
    let reply = format!("**Answer**\n\n{}", words.join(" "));
    llm.set_default(Reply::text(&reply));
    let expected: String = crabtalk_telegram::render::render(&reply)
        .into_iter()
        .map(|p| p.text)
        .collect();
    let daemon = TestDaemon::start(daemon_binary(), &TestDaemon::config_for(&llm.base_url())).await;
    let api = FakeBotApi::start().await;
    let config = daemon.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    let allow: Vec<String> = (1..=chats).map(|c| (1000 + c).to_string()).collect();
    std::fs::write(
        config.join("telegram.toml"),
        format!(
            "token = \"{TOKEN}\"\napi_base_url = \"{}\"\nallow = [{}]\n",
            api.url(),
            allow.join(", ")
        ),
    )
    .unwrap();
    let mut gateway = Command::new(binary())
        .arg("run")
        .env("CRABTALK_HOME", daemon.path())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    api.wait_until("the first poll", |api| {
        !api.calls_of("getUpdates").is_empty()
    })
    .await;
    let start = Instant::now();
    for c in 1..=chats {
        api.text(&TgUser::new(1000 + c, &format!("User{c}")), "tell me");
    }
    let mut done: Vec<Option<Duration>> = vec![None; chats as usize];
    let deadline = start + Duration::from_secs(600);
    while done.iter().any(Option::is_none) && Instant::now() < deadline {
        for c in 1..=chats {
            let slot = &mut done[(c - 1) as usize];
            if slot.is_none() && api.chat_text(1000 + c) == expected {
                *slot = Some(start.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut times: Vec<Duration> = done.iter().flatten().copied().collect();
    times.sort();
    let calls = api.calls();
    let (most, gap) = pace(
        &calls,
        Duration::from_secs(1),
        &["sendMessage", "editMessageText", "deleteMessage"],
    );
    let edits = calls
        .iter()
        .filter(|c| c.method.eq_ignore_ascii_case("editMessageText"))
        .count();
    let sends = calls
        .iter()
        .filter(|c| c.method.eq_ignore_ascii_case("sendMessage"))
        .count();
    println!(
        "{chats} chats, a {}-character reply each, streamed over several seconds",
        reply.len()
    );
    println!("complete replies: {}/{chats}", times.len());
    if !times.is_empty() {
        println!(
            "time to the whole reply: p50 {:.1} s, p90 {:.1} s, p99 {:.1} s, max {:.1} s",
            percentile(&times, 0.5).as_secs_f64(),
            percentile(&times, 0.9).as_secs_f64(),
            percentile(&times, 0.99).as_secs_f64(),
            times.last().unwrap().as_secs_f64()
        );
    }
    println!(
        "Bot API calls: {} ({sends} sendMessage, {edits} editMessageText); most within any 1 s: {most} (limit 30)",
        calls.len()
    );
    if let Some((chat, gap)) = gap {
        println!(
            "smallest gap between two messages/edits in one chat: {:.3} s (chat {chat}; limit 1 s)",
            gap.as_secs_f64()
        );
    }
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(gateway.id() as i32, libc::SIGTERM);
    }
    let _ = gateway.wait();
}
