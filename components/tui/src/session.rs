//! The connection to the daemon and who is talking to whom.
//!
//! A [`Session`] is a client plus the conversation it addresses: an agent
//! (named with `--agent`, else the daemon's default) and a sender (`--sender`,
//! else the user name), with the working directory sent along with every
//! message so tools run where the person is.

use crabtalk_proto::Client;
use crabtalk_proto::client::ClientError;
use crabtalk_proto::home::Home;
use crabtalk_proto::msg::*;

use crate::error::TuiError;

/// Where the daemon is.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// `host:port`; `None` means `CRABTALK_HOME`.
    pub tcp: Option<String>,
    pub token: Option<String>,
}

impl Target {
    pub async fn connect(&self) -> Result<Client, TuiError> {
        match &self.tcp {
            Some(addr) => Client::connect_tcp(addr, self.token.as_deref())
                .await
                .map_err(|source| match source {
                    ClientError::Connect { .. } => TuiError::Unreachable {
                        addr: addr.clone(),
                        source,
                    },
                    other => TuiError::from(other),
                }),
            None => {
                let home = Home::from_env().map_err(|err| TuiError::Usage(err.to_string()))?;
                Ok(Client::connect(&home).await?)
            }
        }
    }
}

/// What a session is opened with.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    pub target: Target,
    pub agent: Option<String>,
    pub sender: Option<String>,
}

/// A connected client and the conversation it talks to.
pub struct Session {
    pub client: Client,
    target: Target,
    /// The agent messages go to.
    pub agent: String,
    pub sender: String,
    /// Sent with every message (the daemon needs an absolute directory).
    pub cwd: Option<String>,
}

impl Session {
    /// Connects and settles the agent: the one asked for (which must exist)
    /// or the daemon's default.
    pub async fn open(options: &SessionOptions) -> Result<Self, TuiError> {
        let client = options.target.connect().await?;
        let sender = options
            .sender
            .clone()
            .filter(|sender| !sender.is_empty())
            .unwrap_or_else(user_name);
        let cwd = std::env::current_dir()
            .ok()
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.to_string_lossy().into_owned());
        let mut session = Self {
            client,
            target: options.target.clone(),
            agent: String::new(),
            sender,
            cwd,
        };
        match options.agent.as_deref().filter(|agent| !agent.is_empty()) {
            Some(agent) => {
                session.use_agent(agent).await?;
            }
            None => session.agent = session.default_agent().await,
        }
        Ok(session)
    }

    /// The daemon's default agent; empty (the daemon fills it in) if the
    /// daemon does not say.
    async fn default_agent(&self) -> String {
        match self.client.get_stats(GetStats {}).await {
            Ok(stats) => stats.default_agent,
            Err(_) => String::new(),
        }
    }

    /// Switches to `name`, which must exist.
    pub async fn use_agent(&mut self, name: &str) -> Result<AgentInfo, TuiError> {
        match self
            .client
            .get_agent(GetAgentMsg { name: name.into() })
            .await
        {
            Ok(info) => {
                self.agent = info.name.clone();
                Ok(info)
            }
            Err(err) if err.code() == Some(ErrorMsg::NOT_FOUND) => {
                Err(self.unknown_agent(name).await)
            }
            Err(err) => Err(err.into()),
        }
    }

    /// The error for an agent that does not exist, listing those that do.
    pub async fn unknown_agent(&self, name: &str) -> TuiError {
        TuiError::UnknownAgent {
            name: name.to_owned(),
            agents: self.agent_names().await,
        }
    }

    pub async fn agent_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .client
            .list_agents(ListAgentsMsg {})
            .await
            .map(|list| list.agents.into_iter().map(|agent| agent.name).collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Skill names; empty when the daemon has no skills (or answers 501
    /// because skills are not built yet).
    pub async fn skill_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .client
            .list_skills(ListSkillsMsg {})
            .await
            .map(|list| list.skills.into_iter().map(|skill| skill.name).collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The agent as the daemon knows it, for messages to people.
    pub fn agent_label(&self) -> &str {
        if self.agent.is_empty() {
            "the default agent"
        } else {
            &self.agent
        }
    }

    /// A message to the current agent.
    pub fn message(&self, content: &str) -> StreamMsg {
        StreamMsg {
            agent: self.agent.clone(),
            content: content.to_owned(),
            sender: Some(self.sender.clone()),
            cwd: self.cwd.clone(),
            guest: None,
            tool_choice: None,
            trigger: None,
        }
    }

    pub fn kill_msg(&self) -> KillMsg {
        KillMsg {
            agent: self.agent.clone(),
            sender: self.sender.clone(),
        }
    }

    pub fn reply(&self, call_id: &str, content: &str) -> ReplyToAsk {
        ReplyToAsk {
            agent: self.agent.clone(),
            sender: self.sender.clone(),
            content: content.to_owned(),
            call_id: call_id.to_owned(),
        }
    }

    /// Connects again after the connection was lost.
    pub async fn reconnect(&mut self) -> Result<(), TuiError> {
        self.client = self.target.connect().await?;
        Ok(())
    }
}

/// The user's name: `$USER`, `$USERNAME` or `$LOGNAME`, else `user`.
pub fn user_name() -> String {
    ["USER", "USERNAME", "LOGNAME"]
        .iter()
        .filter_map(|key| std::env::var(key).ok())
        .map(|name| name.trim().to_owned())
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| "user".into())
}
