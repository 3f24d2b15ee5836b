//! A supervisor host: the smallest program that can supervise services of
//! the `process` backend. `ProcessManager::supervised_by` runs it as
//! `supervisor <arguments>` (the arguments `supervisor::arguments` makes),
//! and it hands them to `supervisor::main`. `crabup` does the same in its
//! hidden `supervise` command; the backend's tests run this one.

fn main() -> std::process::ExitCode {
    #[cfg(unix)]
    {
        crabtalk_command::manager::process::supervisor::main(std::env::args_os().skip(1))
    }
    #[cfg(not(unix))]
    {
        eprintln!("supervisor: the process backend supervises services on Unix only");
        std::process::ExitCode::FAILURE
    }
}
