//! Measures what a component built on the kit costs: time from spawn to
//! its port file, resident memory idle and after serving MCP sessions, and
//! that the port file is gone after SIGTERM.
//!
//! ```sh
//! cargo build --release -p crabtalk-kit --examples
//! target/release/examples/component_footprint 20
//! ```
//!
//! It runs the `echo_component` example next to it, N times, each in a
//! fresh temp `CRABTALK_HOME`, and opens 50 MCP sessions (initialize +
//! `tools/list`) with the rmcp client against each.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crabtalk_home::PortFile;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;

const SESSIONS: usize = 50;

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024.0
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn echo_binary() -> PathBuf {
    let me = std::env::current_exe().unwrap();
    me.with_file_name(format!("echo_component{}", std::env::consts::EXE_SUFFIX))
}

fn wait_for_port_file(path: &Path) -> PortFile {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(file) = PortFile::read(path) {
            return file;
        }
        assert!(
            Instant::now() < deadline,
            "no port file at {}",
            path.display()
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn main() {
    let runs: usize = std::env::args().nth(1).map_or(20, |n| n.parse().unwrap());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (mut starts, mut idle, mut served) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let home = tempfile::tempdir().unwrap();
        let port_file = home.path().join("run").join("echo.port");
        let crab_home = crabtalk_home::Home::new(home.path());
        let started = Instant::now();
        let mut child = Command::new(echo_binary())
            .arg("run")
            .env("CRABTALK_HOME", home.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let file = wait_for_port_file(&port_file);
        starts.push(started.elapsed().as_secs_f64() * 1000.0);
        std::thread::sleep(Duration::from_millis(200)); // let it settle before measuring
        idle.push(rss_mib(child.id()));
        runtime.block_on(async {
            for _ in 0..SESSIONS {
                let config = crabtalk_kit::mcp::owner_client_config(&crab_home, file.port).unwrap();
                let client =
                    ().serve(StreamableHttpClientTransport::from_config(config))
                        .await
                        .unwrap();
                assert_eq!(client.list_all_tools().await.unwrap().len(), 1);
                client.cancel().await.unwrap();
            }
        });
        served.push(rss_mib(child.id()));
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        assert!(child.wait().unwrap().success());
        assert!(!port_file.exists(), "port file left after SIGTERM");
    }
    println!("runs: {runs}, {SESSIONS} MCP sessions each");
    println!("spawn to port file: p50 {:.1} ms", median(&mut starts));
    println!("RSS idle: p50 {:.1} MiB", median(&mut idle));
    println!(
        "RSS after {SESSIONS} sessions: p50 {:.1} MiB",
        median(&mut served)
    );
}
