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
