//! The connection to the daemon and who is talking to whom.
//!
//! A [`Session`] is a client plus the conversation it addresses: an agent
//! (named with `--agent`, else the daemon's default) and a sender (`--sender`,
//! else the user name), with the working directory sent along with every
//! message so tools run where the person is.

use crabtalk_home::{Home, PortFile};
use crabtalk_proto::Client;
use crabtalk_proto::ClientError;
use crabtalk_proto::msg::*;

use crate::error::TuiError;

/// Where the daemon is.
#[derive(Debug, Clone, Default)]
pub(crate) struct Target {
    /// `host:port`; `None` means `CRABTALK_HOME`.
    pub tcp: Option<String>,
    pub token: Option<String>,
}

impl Target {
    pub(crate) async fn connect(&self) -> Result<Client, TuiError> {
        let Some(addr) = &self.tcp else {
            let home = Home::from_env().map_err(|err| TuiError::Usage(err.to_string()))?;
            return Ok(crabtalk_kit::daemon::connect(&home).await?);
        };
        let (addr, token) = self.tcp_endpoint(addr).await?;
        let connected = match Client::connect_tcp(&addr, token.as_deref()).await {
            // Without a token nothing was said yet: ask, so that a refusal
            // is reported as one rather than as a closed connection later.
            Ok(client) if token.is_none() => client.ping().await.map(|_| client),
            other => other,
        };
        connected.map_err(|source| match source {
            ClientError::Connect { .. } => TuiError::Unreachable { addr, source },
            source if source.code() == Some(ErrorMsg::UNAUTHORIZED) => TuiError::Refused {
                addr,
                source,
                had_token: token.is_some(),
            },
            other => TuiError::from(other),
        })
    }

    /// The address and token for `--tcp ADDR` (or `--tcp` alone: the
    /// home's port file). Without `--token`, the home's `run/token` is sent
    /// only to the home's own daemon — its port on a loopback address — so
    /// a token never goes to another server.
    async fn tcp_endpoint(&self, addr: &str) -> Result<(String, Option<String>), TuiError> {
        let home = Home::from_env().ok();
        let own_port = home
            .as_ref()
            .and_then(|home| PortFile::read(&home.daemon_port_file()).ok())
            .map(|file| file.port);
        let addr = if addr.is_empty() {
            let port = own_port.ok_or_else(|| {
                TuiError::Usage(
                    "--tcp without an address uses the port file of CRABTALK_HOME, and there is none: is the daemon running with TCP on? Give the address: --tcp HOST:PORT".into(),
                )
            })?;
            format!("127.0.0.1:{port}")
        } else {
            addr.to_owned()
        };
        if let Some(token) = &self.token {
            return Ok((addr, Some(token.clone())));
        }
        let ours = match own_port {
            Some(port) => is_local_port(&addr, port).await,
            None => false,
        };
        let token = match (&home, ours) {
            (Some(home), true) => crabtalk_kit::daemon::read_token(home)?,
            _ => None,
        };
        Ok((addr, token))
    }
}

/// Whether `addr` is `port` on a loopback address (every address it
/// resolves to).
async fn is_local_port(addr: &str, port: u16) -> bool {
    let Ok(resolved) = tokio::net::lookup_host(addr).await else {
        return false;
    };
    let resolved: Vec<std::net::SocketAddr> = resolved.collect();
    !resolved.is_empty()
        && resolved
            .iter()
            .all(|addr| addr.ip().is_loopback() && addr.port() == port)
}

/// What a session is opened with.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionOptions {
    pub target: Target,
    pub agent: Option<String>,
    pub sender: Option<String>,
}

/// A connected client and the conversation it talks to.
pub(crate) struct Session {
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
    pub(crate) async fn open(options: &SessionOptions) -> Result<Self, TuiError> {
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
    pub(crate) async fn use_agent(&mut self, name: &str) -> Result<AgentInfo, TuiError> {
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
    pub(crate) async fn unknown_agent(&self, name: &str) -> TuiError {
        TuiError::UnknownAgent {
            name: name.to_owned(),
            agents: self.agent_names().await,
        }
    }

    pub(crate) async fn agent_names(&self) -> Vec<String> {
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
    pub(crate) async fn skill_names(&self) -> Vec<String> {
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
    pub(crate) fn agent_label(&self) -> &str {
        if self.agent.is_empty() {
            "the default agent"
        } else {
            &self.agent
        }
    }

    /// A message to the current agent.
    pub(crate) fn message(&self, content: &str) -> StreamMsg {
        StreamMsg {
            agent: self.agent.clone(),
            content: content.to_owned(),
            sender: Some(self.sender.clone()),
            cwd: self.cwd.clone(),
            ..Default::default()
        }
    }

    /// The stored messages of the conversation this session addresses;
    /// empty when it has none yet.
    pub(crate) async fn conversation(&self) -> Result<Vec<ConversationMessage>, ClientError> {
        let list = self
            .client
            .list_conversations(ListConversationsMsg {
                agent: self.agent.clone(),
                sender: self.sender.clone(),
            })
            .await?;
        let Some(stored) = list
            .conversations
            .into_iter()
            .find(|c| c.agent == self.agent && c.sender == self.sender)
        else {
            return Ok(Vec::new());
        };
        let history = self
            .client
            .get_conversation_history(GetConversationHistoryMsg {
                file_path: stored.file_path,
            })
            .await?;
        Ok(history.messages)
    }

    /// The message that starts this conversation afresh (`/new`).
    pub(crate) fn fresh_start(&self) -> CompactMsg {
        CompactMsg {
            agent: self.agent.clone(),
            sender: self.sender.clone(),
            fresh: true,
        }
    }

    /// The message that compacts this conversation (`/compact`).
    pub(crate) fn compact(&self) -> CompactMsg {
        CompactMsg {
            fresh: false,
            ..self.fresh_start()
        }
    }

    pub(crate) fn kill_msg(&self) -> KillMsg {
        KillMsg {
            agent: self.agent.clone(),
            sender: self.sender.clone(),
        }
    }

    pub(crate) fn reply(&self, call_id: &str, content: &str) -> ReplyToAsk {
        ReplyToAsk {
            agent: self.agent.clone(),
            sender: self.sender.clone(),
            content: content.to_owned(),
            call_id: call_id.to_owned(),
        }
    }

    /// Connects again after the connection was lost.
    pub(crate) async fn reconnect(&mut self) -> Result<(), TuiError> {
        self.client = self.target.connect().await?;
        Ok(())
    }
}

/// The user's name: `$USER`, `$USERNAME` or `$LOGNAME`, else `user`.
pub(crate) fn user_name() -> String {
    ["USER", "USERNAME", "LOGNAME"]
        .iter()
        .filter_map(|key| std::env::var(key).ok())
        .map(|name| name.trim().to_owned())
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| "user".into())
}
