//! The chat: read a message, stream the turn, repeat.
//!
//! The REPL owns the terminal and one connection. At the prompt, keys go to
//! the [`Editor`]; during a turn they go to the turn: Ctrl-C sends `KillMsg`
//! (the daemon ends the turn, which is persisted and leaves the
//! conversation usable), and an `ask_user` question takes the keys until it
//! is answered or dismissed. Everything shown is rendered by the pure parts
//! of the crate ([`crate::render`], [`crate::ask`], [`crate::input`]); this
//! module only moves events between them, the daemon and the terminal.

mod terminal;

use std::collections::VecDeque;

use crabtalk_proto::client::ClientError;
use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::*;
use crossterm::event::{
    Event as TermEvent, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
};
use futures::StreamExt;

use self::terminal::Terminal;
use crate::ask::{AskForm, AskOutcome, CANCELLED};
use crate::commands::{self, Command, Input};
use crate::error::TuiError;
use crate::events::EventTail;
use crate::input::complete::Completer;
use crate::input::editor::{Editor, EditorAction};
use crate::input::history::History;
use crate::render::markdown;
use crate::render::tool::ToolRecord;
use crate::render::turn::TurnView;
use crate::session::Session;
use crate::text::wrap::{Wrap, wrap};
use crate::text::{Color, Line, Span, Style, sanitize};

const PROMPT: &str = "› ";

/// The message for `/search` when the daemon is too old to search.
pub const SEARCH_UNAVAILABLE: &str = "Session search is not available: this daemon does not offer it. /sessions lists the stored conversations.";

/// How much of a snippet `/search` shows.
const SNIPPET_CHARS: usize = 240;

/// Runs the chat until the person quits.
pub async fn run(session: Session, history: History) -> Result<(), TuiError> {
    let terminal = Terminal::enter().map_err(|err| TuiError::io("setting up the terminal", err))?;
    let mut repl = Repl {
        completer: Completer {
            skills: session.skill_names().await,
            agents: session.agent_names().await,
        },
        session,
        terminal,
        keys: EventStream::new(),
        editor: Editor::new(),
        history,
        tools: Vec::new(),
    };
    repl.banner().await;
    repl.run().await
}

struct Repl {
    session: Session,
    terminal: Terminal,
    keys: EventStream,
    editor: Editor,
    history: History,
    completer: Completer,
    /// Every tool call of the session, for `/expand`.
    tools: Vec<ToolRecord>,
}

/// What the prompt produced.
enum Prompted {
    Input(String),
    Quit,
}

/// A key that is Ctrl-C.
fn is_ctrl_c(key: &KeyEvent) -> bool {
    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL)
}

impl Repl {
    fn width(&self) -> usize {
        self.terminal.layout().width
    }

    /// Prints lines for good (terminal write errors cannot be reported
    /// anywhere better than the terminal, so they are dropped).
    fn print(&mut self, lines: &[Line]) {
        let _ = self.terminal.print(lines);
    }

    fn note(&mut self, text: &str, style: Style) {
        let lines = wrap(
            &[Span::new(sanitize(text), style)],
            &Wrap::words(self.width()),
        );
        self.print(&lines);
    }

    fn info(&mut self, text: &str) {
        self.note(text, Style::PLAIN.dim());
    }

    fn error(&mut self, text: &str) {
        self.note(text, Style::PLAIN.fg(Color::Red));
    }

    fn markdown(&mut self, text: &str) {
        let lines = markdown::render(text, self.width());
        self.print(&lines);
    }

    async fn banner(&mut self) {
        let model = match self
            .session
            .client
            .get_agent(GetAgentMsg {
                name: self.session.agent.clone(),
            })
            .await
        {
            Ok(info) if !info.model.is_empty() => info.model,
            _ => self
                .session
                .client
                .get_stats(GetStats {})
                .await
                .map(|stats| stats.active_model)
                .unwrap_or_default(),
        };
        let mut line = Line::new(vec![
            Span::new("crabtalk", Style::PLAIN.bold().fg(Color::Magenta)),
            Span::plain(" · "),
            Span::new(self.session.agent_label().to_owned(), Style::PLAIN.bold()),
            Span::new(format!(" with {}", self.session.sender), Style::PLAIN.dim()),
        ]);
        if !model.is_empty() {
            line.push(Span::new(format!(" · {model}"), Style::PLAIN.dim()));
        }
        let lines = wrap(&line.spans, &Wrap::words(self.width()));
        self.print(&lines);
        self.info("/help for commands · Ctrl-D to quit");
    }

    async fn run(&mut self) -> Result<(), TuiError> {
        loop {
            let input = match self.prompt().await {
                Prompted::Quit => return Ok(()),
                Prompted::Input(input) => input,
            };
            if let Err(err) = self.history.add(&input) {
                self.error(&format!("cannot save the input history: {err}"));
            }
            let parsed = match commands::parse(&input) {
                Ok(parsed) => parsed,
                Err(usage) => {
                    self.error(&usage);
                    continue;
                }
            };
            match parsed {
                Input::Empty => {}
                Input::Message(text) => {
                    let request = self.session.message(&text);
                    self.turn(request).await;
                }
                Input::Command(Command::Quit) => return Ok(()),
                Input::Command(command) => self.command(command).await,
            }
        }
    }

    fn draw_prompt(&mut self, notice: Option<&str>) {
        let layout = self.terminal.layout();
        let (mut rows, cursor) = self
            .editor
            .render_window(PROMPT, layout.width, layout.max_live);
        if let Some(notice) = notice {
            rows.push(Line::styled(notice, Style::PLAIN.dim()));
        }
        let _ = self.terminal.show(&[], &rows, Some(cursor));
    }

    /// Reads one input; Ctrl-D, or Ctrl-C twice on an empty input, quits.
    async fn prompt(&mut self) -> Prompted {
        let mut armed = false;
        self.draw_prompt(None);
        loop {
            let Some(Ok(event)) = self.keys.next().await else {
                return Prompted::Quit;
            };
            let action = match event {
                TermEvent::Key(key) => self.editor.key(key, &self.history, &self.completer),
                TermEvent::Paste(text) => {
                    self.editor.insert(&text);
                    EditorAction::Redraw
                }
                TermEvent::Resize(..) => EditorAction::Redraw,
                _ => EditorAction::None,
            };
            match action {
                EditorAction::None => continue,
                EditorAction::Interrupt if armed => return Prompted::Quit,
                EditorAction::Interrupt => {
                    armed = true;
                    self.draw_prompt(Some("Press Ctrl-C again or Ctrl-D to quit."));
                    continue;
                }
                EditorAction::Eof => return Prompted::Quit,
                EditorAction::ClearScreen => {
                    let _ = self.terminal.clear_screen();
                }
                EditorAction::Submit(text) => {
                    // The input stays in the scrollback as it was typed.
                    let mut shown = Editor::new();
                    shown.set_text(&text);
                    let (rows, _) = shown.render(PROMPT, self.width());
                    self.print(&rows);
                    return Prompted::Input(text);
                }
                EditorAction::Redraw => {}
            }
            armed = false;
            self.draw_prompt(None);
        }
    }

    /// Streams one turn to the screen; Ctrl-C kills it.
    async fn turn(&mut self, request: StreamMsg) {
        let mut stream = match self.session.client.stream(request).await {
            Ok(stream) => stream,
            Err(err) => return self.client_error(err).await,
        };
        let mut view = TurnView::new(self.terminal.layout(), self.tools.len() + 1);
        let mut forms: VecDeque<AskForm> = VecDeque::new();
        let mut live: Vec<Line> = Vec::new();
        let mut killed = false;
        loop {
            tokio::select! {
                event = stream.next() => {
                    let event = match event {
                        None => break,
                        Some(Ok(event)) => event,
                        Some(Err(err)) => {
                            let frame = view.close();
                            let _ = self.terminal.show(&frame.commit, &[], None);
                            self.client_error(err).await;
                            break;
                        }
                    };
                    let Some(event) = event.event else { continue };
                    view.set_layout(self.terminal.layout());
                    let frame = view.event(&event);
                    if let Event::AskUser(ask) = &event {
                        forms.push_back(AskForm::new(ask));
                    }
                    live = frame.live;
                    let shown = match forms.front() {
                        Some(form) => form.render(self.width()),
                        None => live.clone(),
                    };
                    let _ = self.terminal.show(&frame.commit, &shown, None);
                    if matches!(event, Event::End(_)) {
                        break;
                    }
                }
                key = self.keys.next() => {
                    let Some(Ok(TermEvent::Key(key))) = key else { continue };
                    if key.kind == KeyEventKind::Release {
                        continue;
                    }
                    if is_ctrl_c(&key) {
                        if killed {
                            // The daemon did not end the turn: stop waiting.
                            let frame = view.close();
                            let _ = self.terminal.show(&frame.commit, &[], None);
                            self.error("stopped waiting for the turn to end");
                            break;
                        }
                        killed = true;
                        // Open questions need no answer of their own: the
                        // kill withdraws them, and the daemon closes each
                        // call as cancelled. Answering "cancelled" first
                        // would let the agent start another model call
                        // before the kill lands.
                        forms.clear();
                        let _ = self.terminal.show(&[], &live, None);
                        if let Err(err) = self.session.client.kill(self.session.kill_msg()).await {
                            self.client_error(err).await;
                            break;
                        }
                        continue;
                    }
                    let Some(form) = forms.front_mut() else { continue };
                    let reply = match form.key(key) {
                        AskOutcome::Pending => None,
                        AskOutcome::Answered(answer) => Some((answer, form.summary(self.terminal.layout().width))),
                        AskOutcome::Cancelled => Some((CANCELLED.to_owned(), vec![Line::styled("? dismissed: answered \"cancelled\"", Style::PLAIN.dim())])),
                    };
                    if let Some((answer, summary)) = reply {
                        let call_id = form.call_id().to_owned();
                        forms.pop_front();
                        let shown = forms.front().map(|f| f.render(self.width())).unwrap_or_else(|| live.clone());
                        let _ = self.terminal.show(&summary, &shown, None);
                        if let Err(err) = self.session.client.reply_to_ask(self.session.reply(&call_id, &answer)).await {
                            self.error(&format!("the answer did not reach the agent: {err}"));
                        }
                    } else if let Some(form) = forms.front() {
                        let rendered = form.render(self.width());
                        let _ = self.terminal.show(&[], &rendered, None);
                    }
                }
            }
        }
        self.tools.extend(view.into_records());
    }

    /// Reports a failed request; a lost connection is re-established.
    async fn client_error(&mut self, err: ClientError) {
        if err.code() == Some(ErrorMsg::NOT_FOUND) {
            let agents = self.session.agent_names().await;
            if !self.session.agent.is_empty() && !agents.contains(&self.session.agent) {
                let error = self.session.unknown_agent(&self.session.agent).await;
                return self.error(&error.to_string());
            }
        }
        let lost = matches!(err, ClientError::Closed { .. });
        self.error(&TuiError::from(err).to_string());
        if lost {
            match self.session.reconnect().await {
                Ok(()) => self.info("reconnected to the daemon"),
                Err(err) => self.error(&err.to_string()),
            }
        }
    }

    async fn command(&mut self, command: Command) {
        match command {
            Command::Help => {
                let help = commands::help_text();
                let lines: Vec<Line> = help.lines().map(Line::plain_text).collect();
                let width = self.width();
                let lines: Vec<Line> = lines
                    .iter()
                    .flat_map(|line| {
                        wrap(
                            &line.spans,
                            &Wrap::words(width).with_rest(Line::plain_text("      ")),
                        )
                    })
                    .collect();
                self.print(&lines);
            }
            Command::Agent(None) => {
                let agents = self.session.agent_names().await;
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
            Command::Agent(Some(name)) => match self.session.use_agent(&name).await {
                Ok(info) => {
                    self.completer.agents = self.session.agent_names().await;
                    let model = if info.model.is_empty() {
                        String::new()
                    } else {
                        format!(" · {}", info.model)
                    };
                    self.note(
                        &format!("now talking to {}{model}", info.name),
                        Style::PLAIN.fg(Color::Green),
                    );
                }
                Err(err) => self.error(&err.to_string()),
            },
            Command::Guest { agent, message } => {
                let mut request = self.session.message(&message);
                request.guest = Some(agent);
                self.turn(request).await;
            }
            Command::Compact => {
                let request = CompactMsg {
                    agent: self.session.agent.clone(),
                    sender: self.session.sender.clone(),
                };
                match self.session.client.compact(request).await {
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
            Command::Kill => match self.session.client.kill(self.session.kill_msg()).await {
                Ok(_) => {
                    let label = format!("{}/{}", self.session.agent_label(), self.session.sender);
                    self.info(&format!(
                        "asked the daemon to stop any turn running on {label}"
                    ));
                }
                Err(err) => self.client_error(err).await,
            },
            Command::Model(None) => match self.session.client.list_models(ListModelsMsg {}).await {
                Ok(list) if list.models.is_empty() => {
                    self.info("The daemon has no models configured.")
                }
                Ok(list) => {
                    let items: Vec<String> = list
                        .models
                        .iter()
                        .map(|model| {
                            let mark = if model.active { " ← default" } else { "" };
                            format!("- `{}`{mark}", model.name)
                        })
                        .collect();
                    self.markdown(&format!("Models:\n\n{}", items.join("\n")));
                }
                Err(err) => self.client_error(err).await,
            },
            Command::Model(Some(model)) => {
                match self
                    .session
                    .client
                    .set_active_model(SetActiveModelMsg {
                        model: model.clone(),
                    })
                    .await
                {
                    Ok(_) => self.note(
                        &format!("the default model is now {model}"),
                        Style::PLAIN.fg(Color::Green),
                    ),
                    Err(err) => self.client_error(err).await,
                }
            }
            Command::Sessions => self.sessions().await,
            Command::Search(query) => self.search(query).await,
            Command::Events => self.events().await,
            Command::Expand(number) => {
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
            Command::Clear => {
                let _ = self.terminal.clear_screen();
            }
            Command::Quit => {}
            Command::Other { name, text } => {
                if self.completer.skills.is_empty() {
                    // The list may have been unavailable at startup.
                    self.completer.skills = self.session.skill_names().await;
                }
                if self.completer.skills.contains(&name) {
                    let request = self.session.message(&text);
                    self.turn(request).await;
                } else {
                    self.error(&format!(
                        "unknown command /{name}: /help lists the commands (and skills); start a message with // to send it with a leading /"
                    ));
                }
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
            "| agent | sender | messages | updated | title |\n|---|---|--:|---|---|\n",
        );
        for c in conversations.iter().take(50) {
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
                "| {}{} | {} | {} | {} | {} |\n",
                cell(&c.agent),
                if current { " ←" } else { "" },
                cell(&c.sender),
                c.message_count,
                date,
                cell(&c.title)
            ));
        }
        self.markdown(&table);
        if conversations.len() > 50 {
            self.info(&format!("… and {} older", conversations.len() - 50));
        }
    }

    /// Shows every agent's events until Esc, q or Ctrl-C.
    async fn events(&mut self) {
        let mut stream = match self
            .session
            .client
            .subscribe_events(SubscribeEvents {})
            .await
        {
            Ok(stream) => stream,
            Err(err) => return self.client_error(err).await,
        };
        let mut tail = EventTail::new(None);
        let footer = [Line::styled(
            "watching events · Esc, q or Ctrl-C to stop",
            Style::PLAIN.dim(),
        )];
        let _ = self.terminal.show(&[], &footer, None);
        loop {
            tokio::select! {
                event = stream.next() => {
                    let event = match event {
                        Some(Ok(event)) => event,
                        Some(Err(err)) => {
                            self.client_error(err).await;
                            break;
                        }
                        None => break,
                    };
                    let width = self.width();
                    let lines: Vec<Line> = tail
                        .event(&event)
                        .iter()
                        .map(|line| Line::styled(crate::text::truncate(line, width).into_owned(), Style::PLAIN))
                        .collect();
                    let _ = self.terminal.show(&lines, &footer, None);
                }
                key = self.keys.next() => {
                    let Some(Ok(TermEvent::Key(key))) = key else { continue };
                    if key.kind != KeyEventKind::Release
                        && (is_ctrl_c(&key) || matches!(key.code, KeyCode::Esc | KeyCode::Char('q')))
                    {
                        break;
                    }
                }
            }
        }
        let width = self.width();
        let rest: Vec<Line> = tail
            .finish()
            .iter()
            .map(|line| Line::plain_text(crate::text::truncate(line, width).into_owned()))
            .collect();
        self.print(&rest);
        self.info("stopped watching events");
    }
}
