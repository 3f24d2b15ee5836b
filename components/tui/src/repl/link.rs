//! The connection to the daemon: what is asked of it when the chat opens
//! (the model, completions, the tail, the event subscription), and losing
//! it and getting it back.

use std::time::{Duration, Instant};

use crabtalk_proto::ClientError;
use crabtalk_proto::msg::*;

use super::{Link, MAX_BACKOFF, Repl, TAIL_TURNS};
use crate::error::TuiError;
use crate::input::complete::Completer;
use crate::render::history::tail;

impl Repl {
    /// The model this conversation uses and where it comes from: the
    /// agent's file, or the daemon's default.
    pub(super) async fn conversation_model(&self) -> Option<(String, String)> {
        let agent = self
            .session
            .client
            .get_agent(GetAgentMsg {
                name: self.session.agent.clone(),
            })
            .await
            .ok()?;
        if !agent.model.is_empty() {
            return Some((agent.model, format!("agents/{}.toml", agent.name)));
        }
        let list = self
            .session
            .client
            .list_models(ListModelsMsg {})
            .await
            .ok()?;
        let active = list.models.iter().find(|model| model.active)?.name.clone();
        let source = if list.active_source.is_empty() {
            "the daemon's default model".to_owned()
        } else {
            format!("the daemon's default model: {}", list.active_source)
        };
        Some((active, source))
    }

    /// Completion learns the agents and skills there are now.
    pub(super) async fn refresh_completion(&mut self) {
        if !self.connected() {
            // Keep what is known until the daemon answers again.
            return;
        }
        self.completer = Completer {
            skills: self.session.skill_names().await,
            agents: self.session.agent_names().await,
        };
    }

    /// Follows the conversation's events (other clients' turns).
    pub(super) async fn subscribe(&mut self) {
        self.follow
            .retarget(&self.session.agent, &self.session.sender);
        match self
            .session
            .client
            .subscribe_events(SubscribeEvents {})
            .await
        {
            Ok(stream) => {
                // Requests on one connection start in the order they were
                // sent: once this ping is answered the daemon has taken the
                // subscription, and no turn started after it is missed.
                let _ = self.session.client.ping().await;
                self.events = Some(stream);
            }
            Err(ClientError::Closed { .. }) => self.lost(),
            Err(_) => self.events = None,
        }
    }

    /// Shows the last turns of the conversation this session addresses.
    pub(super) async fn show_tail(&mut self) {
        let messages = match self.session.conversation().await {
            Ok(messages) => messages,
            Err(err) => return self.error(&format!("cannot show the conversation: {err}")),
        };
        if messages.is_empty() {
            return;
        }
        let shown = tail(
            &messages,
            &self.session.agent,
            TAIL_TURNS,
            self.width(),
            self.tools.len() + 1,
        );
        self.print(&shown.lines);
        self.tools.extend(shown.records);
    }

    /// The connection is gone: say so once, and start reconnecting.
    pub(super) fn lost(&mut self) {
        if !self.connected() {
            return;
        }
        self.events = None;
        self.link = Link::Down {
            retry: Instant::now(),
            attempts: 0,
        };
        self.error("the connection to the daemon was lost; reconnecting…");
    }

    pub(super) async fn reconnect(&mut self, attempts: u32) {
        match self.session.reconnect().await {
            Ok(()) => {
                self.link = Link::Up;
                self.subscribe().await;
                if self.connected() {
                    self.refresh_completion().await;
                    self.info("reconnected to the daemon");
                }
            }
            Err(_) => {
                let backoff = Duration::from_millis(100)
                    .saturating_mul(1 << attempts.min(5))
                    .min(MAX_BACKOFF);
                self.link = Link::Down {
                    retry: Instant::now() + backoff,
                    attempts: attempts + 1,
                };
            }
        }
    }

    /// Reports a failed request; a lost connection starts reconnecting.
    pub(super) async fn client_error(&mut self, err: ClientError) {
        if err.code() == Some(ErrorMsg::NOT_FOUND) {
            let agents = self.session.agent_names().await;
            if !self.session.agent.is_empty() && !agents.contains(&self.session.agent) {
                let error = self.session.unknown_agent(&self.session.agent).await;
                return self.error(&error.to_string());
            }
        }
        let lost = matches!(err, ClientError::Closed { .. });
        if lost {
            self.lost();
        } else {
            self.error(&TuiError::from(err).to_string());
        }
    }
}
