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
//! moves events between them, the daemon and the terminal. This file is
//! the event loop; what each event does is in `keys.rs` (the keyboard),
//! `streams.rs` (the turn streamed and other clients' turns), `link.rs`
//! (the connection to the daemon) and `screen.rs` (what is drawn).

mod follow;
mod keys;
mod link;
mod own_turn;
mod screen;
mod slash;
mod streams;
mod terminal;
mod watch;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crabtalk_proto::msg::*;
use crabtalk_proto::{ClientError, ReplyStream, StreamItem};
use crossterm::event::{Event as TermEvent, EventStream, KeyCode, KeyEvent, KeyModifiers};
use futures::StreamExt;
use tokio::sync::mpsc;

use self::follow::Follow;
use self::own_turn::OwnTurn;
use self::terminal::Terminal;
use crate::error::TuiError;
use crate::input::complete::Completer;
use crate::input::editor::Editor;
use crate::input::history::History;
use crate::render::stream::Layout;
use crate::render::tool::ToolRecord;
use crate::render::turn::SPINNER_STEP;
use crate::session::Session;

/// The message for `/search` when the daemon is too old to search.
pub(crate) const SEARCH_UNAVAILABLE: &str = "Session search is not available: this daemon does not offer it. /sessions lists the stored conversations.";

/// How many turns of a conversation are shown when it is opened.
const TAIL_TURNS: usize = 3;

/// Queued inputs shown above the input line (the rest are counted).
const QUEUE_SHOWN: usize = 3;

/// The longest wait between two attempts to reconnect.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Runs the chat until the person quits.
pub(crate) async fn run(session: Session, history: History) -> Result<(), TuiError> {
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
    /// Whether a turn of this chat is running.
    fn busy(&self) -> bool {
        self.turn.is_some()
    }

    fn connected(&self) -> bool {
        matches!(self.link, Link::Up)
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
}

impl OwnTurn {
    /// Rows the turn's live tail may take at `layout` (the input line and
    /// the queue take theirs).
    fn view_budget(&self, layout: Layout) -> usize {
        (layout.max_live - (layout.max_live / 3).max(1)).max(1)
    }
}
