//! What the slash commands do in the chat (their parsing is in
//! [`crate::commands`]).

use crabtalk_proto::msg::*;

use super::{Flow, Repl, SEARCH_UNAVAILABLE};
use crate::slash_commands::{self, Command};
use crate::text::wrap::{Wrap, wrap};
use crate::text::{Color, Line, Style};

/// How much of a snippet `/search` shows.
const SNIPPET_CHARS: usize = 240;

/// Conversations `/sessions` lists.
const SESSIONS_SHOWN: usize = 50;

impl Repl {
    /// Runs `command`; `text` is the input it came from (sent as is for a
    /// skill).
    pub(super) async fn command(&mut self, command: Command, text: &str) -> Flow {
        match command {
            Command::Quit => return Flow::Quit,
            Command::Help => self.help().await,
            Command::Agent(None) => self.list_agents().await,
            Command::Agent(Some(name)) => self.switch_agent(&name).await,
            Command::Guest { agent, message } => {
                let mut request = self.session.message(&message);
                request.guest = Some(agent);
                self.start_turn(request, text).await;
            }
            Command::New => self.fresh_start().await,
            Command::Compact => self.compact().await,
            Command::Kill => match self.session.client.kill(self.session.kill_msg()).await {
                Ok(_) => {
                    let label = format!("{}/{}", self.session.agent_label(), self.session.sender);
                    self.info(&format!(
                        "asked the daemon to stop any turn running on {label}"
                    ));
                }
                Err(err) => self.client_error(err).await,
            },
            Command::Model(None) => self.models().await,
            Command::Model(Some(model)) => self.set_model(&model).await,
            Command::Sessions(None) => self.sessions().await,
            Command::Sessions(Some(number)) => self.open_session(number).await,
            Command::Search(query) => self.search(query).await,
            Command::Events => self.watch_events().await,
            Command::Expand(number) => self.expand(number),
            Command::Clear => {
                let _ = self.terminal.clear_screen();
            }
            Command::Other { name, text } => self.skill(&name, &text).await,
        }
        Flow::Continue
    }

    async fn help(&mut self) {
        self.refresh_completion().await;
        let skills = self.agent_skills().await;
        let help = slash_commands::help_text(&skills);
        let width = self.width();
        let lines: Vec<Line> = help
            .lines()
            .flat_map(|line| {
                wrap(
                    &Line::plain_text(line).spans,
                    &Wrap::words(width).with_rest(Line::plain_text("      ")),
                )
            })
            .collect();
        self.print(&lines);
    }

    /// The skills the current agent may use: its `skills` list, or every
    /// skill when it has none.
    async fn agent_skills(&self) -> Vec<String> {
        let allowed = self
            .session
            .client
            .get_agent(GetAgentMsg {
                name: self.session.agent.clone(),
            })
            .await
            .map(|agent| agent.skills)
            .unwrap_or_default();
        self.completer
            .skills
            .iter()
            .filter(|skill| allowed.is_empty() || allowed.contains(skill))
            .cloned()
            .collect()
    }

    async fn list_agents(&mut self) {
        let agents = self.session.agent_names().await;
        self.completer.agents = agents.clone();
        let list: Vec<String> = agents
            .iter()
            .map(|name| {
                let mark = if *name == self.session.agent {
                    " ← current"
                } else {
                    ""
                };
                format!("- **{name}**{mark}")
            })
            .collect();
        self.markdown(&format!("Agents:\n\n{}", list.join("\n")));
    }

    async fn switch_agent(&mut self, name: &str) {
        match self.session.use_agent(name).await {
            Ok(_) => {
                self.refresh_completion().await;
                let model = match self.conversation_model().await {
                    Some((model, source)) => format!(" (model {model}, from {source})"),
                    None => String::new(),
                };
                self.note(
                    &format!("now talking to {}{model}", self.session.agent),
                    Style::PLAIN.fg(Color::Green),
                );
                self.subscribe().await;
                self.show_tail().await;
            }
            Err(err) => self.error(&err.to_string()),
        }
    }

    /// `/new`: a fresh start of this conversation. The daemon keeps the
    /// messages so far (listed, searchable); the next turn sees none of them.
    async fn fresh_start(&mut self) {
        match self.session.client.compact(self.session.fresh_start()).await {
            Ok(_) => self.info(&format!(
                "── a fresh conversation with {}: the earlier messages are kept (/sessions, /search), the agent no longer sees them ──",
                self.session.agent_label()
            )),
            Err(err) if err.code() == Some(ErrorMsg::NOT_IMPLEMENTED) => {
                self.info("This daemon cannot start a conversation afresh.")
            }
            Err(err) => self.client_error(err).await,
        }
    }

    async fn compact(&mut self) {
        match self.session.client.compact(self.session.compact()).await {
            Ok(response) => {
                self.info("The conversation was compacted. Summary:");
                self.markdown(&response.summary);
            }
            Err(err) if err.code() == Some(ErrorMsg::NOT_IMPLEMENTED) => {
                self.info("This daemon does not offer compaction.")
            }
            Err(err) => self.client_error(err).await,
        }
    }

    /// `/model`: which model this conversation uses and why, and the
    /// others.
    async fn models(&mut self) {
        let list = match self.session.client.list_models(ListModelsMsg {}).await {
            Ok(list) => list,
            Err(err) => return self.client_error(err).await,
        };
        if list.models.is_empty() {
            return self.info("The daemon has no models configured.");
        }
        let used = self.conversation_model().await;
        let mut text = String::new();
        if let Some((model, source)) = &used {
            text.push_str(&format!(
                "This conversation ({}) uses `{model}`, from {source}.\n\n",
                self.session.agent_label()
            ));
        }
        let items: Vec<String> = list
            .models
            .iter()
            .map(|model| {
                let mut marks = Vec::new();
                if used.as_ref().is_some_and(|(used, _)| *used == model.name) {
                    marks.push("this conversation");
                }
                if model.active {
                    marks.push("default");
                }
                let marks = if marks.is_empty() {
                    String::new()
                } else {
                    format!(" ← {}", marks.join(", "))
                };
                format!("- `{}`{marks}", model.name)
            })
            .collect();
        text.push_str(&format!("Models:\n\n{}", items.join("\n")));
        self.markdown(&text);
    }

    /// `/model NAME`: the daemon's default model (which agents with a model
    /// of their own do not use), with whether it is saved.
    async fn set_model(&mut self, model: &str) {
        let request = SetActiveModelMsg {
            model: model.to_owned(),
        };
        let pong = match self.session.client.set_active_model(request).await {
            Ok(pong) => pong,
            Err(err) => return self.client_error(err).await,
        };
        let agent = self.session.agent_label().to_owned();
        match self.conversation_model().await {
            Some((own, source)) if own != model => self.note(
                &format!(
                    "The default model is now {model}, but {agent} keeps using {own} (from {source}); the default applies to agents without a model of their own."
                ),
                Style::PLAIN.fg(Color::Yellow),
            ),
            _ => self.note(
                &format!("This conversation now uses {model}, the default model."),
                Style::PLAIN.fg(Color::Green),
            ),
        }
        if pong.notes.is_empty() {
            self.info("(this daemon does not say whether the change is saved)");
        }
        for note in pong.notes {
            self.info(&note);
        }
    }

    async fn skill(&mut self, name: &str, text: &str) {
        if !self.completer.skills.iter().any(|skill| skill == name) {
            // It may have been added since the list was read.
            self.refresh_completion().await;
        }
        if self.completer.skills.iter().any(|skill| skill == name) {
            let request = self.session.message(text);
            self.start_turn(request, text).await;
        } else {
            self.error(&format!(
                "unknown command /{name}: /help lists the commands (and skills); start a message with // to send it with a leading /"
            ));
        }
    }

    fn expand(&mut self, number: Option<usize>) {
        let record = match number {
            Some(n) => self.tools.iter().find(|record| record.number == n),
            None => self.tools.last(),
        };
        match record.cloned() {
            Some(record) => {
                let lines = record.expanded(self.width());
                self.print(&lines);
            }
            None if self.tools.is_empty() => {
                self.info("No tool has been called in this session yet.")
            }
            None => {
                let last = self.tools.len();
                self.error(&format!(
                    "There is no tool call with that number; they go from 1 to {last}."
                ));
            }
        }
    }

    /// `/search`: the agent's past conversations that match, best first,
    /// each with the messages around the match.
    async fn search(&mut self, query: String) {
        let request = SearchSessionsMsg {
            agent: self.session.agent.clone(),
            sender: String::new(),
            query: query.clone(),
            limit: Some(10),
            context: Some(1),
        };
        let hits = match self.session.client.search_sessions(request).await {
            Ok(list) => list.hits,
            Err(err) if err.code() == Some(ErrorMsg::NOT_IMPLEMENTED) => {
                return self.info(SEARCH_UNAVAILABLE);
            }
            Err(err) => return self.client_error(err).await,
        };
        if hits.is_empty() {
            let agent = self.session.agent_label();
            return self.info(&format!(
                "Nothing in {agent}'s past conversations matches {query:?}."
            ));
        }
        let mut text = String::new();
        for (number, hit) in hits.iter().enumerate() {
            let title = if hit.title.is_empty() {
                String::new()
            } else {
                format!(" · {}", hit.title)
            };
            text.push_str(&format!(
                "**{}.** with {}{title} · {} match\n\n",
                number + 1,
                hit.sender,
                hit.field
            ));
            for item in &hit.window {
                let here = hit.msg_idx.is_some() && item.msg_idx == hit.msg_idx;
                let snippet: String = item
                    .snippet
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let mut cut: String = snippet.chars().take(SNIPPET_CHARS).collect();
                if cut.len() < snippet.len() || item.truncated {
                    cut.push('…');
                }
                text.push_str(&format!(
                    "> {}*{}*: {cut}\n>\n",
                    if here { "▶ " } else { "" },
                    item.field
                ));
            }
            text.push('\n');
        }
        self.markdown(&text);
    }

    /// `/sessions`: the stored conversations, newest first, numbered for
    /// `/sessions N`.
    async fn sessions(&mut self) {
        let request = ListConversationsMsg::default();
        let list = match self.session.client.list_conversations(request).await {
            Ok(list) => list,
            Err(err) => return self.client_error(err).await,
        };
        if list.conversations.is_empty() {
            return self.info("No stored conversations yet.");
        }
        let mut conversations = list.conversations;
        conversations.sort_by(|a, b| b.date.cmp(&a.date));
        let mut table = String::from(
            "| # | agent | sender | messages | updated | title |\n|--:|---|---|--:|---|---|\n",
        );
        for (index, c) in conversations.iter().take(SESSIONS_SHOWN).enumerate() {
            let current = c.agent == self.session.agent && c.sender == self.session.sender;
            let date = chrono::DateTime::parse_from_rfc3339(&c.date)
                .map(|d| {
                    d.with_timezone(&chrono::Local)
                        .format("%Y-%m-%d %H:%M")
                        .to_string()
                })
                .unwrap_or_else(|_| c.date.clone());
            let cell = |text: &str| text.replace('|', "\\|").replace('\n', " ");
            table.push_str(&format!(
                "| {} | {}{} | {} | {} | {} | {} |\n",
                index + 1,
                cell(&c.agent),
                if current { " ←" } else { "" },
                cell(&c.sender),
                c.message_count,
                date,
                cell(&c.title)
            ));
        }
        self.markdown(&table);
        if conversations.len() > SESSIONS_SHOWN {
            self.info(&format!(
                "… and {} older",
                conversations.len() - SESSIONS_SHOWN
            ));
        }
        self.info("/sessions N opens conversation N");
        conversations.truncate(SESSIONS_SHOWN);
        self.listed = conversations;
    }

    /// `/sessions N`: continue the N-th conversation `/sessions` listed, as
    /// its sender.
    async fn open_session(&mut self, number: usize) {
        if self.listed.is_empty() {
            return self
                .error("/sessions lists the conversations first; then /sessions N opens one");
        }
        let Some(chosen) = self.listed.get(number - 1).cloned() else {
            let last = self.listed.len();
            return self.error(&format!(
                "/sessions listed {last} conversations; pick one from 1 to {last}"
            ));
        };
        if let Err(err) = self.session.use_agent(&chosen.agent).await {
            return self.error(&err.to_string());
        }
        self.session.sender = chosen.sender.clone();
        self.refresh_completion().await;
        let title = if chosen.title.is_empty() {
            String::new()
        } else {
            format!(" · {}", chosen.title)
        };
        self.note(
            &format!(
                "now in {}'s conversation with {}{title}",
                chosen.agent, chosen.sender
            ),
            Style::PLAIN.fg(Color::Green),
        );
        self.subscribe().await;
        self.show_tail().await;
    }
}
