//! What an idle daemon costs: started, one agent, nothing connected. It
//! must sleep until something happens: at most 1% of one core.
//!
//! The window is 30 s (`CRABTALK_IDLE_SECS` sets another). The fault this guards
//! against — a loop of wake-ups, such as a watcher woken by its own reads —
//! shows in any window; the daemon's periodic work (the `run/` rescan) is
//! a few directory reads and shows in none.

use std::time::Duration;

use crabtalk_testkit::TestDaemon;
use crabtalk_testkit::usage::measure_idle;

/// At most this share of one core while idle.
const IDLE_BOUND: f64 = 0.01;

fn window() -> Duration {
    let secs = std::env::var("CRABTALK_IDLE_SECS")
        .ok()
        .and_then(|secs| secs.parse().ok())
        .unwrap_or(30);
    Duration::from_secs(secs)
}

#[tokio::test]
async fn an_idle_daemon_uses_under_one_percent_of_a_core() {
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    // Start-up is over once the daemon has asked the provider for its models
    // (the last thing it does by itself) and answered a client.
    let client = daemon.client().await;
    client
        .list_models(crabtalk_proto::msg::ListModelsMsg {})
        .await
        .unwrap();
    drop(client);
    let idle = measure_idle(daemon.pid(), window()).await.unwrap();
    println!("idle daemon: {idle}");
    assert!(
        idle.core_share() <= IDLE_BOUND,
        "an idle daemon used {idle}; the bound is {}% of one core",
        IDLE_BOUND * 100.0
    );
}

/// What the daemon logs (at debug) when it gives back its start-up pages.
#[cfg(target_os = "linux")]
const PAGES_RELEASED: &str = "asked the kernel to drop start-up pages";

/// The pages only start-up used go back once the daemon has settled and is
/// quiet (RFC 0042), never between two turns of a busy client: the code
/// dropped is code the next turn runs.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn start_up_pages_go_back_only_once_the_daemon_is_quiet() {
    use crabtalk_testkit::Reply;
    use crabtalk_testkit::turn::{Turn, message};
    use std::time::Instant;

    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    llm.set_default(Reply::text("ok"));
    let client = daemon.client().await;
    // A turn every 300 ms from start until well past the settling time (3 s).
    let busy_until = Instant::now() + Duration::from_secs(5);
    let mut turns = 0;
    while Instant::now() < busy_until {
        let turn = Turn::run(&client, message("crab", "steady", "hello")).await;
        assert_eq!(turn.text(), "ok");
        turns += 1;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(
        !daemon.log().contains(PAGES_RELEASED),
        "the start-up pages were dropped while a client was running turns \
         ({turns} turns); log:\n{}",
        daemon.log()
    );
    // Quiet now: they go back within the quiet time (2 s).
    pages_released_by(&daemon, Instant::now() + Duration::from_secs(10), "a quiet").await;
}

/// An idle daemon gives them back at the settling time, as before.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn an_idle_daemon_gives_back_its_start_up_pages_when_settled() {
    use std::time::Instant;

    let started = Instant::now();
    let (_llm, daemon) = TestDaemon::on_scripted_llm("").await;
    pages_released_by(&daemon, started + Duration::from_secs(8), "an idle").await;
}

/// Waits until `daemon` has logged giving back its start-up pages, failing
/// at `deadline` (`which` daemon it is, for the message).
#[cfg(target_os = "linux")]
async fn pages_released_by(daemon: &TestDaemon, deadline: std::time::Instant, which: &str) {
    while !daemon.log().contains(PAGES_RELEASED) {
        assert!(
            std::time::Instant::now() < deadline,
            "{which} daemon did not give back its start-up pages; log:\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
