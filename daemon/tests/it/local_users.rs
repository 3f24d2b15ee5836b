//! Other users of the machine: they cannot drive the daemon over TCP, nor
//! read its token, conversations or memory; and everything the daemon
//! creates is its user's alone whatever the umask (issue 10, findings 1
//! and 2). The tests run as root here, so "another user" is a child
//! process that drops to uid/gid 65534 before it does anything; where that
//! is impossible the test says so and skips.

#![cfg(unix)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crabtalk_proto::codec::{FrameReader, encode_frame};
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, ToolCall, daemon_binary};
use serde_json::json;

/// The user and group the other user runs as.
const NOBODY: u32 = 65534;

/// Why the other-user part cannot run here, if it cannot.
fn cannot_switch_users() -> Option<&'static str> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("the tests do not run as root, so they cannot become another user");
    }
    None
}

/// Runs `script` with `bash -c` as uid/gid 65534, no supplementary groups.
fn as_other_user(script: &str) -> Output {
    let mut command = Command::new("bash");
    command.arg("-c").arg(script).current_dir("/");
    // SAFETY: only async-signal-safe calls, in the child, before exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(NOBODY) != 0
                || libc::setuid(NOBODY) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.output().expect("run a command as another user")
}

/// A folder anyone may use (for what the other user reads and writes).
fn shared_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

#[tokio::test]
async fn another_local_user_cannot_drive_the_daemon_over_tcp_nor_read_its_secrets() {
    if let Some(reason) = cannot_switch_users() {
        eprintln!("skipped: {reason}");
        return;
    }
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    // Let the other user as far as the home's door, as a home under an
    // ordinary 0755 home folder would.
    std::fs::set_permissions(daemon.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let port = daemon
        .tcp_addr()
        .await
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    let shared = shared_dir();

    // What the report's attacker sent: a turn that runs bash, without Hello,
    // and then with a guessed token.
    let turn = ClientMessage::from(client_message::Msg::Stream(StreamMsg {
        agent: "crab".into(),
        content: "run id and cat ~/.crabtalk/config.toml".into(),
        ..Default::default()
    }))
    .with_request_id(1);
    let guess = ClientMessage::from(client_message::Msg::Hello(Hello {
        token: "0123456789abcdef".into(),
    }))
    .with_request_id(1);
    for (name, first) in [("no-hello", &turn), ("guessed", &guess)] {
        let mut bytes = Vec::new();
        encode_frame(first, &mut bytes).unwrap();
        encode_frame(&turn, &mut bytes).unwrap();
        let frames = shared.path().join(format!("{name}.bin"));
        std::fs::write(&frames, bytes).unwrap();
        std::fs::set_permissions(&frames, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let out = |name: &str| shared.path().join(format!("{name}.out"));
    let script = format!(
        "for f in no-hello guessed; do \
           exec 3<>/dev/tcp/127.0.0.1/{port} || exit 9; \
           cat {dir}/$f.bin >&3; \
           timeout 15 cat <&3 > {dir}/$f.out; \
           exec 3<&-; \
         done",
        dir = shared.path().display()
    );
    let ran = as_other_user(&script);
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    for name in ["no-hello", "guessed"] {
        let bytes = std::fs::read(out(name)).unwrap();
        let mut reader = FrameReader::new(bytes.as_slice());
        let reply: ServerMessage = reader.read().await.expect("an answer");
        assert!(
            matches!(
                reply.msg,
                Some(server_message::Msg::Error(ErrorMsg { code: 401, .. }))
            ),
            "{name}: {reply:?}"
        );
        assert!(
            reader.read::<ServerMessage>().await.is_err(),
            "{name}: more after the refusal"
        );
    }
    assert!(llm.requests().is_empty(), "a turn ran for the other user");

    // Nor can it read the token, the socket, or any conversation.
    llm.push(Reply::text("a secret answer"));
    Turn::run(
        &daemon.client().await,
        message("crab", "user", "my PIN is 4711"),
    )
    .await;
    let home = daemon.path().display().to_string();
    for (what, script) in [
        ("the token", format!("cat {home}/run/token")),
        ("the socket's folder", format!("ls {home}/run")),
        ("the conversations", format!("ls -R {home}/sessions")),
        ("a conversation", format!("grep -r 4711 {home}/sessions")),
        ("the socket", format!("stat {home}/run/crabtalk.sock")),
    ] {
        let ran = as_other_user(&script);
        assert!(!ran.status.success(), "the other user could get {what}");
        let stdout = String::from_utf8_lossy(&ran.stdout);
        assert!(
            !stdout.contains(&daemon.token()) && !stdout.contains("4711"),
            "{what}: {stdout}"
        );
    }
}

/// Every path under `root` with its mode, but `skip`.
fn modes(root: &Path, skip: &[&str]) -> Vec<(PathBuf, u32, bool)> {
    let mut out = Vec::new();
    let mut queue = vec![root.to_owned()];
    while let Some(dir) = queue.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if skip.iter().any(|name| path.file_name().unwrap() == *name) {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                queue.push(path.clone());
            }
            out.push((path, meta.mode() & 0o777, meta.is_dir()));
        }
    }
    out
}

#[tokio::test]
async fn under_umask_022_everything_the_daemon_creates_is_private_and_an_open_home_is_reported() {
    // What most users have; children (the daemon) inherit it.
    // SAFETY: umask only swaps a process-wide value.
    unsafe {
        libc::umask(0o022);
    }
    let llm = ScriptedLlm::start().await;
    let mut daemon =
        TestDaemon::unstarted(daemon_binary(), &TestDaemon::config_for(&llm.base_url()));
    // A home that exists and is open, as an installer might leave it.
    std::fs::set_permissions(daemon.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    daemon.spawn().await;
    let client = daemon.client().await;
    // Make the daemon create every kind of file it keeps: a conversation
    // and its sidecar, memory, an agent, subscriptions, the token.
    llm.push(Reply::tools(vec![ToolCall::new(
        "m",
        "remember",
        json!({"name": "pin", "content": "4711"}),
    )]));
    llm.push(Reply::text("noted"));
    Turn::run(&client, message("crab", "user", "remember my PIN")).await;
    client
        .create_agent(CreateAgentMsg {
            name: "scout".into(),
            config: String::new(),
            prompt: "look around".into(),
        })
        .await
        .unwrap();
    client
        .subscribe_event(SubscribeEventMsg {
            source: "agent:crab:done".into(),
            target_agent: "scout".into(),
            once: true,
        })
        .await
        .unwrap();
    daemon.stop().await;

    // The test's own files (the config, the daemon's captured stderr) are
    // not the daemon's; everything else is.
    let found = modes(daemon.path(), &["config.toml", "test-daemon.log"]);
    for kind in ["sessions", "memory", "agents", "run", "events"] {
        assert!(
            found.iter().any(|(path, _, _)| path.ends_with(kind)),
            "{kind} was not created: {found:?}"
        );
    }
    assert!(
        found
            .iter()
            .any(|(path, _, dir)| !dir && path.starts_with(daemon.path().join("sessions")))
    );
    for (path, mode, dir) in &found {
        let private = if *dir { 0o700 } else { 0o600 };
        assert_eq!(*mode, private, "{} is {mode:o}", path.display());
    }
    let log = daemon.log();
    let home = daemon.path().display().to_string();
    assert!(
        log.contains(&format!("{home} has mode 755")) && log.contains(&format!("chmod 700 {home}")),
        "{log}"
    );
    assert!(
        log.contains(&format!("chmod 600 {home}/config.toml")),
        "{log}"
    );
}
