//! Real MCP hosts for the tests of `crabtalkd mcp`: the official MCP
//! Python SDK's stdio client ([`PythonHost`], driving
//! `python/mcp_host.py`) and the MCP inspector's CLI ([`Inspector`]).
//!
//! Neither is part of the Rust toolchain. A test that needs one and does
//! not find it says why on stderr and passes — unless
//! `CRABTALK_REQUIRE_MCP_HOSTS` is set (as `.ci/run` does once it has
//! installed them), where a missing host fails the test.
//!
//! - Python: `python3` (or `$CRABTALK_PYTHON`) with the `mcp` package:
//!   `python3 -m pip install mcp`.
//! - Inspector: `npx` (Node.js 18 or newer), which fetches
//!   `@modelcontextprotocol/inspector` from the npm registry the first
//!   time; `$CRABTALK_MCP_INSPECTOR` may name an installed
//!   `mcp-inspector-cli` instead.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

/// Set to fail, rather than skip, a test whose host is missing.
pub const REQUIRE_ENV: &str = "CRABTALK_REQUIRE_MCP_HOSTS";

/// The inspector version the tests run through `npx`.
pub const INSPECTOR_PACKAGE: &str = "@modelcontextprotocol/inspector@2.12.0";

/// How long fetching the inspector with `npx` may take on a first run.
const FETCH_PATIENCE: Duration = Duration::from_secs(300);

/// Whether a missing host fails the test.
fn required() -> bool {
    std::env::var_os(REQUIRE_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// `Err(reason)` for a missing host: printed (the test then passes), or a
/// panic where hosts are required.
fn missing<T>(test: &str, reason: String) -> Option<T> {
    assert!(
        !required(),
        "{test}: {reason} ({REQUIRE_ENV} is set, so a missing MCP host fails the test)"
    );
    eprintln!("{test}: skipped: {reason}");
    None
}

/// The Python SDK's client, through `python/mcp_host.py`.
pub struct PythonHost {
    python: PathBuf,
}

impl PythonHost {
    /// Python with the `mcp` package, or `None` (said on stderr) when this
    /// machine has none.
    pub fn find(test: &str) -> Option<Self> {
        let python = std::env::var_os("CRABTALK_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("python3"));
        let probe = std::process::Command::new(&python)
            .args([
                "-c",
                "import mcp, importlib.metadata as m; print(m.version('mcp'))",
            ])
            .stdin(Stdio::null())
            .output();
        match probe {
            Err(err) => missing(
                test,
                format!(
                    "{} cannot be run ({err}); install Python 3.10 or newer, then `python3 -m pip install mcp`",
                    python.display()
                ),
            ),
            Ok(out) if !out.status.success() => missing(
                test,
                format!(
                    "{} has no `mcp` package; `{} -m pip install mcp` installs the MCP Python SDK \
                     (or set CRABTALK_PYTHON to a Python that has it, such as a venv's)",
                    python.display(),
                    python.display()
                ),
            ),
            Ok(_) => Some(Self { python }),
        }
    }

    /// The script.
    pub fn script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("python/mcp_host.py")
    }

    /// Runs `scenario` against `bridge mcp` in `home` with more `args`; the
    /// JSON it reports. Panics with the script's output when it fails.
    pub async fn run(&self, scenario: &str, bridge: &Path, home: &Path, args: &[&str]) -> Value {
        let mut command = tokio::process::Command::new(&self.python);
        command
            .arg(Self::script())
            .arg(scenario)
            .arg("--bridge")
            .arg(bridge)
            .arg("--home")
            .arg(home)
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let out = crate::within(&format!("mcp_host.py {scenario}"), command.output())
            .await
            .expect("run mcp_host.py");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "mcp_host.py {scenario} failed ({}):\n{stdout}\n{stderr}",
            out.status
        );
        let last = stdout.lines().last().unwrap_or_default();
        serde_json::from_str(last).unwrap_or_else(|err| {
            panic!("mcp_host.py printed no JSON ({err}):\n{stdout}\n{stderr}")
        })
    }
}

/// The MCP inspector's CLI (`npx @modelcontextprotocol/inspector --cli`).
pub struct Inspector {
    command: Vec<String>,
}

impl Inspector {
    /// The inspector, or `None` (said on stderr) when it cannot be run.
    pub fn find(test: &str) -> Option<Self> {
        if let Some(cli) = std::env::var_os("CRABTALK_MCP_INSPECTOR") {
            return Some(Self {
                command: vec![cli.to_string_lossy().into_owned()],
            });
        }
        let npx = std::process::Command::new("npx")
            .arg("--version")
            .stdin(Stdio::null())
            .output();
        match npx {
            Ok(out) if out.status.success() => Some(Self {
                command: vec![
                    "npx".into(),
                    "--yes".into(),
                    INSPECTOR_PACKAGE.into(),
                    "--cli".into(),
                ],
            }),
            _ => missing(
                test,
                "npx cannot be run; install Node.js 18 or newer (npx fetches the MCP inspector)"
                    .into(),
            ),
        }
    }

    /// Runs the inspector's CLI on `bridge mcp` in `home` with `args`
    /// (`--method tools/list`, …); its JSON answer, or `None` (said on
    /// stderr) when npm could not fetch the inspector.
    pub async fn run(
        &self,
        test: &str,
        bridge: &Path,
        home: &Path,
        args: &[&str],
    ) -> Option<Value> {
        let mut command = tokio::process::Command::new(&self.command[0]);
        command
            .args(&self.command[1..])
            .arg("-e")
            .arg(format!("CRABTALK_HOME={}", home.display()))
            .arg(bridge)
            .arg("mcp")
            .args(args)
            .env("CRABTALK_HOME", home)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let out = tokio::time::timeout(FETCH_PATIENCE, command.output())
            .await
            .unwrap_or_else(|_| panic!("the MCP inspector took longer than {FETCH_PATIENCE:?}"))
            .expect("run the MCP inspector");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success()
            && [
                "ENOTFOUND",
                "ETIMEDOUT",
                "EAI_AGAIN",
                "ECONNREFUSED",
                "E404",
                "npm error",
            ]
            .iter()
            .any(|code| stderr.contains(code))
        {
            return missing(
                test,
                format!(
                    "npm could not fetch {INSPECTOR_PACKAGE}: {}",
                    stderr.lines().last().unwrap_or_default()
                ),
            );
        }
        assert!(
            out.status.success(),
            "the MCP inspector failed ({}):\n{stdout}\n{stderr}",
            out.status
        );
        Some(serde_json::from_str(&stdout).unwrap_or_else(|err| {
            panic!("the MCP inspector printed no JSON ({err}):\n{stdout}\n{stderr}")
        }))
    }
}
