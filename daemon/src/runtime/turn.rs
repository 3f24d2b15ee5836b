//! One turn: from a user message to the agent's final answer.
//!
//! 1. Wait for the conversation (turns on one conversation run in order).
//! 2. Let hooks rewrite the message (skill slash commands), append it: it is
//!    on disk before any model is called.
//! 3. Loop, at most `max_iterations` times: apply steering messages, build
//!    the request, stream the model's reply (emitting text and thinking as
//!    it arrives), append it; if it called tools, run them all at once —
//!    `ToolResult` events in the order they finish, results appended in the
//!    order they were called — and go round again; otherwise stop.
//! 4. `StreamEnd` with the model and the summed usage.
//!
//! `KillMsg` cancels at the next await point: the model stream and the tool
//! futures are dropped. Calls left without a result get one saying the turn
//! was cancelled, so the history stays valid for the next turn.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crabtalk_proto::msg::{
    ContextUsageEvent, StreamChunk, StreamEnd, StreamStart, StreamThinking, TextEndEvent,
    TextStartEvent, ThinkingEndEvent, ThinkingStartEvent, TokenUsage, ToolResultEvent,
    ToolStartEvent, ToolsCompleteEvent, UserSteeredEvent,
};
use futures::StreamExt;
use futures::stream::FuturesUnordered;

use super::conversation::{Conversation, History};
use super::events::{TurnSink, tool_call_infos};
use super::instructions;
use super::request::{self, RequestParts, Speaker, ToolsKey};
use super::snapshot::Snapshot;
use super::tool_host::TurnConversation;
use super::{Error, Runtime};
use crate::config::agent::AgentDef;
use crate::hook::{Chain, ToolContext, ToolOutput};
use crate::provider::LlmError;
use crate::storage::{Message, ToolCallRecord};

/// What a client asks for.
pub(crate) struct TurnRequest {
    pub agent: String,
    pub sender: String,
    pub content: String,
    pub cwd: Option<PathBuf>,
    pub guest: Option<String>,
    pub tool_choice: Option<String>,
    /// Recorded as the conversation's creator if this turn creates it.
    pub created_by: String,
    /// Where the turn's `StreamEvent`s go, if anyone listens.
    pub client: Option<super::events::ClientOutlet>,
    /// The chain this turn continues (delegation, events); `None` begins a
    /// new one with this turn's sender as its origin.
    pub chain: Option<Chain>,
    /// The component that starts a new chain on the sender's behalf (see
    /// [`Chain::trigger`]); a continued chain keeps its own.
    pub trigger: Option<String>,
    /// The sender on whose behalf a component starts a new chain, when it
    /// is not `sender` (the client's `origin` field): the chain begins
    /// there, so gateway rules follow that sender.
    pub origin: Option<String>,
}

/// How a turn ended.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnOutcome {
    /// The agent that spoke.
    pub agent: String,
    /// The text of the last model reply.
    pub final_text: String,
    pub model: String,
    pub usage: TokenUsage,
    /// Why the turn failed, if it did.
    pub error: Option<Error>,
}

/// Why a turn stopped early.
#[derive(Debug)]
enum TurnError {
    Llm(LlmError),
    MaxIterations(u32),
    Cancelled(String),
    Storage(std::io::Error),
}

impl std::fmt::Display for TurnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Llm(err) => write!(f, "{err}"),
            Self::MaxIterations(n) => write!(
                f,
                "stopped after {n} model calls (the agent's max_iterations) without a final answer; send another message to continue"
            ),
            Self::Cancelled(reason) => write!(f, "{reason}"),
            Self::Storage(err) => write!(f, "cannot write the conversation log: {err}"),
        }
    }
}

impl TurnError {
    /// The failure as the turn's outcome reports it.
    fn to_error(&self) -> Error {
        let message = self.to_string();
        match self {
            Self::Llm(err) => Error::of_model(err, message),
            Self::Cancelled(_) => Error::Conflict(message),
            Self::MaxIterations(_) | Self::Storage(_) => Error::Internal(message),
        }
    }
}

impl From<std::io::Error> for TurnError {
    fn from(err: std::io::Error) -> Self {
        Self::Storage(err)
    }
}

/// The resolved pieces of a turn.
pub(super) struct TurnPlan {
    pub request: TurnRequest,
    pub conversation: Arc<Conversation>,
    /// The turn's place in its conversation, taken when it was started.
    pub ticket: super::conversation::TurnTicket,
    pub snapshot: Arc<Snapshot>,
    pub primary: Arc<AgentDef>,
    pub guest: Option<Arc<AgentDef>>,
    pub cwd: PathBuf,
    pub run_id: u64,
    pub chain: Chain,
}

/// Runs a planned turn to its end.
pub(super) async fn run(runtime: Arc<Runtime>, plan: TurnPlan) -> TurnOutcome {
    let TurnPlan {
        request,
        conversation,
        ticket,
        snapshot,
        primary,
        guest,
        cwd,
        run_id,
        chain,
    } = plan;
    let key = conversation.key.clone();
    ticket.wait().await;
    let speaker = guest.clone().unwrap_or_else(|| primary.clone());
    let sink = TurnSink::new(
        request.client,
        runtime.hub.clone(),
        &speaker.name,
        &key.sender,
        run_id,
    )
    .in_conversation_of(&key.agent)
    .triggered_by(chain.trigger.as_deref());
    let mut outcome = TurnOutcome {
        agent: speaker.name.clone(),
        ..Default::default()
    };

    let mut history = match conversation.lock_history(&request.created_by).await {
        Ok(history) => history,
        Err(err) => {
            sink.emit(StreamStart {
                agent: speaker.name.clone(),
                run_id,
            });
            let message = format!(
                "cannot load the conversation {}/{}: {err}",
                key.agent, key.sender
            );
            sink.emit(StreamEnd {
                agent: speaker.name.clone(),
                error: message.clone(),
                ..Default::default()
            });
            outcome.error = Some(Error::Internal(message));
            return outcome;
        }
    };
    let run = conversation.begin_run(run_id);
    sink.emit(StreamStart {
        agent: speaker.name.clone(),
        run_id,
    });
    sink.user_message(&request.content);

    let steps = Steps {
        runtime: &runtime,
        snapshot: &snapshot,
        conversation: &conversation,
        sink: &sink,
        primary: &primary,
        guest: guest.as_deref(),
        speaker: &speaker,
        cwd: &cwd,
        tool_choice: request.tool_choice.as_deref(),
        chain: &chain,
    };
    let result = tokio::select! {
        biased;
        () = run.cancelled() => Err(TurnError::Cancelled(run.reason())),
        result = steps.run(&mut history, &mut outcome, &request.content) => result,
    };
    if let Err(err) = &result {
        let reason = format!("not run: {err}");
        if let Err(io) = history.close_dangling_calls(&reason) {
            tracing::warn!(
                "cannot close the tool calls of {}/{}: {io}",
                key.agent,
                key.sender
            );
        }
        outcome.error = Some(err.to_error());
    }
    conversation.save_meta(&history.meta);
    drop(history);
    drop(run);
    // The next turn of this conversation may start now.
    drop(ticket);
    sink.finish(
        StreamEnd {
            agent: speaker.name.clone(),
            error: outcome
                .error
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            model: outcome.model.clone(),
            usage: Some(outcome.usage),
        },
        &outcome.final_text,
    );
    outcome
}

/// The loop of model calls and tool runs.
struct Steps<'a> {
    runtime: &'a Arc<Runtime>,
    snapshot: &'a Snapshot,
    conversation: &'a Arc<Conversation>,
    sink: &'a TurnSink,
    primary: &'a AgentDef,
    guest: Option<&'a AgentDef>,
    speaker: &'a Arc<AgentDef>,
    cwd: &'a PathBuf,
    tool_choice: Option<&'a str>,
    chain: &'a Chain,
}

/// One model reply.
#[derive(Default)]
struct Reply {
    text: String,
    thinking: String,
    calls: Vec<ToolCallRecord>,
}

impl Steps<'_> {
    async fn run(
        &self,
        history: &mut History,
        outcome: &mut TurnOutcome,
        content: &str,
    ) -> Result<(), TurnError> {
        let tools = &self.snapshot.tools;
        let expanded = tools.preprocess(self.speaker, content);
        history.append(Message::user(expanded))?;
        history.title_from(content);

        // Kept from the last turn while nothing they depend on changed,
        // otherwise built; lent to each model call of the turn.
        let tools_key = ToolsKey {
            snapshot: self.snapshot.generation,
            agent: self.speaker.name.clone(),
            trigger: self.chain.trigger.clone(),
            gateway: tools.is_gateway_chain(self.chain),
            stamps: tools.stamps(self.speaker),
        };
        let mut tool_defs = if self.guest.is_some() {
            Vec::new()
        } else {
            history.tools.take(&tools_key, || {
                request::tool_defs(tools.specs_for(self.speaker, self.chain))
            })
        };
        let hook_prompts = tools.system_prompts(self.speaker, &self.snapshot.agents, self.chain);
        let instructions = instructions::block(&self.runtime.home, self.cwd);
        let max_iterations = self.speaker.config.max_iterations.max(1);
        let tool_choice = self
            .tool_choice
            .or(self.speaker.config.tool_choice.as_deref());

        for _ in 0..max_iterations {
            for steer in self.conversation.take_steers() {
                history.append(Message::user(steer.clone()))?;
                self.sink.emit(UserSteeredEvent { content: steer });
            }
            let summary = history.summary_message();
            let speaker = match self.guest {
                Some(guest) => Speaker::Guest {
                    guest,
                    primary: &self.primary.name,
                },
                None => Speaker::Primary(self.primary),
            };
            let mut request = RequestParts {
                speaker,
                summary: summary.as_ref(),
                history: &history.messages,
                hook_prompts: &hook_prompts,
                instructions: instructions.as_deref(),
                tool_choice,
                model: self.speaker.config.model.clone().unwrap_or_default(),
            }
            .build(&mut history.wire, &mut tool_defs);
            let reply = self.stream_reply(&mut request, outcome).await;
            request::give_back(request, &mut history.wire, &mut tool_defs);
            let reply = reply?;
            outcome.final_text = reply.text.clone();

            let mut message = Message::assistant(reply.text);
            message.thinking = reply.thinking;
            let calls = match self.guest {
                Some(guest) => {
                    message.agent = guest.name.clone();
                    if !reply.calls.is_empty() {
                        tracing::info!(
                            "guest {} tried to call tools; guest turns are text only",
                            guest.name
                        );
                    }
                    Vec::new()
                }
                None => reply.calls,
            };
            message.tool_calls = calls.clone();
            history.append(message)?;
            if calls.is_empty() {
                if self.guest.is_none() {
                    history.tools.keep(tools_key, tool_defs);
                }
                return Ok(());
            }
            self.run_tools(history, calls).await?;
        }
        Err(TurnError::MaxIterations(max_iterations))
    }

    /// Streams one model reply, emitting its events.
    async fn stream_reply(
        &self,
        request: &mut crabllm_core::ChatCompletionRequest,
        outcome: &mut TurnOutcome,
    ) -> Result<Reply, TurnError> {
        let (mut stream, model) = self
            .snapshot
            .registry
            .stream(request)
            .await
            .map_err(TurnError::Llm)?;
        outcome.model = model;
        let mut reply = Reply::default();
        let mut partial_calls: Vec<PartialCall> = Vec::new();
        let mut usage = None;
        let mut block = Block::new(self.sink);
        let stall = std::time::Duration::from_secs(
            self.snapshot.config.conversations.client_stall_secs.max(1),
        );
        loop {
            // A client that reads slowly slows its own turn down, within
            // limits; one that stopped reading is dropped here.
            self.sink.room(stall).await;
            let Some(chunk) = stream.next().await else {
                break;
            };
            let chunk = chunk.map_err(TurnError::Llm)?;
            if let Some(reported) = &chunk.usage {
                usage = Some(token_usage(reported));
            }
            let Some(choice) = chunk.choices.into_iter().next() else {
                continue;
            };
            let delta = choice.delta;
            if let Some(thinking) = delta.reasoning_content.filter(|t| !t.is_empty()) {
                block.enter(BlockKind::Thinking);
                reply.thinking.push_str(&thinking);
                self.sink.emit(StreamThinking { content: thinking });
            }
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                block.enter(BlockKind::Text);
                reply.text.push_str(&text);
                self.sink.emit(StreamChunk { content: text });
            }
            for call in delta.tool_calls.into_iter().flatten() {
                accumulate_call(&mut partial_calls, call);
            }
        }
        block.close();
        if let Some(usage) = usage {
            outcome.usage += &usage;
            self.sink.emit(ContextUsageEvent { usage: Some(usage) });
        }
        let run_id = self.sink.run_id();
        reply.calls = partial_calls
            .into_iter()
            .enumerate()
            .filter(|(_, call)| !call.name.is_empty())
            .map(|(i, call)| ToolCallRecord {
                id: call.id.unwrap_or_else(|| format!("call_{run_id}_{i}")),
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        Ok(reply)
    }

    /// Runs every call at once and appends the results in call order.
    async fn run_tools(
        &self,
        history: &mut History,
        calls: Vec<ToolCallRecord>,
    ) -> Result<(), TurnError> {
        self.sink.emit(ToolStartEvent {
            calls: tool_call_infos(&calls),
        });
        let context = ToolContext {
            agent: self.speaker.clone(),
            sender: self.conversation.key.sender.clone(),
            chain: self.chain.clone(),
            cwd: self.cwd.clone(),
            conversation: Arc::new(TurnConversation::new(
                self.conversation.clone(),
                self.sink.clone(),
            )),
            turns: self.runtime.clone(),
            ask_timeout: std::time::Duration::from_secs(
                self.snapshot.config.conversations.ask_timeout_secs,
            ),
            gateway: None,
        };
        let mut running: FuturesUnordered<_> = calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                let call_future = self.snapshot.tools.dispatch(call, context.clone());
                let started = Instant::now();
                async move { (index, call_future.await, started.elapsed()) }
            })
            .collect();
        let mut results: Vec<Option<ToolOutput>> = vec![None; calls.len()];
        while let Some((index, output, elapsed)) = running.next().await {
            self.sink.emit(ToolResultEvent {
                call_id: calls[index].id.clone(),
                output: output.text.clone(),
                duration_ms: elapsed.as_millis() as u64,
                is_error: output.is_error,
            });
            results[index] = Some(output);
        }
        self.sink.emit(ToolsCompleteEvent {});
        for (call, output) in calls.iter().zip(results) {
            let output = output.unwrap_or_else(|| ToolOutput::error("the tool produced no result"));
            history.append(Message::tool_result(call, output.text, output.is_error))?;
        }
        Ok(())
    }
}

/// A tool call assembled from stream deltas.
#[derive(Default)]
struct PartialCall {
    index: u32,
    id: Option<String>,
    name: String,
    arguments: String,
}

fn accumulate_call(calls: &mut Vec<PartialCall>, delta: crabllm_core::ToolCallDelta) {
    let position = match calls.iter().position(|call| call.index == delta.index) {
        Some(position) => position,
        None => {
            calls.push(PartialCall {
                index: delta.index,
                ..Default::default()
            });
            calls.len() - 1
        }
    };
    let call = &mut calls[position];
    if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
        call.id.get_or_insert(id);
    }
    if let Some(function) = delta.function {
        if let Some(name) = function.name {
            call.name.push_str(&name);
        }
        if let Some(arguments) = function.arguments {
            call.arguments.push_str(&arguments);
        }
    }
}

fn token_usage(usage: &crabllm_core::OpenAiUsage) -> TokenUsage {
    TokenUsage {
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        total_tokens: usage
            .total_tokens
            .max(usage.prompt_tokens + usage.completion_tokens),
        cache_hit_tokens: usage
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .or(usage.prompt_cache_hit_tokens),
        cache_miss_tokens: usage.prompt_cache_miss_tokens,
        reasoning_tokens: usage
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
}

/// Which block of a reply is open, so `TextStart`/`TextEnd` and
/// `ThinkingStart`/`ThinkingEnd` bracket their deltas.
struct Block<'a> {
    sink: &'a TurnSink,
    open: Option<BlockKind>,
}

impl<'a> Block<'a> {
    fn new(sink: &'a TurnSink) -> Self {
        Self { sink, open: None }
    }

    fn enter(&mut self, kind: BlockKind) {
        if self.open == Some(kind) {
            return;
        }
        self.close();
        let agent = self.sink.agent().to_owned();
        match kind {
            BlockKind::Text => self.sink.emit(TextStartEvent { agent }),
            BlockKind::Thinking => self.sink.emit(ThinkingStartEvent { agent }),
        }
        self.open = Some(kind);
    }

    fn close(&mut self) {
        let agent = self.sink.agent().to_owned();
        match self.open.take() {
            Some(BlockKind::Text) => self.sink.emit(TextEndEvent { agent }),
            Some(BlockKind::Thinking) => self.sink.emit(ThinkingEndEvent { agent }),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(
        index: u32,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
    ) -> crabllm_core::ToolCallDelta {
        crabllm_core::ToolCallDelta {
            index,
            id: id.map(Into::into),
            kind: None,
            function: Some(crabllm_core::FunctionCallDelta {
                name: name.map(Into::into),
                arguments: arguments.map(Into::into),
            }),
        }
    }

    #[test]
    fn tool_calls_are_assembled_from_split_deltas() {
        let mut calls = Vec::new();
        accumulate_call(
            &mut calls,
            delta(0, Some("c1"), Some("ask_"), Some("{\"qu")),
        );
        accumulate_call(&mut calls, delta(1, Some("c2"), Some("read"), None));
        accumulate_call(
            &mut calls,
            delta(0, None, Some("user"), Some("estions\":[]}")),
        );
        accumulate_call(&mut calls, delta(1, Some(""), None, Some("{}")));
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_deref(), calls[0].name.as_str()),
            (Some("c1"), "ask_user")
        );
        assert_eq!(calls[0].arguments, "{\"questions\":[]}");
        assert_eq!(
            (calls[1].id.as_deref(), calls[1].arguments.as_str()),
            (Some("c2"), "{}")
        );
    }
}
