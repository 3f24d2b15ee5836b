//! The command line of `crabtalk-search`, in the library so tests (and
//! crabup's) parse exactly what the binary accepts.

// The doc comments in this module are the `--help` text, where `<name>`
// is a placeholder and `[table]` a TOML table, not HTML or a link.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

use clap::{CommandFactory, Parser, Subcommand};
use crabtalk_home::Service;
use crabtalk_kit::Component;
use crabtalk_kit::cli::{ComponentCli, Mode, Verbosity};

/// The executable's name.
pub const BINARY: &str = "crabtalk-search";

/// The first line of `--help`.
pub const ABOUT: &str = "Meta-search MCP service for crabtalk agents: web search and page fetch";

/// This binary as a service: `run/search.port`, `logs/search.log`.
pub fn service() -> Service {
    Service::new("search", BINARY, "crabtalk meta-search service").expect("a valid service name")
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
    after_help = "Files: settings in $CRABTALK_HOME/config/search.toml (optional; CRABTALK_HOME defaults to \
                  ~/.crabtalk), engine health in $CRABTALK_HOME/search/health.json. While the service runs \
                  it announces its MCP port (tools web_search and web_fetch) in run/search.port. Install, \
                  start and stop it with `crabup search`."
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
            Command::Run => Mode::Service,
            _ => Mode::Command,
        }
    }

    fn check(component: &Component) -> anyhow::Result<String> {
        crate::check::check(component)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the service in the foreground (what its service unit runs). Use
    /// `crabup search start` to run it in the background as a service.
    Run,
    /// Search the web as web_search does: every enabled engine at once,
    /// results fused, each engine's status listed.
    Search {
        /// What to search for.
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        /// How many results (1–20).
        #[arg(short = 'n', long = "count")]
        count: Option<usize>,
        /// Only these engines, comma-separated (duckduckgo,bing,mojeek,wikipedia,brave,searxng).
        #[arg(long, value_delimiter = ',')]
        engines: Option<Vec<String>>,
        /// Language of the results (en, de, …).
        #[arg(long)]
        lang: Option<String>,
        /// Region of the results (us, de, …).
        #[arg(long)]
        region: Option<String>,
        /// The whole answer as JSON (what web_search returns).
        #[arg(long)]
        json: bool,
    },
    /// Fetch a page as web_fetch does: public addresses only, readable
    /// Markdown (or plain text).
    Fetch {
        url: String,
        /// Plain text instead of Markdown.
        #[arg(long)]
        text: bool,
        /// The longest text to print (default: [fetch] max_chars).
        #[arg(long)]
        max_chars: Option<usize>,
        /// The whole answer as JSON (what web_fetch returns).
        #[arg(long)]
        json: bool,
    },
    /// Each engine: enabled or not, its last health, suspended until when.
    Engines {
        #[arg(long)]
        json: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(args)
    }

    #[test]
    fn every_command_parses_and_bad_lines_are_refused() {
        assert!(matches!(
            parse(&["crabtalk-search", "-v", "run"]).unwrap().command,
            Command::Run
        ));
        match parse(&[
            "crabtalk-search",
            "search",
            "rust",
            "async",
            "-n",
            "5",
            "--engines",
            "bing,wikipedia",
            "--json",
        ])
        .unwrap()
        .command
        {
            Command::Search {
                query,
                count,
                engines,
                json,
                ..
            } => {
                assert_eq!(query, ["rust", "async"]);
                assert_eq!(count, Some(5));
                assert_eq!(engines.unwrap(), ["bing", "wikipedia"]);
                assert!(json);
            }
            other => panic!("{other:?}"),
        }
        match parse(&["crabtalk-search", "fetch", "https://example.org", "--text"])
            .unwrap()
            .command
        {
            Command::Fetch { url, text, .. } => assert!(text && url == "https://example.org"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(&["crabtalk-search", "engines", "--json"])
                .unwrap()
                .command,
            Command::Engines { json: true }
        ));
        assert!(parse(&["crabtalk-search"]).is_err());
        assert!(parse(&["crabtalk-search", "search"]).is_err());
        assert!(parse(&["crabtalk-search", "run", "extra"]).is_err());
    }
}
