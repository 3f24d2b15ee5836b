//! `ask_agent`: one turn on the daemon for the host.
//!
//! The turn is a `StreamMsg` in the agent's conversation with the sender
//! the host names (`conversation`, default [`DEFAULT_CONVERSATION`]), with
//! the bridge's working directory when it has a real one (Claude Code
//! starts servers in the project; desktop hosts start them in `/`, where
//! the daemon's own default is better). Its events become progress
//! notifications ([`Progress`]); its last text is the result.
//!
//! The host cancelling the call (`notifications/cancelled`) kills the turn
//! on the daemon (`KillMsg`), as Ctrl-C does in the terminal client. A host
//! that merely goes away (closes our stdin) does not: the turn runs to its
//! end and is kept in its conversation, as for any client that
//! disconnects.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crabtalk_proto::Client;
use crabtalk_proto::msg::stream_event::Event;
use crabtalk_proto::msg::{
    AskUserEvent, ErrorMsg, KillMsg, ListAgentsMsg, ReplyToAsk, StreamEvent, StreamMsg,
};
use crabtalk_proto::{ClientError, ReplyStream};
use futures::StreamExt;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::service::{ElicitationMode, RequestContext};
use serde::Deserialize;

use super::progress::Progress;
use super::{DEFAULT_CONVERSATION, questions};

/// The longest message a host may send (the daemon's frames are larger;
/// a message this long is already far past any model's patience).
pub(super) const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// Gathered text is sent when nothing else happened for this long.
const TEXT_PAUSE: Duration = Duration::from_millis(250);

/// The most of a reply the result holds; the rest is counted, not kept
/// (the whole reply is in the conversation). Model output is not ours to
/// trust with the bridge's memory.
const MAX_REPLY_BYTES: usize = 1024 * 1024;

/// How long a killed turn is given to end before the call returns anyway.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// Arguments of `ask_agent`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AskArgs {
    #[serde(default)]
    agent: Option<String>,
    message: String,
    #[serde(default)]
    conversation: Option<String>,
}

impl AskArgs {
    /// What is wrong with these arguments, if anything.
    fn problem(&self) -> Option<String> {
        if self.message.trim().is_empty() {
            return Some("`message` is empty; say what the agent should do".into());
        }
        if self.message.len() > MAX_MESSAGE_BYTES {
            return Some(format!(
                "`message` is {} bytes; at most {MAX_MESSAGE_BYTES} are taken",
                self.message.len()
            ));
        }
        if let Some(conversation) = &self.conversation
            && (conversation.trim().is_empty()
                || conversation.len() > 128
                || conversation.chars().any(char::is_control))
        {
            return Some(
                "`conversation` names a conversation: 1 to 128 characters, no control characters \
                 (leave it out for the `mcp` conversation)"
                    .into(),
            );
        }
        None
    }
}

/// The turn as it went.
#[derive(Default)]
struct Outcome {
    /// The agent that answered (the daemon resolves an empty one).
    agent: String,
    /// The text since the last tool call: the reply.
    reply: ReplyText,
    /// Questions nobody could answer.
    unanswered: Vec<String>,
    error: Option<String>,
    /// Whether `error` is the daemon refusing the turn (no "failed"
    /// prefix, nothing said before it).
    refused: bool,
}

/// Runs `ask_agent` with `args` for the request `context`.
pub(super) async fn ask_agent(
    client: Client,
    args: AskArgs,
    context: &RequestContext<RoleServer>,
    host_gone: &AtomicBool,
) -> CallToolResult {
    if let Some(problem) = args.problem() {
        return failure(problem);
    }
    let sender = args
        .conversation
        .clone()
        .unwrap_or_else(|| DEFAULT_CONVERSATION.to_owned());
    let request = StreamMsg {
        agent: args.agent.clone().unwrap_or_default(),
        content: args.message.clone(),
        sender: Some(sender.clone()),
        cwd: working_directory(),
        ..Default::default()
    };
    let stream = match client.stream(request).await {
        Ok(stream) => stream,
        Err(err) => return failure(refusal(&client, &args, err).await),
    };
    let mut turn = Turn {
        client: &client,
        sender,
        progress: Progress::new(context.meta.get_progress_token(), context.peer.clone()),
        outcome: Outcome {
            agent: args.agent.clone().unwrap_or_default(),
            ..Outcome::default()
        },
        tools: HashMap::new(),
        host_gone,
        started: false,
        requested: args,
    };
    match turn.follow(stream, context).await {
        Followed::Ended => turn.result(),
        Followed::Cancelled => failure("the call was cancelled; the turn was stopped".into()),
    }
}

/// The working directory a turn gets: the bridge's own, unless it is `/`
/// (where desktop hosts start their servers) or not a directory.
fn working_directory() -> Option<String> {
    let dir = std::env::current_dir().ok()?;
    (dir.is_absolute() && dir.parent().is_some() && dir.is_dir())
        .then(|| dir.to_string_lossy().into_owned())
}

/// Why the daemon refused the turn, in words: an unknown agent names the
/// agents there are.
async fn refusal(client: &Client, args: &AskArgs, err: ClientError) -> String {
    if err.code() == Some(ErrorMsg::NOT_FOUND)
        && let Some(agent) = &args.agent
        && let Ok(list) = client.list_agents(ListAgentsMsg {}).await
    {
        let names: Vec<String> = list.agents.into_iter().map(|agent| agent.name).collect();
        if !names.contains(agent) {
            return format!(
                "there is no agent {agent:?}; the agents are {} (list_agents describes them)",
                names.join(", ")
            );
        }
    }
    format!("the daemon refused the turn: {err}")
}

enum Followed {
    Ended,
    Cancelled,
}

/// One turn being followed.
struct Turn<'a> {
    client: &'a Client,
    sender: String,
    progress: Progress,
    outcome: Outcome,
    /// Tool names by call id, for the progress of their results.
    tools: HashMap<String, String>,
    host_gone: &'a AtomicBool,
    /// Whether the daemon began the turn (`StreamStart`).
    started: bool,
    /// The arguments, for the words of a refusal.
    requested: AskArgs,
}

impl Turn<'_> {
    /// Follows the turn's events until its end, or until the host cancels
    /// the call (then the turn is killed).
    async fn follow(
        &mut self,
        mut stream: ReplyStream<StreamEvent>,
        context: &RequestContext<RoleServer>,
    ) -> Followed {
        loop {
            let pause = self.progress.has_text();
            let event = tokio::select! {
                biased;
                () = context.ct.cancelled() => {
                    self.kill(&mut stream).await;
                    return Followed::Cancelled;
                }
                event = stream.next() => event,
                () = tokio::time::sleep(TEXT_PAUSE), if pause => {
                    self.progress.flush().await;
                    continue;
                }
            };
            let event = match event {
                Some(Ok(event)) => event,
                // Refused before it began (an unknown agent): the daemon
                // answers the stream with an error.
                Some(Err(err)) if !self.started => {
                    self.outcome.error = Some(refusal(self.client, &self.requested, err).await);
                    self.outcome.refused = true;
                    break;
                }
                Some(Err(err)) => {
                    self.outcome.error = Some(format!("the turn was lost: {err}"));
                    break;
                }
                None => {
                    self.outcome.error = Some("the daemon ended the turn without an end".into());
                    break;
                }
            };
            let Some(event) = event.event else { continue };
            if let Event::End(end) = &event {
                if !end.agent.is_empty() {
                    self.outcome.agent = end.agent.clone();
                }
                if !end.error.is_empty() {
                    self.outcome.error = Some(end.error.clone());
                }
                break;
            }
            if let Event::AskUser(ask) = &event {
                if !self.answer(ask, context).await {
                    self.kill(&mut stream).await;
                    return Followed::Cancelled;
                }
                continue;
            }
            self.event(event).await;
        }
        self.progress.flush().await;
        Followed::Ended
    }

    /// Takes one event of the turn.
    async fn event(&mut self, event: Event) {
        match event {
            Event::Start(start) => {
                self.started = true;
                if !start.agent.is_empty() {
                    self.outcome.agent = start.agent;
                }
            }
            Event::Chunk(chunk) => {
                self.outcome.reply.push(&chunk.content);
                self.progress.text(&chunk.content).await;
            }
            Event::ThinkingStart(_) => self.progress.step("thinking…".into()).await,
            Event::ToolStart(start) => {
                // What came before a tool call was on the way; the reply
                // is what comes after the last one.
                self.outcome.reply.clear();
                for call in start.calls {
                    self.progress
                        .step(format!(
                            "calling {} {}",
                            call.name,
                            shorten(&call.arguments, 200)
                        ))
                        .await;
                    self.tools.insert(call.id, call.name);
                }
            }
            Event::ToolResult(result) => {
                let name = self
                    .tools
                    .get(&result.call_id)
                    .cloned()
                    .unwrap_or_else(|| "a tool".into());
                let message = if result.is_error {
                    format!(
                        "{name} failed ({} ms): {}",
                        result.duration_ms,
                        shorten(&result.output, 200)
                    )
                } else {
                    format!("{name} done ({} ms)", result.duration_ms)
                };
                self.progress.step(message).await;
            }
            _ => {}
        }
    }

    /// Puts the agent's questions to the host's user when the host can
    /// ask, else tells the agent nobody can answer. `false`: the host
    /// cancelled the call meanwhile.
    async fn answer(&mut self, ask: &AskUserEvent, context: &RequestContext<RoleServer>) -> bool {
        self.progress.flush().await;
        let agent = if self.outcome.agent.is_empty() {
            "the agent"
        } else {
            self.outcome.agent.as_str()
        };
        let can_ask = context
            .peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form);
        let answer = match questions::elicitation(agent, ask) {
            Ok(form) if can_ask => {
                self.progress.step(format!("{agent} asks the user")).await;
                let asked = context.peer.create_elicitation(form);
                tokio::select! {
                    () = context.ct.cancelled() => return false,
                    answered = asked => match answered {
                        Ok(result) => questions::reply(ask, &result),
                        Err(err) => {
                            tracing::warn!("the host could not ask its user: {err}");
                            self.outcome.unanswered.extend(questions::describe(ask));
                            questions::NO_ONE_TO_ASK.to_owned()
                        }
                    },
                }
            }
            _ => {
                self.outcome.unanswered.extend(questions::describe(ask));
                questions::NO_ONE_TO_ASK.to_owned()
            }
        };
        let reply = ReplyToAsk {
            agent: self.outcome.agent.clone(),
            sender: self.sender.clone(),
            content: answer,
            call_id: ask.call_id.clone(),
        };
        if let Err(err) = self.client.reply_to_ask(reply).await {
            tracing::warn!("the answer to the agent's question was not taken: {err}");
        }
        true
    }

    /// Kills the turn and waits a little for it to end, so a host that
    /// cancels and asks again finds the conversation free. Not when the
    /// host went away: then the turn goes on.
    async fn kill(&mut self, stream: &mut ReplyStream<StreamEvent>) {
        if self.host_gone.load(Ordering::Acquire) {
            tracing::info!(
                "the host went away during a turn of {}/{}; it goes on, and its reply is kept \
                 in that conversation",
                self.outcome.agent,
                self.sender
            );
            return;
        }
        let kill = KillMsg {
            agent: self.outcome.agent.clone(),
            sender: self.sender.clone(),
        };
        if let Err(err) = self.client.kill(kill).await {
            tracing::warn!("the cancelled turn could not be killed: {err}");
            return;
        }
        let ended = async {
            while let Some(Ok(event)) = stream.next().await {
                if matches!(event.event, Some(Event::End(_))) {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(KILL_GRACE, ended).await;
    }

    /// The call's result: the reply, the questions nobody answered, or the
    /// turn's error.
    fn result(&self) -> CallToolResult {
        let outcome = &self.outcome;
        let mut text = outcome.reply.shown();
        if !outcome.unanswered.is_empty() {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&format!(
                "[{} asked, and nobody could answer through this MCP host; answer in your next \
                 ask_agent message to the same conversation ({}):]\n",
                if outcome.agent.is_empty() {
                    "the agent"
                } else {
                    &outcome.agent
                },
                self.sender
            ));
            for question in &outcome.unanswered {
                text.push_str(&format!("- {question}\n"));
            }
        }
        match &outcome.error {
            Some(error) if outcome.refused => failure(error.clone()),
            Some(error) => {
                let mut message = format!("the turn failed: {error}");
                if !text.is_empty() {
                    message.push_str(&format!("\n\nWhat the agent said before:\n{text}"));
                }
                failure(message)
            }
            None => CallToolResult::success(vec![ContentBlock::text(text)]),
        }
    }
}

/// A reply as it streams in, kept up to [`MAX_REPLY_BYTES`].
#[derive(Debug, Default)]
struct ReplyText {
    text: String,
    /// Bytes past the limit, not kept.
    dropped: usize,
}

impl ReplyText {
    fn push(&mut self, piece: &str) {
        let room = MAX_REPLY_BYTES.saturating_sub(self.text.len());
        if piece.len() <= room && self.dropped == 0 {
            self.text.push_str(piece);
            return;
        }
        let mut end = room.min(piece.len());
        while !piece.is_char_boundary(end) {
            end -= 1;
        }
        if self.dropped == 0 {
            self.text.push_str(&piece[..end]);
            self.dropped += piece.len() - end;
        } else {
            self.dropped += piece.len();
        }
    }

    fn clear(&mut self) {
        *self = Self::default();
    }

    /// The reply as the result shows it.
    fn shown(&self) -> String {
        let mut shown = self.text.trim().to_owned();
        if self.dropped > 0 {
            shown.push_str(&format!(
                "\n[… {} more bytes of the reply are not shown here; the whole reply is kept in the conversation]",
                self.dropped
            ));
        }
        shown
    }
}

/// An error result with `message`.
pub(super) fn failure(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// `text` on one line, cut to about `max` characters.
fn shorten(text: &str, max: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(json: serde_json::Value) -> Result<AskArgs, serde_json::Error> {
        serde_json::from_value(json)
    }

    #[test]
    fn arguments_are_checked_before_anything_is_sent() {
        assert!(args(serde_json::json!({"message": "hi", "model": "x"})).is_err());
        let empty = args(serde_json::json!({"message": "  "})).unwrap();
        assert!(empty.problem().unwrap().contains("empty"));
        let huge = args(serde_json::json!({"message": "x".repeat(MAX_MESSAGE_BYTES + 1)})).unwrap();
        assert!(huge.problem().unwrap().contains("at most"));
        let bad = args(serde_json::json!({"message": "hi", "conversation": "a\nb"})).unwrap();
        assert!(bad.problem().unwrap().contains("conversation"));
        let fine =
            args(serde_json::json!({"message": "hi", "agent": "crab", "conversation": "work"}))
                .unwrap();
        assert_eq!(fine.problem(), None);
    }

    #[test]
    fn a_huge_reply_is_kept_up_to_the_limit_and_the_rest_counted() {
        let mut reply = ReplyText::default();
        reply.push("é");
        reply.push(&"x".repeat(MAX_REPLY_BYTES));
        reply.push("tail");
        let shown = reply.shown();
        assert!(shown.len() < MAX_REPLY_BYTES + 200, "{}", shown.len());
        assert!(shown.starts_with('é'));
        assert!(
            shown.ends_with(&format!(
                "[… {} more bytes of the reply are not shown here; the whole reply is kept in the conversation]",
                2 + 4
            )),
            "{}",
            &shown[shown.len() - 150..]
        );
        reply.clear();
        assert!(reply.shown().is_empty());
        reply.push("  short ");
        assert_eq!(reply.shown(), "short");
    }

    #[test]
    fn long_text_is_cut_on_one_line() {
        assert_eq!(shorten("a\n  b", 10), "a b");
        assert_eq!(shorten("é".repeat(20).as_str(), 5), "éééé…");
    }
}
