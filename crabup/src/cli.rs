//! The command line.

// The doc comments in this module are the `--help` text, where `<name>`
// is a placeholder and `[table]` a TOML table, not HTML or a link.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Install crabtalk binaries and run them as services.
///
/// crabup installs the binaries into $CARGO_HOME/bin — prebuilt and
/// checked from the project's releases, or built with cargo — and runs
/// each service under this machine's service manager: launchd on macOS,
/// systemd user units on Linux, Task Scheduler on Windows, or plain
/// background processes where none runs (containers, CI). Every service
/// logs to $CRABTALK_HOME/logs/<name>.log (CRABTALK_HOME defaults to
/// ~/.crabtalk).
#[derive(Debug, Parser)]
#[command(
    name = "crabup",
    version,
    after_help = "Services: daemon, telegram, search, cron (and any crabtalk-<name> component).\n\
                  Examples:\n  crabup pull daemon && crabup daemon start\n  crabup ps\n  crabup daemon logs -f\n\n\
                  Environment: CRABTALK_HOME (the home, default ~/.crabtalk), CARGO_HOME (binaries go\n\
                  to $CARGO_HOME/bin, default ~/.cargo), CRABUP_DIST_SERVER (the release server, default\n\
                  the project's GitHub releases), CRABUP_HTTP_TIMEOUT_SECS (how long a silent release\n\
                  server is waited for, default 30), CRABTALK_SERVICE_MANAGER=process|systemd|launchd|\n\
                  schtasks (force a service manager), CRABUP_READY_TIMEOUT_SECS (how long start waits\n\
                  for a service to announce its port, default 15)."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Install crabtalk binaries: prebuilt from the release, or built with
    /// cargo.
    ///
    /// Names are short names (daemon, tui, telegram, search, cron), the
    /// family's crate names, or crabup. Each is installed at crabup's own
    /// version (the family speaks one protocol) from the release server
    /// (the project's GitHub releases, or CRABUP_DIST_SERVER): the archive
    /// for this platform is downloaded, checked against the release's
    /// SHA-256, and put in $CARGO_HOME/bin. Without an archive for this
    /// platform, or with --from-source, --features, --path or --git, cargo
    /// builds it instead. Any other crate only with --third-party (passed
    /// to `cargo install` as is). A running service keeps running the old
    /// binary until you restart it.
    Pull(PullArgs),
    /// Stop and unregister a service, then remove its binary (`cargo
    /// uninstall` for one cargo installed).
    ///
    /// Data and config under $CRABTALK_HOME stay.
    Rm(RmArgs),
    /// Bring every installed crabtalk binary to crabup's own version:
    /// release installs from the release, checkout builds rebuilt from
    /// their checkout, cargo installs reinstalled with their features and
    /// source.
    Update,
    /// Show installed crabtalk binaries with their versions and where they
    /// came from (crabup's and cargo's install records in $CARGO_HOME, or
    /// PATH), marking those that differ from crabup's own version.
    List,
    /// crabup itself: `crabup self update` replaces this crabup with the
    /// release's, checked the same way as `pull`.
    #[command(name = "self")]
    SelfCmd(SelfArgs),
    /// Show every crabtalk service: state, pid, port, uptime and health.
    ///
    /// State comes from the service manager (or the pid); a port file whose
    /// process is gone or whose port does not answer is shown as stale.
    Ps(PsArgs),
    /// Install and start the family: the daemon, cron, search, and telegram
    /// once $CRABTALK_HOME/config/telegram.toml exists; also installs
    /// crabtalk-tui and crabup itself. Ends with the `ps` table and the
    /// command to type next.
    ///
    /// With --path every program is built from the checkout in one
    /// `cargo build --release --workspace --bins` (one feature resolution,
    /// every shared dependency compiled once; what `cargo build --release
    /// --workspace --bins` already built is reused), installed into
    /// $CARGO_HOME/bin, and running services are restarted on the new
    /// binaries. Without it, only what is missing is installed, prebuilt
    /// from the release at crabup's own version.
    Up(UpArgs),
    /// Check this machine: cargo, PATH, the service manager, linger, stale
    /// files, the daemon, provider keys, the MCP bridge.
    Doctor,
    /// Use your agents from an MCP host (Claude Desktop, Claude Code,
    /// Cursor, Zed) through `crabtalkd mcp`.
    Mcp(McpArgs),
    /// The daemon (crabtalkd).
    Daemon(ServiceArgs),
    /// The Telegram gateway (crabtalk-telegram).
    Telegram(ServiceArgs),
    /// The meta-search MCP service (crabtalk-search).
    Search(ServiceArgs),
    /// The scheduler (crabtalk-cron).
    Cron(ServiceArgs),
    /// Supervise one service of the process backend (what `start` runs in
    /// the background there; not for people to type).
    #[command(hide = true)]
    Supervise(SuperviseArgs),
    /// Any other component: `crabup <name> start` runs crabtalk-<name>.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// `crabup supervise …`: the arguments the process backend passes.
#[derive(Debug, Args)]
pub(crate) struct SuperviseArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub(crate) struct PullArgs {
    /// What to install: daemon, tui, telegram, search, cron (or their crate
    /// names).
    #[arg(required = true)]
    pub names: Vec<String>,
    /// Also accept names outside the crabtalk family: crates someone else
    /// publishes on crates.io, installed with `cargo install` (their build
    /// scripts run as you).
    #[arg(long)]
    pub third_party: bool,
    /// Install this version (cargo's --version) instead of the one that
    /// matches crabup's own; a different version is installed with a
    /// warning.
    #[arg(long, conflicts_with_all = ["path", "git"])]
    pub version: Option<String>,
    /// Install from a local checkout (a package or a workspace holding it).
    #[arg(long, value_name = "DIR", conflicts_with = "git")]
    pub path: Option<PathBuf>,
    /// Install from a git repository holding the crabtalk workspace.
    #[arg(long, value_name = "URL")]
    pub git: Option<String>,
    /// With --git: the commit, tag or branch to install.
    #[arg(long, value_name = "REV", requires = "git")]
    pub rev: Option<String>,
    /// Cargo features to enable (comma or space separated, repeatable);
    /// builds from source (release binaries have the default features).
    #[arg(long, short = 'F', value_name = "FEATURES")]
    pub features: Vec<String>,
    /// Build with `cargo install` from crates.io instead of downloading the
    /// release's prebuilt binary.
    #[arg(long, conflicts_with_all = ["path", "git"])]
    pub from_source: bool,
}

#[derive(Debug, Args)]
pub(crate) struct SelfArgs {
    #[command(subcommand)]
    pub action: SelfAction,
}

#[derive(Debug, Clone, Subcommand)]
pub(crate) enum SelfAction {
    /// Replace this crabup with the release's crabup of the version asked
    /// for (default: this one's own version, which repairs a damaged
    /// binary), downloaded and checked as `pull` does.
    Update {
        /// The release to take crabup from, e.g. 0.2.0.
        #[arg(long)]
        version: Option<String>,
    },
}

#[derive(Debug, Args)]
pub(crate) struct RmArgs {
    /// What to remove: short names or the family's crate names.
    #[arg(required = true)]
    pub names: Vec<String>,
    /// Also accept names outside the crabtalk family (a crate someone else
    /// publishes, removed with `cargo uninstall`).
    #[arg(long)]
    pub third_party: bool,
}

#[derive(Debug, Args)]
pub(crate) struct PsArgs {
    /// Print JSON (one array of services) instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct UpArgs {
    /// Install from this local checkout instead of crates.io (and reinstall
    /// even when installed), e.g. `crabup up --path .` in a clone.
    #[arg(long, value_name = "DIR")]
    pub path: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    pub action: McpAction,
}

#[derive(Debug, Clone, Subcommand)]
pub(crate) enum McpAction {
    /// Print the entry that adds crabtalk to a host's MCP servers (the
    /// absolute path of crabtalkd, `mcp`, and CRABTALK_HOME), and where the
    /// host reads it from; with --write, merge it into that file.
    Add {
        /// The host.
        #[arg(value_enum)]
        host: McpHostArg,
        /// Merge the entry into the host's configuration file (made if
        /// missing), keeping its other entries, comments and layout.
        #[arg(long)]
        write: bool,
    },
}

/// An MCP host crabup knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum McpHostArg {
    /// Claude Desktop: claude_desktop_config.json.
    ClaudeDesktop,
    /// Claude Code: .mcp.json in the current folder (the project).
    ClaudeCode,
    /// Cursor: ~/.cursor/mcp.json.
    Cursor,
    /// Zed: settings.json, context_servers.
    Zed,
}

#[derive(Debug, Args)]
pub(crate) struct ServiceArgs {
    #[command(subcommand)]
    pub action: ServiceAction,
}

/// What to do with one service.
#[derive(Debug, Clone, Subcommand)]
pub(crate) enum ServiceAction {
    /// Install the service unit and start it (a running service is left
    /// alone). Runs first-run setup when the service needs config and a
    /// terminal is present.
    Start,
    /// Stop the service; it stays stopped (also across logins) until the
    /// next start.
    Stop,
    /// Stop the service if it runs, and start it again.
    Restart,
    /// Show whether the service runs (exit code 3 when it does not).
    Status,
    /// Print the end of the service's log, and with -f keep printing.
    Logs {
        /// How many lines to print.
        #[arg(short = 'n', long, default_value_t = 20)]
        lines: usize,
        /// Keep printing lines as they are written (survives rotation).
        #[arg(short, long)]
        follow: bool,
    },
    /// Print the unit crabup would install, without installing anything.
    Unit {
        /// Render for this service manager instead of this machine's.
        #[arg(long, value_enum)]
        manager: Option<ManagerArg>,
    },
}

/// A service manager, for `unit --manager`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ManagerArg {
    Launchd,
    Systemd,
    Schtasks,
    Process,
}

impl From<ManagerArg> for crabtalk_command::ManagerKind {
    fn from(arg: ManagerArg) -> Self {
        match arg {
            ManagerArg::Launchd => Self::Launchd,
            ManagerArg::Systemd => Self::Systemd,
            ManagerArg::Schtasks => Self::Schtasks,
            ManagerArg::Process => Self::Process,
        }
    }
}

/// `crabup <name> <action>` for a name outside the table.
#[derive(Debug, Parser)]
#[command(name = "crabup <name>")]
pub(crate) struct OtherService {
    #[command(subcommand)]
    pub action: ServiceAction,
    /// Run a component outside the crabtalk family: the binary
    /// `crabtalk-<name>` someone else publishes, as a service of yours.
    #[arg(long, global = true)]
    pub third_party: bool,
}
