//! A component built on the kit (`main_mcp`), run as its own process: it answers an
//! `rmcp` client and `GET /health` at the port its port file names, and
//! removes the port file on SIGTERM and SIGINT; a crash (SIGKILL) leaves a
//! file readers see as stale. Its main loads `$CRABTALK_HOME/env` itself.

use std::process::{Command, Stdio};

use crabtalk_command::health;
use crabtalk_command::liveness::PortProbe;
use crabtalk_home::{Home, PortFile};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;

use crate::support::{TIMEOUT, echo_binary, echo_service, signal, spawn_echo, wait_for};

/// Runs the echo component until it has announced itself, stops it with
/// SIGTERM and returns its stderr.
fn run_echo_once(home: &Home, env: &[(&str, &str)]) -> String {
    let mut child = Command::new(echo_binary())
        .arg("run")
        .env("CRABTALK_HOME", home.root())
        .envs(env.iter().copied())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let path = echo_service().port_file(home);
    wait_for("the port file", TIMEOUT, || PortFile::read(&path).ok());
    signal(&child, libc::SIGTERM);
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(child.wait().unwrap().success(), "{stderr}");
    stderr
}

#[test]
fn answers_tools_list_at_its_port_and_removes_the_port_file_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let mut child = spawn_echo(&home);
    let path = echo_service().port_file(&home);
    let file = wait_for("the port file", TIMEOUT, || PortFile::read(&path).ok());
    assert_eq!(file.pid, Some(child.id()));

    crabtalk_kit::install_ring();
    let tools = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let transport = StreamableHttpClientTransport::from_config(
            crabtalk_kit::mcp::owner_client_config(&home, file.port).unwrap(),
        );
        let client = ().serve(transport).await.expect("MCP handshake");
        let tools = client.list_all_tools().await.expect("tools/list");
        client.cancel().await.unwrap();
        tools
    });
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, ["echo"]);
    assert!(tools[0].input_schema.get("properties").is_some());
    assert!(PortProbe::check(&path).is_live());
    let token = crabtalk_home::token::read_token(&home).unwrap();
    let health = health::check(file.port, Some(&token), health::HEALTH_TIMEOUT).unwrap();
    assert_eq!((health.service.as_str(), health.pid), ("echo", child.id()));

    signal(&child, libc::SIGTERM);
    let status = child.wait().unwrap();
    assert!(status.success(), "exited with {status}");
    assert!(!path.exists(), "the port file outlived SIGTERM");
}

#[test]
fn a_client_connecting_leaves_no_mcp_session_dump_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let mut child = Command::new(echo_binary())
        .arg("run")
        .env("CRABTALK_HOME", home.root())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let path = echo_service().port_file(&home);
    let file = wait_for("the port file", TIMEOUT, || PortFile::read(&path).ok());
    crabtalk_kit::install_ring();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let transport = StreamableHttpClientTransport::from_config(
            crabtalk_kit::mcp::owner_client_config(&home, file.port).unwrap(),
        );
        let client = ().serve(transport).await.expect("MCP handshake");
        client.list_all_tools().await.expect("tools/list");
        client.cancel().await.unwrap();
    });
    signal(&child, libc::SIGTERM);
    let mut log = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut log).unwrap();
    assert!(child.wait().unwrap().success(), "{log}");
    // rmcp's `info` dumps the whole client description on every session.
    assert!(!log.contains("peer_info"), "{log}");
    assert!(log.contains("serving MCP at"), "{log}");
}

#[test]
fn a_killed_component_leaves_a_port_file_seen_as_stale() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let mut child = spawn_echo(&home);
    let path = echo_service().port_file(&home);
    wait_for("a live port file", TIMEOUT, || {
        PortProbe::check(&path).is_live().then_some(())
    });
    signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    match PortProbe::check(&path) {
        PortProbe::Stale { reason, .. } => assert!(reason.contains("gone"), "{reason}"),
        other => panic!("expected stale, got {other:?}"),
    }
}

#[test]
fn the_component_cli_refuses_unknown_commands_with_usage_exit_code() {
    let out = Command::new(echo_binary()).arg("start").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let help = Command::new(echo_binary()).arg("--help").output().unwrap();
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("run") && text.contains("--verbose"), "{text}");
}

#[test]
fn removes_the_port_file_on_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let mut child = spawn_echo(&home);
    let path = echo_service().port_file(&home);
    wait_for("a live port file", TIMEOUT, || {
        PortProbe::check(&path).is_live().then_some(())
    });
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert!(status.success(), "exited with {status}");
    assert!(!path.exists(), "the port file outlived SIGINT");
}

#[test]
fn the_component_loads_the_env_file_without_overriding_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    std::fs::write(
        home.env_file(),
        "# keys\nECHO_FROM_FILE='yes'\nECHO_ALREADY_SET=from-file\n",
    )
    .unwrap();
    let stderr = run_echo_once(&home, &[("ECHO_ALREADY_SET", "from-env")]);
    let loaded = format!("loaded ECHO_FROM_FILE from {}", home.env_file().display());
    assert!(stderr.contains(&loaded), "{stderr}");
    assert!(!stderr.contains("ECHO_ALREADY_SET"), "{stderr}");
}

#[test]
fn a_malformed_env_file_is_a_config_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    std::fs::write(home.env_file(), "GOOD=1\n\nBAD LINE\n").unwrap();
    let out = Command::new(echo_binary())
        .arg("run")
        .env("CRABTALK_HOME", home.root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:3:", home.env_file().display())),
        "{stderr}"
    );
    assert!(!echo_service().port_file(&home).exists());
}
