//! The modes for scripts: `-p PROMPT` (one turn, the reply on stdout) and
//! `events` (the daemon's event stream as lines).
//!
//! Standard output carries only the reply (or JSON events); notes and
//! errors go to standard error. A turn that ends with an error exits 1, so
//! `crabtalk-tui -p … && next-step` does what it says. Nobody is at the
//! keyboard, so an `ask_user` question is answered at once with an explicit
//! cancellation rather than left waiting. Ctrl-C kills the turn on the
//! daemon before exiting. A reader that closes the pipe early (`| head`)
//! is a normal end for a filter: the output stops quietly, exit status 0,
//! and the daemon finishes the turn on its own.

use std::io::{Read, Write};

use crabtalk_proto::msg::SubscribeEvents;
use crabtalk_proto::msg::stream_event::Event;
use futures::StreamExt;

use crate::error::TuiError;
use crate::events::EventTail;
use crate::session::Session;

/// The answer to `ask_user` in `-p` mode.
pub(crate) const NO_ONE_TO_ASK: &str = "cancelled: nobody can answer (crabtalk-tui -p runs without a person at the keyboard); continue without the answer";

/// How `-p` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrintFormat {
    /// The reply text as it streams.
    Text,
    /// Every event as one JSON object per line.
    Json,
}

/// Reads the prompt: the argument, or all of stdin for `-`.
pub(crate) fn read_prompt(argument: &str, stdin: &mut impl Read) -> Result<String, TuiError> {
    let prompt = if argument == "-" {
        let mut buffer = Vec::new();
        stdin
            .read_to_end(&mut buffer)
            .map_err(|err| TuiError::io("reading the prompt from standard input", err))?;
        String::from_utf8(buffer)
            .map_err(|_| TuiError::Usage("the prompt on standard input is not UTF-8".into()))?
    } else {
        argument.to_owned()
    };
    if prompt.trim().is_empty() {
        return Err(TuiError::Usage("the prompt is empty".into()));
    }
    Ok(prompt)
}

/// Runs one turn and prints it to `out`.
pub(crate) async fn print_turn(
    session: &Session,
    prompt: &str,
    format: PrintFormat,
    out: &mut impl Write,
) -> Result<(), TuiError> {
    let mut stream = match session.client.stream(session.message(prompt)).await {
        Ok(stream) => stream,
        Err(err) => return Err(turn_error(session, err).await),
    };
    match print_events(session, &mut stream, format, out).await {
        Err(TuiError::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(())
        }
        other => other,
    }
}

async fn print_events(
    session: &Session,
    stream: &mut crabtalk_proto::ReplyStream<crabtalk_proto::msg::StreamEvent>,
    format: PrintFormat,
    out: &mut impl Write,
) -> Result<(), TuiError> {
    let write_error = |err| TuiError::io("writing the reply", err);
    let mut ends_with_newline = true;
    let mut interrupted = false;
    let mut interrupt = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            _ = &mut interrupt, if !interrupted => {
                interrupted = true;
                let _ = session.client.kill(session.kill_msg()).await;
                continue;
            }
        };
        let Some(event) = event else { break };
        let event = match event {
            Ok(event) => event,
            Err(err) => return Err(turn_error(session, err).await),
        };
        let Some(event) = event.event else { continue };
        if format == PrintFormat::Json {
            writeln!(out, "{}", crate::json::stream_event(&event)).map_err(write_error)?;
            out.flush().map_err(write_error)?;
        }
        match &event {
            Event::Chunk(chunk) if format == PrintFormat::Text => {
                let text = crate::text::sanitize(&chunk.content);
                if !text.is_empty() {
                    ends_with_newline = text.ends_with('\n');
                }
                out.write_all(text.as_bytes()).map_err(write_error)?;
                out.flush().map_err(write_error)?;
            }
            Event::AskUser(ask) => {
                eprintln!(
                    "crabtalk-tui: the agent asked a question; answering that nobody can answer"
                );
                let _ = session
                    .client
                    .reply_to_ask(session.reply(&ask.call_id, NO_ONE_TO_ASK))
                    .await;
            }
            Event::End(end) => {
                if format == PrintFormat::Text && !ends_with_newline {
                    writeln!(out).map_err(write_error)?;
                }
                if interrupted {
                    return Err(TuiError::Interrupted);
                }
                if !end.error.is_empty() {
                    return Err(TuiError::TurnFailed(end.error.clone()));
                }
                return Ok(());
            }
            _ => {}
        }
    }
    Err(TuiError::TurnFailed(
        "the stream ended without StreamEnd".into(),
    ))
}

/// Turns a refused turn into an error a person can act on.
async fn turn_error(session: &Session, err: crabtalk_proto::ClientError) -> TuiError {
    if err.code() == Some(crabtalk_proto::msg::ErrorMsg::NOT_FOUND) && !session.agent.is_empty() {
        let agents = session.agent_names().await;
        if !agents.contains(&session.agent) {
            return TuiError::UnknownAgent {
                name: session.agent.clone(),
                agents,
            };
        }
    }
    err.into()
}

/// Prints the daemon's events until the stream ends or Ctrl-C.
pub(crate) async fn tail_events(
    session: &Session,
    agent: Option<String>,
    format: PrintFormat,
    out: &mut impl Write,
) -> Result<(), TuiError> {
    let mut stream = session.client.subscribe_events(SubscribeEvents {}).await?;
    let mut tail = EventTail::new(agent);
    let mut interrupt = std::pin::pin!(tokio::signal::ctrl_c());
    let write = |out: &mut dyn Write, line: &str| -> Result<bool, TuiError> {
        match writeln!(out, "{line}").and_then(|()| out.flush()) {
            Ok(()) => Ok(true),
            // A closed pipe (`| head`) is the reader saying "enough".
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
            Err(err) => Err(TuiError::io("writing events", err)),
        }
    };
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            _ = &mut interrupt => break,
        };
        let Some(event) = event else { break };
        let event = event?;
        let lines = match format {
            PrintFormat::Json if tail.wants(&event) => {
                vec![crate::json::agent_event(&event).to_string()]
            }
            PrintFormat::Json => Vec::new(),
            PrintFormat::Text => tail.event(&event),
        };
        for line in lines {
            if !write(out, &line)? {
                return Ok(());
            }
        }
    }
    for line in tail.finish() {
        if !write(out, &line)? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_comes_from_the_argument_or_stdin() {
        let mut empty = std::io::empty();
        assert_eq!(read_prompt("hello", &mut empty).unwrap(), "hello");
        let mut stdin = "from\nstdin 蟹".as_bytes();
        assert_eq!(read_prompt("-", &mut stdin).unwrap(), "from\nstdin 蟹");
        assert!(matches!(
            read_prompt("-", &mut "  \n".as_bytes()),
            Err(TuiError::Usage(_))
        ));
        assert!(matches!(
            read_prompt("-", &mut &b"\xff\xfe"[..]),
            Err(TuiError::Usage(_))
        ));
    }
}
