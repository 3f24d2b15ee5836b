//! The daemon link against the real daemon: a component may start before
//! the daemon, connects when it comes up, and survives its restarts with
//! its subscriptions in place again; SIGTERM stops it and its port file is
//! gone.

use std::time::Duration;

use crabtalk_home::{Home, PortFile};
use crabtalk_kit::Shutdown;
use crabtalk_kit::daemon::{Backoff, DaemonLink, Followed, Following};
use crabtalk_proto::Client;
use crabtalk_proto::msg::{AgentEventKind, AgentEventMsg, SubscribeEvents};
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, daemon_binary, within};
use futures::StreamExt;

use crate::support::{Running, TIMEOUT, probe_binary, probe_service, wait_exit, wait_for};

/// A daemon whose model is `llm` (turns make the agent events a
/// subscription sees), TCP on a free port, not started yet.
fn unstarted_daemon(llm: &ScriptedLlm) -> TestDaemon {
    llm.set_default(Reply::text("pong"));
    TestDaemon::unstarted(daemon_binary(), &TestDaemon::config_for(&llm.base_url()))
}

fn write_probe_config(home: &Home) {
    let path = home.component_config("probe").unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "greeting = \"hello\"\n").unwrap();
}

/// Runs turns until the probe prints a turn's `DONE` event: the
/// subscription may still be on its way to the daemon when the first turn
/// runs.
async fn turn_until_seen(daemon: &TestDaemon, probe: &Running) {
    let client = daemon.client().await;
    loop {
        Turn::run(&client, message("crab", "test", "ping")).await;
        let seen = tokio::task::block_in_place(|| {
            probe.try_line_matching(Duration::from_millis(200), |line| {
                line.starts_with("event DONE crab")
            })
        });
        if seen.is_some() {
            return;
        }
    }
}

/// The next event of `events` that is an agent event (not a marker).
async fn next_done(events: &mut Following<AgentEventMsg>) -> AgentEventMsg {
    within("an agent's DONE event", async {
        loop {
            match events.next().await {
                Some(Ok(Followed::Item(event))) if event.kind() == AgentEventKind::Done => {
                    return event;
                }
                Some(Ok(_)) => {}
                other => panic!("the following ended: {other:?}"),
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_started_first_follows_the_daemon_across_a_restart() {
    let llm = ScriptedLlm::start().await;
    let mut daemon = unstarted_daemon(&llm);
    let home = daemon.home();
    write_probe_config(&home);
    let probe = Running::start(&probe_binary(), &home, &daemon.path().join("probe.log"));
    // It serves without the daemon.
    let port_file = probe_service().port_file(&home);
    wait_for("the probe's port file", TIMEOUT, || {
        PortFile::read(&port_file).ok()
    });

    daemon.spawn().await;
    tokio::task::block_in_place(|| probe.line_matching("subscription", |l| l == "subscribed"));
    within("the first event", turn_until_seen(&daemon, &probe)).await;

    daemon.restart().await;
    tokio::task::block_in_place(|| {
        probe.line_matching("subscription after the restart", |l| l == "resubscribed")
    });
    within(
        "an event after the restart",
        turn_until_seen(&daemon, &probe),
    )
    .await;

    let mut probe = probe;
    crate::support::signal(&probe.child, libc::SIGTERM);
    let status = tokio::task::block_in_place(|| wait_exit(&mut probe.child));
    assert!(status.success(), "exited with {status}");
    assert!(!port_file.exists(), "the port file outlived SIGTERM");
}

#[tokio::test]
async fn client_waits_for_the_daemon_and_the_link_counts_connections() {
    let llm = ScriptedLlm::start().await;
    let mut daemon = unstarted_daemon(&llm);
    let shutdown = Shutdown::new();
    let link = DaemonLink::start_with_backoff(
        daemon.home(),
        shutdown.clone(),
        Backoff::new(Duration::from_millis(5), Duration::from_millis(50)),
    );
    assert!(link.current().is_none());
    assert_eq!(link.connections(), 0);
    let waiting = tokio::spawn({
        let link = link.clone();
        async move { link.client().await }
    });
    daemon.spawn().await;
    let client: Client = within("the link's client", waiting).await.unwrap().unwrap();
    within("ping", client.ping()).await.unwrap();
    assert_eq!(link.connections(), 1);

    let mut events = link.follow(SubscribeEvents {});
    assert_eq!(
        within("start", events.next()).await.unwrap().unwrap(),
        Followed::Started
    );
    daemon.restart().await;
    assert_eq!(
        within("resume", events.next()).await.unwrap().unwrap(),
        Followed::Resumed
    );
    // It may have reached the old daemon once more while that one shut
    // down; either way it follows the new one now: turns there show.
    within("a turn on the new daemon to show", async {
        let client = daemon.client().await;
        loop {
            Turn::run(&client, message("crab", "test", "again")).await;
            let wait = Duration::from_millis(300);
            if let Ok(done) = tokio::time::timeout(wait, next_done(&mut events)).await {
                return assert_eq!(done.agent, "crab");
            }
        }
    })
    .await;
    assert!(link.connections() >= 2, "{}", link.connections());
    within("ping on the new connection", async {
        link.client().await.unwrap().ping().await.unwrap()
    })
    .await;

    shutdown.trigger();
    assert!(link.client().await.is_err());
    assert!(within("the stream to end", events.next()).await.is_none());
}

#[tokio::test]
async fn a_following_keeps_its_link_alive() {
    let llm = ScriptedLlm::start().await;
    let mut daemon = unstarted_daemon(&llm);
    daemon.spawn().await;
    // The link handle is dropped at once; the following still works.
    let mut events = DaemonLink::start(daemon.home(), Shutdown::new()).follow(SubscribeEvents {});
    assert_eq!(
        within("start", events.next()).await.unwrap().unwrap(),
        Followed::Started
    );
    Turn::run(&daemon.client().await, message("crab", "test", "kept")).await;
    assert_eq!(next_done(&mut events).await.agent, "crab");
}

/// `Started` means the daemon already follows: a turn another client ends
/// right after it is never missed. (The subscription is sent, then a ping
/// on the same connection is answered — the daemon starts requests in the
/// order they arrive.) Many rounds, each a fresh link, to give the race a
/// chance to show.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_started_no_event_is_missed() {
    let llm = ScriptedLlm::start().await;
    let mut daemon = unstarted_daemon(&llm);
    daemon.spawn().await;
    let other = daemon.client().await;
    for round in 0..25 {
        let shutdown = Shutdown::new();
        let mut events =
            DaemonLink::start(daemon.home(), shutdown.clone()).follow(SubscribeEvents {});
        assert_eq!(
            within("start", events.next()).await.unwrap().unwrap(),
            Followed::Started
        );
        Turn::run(&other, message("crab", "test", &format!("round {round}"))).await;
        let done = tokio::time::timeout(Duration::from_secs(10), next_done(&mut events))
            .await
            .unwrap_or_else(|_| panic!("round {round}: the turn's DONE was missed"));
        assert_eq!(done.agent, "crab");
        shutdown.trigger();
    }
}
