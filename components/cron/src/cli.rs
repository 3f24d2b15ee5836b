//! The command line of `crabtalk-cron`, in the library so tests (and
//! crabup's) parse exactly what the binary accepts.

// The doc comments in this module are the `--help` text, where `<name>`
// is a placeholder and `[table]` a TOML table, not HTML or a link.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

use clap::{Args, CommandFactory, Parser, Subcommand};
use crabtalk_home::Service;
use crabtalk_kit::Component;
use crabtalk_kit::cli::{ComponentCli, Mode, Verbosity};

/// The executable's name.
pub const BINARY: &str = "crabtalk-cron";

/// The first line of `--help`.
pub const ABOUT: &str = "Scheduler for crabtalk: runs skills and messages for agents on a schedule";

/// This binary as a service: `run/cron.port`, `logs/cron.log`.
pub fn service() -> Service {
    Service::new("cron", BINARY, "crabtalk scheduler").expect("a valid service name")
}

/// The clap definition `main` parses with (with the kit's `check`).
pub fn command() -> clap::Command {
    crabtalk_kit::cli::with_check(Cli::command())
}

#[derive(Debug, Parser)]
#[command(
    name = BINARY,
    bin_name = BINARY,
    version,
    about = ABOUT,
    after_help = "Files: entries in $CRABTALK_HOME/config/crons.toml (CRABTALK_HOME defaults to ~/.crabtalk), \
                  runs in $CRABTALK_HOME/logs/cron-runs.jsonl, state in $CRABTALK_HOME/cron/. While the \
                  service runs it announces its MCP port in run/cron.port. Install, start and stop it with `crabup cron`."
)]
pub struct Cli {
    #[command(flatten)]
    pub verbosity: Verbosity,
    #[command(subcommand)]
    pub command: Command,
}

impl ComponentCli for Cli {
    fn verbosity(&self) -> Verbosity {
        self.verbosity
    }

    fn mode(&self) -> Mode {
        match self.command {
            Command::Run { id: None, .. } => Mode::Service,
            _ => Mode::Command,
        }
    }

    fn check(component: &Component) -> anyhow::Result<String> {
        crate::check::check(component)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Without ID: run the scheduler service in the foreground (what its
    /// service unit runs). With ID: run that entry now and print its record.
    Run {
        /// An entry to run once, now.
        id: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Add an entry (checked before the file is written); prints its next
    /// three slots.
    Add(Box<AddArgs>),
    /// List the entries with their next slots and health.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove an entry.
    Rm { id: String },
    /// Let a disabled entry fire again.
    Enable { id: String },
    /// Stop an entry from firing (it stays in the file).
    Disable { id: String },
    /// The newest run records, of one entry or all.
    Runs {
        id: Option<String>,
        /// How many records.
        #[arg(short = 'n', default_value_t = 20)]
        n: usize,
        #[arg(long)]
        json: bool,
    },
    /// Upcoming slots of an entry or of an expression, in its zone and UTC,
    /// saying when DST moved or merged one.
    Next {
        /// An entry id, a crontab expression ("0 9 * * 1-5"), "every 15m"
        /// or "at 2026-05-01T09:00".
        target: String,
        /// The zone for an expression (default: this machine's).
        #[arg(long)]
        tz: Option<String>,
        /// Slots after this RFC 3339 time (default: now).
        #[arg(long)]
        from: Option<String>,
        #[arg(long, default_value_t = 5)]
        count: usize,
        #[arg(long)]
        json: bool,
    },
}

/// `add`'s options: one schedule, one action, and the rest.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("schedule").required(true).args(["cron", "at", "every", "in_"])))]
#[command(group(clap::ArgGroup::new("action").required(true).args(["skill", "message"])))]
pub struct AddArgs {
    /// A unique slug (default: made from the message or skill).
    #[arg(long)]
    pub id: Option<String>,
    /// Crontab expression: 5 fields, 6 with seconds, or @daily and friends.
    #[arg(long)]
    pub cron: Option<String>,
    /// One time: RFC 3339 or a wall time in --tz.
    #[arg(long)]
    pub at: Option<String>,
    /// An interval: 90s, 15m, 2h.
    #[arg(long)]
    pub every: Option<String>,
    /// Once, this long from now: 20m.
    #[arg(long = "in", id = "in_")]
    pub in_: Option<String>,
    /// IANA zone (default: this machine's, written into the entry).
    #[arg(long)]
    pub tz: Option<String>,
    #[arg(long)]
    pub skill: Option<String>,
    #[arg(long, requires = "skill")]
    pub args: Option<String>,
    #[arg(long)]
    pub message: Option<String>,
    /// The agent (default: the daemon's default agent).
    #[arg(long)]
    pub agent: Option<String>,
    /// The sender, i.e. the conversation (default: cron).
    #[arg(long)]
    pub sender: Option<String>,
    #[arg(long, requires = "quiet_end")]
    pub quiet_start: Option<String>,
    #[arg(long, requires = "quiet_start")]
    pub quiet_end: Option<String>,
    /// skip or once.
    #[arg(long)]
    pub missed: Option<String>,
    #[arg(long)]
    pub missed_within: Option<String>,
    /// Add it disabled.
    #[arg(long)]
    pub disabled: bool,
    /// none or telegram:<chat id>.
    #[arg(long)]
    pub deliver: Option<String>,
    #[arg(long)]
    pub timeout: Option<String>,
    #[arg(long)]
    pub json: bool,
}
