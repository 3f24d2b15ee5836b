//! The built-in tools on the real daemon, called by a scripted model.

use std::path::Path;

use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::*;
use crabtalk_testkit::turn::{Turn, message};
use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon, ToolCall, daemon_binary, eventually};
use serde_json::json;

use crate::support::{alive, call_tools};

fn in_dir(dir: &Path, sender: &str) -> StreamMsg {
    let mut request = message("crab", sender, "go");
    request.cwd = Some(dir.display().to_string());
    request
}

fn bash(id: &str, command: &str) -> ToolCall {
    ToolCall::new(id, "bash", json!({"command": command}))
}

fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[tokio::test]
async fn bash_runs_in_the_working_directory_and_reports_output_and_exit_code() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let dir = tempfile::tempdir().unwrap();
    let results = call_tools(
        &llm,
        &client,
        in_dir(dir.path(), "user"),
        vec![
            bash("ok", "pwd; echo from-stdout"),
            bash("fail", "echo to-stderr >&2; exit 3"),
        ],
    )
    .await;
    assert!(!results[0].is_error, "{}", results[0].output);
    assert!(
        results[0]
            .output
            .contains(&dir.path().display().to_string()),
        "{}",
        results[0].output
    );
    assert!(results[0].output.contains("from-stdout") && results[0].output.contains("exit code 0"));
    assert!(results[1].is_error);
    assert!(
        results[1].output.contains("to-stderr") && results[1].output.contains("exit code 3"),
        "{}",
        results[1].output
    );
}

#[tokio::test]
async fn bash_timeout_kills_the_command_and_everything_it_started() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let dir = tempfile::tempdir().unwrap();
    // A background child, and a grandchild started by a nested shell.
    let command = "sleep 300 & echo $! > child.pid; bash -c 'sleep 300 & echo $! > grandchild.pid; wait' & wait";
    let call = ToolCall::new(
        "slow",
        "bash",
        json!({"command": command, "timeout_secs": 1}),
    );
    let results = call_tools(&llm, &client, in_dir(dir.path(), "user"), vec![call]).await;
    assert!(
        results[0].is_error && results[0].output.contains("timed out after 1 s"),
        "{}",
        results[0].output
    );
    let child = read_pid(&dir.path().join("child.pid")).expect("the child started");
    let grandchild = read_pid(&dir.path().join("grandchild.pid")).expect("the grandchild started");
    eventually("the sleeps to be killed", || {
        !alive(child) && !alive(grandchild)
    })
    .await;
}

#[tokio::test]
async fn killing_a_turn_kills_its_running_command() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let dir = tempfile::tempdir().unwrap();
    llm.push(Reply::tools(vec![bash(
        "long",
        "echo $$ > shell.pid; sleep 300",
    )]));
    let mut stream = client.stream(in_dir(dir.path(), "user")).await.unwrap();
    let mut turn = Turn::default();
    turn.read_until(&mut stream, |e| matches!(e, Event::ToolStart(_)))
        .await;
    let pid_file = dir.path().join("shell.pid");
    eventually("the command to start", || read_pid(&pid_file).is_some()).await;
    let shell = read_pid(&pid_file).unwrap();
    assert!(alive(shell));
    client
        .kill(KillMsg {
            agent: "crab".into(),
            sender: "user".into(),
        })
        .await
        .unwrap();
    turn.read_until(&mut stream, |_| false).await;
    assert!(
        turn.end().error.contains("cancelled"),
        "{}",
        turn.end().error
    );
    eventually("the command to be killed", || !alive(shell)).await;
}

/// Waits for the pid files `names` in `dir` and returns the pids.
async fn pids(dir: &Path, names: &[&str]) -> Vec<u32> {
    let mut found = Vec::new();
    for name in names {
        let path = dir.join(name);
        eventually("a pid file", || read_pid(&path).is_some()).await;
        found.push(read_pid(&path).unwrap());
    }
    found
}

/// Children that leave the process group: a new session, a job of its
/// own with job control on, and a double fork.
const ESCAPING: &str = "setsid sleep 120 & echo $! > setsid.pid; \
    (set -m; sleep 120 & echo $! > job.pid); \
    (setsid sh -c 'sleep 120 & echo $! > orphan.pid' &); ";
const ESCAPED: [&str; 3] = ["setsid.pid", "job.pid", "orphan.pid"];

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_bash_timeout_holds_in_wall_clock_time_and_escaped_children_die_with_the_call() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let dir = tempfile::tempdir().unwrap();
    // The report's case: an escaped child holds stdout for longer than the
    // timeout, and the command itself outlives it too.
    let command = format!("{ESCAPING} sleep 120");
    let call = ToolCall::new("t", "bash", json!({"command": command, "timeout_secs": 3}));
    let started = std::time::Instant::now();
    let results = call_tools(&llm, &client, in_dir(dir.path(), "user"), vec![call]).await;
    let took = started.elapsed();
    assert!(
        results[0].is_error && results[0].output.contains("timed out after 3 s"),
        "{}",
        results[0].output
    );
    // Not the 120 s the children would take (generous for slow machines).
    assert!(took < std::time::Duration::from_secs(60), "took {took:?}");
    for pid in pids(dir.path(), &ESCAPED).await {
        assert!(!alive(pid), "{pid} outlived the call");
    }

    // A command that returns at once does not wait for what it left, and
    // leaves nothing either.
    // (Once the pid files are written: what it starts is there.)
    let command = format!(
        "{ESCAPING} while [ ! -s setsid.pid ] || [ ! -s job.pid ] || [ ! -s orphan.pid ]; do sleep 0.05; done; echo returned"
    );
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let results = call_tools(
        &llm,
        &client,
        in_dir(dir.path(), "user"),
        vec![bash("r", &command)],
    )
    .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    assert!(
        !results[0].is_error && results[0].output.contains("returned"),
        "{}",
        results[0].output
    );
    for pid in pids(dir.path(), &ESCAPED).await {
        assert!(!alive(pid), "{pid} outlived the call");
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn stopping_the_daemon_ends_running_commands_and_their_escaped_children() {
    let (llm, mut daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let dir = tempfile::tempdir().unwrap();
    let command = format!("{ESCAPING} echo $$ > shell.pid; sleep 120");
    llm.push(Reply::tools(vec![bash("long", &command)]));
    let mut stream = client.stream(in_dir(dir.path(), "user")).await.unwrap();
    let mut turn = Turn::default();
    turn.read_until(&mut stream, |e| matches!(e, Event::ToolStart(_)))
        .await;
    let mut running = pids(dir.path(), &ESCAPED).await;
    running.extend(pids(dir.path(), &["shell.pid"]).await);
    assert!(running.iter().all(|pid| alive(*pid)));
    daemon.stop().await;
    eventually("every process of the call to end", || {
        running.iter().all(|pid| !alive(*pid))
    })
    .await;
}

#[tokio::test]
async fn bash_output_is_capped_with_a_marker() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let dir = tempfile::tempdir().unwrap();
    let results = call_tools(
        &llm,
        &client,
        in_dir(dir.path(), "user"),
        vec![bash("big", "head -c 100000 /dev/zero | tr '\\0' x")],
    )
    .await;
    let output = &results[0].output;
    assert!(
        output.contains("[stdout truncated: 100000 bytes in all, the first 65536 shown]"),
        "{}",
        &output[output.len() - 200..]
    );
    assert!(output.len() < 70_000);
}

#[tokio::test]
async fn bash_is_refused_to_gateway_senders_unless_allowed_and_honours_deny_and_disabled() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let dir = tempfile::tempdir().unwrap();
    let results = call_tools(
        &llm,
        &client,
        in_dir(dir.path(), "tg:42"),
        vec![bash("g", "echo hi")],
    )
    .await;
    assert!(
        results[0].is_error && results[0].output.contains("gateway"),
        "{}",
        results[0].output
    );

    for (name, config) in [
        (
            "open",
            r#"{"bash": {"allow_gateway": true, "deny": ["rm"], "env": {"GREETING": "hola"}}}"#,
        ),
        ("nobash", r#"{"bash": {"disabled": true}}"#),
    ] {
        client
            .create_agent(CreateAgentMsg {
                name: name.into(),
                config: config.into(),
                prompt: String::new(),
            })
            .await
            .unwrap();
    }
    let mut request = in_dir(dir.path(), "tg:42");
    request.agent = "open".into();
    let results = call_tools(
        &llm,
        &client,
        request.clone(),
        vec![
            bash("g", "echo $GREETING"),
            bash("d", "ls && /bin/rm -rf x"),
        ],
    )
    .await;
    assert!(
        !results[0].is_error,
        "allowed for gateways: {}",
        results[0].output
    );
    assert!(
        results[0].output.contains("hola"),
        "env additions reach the command: {}",
        results[0].output
    );
    assert!(
        results[1].is_error && results[1].output.contains("\"rm\""),
        "{}",
        results[1].output
    );

    request.agent = "nobash".into();
    request.sender = Some("user".into());
    let before = llm.requests().len();
    let results = call_tools(&llm, &client, request, vec![bash("n", "echo hi")]).await;
    assert!(results[0].is_error, "{}", results[0].output);
    let offered = llm.requests()[before]["tools"].to_string();
    assert!(
        !offered.contains("\"bash\""),
        "bash is not offered when disabled: {offered}"
    );
}

#[tokio::test]
async fn a_zero_bash_timeout_is_refused_before_anything_runs() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let results = call_tools(
        &llm,
        &client,
        in_dir(dir.path(), "user"),
        vec![ToolCall::new(
            "z",
            "bash",
            json!({"command": "touch ran", "timeout_secs": 0}),
        )],
    )
    .await;
    assert!(
        results[0].is_error
            && results[0]
                .output
                .contains("timeout_secs must be at least 1"),
        "{}",
        results[0].output
    );
    assert!(!marker.exists(), "the command must not have run");
}

#[tokio::test]
async fn read_and_edit_work_together_and_refuse_what_is_unsafe() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("notes.txt"),
        "one\ntwo\nthree\ntwo again\nfive\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("blob.bin"), [0u8, 1, 2, 3]).unwrap();
    let edit = |id: &str, path: &str, old: &str, new: &str| {
        ToolCall::new(
            id,
            "edit",
            json!({"path": path, "old_string": old, "new_string": new}),
        )
    };
    let read = |id: &str, path: &str, extra: serde_json::Value| {
        let mut args = json!({"path": path});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        ToolCall::new(id, "read", args)
    };

    // Editing before reading is refused.
    let results = call_tools(
        &llm,
        &client,
        in_dir(dir.path(), "user"),
        vec![edit("e0", "notes.txt", "one", "ONE")],
    )
    .await;
    assert!(
        results[0].is_error && results[0].output.contains("read"),
        "{}",
        results[0].output
    );

    let results = call_tools(
        &llm,
        &client,
        in_dir(dir.path(), "user"),
        vec![
            read("r1", "notes.txt", json!({"offset": 2, "limit": 2})),
            read("r2", "blob.bin", json!({})),
            read("r3", "missing.txt", json!({})),
        ],
    )
    .await;
    assert_eq!(
        results[0].output,
        "     2\ttwo\n     3\tthree\n[lines 2-3 of 5 shown; read on with offset = 4]"
    );
    assert!(
        results[1].is_error && results[1].output.contains("binary"),
        "{}",
        results[1].output
    );
    assert!(
        results[2].is_error && results[2].output.contains("does not exist"),
        "{}",
        results[2].output
    );

    // Sequential edits in one turn: not unique, not found, then a good one.
    llm.push(Reply::tools(vec![edit("e1", "notes.txt", "two", "2")]));
    llm.push(Reply::tools(vec![edit("e2", "notes.txt", "seven", "7")]));
    llm.push(Reply::tools(vec![edit(
        "e3",
        "notes.txt",
        "three\ntwo again",
        "3\n2 again",
    )]));
    llm.push(Reply::text("edited"));
    let turn = Turn::run(&client, in_dir(dir.path(), "user")).await;
    let results: Vec<&ToolResultEvent> = turn
        .events
        .iter()
        .filter_map(|e| {
            if let Event::ToolResult(r) = e {
                Some(r)
            } else {
                None
            }
        })
        .collect();
    assert!(
        results[0].is_error && results[0].output.contains("occurs 2 times"),
        "{}",
        results[0].output
    );
    assert!(
        results[1].is_error && results[1].output.contains("not found"),
        "{}",
        results[1].output
    );
    assert!(!results[2].is_error, "{}", results[2].output);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "one\ntwo\n3\n2 again\nfive\n"
    );

    // Someone else changes the file: the next edit is refused until a re-read.
    std::fs::write(dir.path().join("notes.txt"), "changed by a person\n").unwrap();
    let results = call_tools(
        &llm,
        &client,
        in_dir(dir.path(), "user"),
        vec![edit("e4", "notes.txt", "person", "robot")],
    )
    .await;
    assert!(
        results[0].is_error && results[0].output.contains("changed since you read it"),
        "{}",
        results[0].output
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "changed by a person\n"
    );

    // Reads are per conversation: another sender must read first.
    let results = call_tools(
        &llm,
        &client,
        in_dir(dir.path(), "someone-else"),
        vec![edit("e5", "notes.txt", "person", "x")],
    )
    .await;
    assert!(
        results[0].is_error && results[0].output.contains("read"),
        "{}",
        results[0].output
    );
}

fn write_skill(home: &Path, name: &str, body: &str) {
    let dir = home.join("skills").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: The {name} skill\n---\n{body}\n"),
    )
    .unwrap();
}

#[tokio::test]
async fn skills_by_slash_and_by_tool_are_read_fresh_and_scoped() {
    let (llm, daemon) = TestDaemon::on_scripted_llm("").await;
    let client = daemon.client().await;
    write_skill(daemon.path(), "greet", "Greet the person warmly.");
    write_skill(daemon.path(), "farewell", "Say goodbye.");

    let listed: Vec<String> = client
        .list_skills(ListSkillsMsg {})
        .await
        .unwrap()
        .skills
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(listed, ["farewell", "greet"]);

    // By slash: the message that enters the history carries the skill.
    llm.push(Reply::text("Hello Alice!"));
    Turn::run(&client, message("crab", "user", "/greet Alice")).await;
    let user = llm.requests()[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    let content = user["content"].as_str().unwrap();
    assert!(
        content.starts_with("<skill name=\"greet\">\nGreet the person warmly.\n</skill>"),
        "{content}"
    );
    assert!(content.ends_with("Alice"), "{content}");
    let system = llm.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains("- greet: The greet skill"),
        "the resource hints list skills: {system}"
    );

    // By tool, edited on disk in between: the new text is used at once.
    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "go"),
        vec![ToolCall::new("s1", "skill", json!({"name": "greet"}))],
    )
    .await;
    assert!(
        results[0].output.contains("Greet the person warmly."),
        "{}",
        results[0].output
    );
    write_skill(daemon.path(), "greet", "Greet the person in French.");
    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "go"),
        vec![ToolCall::new("s2", "skill", json!({"name": "greet"}))],
    )
    .await;
    assert!(
        results[0].output.contains("in French"),
        "{}",
        results[0].output
    );

    // Fuzzy listing and the path guard.
    let results = call_tools(
        &llm,
        &client,
        message("crab", "user", "go"),
        vec![
            ToolCall::new("s3", "skill", json!({"name": "gree"})),
            ToolCall::new("s4", "skill", json!({"name": "../greet"})),
        ],
    )
    .await;
    assert!(
        results[0].is_error && results[0].output.contains("- greet"),
        "{}",
        results[0].output
    );
    assert!(results[1].is_error, "{}", results[1].output);

    // Outside the scope: refused by tool, not expanded by slash.
    client
        .create_agent(CreateAgentMsg {
            name: "polite".into(),
            config: r#"{"skills": ["farewell"]}"#.into(),
            prompt: String::new(),
        })
        .await
        .unwrap();
    let mut scoped = message("polite", "user", "go");
    let results = call_tools(
        &llm,
        &client,
        scoped.clone(),
        vec![ToolCall::new("s5", "skill", json!({"name": "greet"}))],
    )
    .await;
    assert!(
        results[0].is_error && results[0].output.contains("outside this agent's scope"),
        "{}",
        results[0].output
    );
    let before = llm.requests().len();
    llm.push(Reply::text("ok"));
    scoped.content = "/greet Bob".into();
    Turn::run(&client, scoped).await;
    let request = &llm.requests()[before];
    let last_user = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(last_user["content"], "/greet Bob");
    let system = request["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("<scope>") && system.contains("skills: farewell"),
        "{system}"
    );
    assert!(
        !system.contains("- greet:"),
        "out-of-scope skills are not hinted: {system}"
    );
}

#[tokio::test]
async fn duplicate_skills_are_logged_at_start_and_reload_but_not_on_every_use() {
    let llm = ScriptedLlm::start().await;
    let folders = tempfile::tempdir().unwrap();
    let (first, second) = (folders.path().join("first"), folders.path().join("second"));
    for (folder, body) in [(&first, "Say hi."), (&second, "Say hello.")] {
        std::fs::create_dir_all(folder.join("greet")).unwrap();
        std::fs::write(
            folder.join("greet/SKILL.md"),
            format!("---\nname: greet\n---\n{body}\n"),
        )
        .unwrap();
    }
    let config = format!(
        "skill_dirs = [{:?}, {:?}]\n{}",
        first.display().to_string(),
        second.display().to_string(),
        TestDaemon::config_for(&llm.base_url())
    );
    let daemon = TestDaemon::start(daemon_binary(), &config).await;
    let warning = format!(
        "skill \"greet\" in {} is ignored: {} has the same name",
        second.join("greet/SKILL.md").display(),
        first.join("greet/SKILL.md").display()
    );
    let count = |log: String| log.matches(&warning).count();
    eventually("the duplicate warning at start", || {
        count(daemon.log()) == 1
    })
    .await;

    // Using skills walks the folders again; the warning is not repeated.
    let client = daemon.client().await;
    client.list_skills(ListSkillsMsg {}).await.unwrap();
    llm.push(Reply::tools(vec![ToolCall::new(
        "s",
        "skill",
        json!({"name": "greet"}),
    )]));
    llm.push(Reply::text("hi"));
    let turn = Turn::run(&client, message("crab", "user", "greet me")).await;
    assert!(
        turn.tool_results()[0].output.contains("Say hi."),
        "the first folder wins: {}",
        turn.tool_results()[0].output
    );
    assert_eq!(count(daemon.log()), 1, "{}", daemon.log());

    // A reload reports the skill folders afresh.
    client.reload(ReloadMsg {}).await.unwrap();
    eventually("the duplicate warning after a reload", || {
        count(daemon.log()) == 2
    })
    .await;
}
