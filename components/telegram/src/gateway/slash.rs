//! Commands: `/start`, `/help`, `/new`, `/stop`, `/agent [name]`, and
//! `/<skill> [args]` for the agent's skills; anything else gets the help.
//! The menu Telegram shows is registered with `setMyCommands` at start and
//! whenever the gateway (re)connects to the daemon (skills may have
//! changed).
//!
//! Telegram command names are 1-32 of `a-z 0-9 _`; a skill named
//! `daily-report` is offered as `/daily_report` and run as the skill.

use std::collections::HashMap;
use std::sync::Arc;

use crabtalk_proto::msg::{
    CompactMsg, ErrorMsg, GetAgentMsg, KillMsg, ListAgentsMsg, ListSkillsMsg,
};
use teloxide_core::types::BotCommand;

use super::{Conversation, Gateway};

/// The gateway's own commands, with their menu descriptions.
pub(crate) const OWN: [(&str, &str); 5] = [
    ("start", "Start talking to the agent"),
    ("help", "What this bot can do"),
    (
        "new",
        "Start a new conversation (the old one is summarised)",
    ),
    ("stop", "Stop the running reply"),
    ("agent", "Show or switch the agent: /agent <name>"),
];

/// Telegram's cap on registered commands.
const MAX_COMMANDS: usize = 100;

/// A command in a message: its name (lowercase, without `@bot`), whom it
/// addresses, and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slash<'a> {
    pub name: String,
    pub bot: Option<&'a str>,
    pub args: &'a str,
}

impl<'a> Slash<'a> {
    /// The command `text` starts with, if it does.
    pub(crate) fn parse(text: &'a str) -> Option<Self> {
        let rest = text.strip_prefix('/')?;
        let (head, args) = match rest.split_once(char::is_whitespace) {
            Some((head, args)) => (head, args.trim()),
            None => (rest, ""),
        };
        let (name, bot) = match head.split_once('@') {
            Some((name, bot)) => (name, Some(bot)),
            None => (head, None),
        };
        if name.is_empty()
            || name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        {
            return None;
        }
        Some(Self {
            name: name.to_lowercase(),
            bot,
            args,
        })
    }
}

/// The Telegram command for skill `skill`, if it can be one.
pub(crate) fn command_for_skill(skill: &str) -> Option<String> {
    let command: String = skill
        .chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    let valid = !command.is_empty()
        && command.len() <= 32
        && command
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    (valid && !OWN.iter().any(|(own, _)| *own == command)).then_some(command)
}

/// Registers the menu: the own commands and the skills of the agent.
pub(crate) async fn register(gateway: &Arc<Gateway>) {
    let skills = skills(gateway).await;
    let mut commands: Vec<BotCommand> = OWN
        .iter()
        .map(|(name, about)| BotCommand::new(*name, *about))
        .collect();
    let mut map = HashMap::new();
    for skill in skills {
        if commands.len() >= MAX_COMMANDS {
            break;
        }
        if let Some(command) = command_for_skill(&skill)
            && !map.contains_key(&command)
        {
            commands.push(BotCommand::new(
                command.clone(),
                format!("Run the {skill} skill"),
            ));
            map.insert(command, skill);
        }
    }
    *gateway.skill_commands.lock() = map;
    if let Err(err) = gateway.api.set_my_commands(commands).await {
        tracing::warn!("cannot register the command menu with Telegram: {err}");
    }
}

/// The skills the configured agent may use (none when the daemon is away).
async fn skills(gateway: &Gateway) -> Vec<String> {
    let Some(client) = gateway.daemon.current() else {
        return Vec::new();
    };
    let all = match client.list_skills(ListSkillsMsg {}).await {
        Ok(list) => list.skills.into_iter().map(|s| s.name).collect::<Vec<_>>(),
        Err(err) => {
            tracing::debug!("cannot list skills: {err}");
            return Vec::new();
        }
    };
    let agent = gateway.config.agent_name();
    let allowed = if agent.is_empty() {
        Vec::new()
    } else {
        client
            .get_agent(GetAgentMsg {
                name: agent.to_owned(),
            })
            .await
            .map(|info| info.skills)
            .unwrap_or_default()
    };
    all.into_iter()
        .filter(|skill| allowed.is_empty() || allowed.contains(skill))
        .collect()
}

/// What a command did: `None` when it is a skill to run as a turn (the
/// content to send).
pub(crate) async fn handle(
    gateway: &Arc<Gateway>,
    conversation: &Conversation,
    slash: &Slash<'_>,
) -> Option<String> {
    let reply = match slash.name.as_str() {
        "start" => format!(
            "Hello! Messages here go to the agent{}. {}",
            agent_label(&conversation.agent),
            help_text(gateway)
        ),
        "help" => help_text(gateway),
        "new" => new_conversation(gateway, conversation).await,
        "stop" => stop(gateway, conversation).await,
        "agent" => agent(gateway, conversation, slash.args).await,
        other => {
            let skill = gateway.skill_commands.lock().get(other).cloned();
            if let Some(skill) = skill {
                return Some(if slash.args.is_empty() {
                    format!("/{skill}")
                } else {
                    format!("/{skill} {}", slash.args)
                });
            }
            format!("I don't know /{other}. {}", help_text(gateway))
        }
    };
    let _ = gateway.outbox.prepared(conversation.address, &reply, None);
    None
}

fn agent_label(agent: &str) -> String {
    if agent.is_empty() {
        String::new()
    } else {
        format!(" **{agent}**")
    }
}

fn help_text(gateway: &Gateway) -> String {
    let mut text = String::from(
        "Write a message and the agent answers.\n\n\
         /new — start a new conversation (the old one is summarised and kept)\n\
         /stop — stop the running reply\n\
         /agent — show the agents; /agent <name> switches\n\
         /help — this text",
    );
    let mut skills: Vec<(String, String)> = gateway
        .skill_commands
        .lock()
        .iter()
        .map(|(c, s)| (c.clone(), s.clone()))
        .collect();
    skills.sort();
    if !skills.is_empty() {
        text.push_str("\n\nSkills:");
        for (command, skill) in skills {
            text.push_str(&format!("\n/{command} — the {skill} skill"));
        }
    }
    text
}

async fn new_conversation(gateway: &Gateway, conversation: &Conversation) -> String {
    let Some(client) = gateway.daemon.current() else {
        return super::error_words("the daemon is not running");
    };
    let compact = |fresh| CompactMsg {
        agent: conversation.agent.clone(),
        sender: conversation.sender(),
        fresh,
    };
    match client.compact(compact(false)).await {
        Ok(_) => {
            "🆕 New conversation. The old one was summarised and archived in the agent's memory."
                .into()
        }
        Err(crabtalk_proto::ClientError::Server(ErrorMsg {
            code: 404 | 409, ..
        })) => "🆕 New conversation (there was nothing to summarise).".into(),
        Err(err) => {
            tracing::warn!(chat = %conversation.address, "compaction failed ({err}); starting afresh without a summary");
            match client.compact(compact(true)).await {
                Ok(_) => format!(
                    "🆕 New conversation. (The old one could not be summarised: {err}; it is kept as it was.)"
                ),
                Err(err) => super::error_words(&err.to_string()),
            }
        }
    }
}

async fn stop(gateway: &Gateway, conversation: &Conversation) -> String {
    let Some(client) = gateway.daemon.current() else {
        return super::error_words("the daemon is not running");
    };
    let running = gateway
        .running
        .lock()
        .get(&conversation.sender())
        .copied()
        .unwrap_or(0);
    if let Err(err) = client
        .kill(KillMsg {
            agent: conversation.agent.clone(),
            sender: conversation.sender(),
        })
        .await
    {
        return super::error_words(&err.to_string());
    }
    if running == 0 {
        "Nothing was running.".into()
    } else {
        "Stopping…".into()
    }
}

async fn agent(gateway: &Gateway, conversation: &Conversation, args: &str) -> String {
    let Some(client) = gateway.daemon.current() else {
        return super::error_words("the daemon is not running");
    };
    let name = args.trim();
    if name.is_empty() {
        let agents = match client.list_agents(ListAgentsMsg {}).await {
            Ok(list) => list.agents.into_iter().map(|a| a.name).collect::<Vec<_>>(),
            Err(err) => return super::error_words(&err.to_string()),
        };
        let current = if conversation.agent.is_empty() {
            "the default agent".to_owned()
        } else {
            format!("**{}**", conversation.agent)
        };
        return format!(
            "This chat talks to {current}. Agents: {}. Switch with /agent <name>.",
            agents.join(", ")
        );
    }
    match client
        .get_agent(GetAgentMsg {
            name: name.to_owned(),
        })
        .await
    {
        Ok(info) => {
            gateway
                .chats
                .set_agent(conversation.address.chat, Some(info.name.clone()));
            format!("This chat now talks to **{}**.", info.name)
        }
        Err(crabtalk_proto::ClientError::Server(ErrorMsg { code: 404, .. })) => {
            format!("There is no agent called {name}. /agent lists them.")
        }
        Err(err) => super::error_words(&err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_and_without_the_bot() {
        assert_eq!(
            Slash::parse("/stop"),
            Some(Slash {
                name: "stop".into(),
                bot: None,
                args: ""
            })
        );
        assert_eq!(
            Slash::parse("/Agent@crab_bot  helper "),
            Some(Slash {
                name: "agent".into(),
                bot: Some("crab_bot"),
                args: "helper"
            })
        );
        assert_eq!(Slash::parse("hello"), None);
        assert_eq!(Slash::parse("/"), None);
        assert_eq!(Slash::parse("/a/b"), None);
    }

    #[test]
    fn skills_become_telegram_commands() {
        assert_eq!(
            command_for_skill("daily-report").as_deref(),
            Some("daily_report")
        );
        assert_eq!(command_for_skill("Summarize").as_deref(), Some("summarize"));
        assert_eq!(command_for_skill("help"), None);
        assert_eq!(command_for_skill("é"), None);
        assert_eq!(command_for_skill(&"x".repeat(33)), None);
    }
}
