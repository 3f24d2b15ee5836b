//! `crabtalk-tui`: the terminal client of crabtalk.
//!
//! People chat with their agents in a REPL (`repl`); scripts send one
//! prompt and read the reply (`script`), or follow the daemon's events.
//! Everything goes through the `crabtalk-proto` client; nothing here knows
//! the daemon's insides.
//!
//! The crate keeps what is drawn apart from the terminal that draws it, so
//! tests reach all of it:
//!
//! - `text`: display width, sanitising, styled lines and wrapping — cut
//!   on grapheme boundaries, measured in columns (CJK and emoji are two);
//! - `render`: Markdown, streamed Markdown, tool calls and whole turns as
//!   lines;
//! - `input`: the line editor, its history file and completion;
//! - `ask`: `ask_user` questions as a keyboard form;
//! - `slash_commands`: the slash commands, parsed;
//! - `events` and `json`: event streams as lines or JSON for scripts;
//! - `session`: the connection and the conversation it addresses;
//! - `repl` and `script`: the interactive and the scripted front ends.
//!
//! The modules are private; what the binary and the property tests use is
//! re-exported here: [`Cli`] and [`run`], and the text and Markdown
//! rendering ([`Line`], [`wrap()`], [`markdown`], [`MarkdownStream`], …).
//!
//! ```no_run
//! use clap::Parser;
//! # async fn example() {
//! let cli = crabtalk_tui::Cli::parse_from(["crabtalk-tui", "-p", "hello"]);
//! let status = crabtalk_tui::run(cli).await;
//! # }
//! ```

mod ask;
mod cli;
mod error;
mod events;
mod input;
mod json;
mod render;
mod repl;
mod script;
mod session;
mod slash_commands;
mod text;

pub use cli::Cli;
pub use render::markdown;
pub use render::stream::{Layout, MarkdownStream};
pub use text::{Line, Span, Style, Wrap, display_width, sanitize, truncate, wrap};

use std::io::IsTerminal;
use std::process::ExitCode;

use crabtalk_home::Home;

use self::cli::Command;
use self::error::TuiError;
use self::input::history::History;
use self::script::PrintFormat;
use self::session::{Session, SessionOptions, Target};

/// Runs the command line and returns the exit status; errors are printed
/// to standard error.
/// With `--json`, a refusal is also an `error` object on standard output,
/// with its code.
pub async fn run(cli: Cli) -> ExitCode {
    let json = cli.json;
    match dispatch(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(TuiError::Interrupted) => ExitCode::from(error::EXIT_INTERRUPTED),
        Err(err) => {
            if json && let Some(code) = err.code() {
                println!("{}", json::error(code, &err.to_string()));
            }
            eprintln!("crabtalk-tui: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}

async fn dispatch(cli: Cli) -> Result<(), TuiError> {
    let format = if cli.json {
        PrintFormat::Json
    } else {
        PrintFormat::Text
    };
    let options = SessionOptions {
        target: Target {
            tcp: cli.tcp.clone(),
            token: cli.token.clone(),
        },
        agent: cli.agent.clone(),
        sender: cli.sender.clone(),
    };
    if let Some(Command::Events) = cli.command {
        let session = Session::open(&SessionOptions {
            agent: None,
            ..options
        })
        .await?;
        let mut out = std::io::stdout().lock();
        return script::tail_events(&session, cli.agent, format, &mut out).await;
    }
    if let Some(prompt) = &cli.prompt {
        // Read the prompt before connecting: a bad prompt is a usage error
        // whether or not the daemon runs.
        let prompt = script::read_prompt(prompt, &mut std::io::stdin().lock())?;
        let session = Session::open(&options).await?;
        let mut out = std::io::stdout().lock();
        return script::print_turn(&session, &prompt, format, &mut out).await;
    }
    if cli.json {
        return Err(TuiError::Usage(
            "--json works with -p PROMPT or `events`".into(),
        ));
    }
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(TuiError::Usage(
            "the chat needs a terminal; in scripts use -p \"PROMPT\" (or -p - to read the prompt from standard input)".into(),
        ));
    }
    let session = Session::open(&options).await?;
    let history = match Home::from_env() {
        Ok(home) => History::load(History::path_in(&home)),
        Err(_) => History::in_memory(),
    };
    repl::run(session, history).await
}
