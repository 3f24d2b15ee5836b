//! The `crabtalkd` command line. Defined in the library so that other crates
//! (crabup's unit tests) can check a rendered command line against it.

// The doc comments in this module are the `--help` text, where `<name>`
// is a placeholder and `[table]` a TOML table, not HTML or a link.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const ABOUT: &str = "The crabtalk daemon: keeps your agents' conversations, talks to the \
language models, runs tools, and streams every step of a turn to its clients.";

const AFTER_HELP: &str = "\
HOME DIRECTORY
  Everything crabtalkd reads and writes lives under $CRABTALK_HOME
  (default: ~/.crabtalk):

    config.toml             providers and models, default agent, [transport], [env]
    agents/<name>.toml      agent definitions; agents/<name>.md holds the prompt
    Crab.md                 instructions for every agent (project Crab.md files
                            found from the working directory upward are added)
    sessions/               one append-only log per conversation
    memory/<agent>.crmem    each agent's memory
    skills/<name>/SKILL.md  skills
    run/                    crabtalk.sock (mode 0600), crabtalk.port, crabtalk.lock
    logs/                   daemon.log when run as a service

  With no provider configured the daemon still starts; the first turn explains
  what to set. OPENAI_API_KEY, ANTHROPIC_API_KEY and a local Ollama (on
  127.0.0.1:11434, or at $OLLAMA_HOST) are picked up automatically.

  Run it as a service with `crabup daemon start`, or in the foreground with
  `crabtalkd run`.";

/// `crabtalkd [-v...] <command>`
#[derive(Debug, Parser)]
#[command(name = "crabtalkd", version, about = ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    /// More logging: -v for debug, -vv for trace (RUST_LOG overrides).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// The home directory (default: $CRABTALK_HOME, else ~/.crabtalk).
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon in the foreground (what service units call).
    Run(RunArgs),
    /// Ask the running daemon to re-read its configuration and agents.
    ///
    /// A file with a problem is refused (a broken config.toml keeps the
    /// running configuration; a broken agent file keeps that agent as it
    /// was) and everything else is applied. Every problem is printed with
    /// its file, line and column; the exit status is 78 when anything was
    /// refused.
    Reload,
    /// Check config.toml and the agent files without touching a running
    /// daemon: the checks a start or reload applies. Prints every problem
    /// with its file, line and column; exits 0 when the daemon would take
    /// every file, 78 when it would refuse one.
    Check,
    /// Read or replace an agent's memory as Markdown files.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Search past conversations.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Serve MCP over stdio to an MCP host (Claude Desktop, Claude Code,
    /// Cursor, Zed, …): your agents (ask_agent, list_agents, recall, …) and
    /// the tools of the running components, under one entry.
    ///
    /// A bridge to the daemon already running for this home, not a second
    /// daemon: start the daemon first (`crabup daemon start`). Everything
    /// the host does through it is done as you. `crabup mcp add <host>`
    /// writes the host's configuration.
    Mcp,
}

#[derive(Debug, Args, Default)]
pub struct RunArgs {}

/// `crabtalkd memory dump|load`.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Write an agent's memory to DIR as an mdbook: notes/<name>.md,
    /// archives/<name>.md (summaries of compacted conversations), SUMMARY.md,
    /// and a book.toml if there is none. Safe while the daemon runs. Only
    /// notes/ and archives/ are replaced; other files in DIR are left alone.
    Dump(MemoryArgs),
    /// Replace an agent's memory with the entries in DIR (a tree written by
    /// dump, possibly edited). The whole tree is checked first; nothing
    /// changes if any file is wrong. The daemon must be stopped: it keeps the
    /// memory open.
    Load(MemoryArgs),
}

#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// The agent whose memory it is.
    #[arg(long, value_name = "NAME")]
    pub agent: String,
    /// The mdbook folder.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// `crabtalkd sessions search`.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Search an agent's past conversations by keywords (asks the running
    /// daemon, which keeps the index).
    Search(SearchArgs),
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Keywords.
    #[arg(value_name = "QUERY", required = true, num_args = 1..)]
    pub query: Vec<String>,
    /// The agent whose conversations to search (default: the default agent).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Only conversations with this sender.
    #[arg(long, value_name = "SENDER")]
    pub sender: Option<String>,
    /// At most this many matches (up to 20).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub limit: u32,
    /// Messages shown before and after each match.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub context: u32,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_takes_global_flags_before_and_after() {
        let cli = Cli::try_parse_from(["crabtalkd", "-vv", "run"]).unwrap();
        assert_eq!(cli.verbose, 2);
        assert!(matches!(cli.command, Command::Run(_)));
        let cli = Cli::try_parse_from(["crabtalkd", "run", "-v", "--home", "/tmp/h"]).unwrap();
        assert_eq!(cli.verbose, 1);
        assert_eq!(cli.home.as_deref(), Some(std::path::Path::new("/tmp/h")));
    }

    #[test]
    fn reload_and_check_parse() {
        let cli = Cli::try_parse_from(["crabtalkd", "--home", "/tmp/h", "check"]).unwrap();
        assert!(matches!(cli.command, Command::Check));
        let cli = Cli::try_parse_from(["crabtalkd", "reload"]).unwrap();
        assert!(matches!(cli.command, Command::Reload));
    }

    #[test]
    fn memory_and_sessions_commands_parse() {
        let cli = Cli::try_parse_from(["crabtalkd", "memory", "dump", "--agent", "crab", "brain"])
            .unwrap();
        match cli.command {
            Command::Memory(MemoryCommand::Dump(args)) => {
                assert_eq!(
                    (args.agent.as_str(), args.dir.to_str()),
                    ("crab", Some("brain"))
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(Cli::try_parse_from(["crabtalkd", "memory", "load", "brain"]).is_err());
        let cli = Cli::try_parse_from([
            "crabtalkd",
            "sessions",
            "search",
            "cron",
            "bug",
            "--sender",
            "tg:1",
        ])
        .unwrap();
        match cli.command {
            Command::Sessions(SessionsCommand::Search(args)) => {
                assert_eq!(args.query, ["cron", "bug"]);
                assert_eq!(args.sender.as_deref(), Some("tg:1"));
                assert_eq!((args.agent, args.limit, args.context), (None, 10, 2));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn mcp_parses_with_the_global_flags() {
        let cli = Cli::try_parse_from(["crabtalkd", "--home", "/tmp/h", "mcp", "-v"]).unwrap();
        assert!(matches!(cli.command, Command::Mcp));
        assert_eq!(cli.verbose, 1);
    }

    #[test]
    fn help_explains_the_home_directory() {
        let help = Cli::command().render_long_help().to_string();
        assert!(help.contains("CRABTALK_HOME"));
        assert!(help.contains("config.toml"));
        assert!(help.contains("crabtalk.sock"));
    }
}
