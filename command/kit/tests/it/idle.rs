//! A component built on the kit costs next to nothing while idle: serving
//! MCP and linked to an idle daemon, it uses at most 1% of a core.
//!
//! The window is 30 s: CPU time is counted in 10 ms ticks, so 1% of 30 s
//! is 30 ticks, and a periodic wake-up worth worrying about (a 100 ms poll
//! alone costs several ticks per second with the runtime around it) shows
//! well above that. It runs alongside the other tests, which only makes the
//! bound harder to meet.

use std::time::Duration;

use crabtalk_home::PortFile;
use crabtalk_testkit::cpu::measure_cpu;
use crabtalk_testkit::{TestDaemon, daemon_binary};

use crate::support::{Running, TIMEOUT, probe_binary, probe_service, wait_for};

const WINDOW: Duration = Duration::from_secs(30);

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_component_uses_at_most_one_percent_of_a_core() {
    let daemon = TestDaemon::start(daemon_binary(), "[transport]\ntcp = \"off\"\n").await;
    let home = daemon.home();
    let config = home.component_config("probe").unwrap();
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "greeting = \"idle\"\n").unwrap();
    let probe = Running::start(&probe_binary(), &home, &daemon.path().join("probe.log"));
    let port_file = probe_service().port_file(&home);
    wait_for("the port file", TIMEOUT, || PortFile::read(&port_file).ok());
    tokio::task::block_in_place(|| probe.line_matching("subscription", |l| l == "subscribed"));

    let used = measure_cpu(probe.child.id(), WINDOW).await.unwrap();
    assert!(
        used.percent_of_a_core() <= 1.0,
        "the idle component used {:?} of CPU in {:?} ({:.2}% of a core)",
        used.cpu,
        used.wall,
        used.percent_of_a_core()
    );
}
