//! The chat: one event loop over the keyboard, the turn being streamed,
//! the conversation's events and a timer.
//!
//! The input line stays live all the time: while a turn streams, the
//! person keeps typing (editing, history, paste), and Enter queues what
//! they typed — a message or a command — to be sent when the turn ends;
//! queued inputs are shown above the input line. Ctrl-C stops the turn
//! (`KillMsg`; the daemon persists it and the conversation stays usable) and
//! gives the queued inputs back to the input line; an `ask_user` question
//! takes the keys until it is answered or dismissed. Turns that other
//! clients run in the same conversation appear as they stream
//! (`follow`). When the connection to the daemon is lost the chat
//! reconnects by itself; a message the daemon never acknowledged is sent
//! again once it is back, and what is typed meanwhile waits in the queue.
//!
//! Everything shown is rendered by the pure parts of the crate
//! ([`crate::render`], [`crate::ask`], [`crate::input`]); this module only
//! moves events between them, the daemon and the terminal.

mod follow;
mod own_turn;
mod slash;
mod terminal;
mod watch;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crabtalk_proto::client::{ClientError, ReplyStream, StreamItem};
use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::*;
use crossterm::event::{
    Event as TermEvent, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
};
use futures::StreamExt;
use tokio::sync::mpsc;

use self::follow::Follow;
use self::own_turn::OwnTurn;
use self::terminal::Terminal;
use crate::ask::{AskForm, AskOutcome, CANCELLED};
use crate::commands::{self, Input};
use crate::error::TuiError;
use crate::input::complete::Completer;
use crate::input::editor::{Editor, EditorAction};
use crate::input::history::History;
use crate::render::history::tail;
use crate::render::markdown;
use crate::render::stream::Layout;
use crate::render::tool::ToolRecord;
use crate::render::turn::{SPINNER_STEP, TurnView};
use crate::session::Session;
use crate::text::wrap::{Wrap, wrap};
use crate::text::{Color, Line, Span, Style, display_width, sanitize, truncate};

/// The message for `/search` when the daemon is too old to search.
pub const SEARCH_UNAVAILABLE: &str = "Session search is not available: this daemon does not offer it. /sessions lists the stored conversations.";

/// How many turns of a conversation are shown when it is opened.
const TAIL_TURNS: usize = 3;

/// Queued inputs shown above the input line (the rest are counted).
const QUEUE_SHOWN: usize = 3;

/// The longest wait between two attempts to reconnect.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Runs the chat until the person quits.
pub async fn run(session: Session, history: History) -> Result<(), TuiError> {
    let terminal = Terminal::enter().map_err(|err| TuiError::io("setting up the terminal", err))?;
    let mut repl = Repl {
        completer: Completer::default(),
        follow: Follow::default(),
        session,
        terminal,
        keys: keys(),
        editor: Editor::new(),
        history,
        tools: Vec::new(),
        turn: None,
        events: None,
        queue: VecDeque::new(),
        link: Link::Up,
        quit_armed: false,
        notice: None,
        listed: Vec::new(),
    };
    repl.refresh_completion().await;
    repl.banner().await;
    repl.subscribe().await;
    repl.show_tail().await;
    repl.run().await
}

/// Whether the connection to the daemon is up.
enum Link {
    Up,
    /// Lost; the next attempt to reconnect is at `retry`.
    Down {
        retry: Instant,
        attempts: u32,
    },
}

/// Whether the chat goes on.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

struct Repl {
    session: Session,
    terminal: Terminal,
    /// The terminal's events, read by their own task (so that keys typed
    /// faster than the screen is drawn are taken together).
    keys: mpsc::UnboundedReceiver<std::io::Result<TermEvent>>,
    editor: Editor,
    history: History,
    completer: Completer,
    /// Every tool call shown in this session, for `/expand`.
    tools: Vec<ToolRecord>,
    /// The turn this chat runs, while it runs.
    turn: Option<OwnTurn>,
    /// The daemon's events, for the turns of other clients.
    events: Option<ReplyStream<AgentEventMsg>>,
    follow: Follow,
    /// Inputs submitted while a turn ran (or the daemon was away), in
    /// order.
    queue: VecDeque<String>,
    link: Link,
    /// Ctrl-C was pressed once on an empty input.
    quit_armed: bool,
    /// One dim line under the input.
    notice: Option<String>,
    /// The conversations `/sessions` listed last, for `/sessions N`.
    listed: Vec<ConversationInfo>,
}

/// The next item of an optional stream; never, without one.
async fn next_of<T: StreamItem>(
    stream: Option<&mut ReplyStream<T>>,
) -> Option<Result<T, ClientError>> {
    match stream {
        Some(stream) => stream.next().await,
        None => std::future::pending().await,
    }
}

/// The terminal's events, from a task of their own.
fn keys() -> mpsc::UnboundedReceiver<std::io::Result<TermEvent>> {
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut events = EventStream::new();
        while let Some(event) = events.next().await {
            if sender.send(event).is_err() {
                return;
            }
        }
    });
    receiver
}

/// Sleeps `wait`, or forever without one.
async fn sleep_or_never(wait: Option<Duration>) {
    match wait {
        Some(wait) => tokio::time::sleep(wait).await,
        None => std::future::pending().await,
    }
}

/// A key that is Ctrl-C.
fn is_ctrl_c(key: &KeyEvent) -> bool {
    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL)
}

impl Repl {
    fn layout(&self) -> Layout {
        self.terminal.layout()
    }

    fn width(&self) -> usize {
        self.layout().width
    }

    /// The prompt: the agent spoken to, and `›` when nothing runs, `…`
    /// while a turn runs (Enter queues then).
    fn prompt(&self) -> String {
        let mark = if self.busy() { "…" } else { "›" };
        format!("{} {mark} ", sanitize(self.session.agent_label()))
    }

    /// Prints lines for good above the live region (terminal write errors
    /// cannot be reported anywhere better than the terminal, so they are
    /// dropped).
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

    /// Whether a turn of this chat is running.
    fn busy(&self) -> bool {
        self.turn.is_some()
    }

    fn connected(&self) -> bool {
        matches!(self.link, Link::Up)
    }

    async fn banner(&mut self) {
        let model = self.conversation_model().await;
        let mut line = Line::new(vec![
            Span::new("crabtalk", Style::PLAIN.bold().fg(Color::Magenta)),
            Span::plain(" · "),
            Span::new(self.session.agent_label().to_owned(), Style::PLAIN.bold()),
            Span::new(format!(" with {}", self.session.sender), Style::PLAIN.dim()),
        ]);
        if let Some((model, _)) = model {
            line.push(Span::new(format!(" · {model}"), Style::PLAIN.dim()));
        }
        let lines = wrap(&line.spans, &Wrap::words(self.width()));
        self.print(&lines);
        self.info("/help for commands · Ctrl-D to quit");
    }

    /// The model this conversation uses and where it comes from: the
    /// agent's file, or the daemon's default.
    async fn conversation_model(&self) -> Option<(String, String)> {
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
    async fn refresh_completion(&mut self) {
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
    async fn subscribe(&mut self) {
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
    async fn show_tail(&mut self) {
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

    async fn run(&mut self) -> Result<(), TuiError> {
        loop {
            if self.drain_queue().await == Flow::Quit {
                return Ok(());
            }
            self.draw();
            let wait = self.wake_in();
            tokio::select! {
                key = self.keys.recv() => {
                    let Some(Ok(event)) = key else { return Ok(()) };
                    if self.terminal_event(event).await == Flow::Quit {
                        return Ok(());
                    }
                    // Keys that are already there (typed fast, or a paste
                    // the terminal does not bracket) are taken before the
                    // next redraw.
                    while let Ok(Ok(event)) = self.keys.try_recv() {
                        if self.terminal_event(event).await == Flow::Quit {
                            return Ok(());
                        }
                    }
                }
                event = next_of(self.turn.as_mut().map(|turn| &mut turn.stream)) => {
                    self.turn_event(event).await;
                }
                event = next_of(self.events.as_mut()) => self.follow_event(event),
                () = sleep_or_never(wait) => self.timer().await,
            }
        }
    }

    /// When the loop must wake without an event: the spinner of a running
    /// tool, or the next attempt to reconnect.
    fn wake_in(&self) -> Option<Duration> {
        let spinning = self
            .turn
            .as_ref()
            .is_some_and(|turn| turn.view.is_running())
            || self.follow.is_running();
        let retry = match self.link {
            Link::Down { retry, .. } => Some(retry.saturating_duration_since(Instant::now())),
            Link::Up => None,
        };
        match (spinning.then_some(SPINNER_STEP), retry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    async fn timer(&mut self) {
        if let Link::Down { retry, attempts } = self.link
            && Instant::now() >= retry
        {
            self.reconnect(attempts).await;
        }
    }

    /// Redraws the live region: the running turn (or another client's),
    /// the queue, then the input line (or the open question).
    fn draw(&mut self) {
        let layout = self.layout();
        let now = Instant::now();
        let prompt = self.prompt();
        self.editor.set_width(display_width(&prompt), layout.width);
        let busy = self.busy();
        let editor_rows = if busy {
            (layout.max_live / 3).max(1)
        } else {
            layout.max_live
        };
        let (mut input, cursor) = self
            .editor
            .render_window(&prompt, layout.width, editor_rows);
        if let Some(notice) = &self.notice {
            input.push(Line::styled(
                truncate(notice, layout.width).into_owned(),
                Style::PLAIN.dim(),
            ));
        }
        let queued = self.queued_lines(layout.width);
        let mut live = Vec::new();
        let form = self
            .turn
            .as_ref()
            .and_then(|turn| turn.forms.front())
            .map(|form| form.render(layout.width));
        if let Some(turn) = &mut self.turn {
            let budget = layout
                .max_live
                .saturating_sub(input.len() + queued.len())
                .max(1);
            turn.view.set_layout(Layout {
                width: layout.width,
                max_live: budget,
            });
            live.extend(turn.view.live(now));
        }
        live.extend(self.follow.live(now));
        live.extend(queued);
        let cursor = match form {
            Some(form) => {
                live.extend(form);
                None
            }
            None => {
                let top = live.len();
                live.extend(input);
                Some((top + cursor.0, cursor.1))
            }
        };
        let _ = self.terminal.show(&[], &live, cursor);
    }

    fn queued_lines(&self, width: usize) -> Vec<Line> {
        let mut lines: Vec<Line> = self
            .queue
            .iter()
            .take(QUEUE_SHOWN)
            .map(|input| {
                let first = input.lines().next().unwrap_or_default();
                let more = if input.contains('\n') { " …" } else { "" };
                let why = if self.connected() {
                    "queued"
                } else {
                    "waiting for the daemon"
                };
                Line::new(vec![
                    Span::new(format!("⧗ {why}: "), Style::PLAIN.fg(Color::Yellow)),
                    Span::new(
                        truncate(
                            &sanitize(&format!("{first}{more}")),
                            width.saturating_sub(24),
                        )
                        .into_owned(),
                        Style::PLAIN.dim(),
                    ),
                ])
            })
            .collect();
        if self.queue.len() > QUEUE_SHOWN {
            lines.push(Line::styled(
                format!("  … and {} more", self.queue.len() - QUEUE_SHOWN),
                Style::PLAIN.dim(),
            ));
        }
        lines
    }

    /// Sends queued inputs while nothing runs and the daemon is there.
    async fn drain_queue(&mut self) -> Flow {
        while !self.busy() && self.connected() {
            let Some(input) = self.queue.pop_front() else {
                break;
            };
            if self.submit(input).await == Flow::Quit {
                return Flow::Quit;
            }
        }
        Flow::Continue
    }

    async fn terminal_event(&mut self, event: TermEvent) -> Flow {
        match event {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => self.key(key).await,
            TermEvent::Paste(text) => {
                if self.turn.as_mut().and_then(OwnTurn::form).is_none() {
                    self.editor.insert(&text);
                }
                Flow::Continue
            }
            _ => Flow::Continue,
        }
    }

    async fn key(&mut self, key: KeyEvent) -> Flow {
        let ctrl_c = is_ctrl_c(&key);
        if !ctrl_c {
            self.quit_armed = false;
            self.notice = None;
        }
        if self.busy() {
            if ctrl_c {
                self.interrupt_turn().await;
                return Flow::Continue;
            }
            if self.turn.as_mut().and_then(OwnTurn::form).is_some() {
                self.form_key(key).await;
                return Flow::Continue;
            }
        }
        if key.code == KeyCode::Tab {
            // Agents and skills created since the last look complete too.
            self.refresh_completion().await;
        }
        let action = self.editor.key(key, &self.history, &self.completer);
        match action {
            EditorAction::None | EditorAction::Redraw => {}
            EditorAction::ClearScreen => {
                let _ = self.terminal.clear_screen();
            }
            EditorAction::Interrupt if self.quit_armed => return Flow::Quit,
            EditorAction::Interrupt => {
                self.quit_armed = true;
                self.notice = Some("Press Ctrl-C again or Ctrl-D to quit.".into());
            }
            EditorAction::Eof if self.busy() => {
                self.notice = Some("A turn is running: Ctrl-C stops it, then Ctrl-D quits.".into());
            }
            EditorAction::Eof => return Flow::Quit,
            EditorAction::Submit(text) => {
                if text.trim().is_empty() {
                    return Flow::Continue;
                }
                if let Err(err) = self.history.add(&text) {
                    self.error(&format!("cannot save the input history: {err}"));
                }
                if self.busy() || !self.connected() || !self.queue.is_empty() {
                    self.queue.push_back(text);
                } else {
                    return self.submit(text).await;
                }
            }
        }
        Flow::Continue
    }

    /// Ctrl-C during a turn: kill it; a second one stops waiting for it.
    async fn interrupt_turn(&mut self) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        if turn.killed {
            // The daemon did not end the turn: stop waiting.
            let frame = turn.view.close();
            self.print(&frame.commit);
            self.error("stopped waiting for the turn to end");
            self.end_turn();
            return;
        }
        turn.killed = true;
        // Open questions need no answer of their own: the kill withdraws
        // them, and the daemon closes each call as cancelled. Answering
        // "cancelled" first would let the agent start another model call
        // before the kill lands.
        turn.forms.clear();
        if let Err(err) = self.session.client.kill(self.session.kill_msg()).await {
            self.client_error(err).await;
        }
    }

    async fn form_key(&mut self, key: KeyEvent) {
        let width = self.width();
        let Some(turn) = &mut self.turn else {
            return;
        };
        let Some(form) = turn.forms.front_mut() else {
            return;
        };
        let reply = match form.key(key) {
            AskOutcome::Pending => None,
            AskOutcome::Answered(answer) => Some((answer, form.summary(width))),
            AskOutcome::Cancelled => Some((
                CANCELLED.to_owned(),
                vec![Line::styled(
                    "? dismissed: answered \"cancelled\"",
                    Style::PLAIN.dim(),
                )],
            )),
        };
        let Some((answer, summary)) = reply else {
            return;
        };
        let call_id = form.call_id().to_owned();
        turn.forms.pop_front();
        self.print(&summary);
        let reply = self.session.reply(&call_id, &answer);
        if let Err(err) = self.session.client.reply_to_ask(reply).await {
            self.error(&format!("the answer did not reach the agent: {err}"));
        }
    }

    /// Runs one input: a message starts a turn, a command runs.
    async fn submit(&mut self, text: String) -> Flow {
        let parsed = match commands::parse(&text) {
            Ok(parsed) => parsed,
            Err(usage) => {
                self.echo(&text);
                self.error(&usage);
                return Flow::Continue;
            }
        };
        self.echo(&text);
        match parsed {
            Input::Empty => Flow::Continue,
            Input::Message(message) => {
                let request = self.session.message(&message);
                self.start_turn(request, &text).await;
                Flow::Continue
            }
            Input::Command(command) => self.command(command, &text).await,
        }
    }

    /// The input, as it was typed, into the scrollback.
    fn echo(&mut self, text: &str) {
        let mut shown = Editor::new();
        shown.set_text(text);
        let prompt = self.prompt();
        let (rows, _) = shown.render(&prompt, self.width());
        self.print(&rows);
    }

    /// Sends a turn; `input` is what the person typed, kept until the daemon
    /// acknowledges the turn.
    async fn start_turn(&mut self, request: StreamMsg, input: &str) {
        let layout = self.layout();
        let view = TurnView::new(layout, self.tools.len() + 1, &self.session.agent);
        match self.session.client.stream(request).await {
            Ok(stream) => {
                self.follow.own_turn_sent();
                self.turn = Some(OwnTurn::new(stream, view, input));
            }
            Err(ClientError::Closed { .. }) => {
                self.queue.push_front(input.to_owned());
                self.info("not sent: the connection to the daemon is lost; it is sent again once the daemon is back");
                self.lost();
            }
            Err(err) => {
                self.client_error(err).await;
                self.give_back(input);
            }
        }
    }

    /// Puts a message the daemon did not take back into the input line.
    fn give_back(&mut self, input: &str) {
        if self.editor.is_empty() {
            self.editor.set_text(input);
            self.info("(your message is back in the input)");
        }
    }

    async fn turn_event(&mut self, event: Option<Result<StreamEvent, ClientError>>) {
        let layout = self.layout();
        let first_tool = self.tools.len() + 1;
        let event = match event {
            Some(Ok(event)) => event,
            None => {
                if let Some(turn) = &mut self.turn {
                    let frame = turn.view.close();
                    self.print(&frame.commit);
                }
                self.error("the turn ended without its end: the daemon stopped answering it");
                self.end_turn();
                return;
            }
            Some(Err(err)) => return self.turn_failed(err).await,
        };
        let Some(event) = event.event else { return };
        let Some(turn) = &mut self.turn else { return };
        turn.acknowledged = true;
        turn.view.set_layout(Layout {
            width: layout.width,
            max_live: turn.view_budget(layout),
        });
        let frame = turn.view.event(&event);
        if let Event::AskUser(ask) = &event
            && !turn.killed
        {
            turn.forms.push_back(AskForm::new(ask));
        }
        self.print(&frame.commit);
        match &event {
            Event::Start(start) => {
                let released = self
                    .follow
                    .own_turn_started(start.run_id, layout, first_tool);
                self.print(&released.commit);
            }
            Event::End(_) => self.end_turn(),
            _ => {}
        }
    }

    /// The turn's stream failed.
    async fn turn_failed(&mut self, err: ClientError) {
        let Some(mut turn) = self.turn.take() else {
            return;
        };
        let frame = turn.view.close();
        self.print(&frame.commit);
        self.tools.extend(turn.view.into_records());
        let layout = self.layout();
        let released = self.follow.own_turn_ended(layout, self.tools.len() + 1);
        self.print(&released.commit);
        if matches!(err, ClientError::Closed { .. }) {
            if turn.acknowledged {
                self.error("the connection to the daemon was lost during the turn; the daemon finishes it on its own, and its end is in the conversation");
            } else {
                self.queue.push_front(turn.input);
                self.info("the daemon did not take the message before the connection was lost; it is sent again once the daemon is back");
            }
            self.lost();
            return;
        }
        let acknowledged = turn.acknowledged;
        self.client_error(err).await;
        if !acknowledged {
            self.give_back(&turn.input);
        }
    }

    /// The turn is over: keep its tool calls; after a kill, what was queued
    /// goes back to the input line rather than out.
    fn end_turn(&mut self) {
        let Some(turn) = self.turn.take() else {
            return;
        };
        self.tools.extend(turn.view.into_records());
        let layout = self.layout();
        let released = self.follow.own_turn_ended(layout, self.tools.len() + 1);
        self.print(&released.commit);
        if turn.killed && !self.queue.is_empty() {
            let mut inputs: Vec<String> = self.queue.drain(..).collect();
            if !self.editor.is_empty() {
                inputs.push(self.editor.text().to_owned());
            }
            self.editor.set_text(&inputs.join("\n"));
            self.info("the turn was stopped: what you queued is back in the input");
        }
    }

    fn follow_event(&mut self, event: Option<Result<AgentEventMsg, ClientError>>) {
        match event {
            Some(Ok(event)) => {
                let layout = self.layout();
                let frame = self.follow.event(&event, layout, self.tools.len() + 1);
                self.print(&frame.commit);
                let records = self.follow.take_records();
                self.tools.extend(records);
            }
            // A daemon without subscriptions: nothing to follow.
            Some(Err(err)) if err.code() == Some(ErrorMsg::NOT_IMPLEMENTED) => self.events = None,
            // The subscription ends when the daemon shuts down (or the
            // connection goes).
            Some(Err(_)) | None => self.lost(),
        }
    }

    /// The connection is gone: say so once, and start reconnecting.
    fn lost(&mut self) {
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

    async fn reconnect(&mut self, attempts: u32) {
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
    async fn client_error(&mut self, err: ClientError) {
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

impl OwnTurn {
    /// Rows the turn's live tail may take at `layout` (the input line and
    /// the queue take theirs).
    fn view_budget(&self, layout: Layout) -> usize {
        (layout.max_live - (layout.max_live / 3).max(1)).max(1)
    }
}
