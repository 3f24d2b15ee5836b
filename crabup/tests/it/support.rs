//! A sandbox per test: a temp `CRABTALK_HOME`, a temp `CARGO_HOME`, the
//! process backend forced, no release server (`CRABUP_DIST_SERVER` is an
//! empty local folder unless a test serves one), and optionally a `cargo` shim that records its
//! arguments instead of installing anything.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

pub(crate) const TIMEOUT: Duration = Duration::from_secs(60);

/// The variable that turns on the slow tests (a real `cargo install`).
pub(crate) const SLOW_TESTS_ENV: &str = "CRABTALK_SLOW_TESTS";

/// Whether the slow tests run; says so on stderr when they do not.
pub(crate) fn slow_tests_enabled(test: &str) -> bool {
    let enabled = std::env::var_os(SLOW_TESTS_ENV).is_some_and(|v| !v.is_empty() && v != "0");
    if !enabled {
        eprintln!("{test}: skipped (slow; set {SLOW_TESTS_ENV}=1 to run it, as CI does)");
    }
    enabled
}

pub(crate) struct Sandbox {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub cargo_home: PathBuf,
    /// Folders put before the inherited PATH.
    pub path_prefix: Vec<PathBuf>,
    /// Replace PATH entirely (to hide cargo).
    pub path_override: Option<String>,
    /// `CRABUP_DIST_SERVER`; by default a local folder with no releases,
    /// so no test reaches the network and `pull` builds with cargo (the
    /// shim, when there is one).
    pub dist_server: Option<String>,
}

/// Services a test started with the process backend end with the test,
/// passed or failed: each one's process group is killed, so no test leaves
/// a fake service (or a real daemon) running on the machine.
impl Drop for Sandbox {
    fn drop(&mut self) {
        let Ok(entries) = std::fs::read_dir(self.home.join("run")) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "pid") {
                continue;
            }
            let Some(file) = crabtalk_command::manager::process::PidFile::read(&path) else {
                continue;
            };
            // The supervisor first (it would start the service again),
            // with its session's process group, which holds the service.
            for pid in file.supervisor.into_iter().chain([file.pid]) {
                let pid = pid as i32;
                // SAFETY: signals to a process group and a process this
                // sandbox's services started (the process backend runs
                // each supervisor, or unsupervised service, as the leader
                // of its own session).
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("crabtalk-home");
        let cargo_home = dir.path().join("cargo-home");
        std::fs::create_dir_all(cargo_home.join("bin")).unwrap();
        Self {
            dir,
            home,
            cargo_home,
            path_prefix: Vec::new(),
            path_override: None,
            dist_server: None,
        }
    }

    /// Puts a `cargo` first on PATH that appends its arguments (one per
    /// line, then `--`) to [`Sandbox::cargo_calls`]'s file; its `cargo
    /// build` makes each family binary as a fake service and says so in
    /// cargo's JSON messages.
    pub(crate) fn with_cargo_shim(mut self) -> Self {
        let shim = self.dir.path().join("shim");
        std::fs::create_dir_all(&shim).unwrap();
        let log = self.dir.path().join("cargo-calls");
        let built = self.dir.path().join("shim-target/release");
        script(
            &shim.join("cargo"),
            &format!(
                "for a in \"$@\"; do printf '%s\\n' \"$a\" >> '{}'; done\necho -- >> '{}'\n{}",
                log.display(),
                log.display(),
                build_branch(&built)
            ),
        );
        self.path_prefix.push(shim);
        self
    }

    /// Like [`Sandbox::with_cargo_shim`], and `cargo install <crate>` also
    /// puts a `$CARGO_HOME/bin/<crate>` that runs until SIGTERM.
    pub(crate) fn with_installing_cargo_shim(self) -> Self {
        let sandbox = self.with_cargo_shim();
        let shim = sandbox.path_prefix.last().unwrap().join("cargo");
        let recorder = std::fs::read_to_string(&shim).unwrap();
        let recorder = recorder.strip_prefix("#!/bin/sh\n").unwrap();
        script(
            &shim,
            &format!(
                "{recorder}if [ \"$1\" = install ]; then\n  bin=\"$CARGO_HOME/bin/$2\"\n  printf '#!/bin/sh\\n{NO_CHECK_PRINTF}trap \"exit 0\" TERM\\nwhile :; do sleep 0.05; done\\n' > \"$bin\"\n  chmod +x \"$bin\"\nfi\n"
            ),
        );
        sandbox
    }

    /// Every recorded cargo call, as its arguments.
    pub(crate) fn cargo_calls(&self) -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(self.dir.path().join("cargo-calls")).unwrap_or_default();
        text.split("--\n")
            .filter(|call| !call.is_empty())
            .map(|call| call.lines().map(str::to_owned).collect())
            .collect()
    }

    pub(crate) fn path(&self) -> String {
        if let Some(path) = &self.path_override {
            return path.clone();
        }
        let mut dirs = self.path_prefix.clone();
        dirs.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        std::env::join_paths(dirs)
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        self.command_of(Path::new(env!("CARGO_BIN_EXE_crabup")), args)
    }

    /// [`Sandbox::command`] of another crabup executable (a copy the test
    /// installed).
    pub(crate) fn command_of(&self, crabup: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(crabup);
        command
            .args(args)
            .env("CRABTALK_HOME", &self.home)
            .env("CARGO_HOME", &self.cargo_home)
            .env("CRABTALK_SERVICE_MANAGER", "process")
            .env("PATH", self.path())
            .env(
                "CRABUP_DIST_SERVER",
                self.dist_server.clone().unwrap_or_else(|| {
                    format!("file://{}", self.dir.path().join("no-releases").display())
                }),
            )
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        command
    }

    /// Runs crabup to completion.
    pub(crate) fn crabup(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs crabup and fails the test unless it succeeds; returns stdout.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.crabup(args);
        assert!(
            out.status.success(),
            "crabup {args:?} failed ({}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// `crabup ps --json`, as JSON (its exit status says whether all that
    /// should run does: 0, or 3 when not).
    pub(crate) fn ps(&self) -> Vec<serde_json::Value> {
        let out = self.crabup(&["ps", "--json"]);
        assert!(
            matches!(out.status.code(), Some(0 | 3)),
            "crabup ps failed ({}): {}",
            out.status,
            stderr(&out)
        );
        serde_json::from_str(&stdout(&out)).unwrap()
    }

    pub(crate) fn ps_row(&self, name: &str) -> serde_json::Value {
        self.ps()
            .into_iter()
            .find(|row| row["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in ps"))
    }

    /// Installs an executable script as `$CARGO_HOME/bin/<name>`.
    pub(crate) fn fake_binary(&self, name: &str, body: &str) -> PathBuf {
        let path = self.cargo_home.join("bin").join(name);
        script(&path, &format!("{NO_CHECK}{body}"));
        path
    }

    pub(crate) fn run_files(&self) -> Vec<String> {
        std::fs::read_dir(self.home.join("run"))
            .map(|dir| {
                dir.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `target/<profile>/<binary>` of this build (`cargo test --workspace`
/// builds every binary next to the test's folder).
pub(crate) fn built(binary: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join(binary);
    assert!(
        path.exists(),
        "{} is not built; run the tests through cargo test --workspace",
        path.display()
    );
    path
}

impl Sandbox {
    /// Puts the built `binary` in `$CARGO_HOME/bin`, as `cargo install`
    /// would.
    pub(crate) fn install_built(&self, binary: &str) {
        std::os::unix::fs::symlink(built(binary), self.cargo_home.join("bin").join(binary))
            .unwrap();
    }

    /// Writes `config/<file>` in the home.
    pub(crate) fn config(&self, file: &str, text: &str) -> PathBuf {
        let path = self.home.join("config").join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The pid file of `name`, when there is one.
    pub(crate) fn pid_file(
        &self,
        name: &str,
    ) -> Option<crabtalk_command::manager::process::PidFile> {
        crabtalk_command::manager::process::PidFile::read(
            &self.home.join("run").join(format!("{name}.pid")),
        )
    }
}

/// Sends `signal` to `pid`.
pub(crate) fn kill(pid: u32, signal: i32) {
    // SAFETY: kill(2) on a process a test's sandbox started.
    unsafe { libc::kill(pid as i32, signal) };
}

/// The shim's `cargo build`: each family binary made in `out` as a fake
/// service (runs until SIGTERM), announced on stdout as cargo's JSON
/// messages announce what they built.
fn build_branch(out: &Path) -> String {
    let version = env!("CARGO_PKG_VERSION");
    let out = out.display();
    format!(
        "if [ \"$1\" = build ]; then\n  mkdir -p '{out}'\n  for b in crabup crabtalk-tui crabtalkd crabtalk-telegram crabtalk-search crabtalk-cron; do\n    printf '#!/bin/sh\\n{NO_CHECK_PRINTF}trap \"exit 0\" TERM\\nwhile :; do sleep 0.05; done\\n' > '{out}'/$b\n    chmod +x '{out}'/$b\n    printf '{{\"reason\":\"compiler-artifact\",\"package_id\":\"path+file:///shim#%s@{version}\",\"target\":{{\"kind\":[\"bin\"],\"name\":\"%s\"}},\"executable\":\"%s\"}}\\n' $b $b '{out}'/$b\n  done\nfi\n"
    )
}

/// What a fake service binary does with `check` (which crabup runs before
/// it touches the daemon): what a binary without that command does.
const NO_CHECK: &str = "case \" $* \" in *\" check \"*) echo \"error: unrecognized subcommand 'check'\" >&2; exit 2;; esac\n";

/// [`NO_CHECK`] as a `printf` format (a shell script writes the fakes
/// that `cargo install` puts in place).
const NO_CHECK_PRINTF: &str = "case \" $* \" in *\" check \"*) exit 2;; esac\\n";

pub(crate) fn script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Polls `condition` from this thread until it returns `Some`.
pub(crate) use crabtalk_testkit::wait_for;

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
