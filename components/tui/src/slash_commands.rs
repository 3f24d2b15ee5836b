//! Slash commands: what the person can ask the TUI itself to do.
//!
//! [`parse`] turns a submitted input into a message for the agent or a
//! [`Command`]; the REPL carries commands out. `//text` sends `/text` as a
//! message, and `/name …` where `name` is a skill is sent as is, for the
//! daemon to run the skill.

/// A command's name, arguments and one line of help.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CommandSpec {
    pub name: &'static str,
    pub args: &'static str,
    pub help: &'static str,
}

/// Every slash command, in the order `/help` lists them.
pub(crate) const COMMANDS: &[CommandSpec] = &[
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
        name: "new",
        args: "",
        help: "start a fresh conversation (the old messages stay stored and searchable)",
    },
    CommandSpec {
        name: "compact",
        args: "",
        help: "summarise the conversation and go on from the summary",
    },
    CommandSpec {
        name: "kill",
        args: "",
        help: "stop the turn running on this conversation",
    },
    CommandSpec {
        name: "model",
        args: "[name]",
        help: "the model this conversation uses and the others, or switch the default model",
    },
    CommandSpec {
        name: "sessions",
        args: "[n]",
        help: "list stored conversations, or open number n",
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
pub(crate) enum Command {
    Help,
    Agent(Option<String>),
    Guest {
        agent: String,
        message: String,
    },
    New,
    Compact,
    Kill,
    Model(Option<String>),
    /// `/sessions`, or `/sessions N` to open the N-th listed conversation.
    Sessions(Option<usize>),
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
pub(crate) enum Input {
    Empty,
    Message(String),
    Command(Command),
}

/// A command used the wrong way; the text is the usage the person sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UsageError {
    /// `/name` given arguments it does not take.
    #[error("/{0} takes no arguments")]
    NoArguments(String),
    #[error("/guest needs an agent and a message: /guest <name> <message>")]
    Guest,
    /// `/sessions` with something other than a listed number.
    #[error("/sessions takes the number of a listed conversation, not {0:?}")]
    Sessions(String),
    #[error("/search needs a query: /search <words>")]
    Search,
    /// `/expand` with something other than a number.
    #[error("/expand takes a tool call number, not {0:?}")]
    Expand(String),
}

/// Parses an input; `Err` says how the command is used.
pub(crate) fn parse(input: &str) -> Result<Input, UsageError> {
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
            Err(UsageError::NoArguments(name.to_owned()))
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
                return Err(UsageError::Guest);
            }
            Ok(Input::Command(Command::Guest {
                agent: agent.to_owned(),
                message: message.to_owned(),
            }))
        }
        "new" => no_arguments(Command::New),
        "compact" => no_arguments(Command::Compact),
        "kill" => no_arguments(Command::Kill),
        "model" => Ok(Input::Command(Command::Model(argument()))),
        "sessions" => match argument() {
            None => Ok(Input::Command(Command::Sessions(None))),
            Some(n) => n
                .trim_start_matches('#')
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .map(|n| Input::Command(Command::Sessions(Some(n))))
                .ok_or(UsageError::Sessions(n)),
        },
        "search" => match argument() {
            Some(query) => Ok(Input::Command(Command::Search(query))),
            None => Err(UsageError::Search),
        },
        "events" => no_arguments(Command::Events),
        "expand" => match argument() {
            None => Ok(Input::Command(Command::Expand(None))),
            Some(n) => n
                .trim_start_matches('#')
                .parse()
                .map(|n| Input::Command(Command::Expand(Some(n))))
                .map_err(|_| UsageError::Expand(n)),
        },
        "clear" => no_arguments(Command::Clear),
        "quit" | "exit" | "q" => no_arguments(Command::Quit),
        _ => Ok(Input::Command(Command::Other {
            name: name.to_owned(),
            text: input.to_owned(),
        })),
    }
}

/// The `/help` text: commands, the skills `skills` names (the current
/// agent's), then keys.
pub(crate) fn help_text(skills: &[String]) -> String {
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
        "  /<skill> [text]  run a skill (Tab completes commands, skills and agents)\n  //text  send text that starts with '/'\n",
    );
    if skills.is_empty() {
        out.push_str("\nSkills: none (add skills/<name>/SKILL.md in the crabtalk home)\n");
    } else {
        let listed: Vec<String> = skills.iter().map(|skill| format!("/{skill}")).collect();
        out.push_str(&format!("\nSkills: {}\n", listed.join(" ")));
    }
    out.push_str(
        "\nKeys:\n  Enter  send (during a turn: queue it, sent when the turn ends) · Alt-Enter, Ctrl-J or a trailing \\  new line\n  Up/Down  rows, then history · Alt-b/Alt-f  word left/right · Tab  complete\n  Ctrl-C  stop the running turn · clear the input · twice on an empty input: quit\n  Ctrl-D  quit · Ctrl-L  clear the screen · Esc  dismiss a question (answers \"cancelled\")\n",
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
        let usage = |input: &str| parse(input).unwrap_err().to_string();
        assert!(usage("/guest ranger").contains("/guest <name> <message>"));
        assert!(usage("/search").contains("query"));
        assert_eq!(usage("/clear now"), "/clear takes no arguments");
        assert_eq!(parse("/expand x"), Err(UsageError::Expand("x".into())));
    }

    #[test]
    fn sessions_opens_by_number() {
        assert_eq!(command("/sessions"), Command::Sessions(None));
        assert_eq!(command("/sessions 3"), Command::Sessions(Some(3)));
        assert_eq!(command("/new"), Command::New);
        assert_eq!(parse("/sessions 0"), Err(UsageError::Sessions("0".into())));
        assert!(
            parse("/sessions x")
                .unwrap_err()
                .to_string()
                .contains("number of a listed conversation")
        );
        assert_eq!(
            parse("/new now"),
            Err(UsageError::NoArguments("new".into()))
        );
    }

    #[test]
    fn help_lists_every_command_and_the_skills() {
        let help = help_text(&["greet".into(), "commit".into()]);
        assert!(help.contains("Skills: /greet /commit"), "{help}");
        assert!(help_text(&[]).contains("Skills: none"));
        for command in COMMANDS {
            assert!(
                help.contains(&format!("/{}", command.name)),
                "{}",
                command.name
            );
        }
    }
}
