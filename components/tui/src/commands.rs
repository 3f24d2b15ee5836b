//! Slash commands: what the person can ask the TUI itself to do.
//!
//! [`parse`] turns a submitted input into a message for the agent or a
//! [`Command`]; the REPL carries commands out. `//text` sends `/text` as a
//! message, and `/name …` where `name` is a skill is sent as is, for the
//! daemon to run the skill.

/// A command's name, arguments and one line of help.
#[derive(Debug, Clone, Copy)]
pub struct CommandSpec {
    pub name: &'static str,
    pub args: &'static str,
    pub help: &'static str,
}

/// Every slash command, in the order `/help` lists them.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "help",
        args: "",
        help: "this list, and the keys",
    },
    CommandSpec {
        name: "agent",
        args: "[name]",
        help: "talk to another agent (no name: list agents)",
    },
    CommandSpec {
        name: "guest",
        args: "<name> <message>",
        help: "ask another agent into this conversation for one message",
    },
    CommandSpec {
        name: "compact",
        args: "",
        help: "summarise the conversation and start afresh from the summary",
    },
    CommandSpec {
        name: "kill",
        args: "",
        help: "stop the turn running on this conversation",
    },
    CommandSpec {
        name: "model",
        args: "[name]",
        help: "list models, or switch the default model",
    },
    CommandSpec {
        name: "sessions",
        args: "",
        help: "list stored conversations",
    },
    CommandSpec {
        name: "search",
        args: "<query>",
        help: "search past conversations",
    },
    CommandSpec {
        name: "events",
        args: "",
        help: "watch every agent's events (Esc or Ctrl-C to stop)",
    },
    CommandSpec {
        name: "expand",
        args: "[n]",
        help: "show a tool call's whole result (default: the last)",
    },
    CommandSpec {
        name: "clear",
        args: "",
        help: "clear the screen",
    },
    CommandSpec {
        name: "quit",
        args: "",
        help: "leave (also Ctrl-D, or Ctrl-C twice)",
    },
];

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Help,
    Agent(Option<String>),
    Guest {
        agent: String,
        message: String,
    },
    Compact,
    Kill,
    Model(Option<String>),
    Sessions,
    Search(String),
    Events,
    Expand(Option<usize>),
    Clear,
    Quit,
    /// `/name …` that is no command: a skill, if the daemon has one.
    Other {
        name: String,
        text: String,
    },
}

/// What a submitted input asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Empty,
    Message(String),
    Command(Command),
}

/// Parses an input; `Err` is a usage message for the person.
pub fn parse(input: &str) -> Result<Input, String> {
    if input.trim().is_empty() {
        return Ok(Input::Empty);
    }
    if let Some(literal) = input.strip_prefix("//") {
        return Ok(Input::Message(format!("/{literal}")));
    }
    let Some(command) = input.strip_prefix('/') else {
        return Ok(Input::Message(input.to_owned()));
    };
    let (name, rest) = match command.find(char::is_whitespace) {
        Some(index) => (&command[..index], command[index..].trim()),
        None => (command, ""),
    };
    let argument = || (!rest.is_empty()).then(|| rest.to_owned());
    let no_arguments = |command: Command| {
        if rest.is_empty() {
            Ok(Input::Command(command))
        } else {
            Err(format!("/{name} takes no arguments"))
        }
    };
    match name {
        "help" | "?" => no_arguments(Command::Help),
        "agent" => Ok(Input::Command(Command::Agent(argument()))),
        "guest" => {
            let (agent, message) = rest
                .split_once(char::is_whitespace)
                .map(|(agent, message)| (agent, message.trim()))
                .unwrap_or((rest, ""));
            if agent.is_empty() || message.is_empty() {
                return Err("/guest needs an agent and a message: /guest <name> <message>".into());
            }
            Ok(Input::Command(Command::Guest {
                agent: agent.to_owned(),
                message: message.to_owned(),
            }))
        }
        "compact" => no_arguments(Command::Compact),
        "kill" => no_arguments(Command::Kill),
        "model" => Ok(Input::Command(Command::Model(argument()))),
        "sessions" => no_arguments(Command::Sessions),
        "search" => match argument() {
            Some(query) => Ok(Input::Command(Command::Search(query))),
            None => Err("/search needs a query: /search <words>".into()),
        },
        "events" => no_arguments(Command::Events),
        "expand" => match argument() {
            None => Ok(Input::Command(Command::Expand(None))),
            Some(n) => n
                .trim_start_matches('#')
                .parse()
                .map(|n| Input::Command(Command::Expand(Some(n))))
                .map_err(|_| format!("/expand takes a tool call number, not {n:?}")),
        },
        "clear" => no_arguments(Command::Clear),
        "quit" | "exit" | "q" => no_arguments(Command::Quit),
        _ => Ok(Input::Command(Command::Other {
            name: name.to_owned(),
            text: input.to_owned(),
        })),
    }
}

/// The `/help` text: commands, then keys.
pub fn help_text() -> String {
    let mut out = String::from("Commands:\n");
    let usage: Vec<String> = COMMANDS
        .iter()
        .map(|c| format!("/{} {}", c.name, c.args).trim_end().to_owned())
        .collect();
    let column = usage.iter().map(|u| u.chars().count()).max().unwrap_or(0);
    for (command, usage) in COMMANDS.iter().zip(&usage) {
        out.push_str(&format!("  {usage:column$}  {}\n", command.help));
    }
    out.push_str(
        "  /<skill> [text]  run a skill (Tab completes commands, skills and agents)\n  //text  send text that starts with '/'\n\nKeys:\n  Enter  send · Alt-Enter, Ctrl-J or a trailing \\  new line · Up/Down  history\n  Ctrl-C  stop the running turn · clear the input · twice on an empty input: quit\n  Ctrl-D  quit · Ctrl-L  clear the screen · Esc  dismiss a question (answers \"cancelled\")\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(input: &str) -> Command {
        match parse(input) {
            Ok(Input::Command(command)) => command,
            other => panic!("{input:?} parsed as {other:?}"),
        }
    }

    #[test]
    fn commands_parse_with_their_arguments() {
        assert_eq!(command("/help"), Command::Help);
        assert_eq!(command("/agent"), Command::Agent(None));
        assert_eq!(
            command("/agent  ranger "),
            Command::Agent(Some("ranger".into()))
        );
        assert_eq!(
            command("/guest ranger what do you  think?"),
            Command::Guest {
                agent: "ranger".into(),
                message: "what do you  think?".into()
            }
        );
        assert_eq!(command("/model"), Command::Model(None));
        assert_eq!(
            command("/model gpt-4o"),
            Command::Model(Some("gpt-4o".into()))
        );
        assert_eq!(
            command("/search 蟹 recipes"),
            Command::Search("蟹 recipes".into())
        );
        assert_eq!(command("/expand 3"), Command::Expand(Some(3)));
        assert_eq!(command("/quit"), Command::Quit);
        assert_eq!(
            command("/commit fix the bug"),
            Command::Other {
                name: "commit".into(),
                text: "/commit fix the bug".into()
            }
        );
    }

    #[test]
    fn messages_and_bad_usage() {
        assert_eq!(parse("hello"), Ok(Input::Message("hello".into())));
        assert_eq!(
            parse("//etc/hosts?"),
            Ok(Input::Message("/etc/hosts?".into()))
        );
        assert_eq!(parse("  \n"), Ok(Input::Empty));
        assert!(
            parse("/guest ranger")
                .unwrap_err()
                .contains("/guest <name> <message>")
        );
        assert!(parse("/search").unwrap_err().contains("query"));
        assert!(parse("/clear now").unwrap_err().contains("no arguments"));
        assert!(parse("/expand x").is_err());
    }

    #[test]
    fn help_lists_every_command() {
        let help = help_text();
        for command in COMMANDS {
            assert!(
                help.contains(&format!("/{}", command.name)),
                "{}",
                command.name
            );
        }
    }
}
