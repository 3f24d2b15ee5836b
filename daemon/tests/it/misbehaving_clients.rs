//! Clients that never authenticate, never read, or keep guessing the
//! token cannot make the real daemon spend memory without bound, and a
//! turn nobody reads still completes and is saved (issue 10, findings 1,
//! 5 and 6).

use std::time::Duration;

use crabtalk_proto::Client;
use crabtalk_proto::codec::{FrameReader, MAX_FRAME_LEN, encode_frame};
use crabtalk_proto::msg::*;
use crabtalk_testkit::usage::Usage;
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, eventually, poll_until, within};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const MB: u64 = 1024 * 1024;

async fn setup() -> (ScriptedLlm, TestDaemon) {
    // A client that takes nothing for 5 s is dropped from its turns.
    TestDaemon::on_scripted_llm("\n[conversations]\nclient_stall_secs = 5\n").await
}

fn rss(daemon: &TestDaemon) -> u64 {
    Usage::of(daemon.pid())
        .expect("the daemon's /proc stat")
        .rss_bytes
}

#[tokio::test]
async fn strangers_announcing_huge_frames_cost_the_daemon_almost_nothing() {
    let (_llm, daemon) = setup().await;
    let addr = daemon.tcp_addr().await;
    let before = rss(&daemon);
    // The report's attack: 60 connections that never say Hello, each
    // sending one frame of 16 MiB - 1 bytes.
    let attackers: Vec<_> = (0..60)
        .map(|_| {
            let addr = addr.clone();
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(&addr).await.unwrap();
                let _ = stream
                    .write_all(&((MAX_FRAME_LEN - 1) as u32).to_be_bytes())
                    .await;
                let block = vec![0x0a; 256 * 1024];
                for _ in 0..64 {
                    let sent =
                        tokio::time::timeout(Duration::from_millis(200), stream.write_all(&block))
                            .await;
                    if !matches!(sent, Ok(Ok(()))) {
                        break;
                    }
                }
                stream
            })
        })
        .collect();
    let mut held = Vec::new();
    for attacker in attackers {
        held.push(within("an attacker", attacker).await.unwrap());
    }
    let during = rss(&daemon);
    assert!(
        during < before + 32 * MB,
        "RSS went from {} to {} MB with 60 strangers sending 16 MiB frames",
        before / MB,
        during / MB
    );
    // One of them reads what it got: a refusal, not an admission.
    let mut reader = FrameReader::new(held.pop().unwrap());
    if let Ok(reply) = within("an answer", reader.read::<ServerMessage>()).await {
        assert!(
            matches!(
                reply.msg,
                Some(server_message::Msg::Error(ErrorMsg {
                    code: 401 | 413 | 503,
                    ..
                }))
            ),
            "{reply:?}"
        );
    }
    // The daemon still serves its own user.
    within("ping", daemon.client().await.ping()).await.unwrap();
}

#[tokio::test]
async fn wrong_tokens_are_answered_ever_more_slowly() {
    let (_llm, daemon) = setup().await;
    let addr = daemon.tcp_addr().await;
    let mut waits = Vec::new();
    for _ in 0..4 {
        let asked = tokio::time::Instant::now();
        let err = Client::connect_tcp(&addr, Some("a-guess"))
            .await
            .err()
            .unwrap();
        assert_eq!(err.code(), Some(401), "{err}");
        waits.push(asked.elapsed());
    }
    // 100 ms after the first failure, doubling (lower bounds only). The
    // daemon counts from the moment it refused the attempt before, a little
    // before this client saw that refusal and asked again: the way back is
    // allowed for.
    for (n, wait) in waits.iter().enumerate().skip(1) {
        let owed = Duration::from_millis(100) * (1 << (n - 1)) - Duration::from_millis(10);
        assert!(*wait >= owed, "attempt {n}: {waits:?}");
    }
    // The token from run/token still gets in.
    let client = daemon.tcp_client().await;
    within("ping", client.ping()).await.unwrap();
}

/// Turns started at once by each client.
const TURNS: u64 = 10;

/// [`TURNS`] turns with long replies, one sender each, started on a raw
/// connection (the caller decides whether anything reads).
async fn start_long_turns(write: &mut (impl AsyncWriteExt + Unpin), tag: &str) {
    let mut frames = Vec::new();
    for n in 0..TURNS {
        let request = ClientMessage::from(client_message::Msg::Stream(StreamMsg {
            agent: "crab".into(),
            sender: Some(format!("{tag}-{n}")),
            content: "tell me everything".into(),
            ..Default::default()
        }))
        .with_request_id(n + 1);
        encode_frame(&request, &mut frames).unwrap();
    }
    write.write_all(&frames).await.unwrap();
}

/// How many conversations of `tag` hold their reply.
async fn saved(client: &Client, tag: &str) -> u64 {
    let list = client
        .list_conversations(ListConversationsMsg {
            agent: "crab".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    list.conversations
        .iter()
        .filter(|c| {
            (c.sender == tag || c.sender.starts_with(&format!("{tag}-"))) && c.message_count >= 2
        })
        .count() as u64
}

/// Waits until the conversations of `tag` hold their replies.
async fn wait_saved(client: &Client, tag: &str) {
    poll_until("the turns saved", async || {
        (saved(client, tag).await >= TURNS).then_some(())
    })
    .await;
}

// The scripted model and the reading client must not starve each other.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_nobody_reads_complete_are_saved_and_do_not_grow_the_daemon() {
    let (llm, daemon) = setup().await;
    // Replies of 2 MB each, in 4 KiB pieces: twice what a turn may queue
    // for its client.
    let reply: String = "All work and no play makes a long reply. ".repeat(50_000);
    llm.set_default(Reply::Pieces {
        text: reply.clone(),
        piece: 4096,
    });
    let client = daemon.client().await;

    // First the same load with a client that reads: what the work itself
    // costs (conversations in memory, the session index, allocator).
    let (read, mut write) = tokio::net::UnixStream::connect(daemon.home().socket_path())
        .await
        .unwrap()
        .into_split();
    let reading = tokio::spawn(async move {
        let mut reader = FrameReader::new(read);
        let mut ends = 0;
        let mut frames = 0;
        while ends < TURNS {
            let reply: ServerMessage = reader.read().await.unwrap();
            frames += 1;
            match reply.msg {
                Some(server_message::Msg::Stream(ref e)) if e.is_end() => ends += 1,
                Some(server_message::Msg::Error(ref e)) => panic!(
                    "reader dropped after {frames} frames, {ends} ends, request {}: {e:?}",
                    reply.request_id
                ),
                _ => {}
            }
        }
        frames
    });
    let start = rss(&daemon);
    start_long_turns(&mut write, "reader").await;
    within("the reader's turns", reading).await.unwrap();
    wait_saved(&client, "reader").await;
    let after_reading = rss(&daemon);

    // Then a client that never reads a byte.
    let stalled = tokio::net::UnixStream::connect(daemon.home().socket_path())
        .await
        .unwrap();
    let (stalled_read, mut stalled_write) = stalled.into_split();
    start_long_turns(&mut stalled_write, "stalled").await;
    let mut peak = 0;
    within("the unread turns saved", async {
        while saved(&client, "stalled").await < TURNS {
            peak = peak.max(rss(&daemon));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let with_stalled = rss(&daemon);
    peak = peak.max(with_stalled);
    eprintln!(
        "RSS: start {} MB, after the read turns {} MB, unread turns: peak {} MB, done {} MB",
        start / MB,
        after_reading / MB,
        peak / MB,
        with_stalled / MB
    );
    // The work costs what it costs; not reading may add the bounded
    // queues, not the replies.
    let work = after_reading.saturating_sub(start);
    assert!(
        peak <= after_reading + work + 48 * MB,
        "a client that reads nothing took RSS to {} MB (a reading one: {} MB)",
        peak / MB,
        after_reading / MB
    );
    // Every unread reply is saved whole.
    let history = client
        .list_conversations(ListConversationsMsg {
            agent: "crab".into(),
            sender: "stalled-7".into(),
        })
        .await
        .unwrap();
    let saved = client
        .get_conversation_history(GetConversationHistoryMsg {
            file_path: history.conversations[0].file_path.clone(),
        })
        .await
        .unwrap();
    // The history view cuts a message this long, and says how long it was.
    let content = &saved.messages.last().unwrap().content;
    assert!(
        content.starts_with(&reply[..1000])
            && content.ends_with(&format!(
                "[message cut for the history view: {} bytes, the first 262144 shown]",
                reply.len()
            )),
        "{}",
        &content[content.len().saturating_sub(200)..]
    );

    // What the stalled connection gets when it finally reads: each turn's
    // events up to the bound, then the reason it was dropped — never the
    // whole replies.
    let mut reader = FrameReader::new(stalled_read);
    let (mut terminals, mut dropped, mut bytes) = (0, 0, 0);
    while terminals < TURNS {
        let reply: ServerMessage = within("the stalled connection's frames", reader.read())
            .await
            .unwrap();
        bytes += prost::Message::encoded_len(&reply);
        match reply.msg {
            Some(server_message::Msg::Stream(ref event)) if event.is_end() => terminals += 1,
            Some(server_message::Msg::Error(ref error)) => {
                assert_eq!(error.code, 503, "{error:?}");
                assert!(error.message.contains("stopped reading"), "{error:?}");
                terminals += 1;
                dropped += 1;
            }
            _ => {}
        }
    }
    assert!(dropped > 0, "no turn dropped the client that did not read");
    let whole = TURNS as usize * reply.len();
    assert!(bytes < whole / 4, "{bytes} bytes queued of {whole}");

    // Closing the connection gives the memory back.
    drop(reader);
    drop(stalled_write);
    eventually("RSS back near what the work costs", || {
        rss(&daemon) <= after_reading + work + 16 * MB
    })
    .await;
    within("ping", client.ping()).await.unwrap();
}

#[cfg(unix)]
#[tokio::test]
async fn a_turn_waiting_for_a_client_goes_on_as_soon_as_the_client_leaves() {
    // A stall limit longer than the test's patience: only the client's
    // leaving can let the turn go on in time.
    let (llm, daemon) =
        TestDaemon::on_scripted_llm("\n[conversations]\nclient_stall_secs = 600\n").await;
    llm.set_default(Reply::Pieces {
        text: "y".repeat(4 * 1024 * 1024),
        piece: 4096,
    });
    let mut stalled = tokio::net::UnixStream::connect(daemon.home().socket_path())
        .await
        .unwrap();
    let mut frame = Vec::new();
    let request = ClientMessage::from(client_message::Msg::Stream(StreamMsg {
        agent: "crab".into(),
        sender: Some("leaver".into()),
        content: "a lot, please".into(),
        ..Default::default()
    }))
    .with_request_id(1);
    encode_frame(&request, &mut frame).unwrap();
    stalled.write_all(&frame).await.unwrap();
    // The turn fills the socket and its queue, then waits for room: its
    // text stops reaching subscribers.
    let client = daemon.client().await;
    let mut events = client.subscribe_events(SubscribeEvents {}).await.unwrap();
    within("the turn to stall", async {
        use futures::StreamExt;
        let mut deltas = 0;
        loop {
            match tokio::time::timeout(Duration::from_millis(500), events.next()).await {
                Ok(Some(Ok(event))) => {
                    if event.sender == "leaver" && event.kind == AgentEventKind::TextDelta as i32 {
                        deltas += 1;
                    }
                }
                Ok(_) => panic!("the event stream ended"),
                Err(_) if deltas > 0 => return,
                Err(_) => {}
            }
        }
    })
    .await;
    assert_eq!(saved(&client, "leaver").await, 0, "the turn is waiting");
    drop(stalled);
    poll_until("the turn saved after its client left", async || {
        (saved(&client, "leaver").await > 0).then_some(())
    })
    .await;
}
