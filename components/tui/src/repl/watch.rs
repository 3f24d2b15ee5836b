//! `/events`: every agent's events until Esc, q or Ctrl-C. Lines that are
//! complete go to the scrollback; text still being written is shown live
//! above the footer as it arrives.

use crabtalk_proto::msg::SubscribeEvents;
use crossterm::event::{Event as TermEvent, KeyCode, KeyEventKind};
use futures::StreamExt;

use super::{Repl, is_ctrl_c};
use crate::events::EventTail;
use crate::text::{Line, Style, truncate};

impl Repl {
    pub(super) async fn watch_events(&mut self) {
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
        let footer = Line::styled(
            "watching events · Esc, q or Ctrl-C to stop",
            Style::PLAIN.dim(),
        );
        let _ = self.terminal.show(&[], std::slice::from_ref(&footer), None);
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
                    let line = |text: &String| {
                        Line::styled(truncate(text, width).into_owned(), Style::PLAIN)
                    };
                    let done: Vec<Line> = tail.event(&event).iter().map(line).collect();
                    let mut live: Vec<Line> = tail.live().iter().map(line).collect();
                    live.push(footer.clone());
                    let _ = self.terminal.show(&done, &live, None);
                }
                key = self.keys.recv() => {
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
            .map(|line| Line::plain_text(truncate(line, width).into_owned()))
            .collect();
        self.print(&rest);
        self.info("stopped watching events");
    }
}
