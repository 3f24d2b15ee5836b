//! Shared by the integration tests: the echo component binary and polling.

use std::path::PathBuf;
use std::time::Duration;

/// The kit's `echo_component` example (a real component), which
/// `cargo test --workspace` builds next to the test binaries.
pub(crate) fn echo_binary() -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let profile_dir = deps.parent().unwrap().parent().unwrap();
    let path = profile_dir
        .join("examples")
        .join(format!("echo_component{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} is missing: run the tests with `cargo test --workspace`, or build it first with \
         `cargo build -p crabtalk-kit --example echo_component`",
        path.display()
    );
    path
}

/// This crate's `supervisor` example: the smallest supervisor host (what
/// crabup's hidden `supervise` command is), built by `cargo test`.
pub(crate) fn supervisor_binary() -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let profile_dir = deps.parent().unwrap().parent().unwrap();
    let path = profile_dir
        .join("examples")
        .join(format!("supervisor{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p crabtalk-command --example supervisor`",
        path.display()
    );
    path
}

/// Polls `condition` from this thread until it returns `Some`.
pub(crate) use crabtalk_testkit::wait_for;

pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);
