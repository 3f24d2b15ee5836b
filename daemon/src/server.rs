//! The daemon's answers to the protocol: [`crabtalk_proto::Server`] over the
//! [`Runtime`]. This module translates between wire messages and runtime
//! calls and nothing else; operations that belong to subsystems not built
//! yet keep the trait's `501` default.
//!
//! It is the edge of the daemon: the only module that knows the wire's
//! error type. The runtime answers with its own [`runtime::Error`] kinds;
//! [`ErrorMsg`]'s `From` below gives each kind its protocol code.

use std::path::PathBuf;
use std::sync::Arc;

use crabtalk_proto::msg::*;
use crabtalk_proto::{ReplyLane, Server};
use futures::stream::{self, BoxStream, Stream, StreamExt};

use crate::config::agent::AgentDef;
use crate::hook::Chain;
use crate::memories::notes;
use crate::runtime::{self, Runtime, TurnOutcome, TurnRequest};
use crate::sessions::SessionQuery;
use crate::storage::{Entry, HandleError, Role, read_entries};

/// The daemon's version, reported in `Pong`.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Most history returned by `GetConversationHistory`, in bytes of content;
/// older messages beyond it are summarised by a count.
const MAX_HISTORY_BYTES: usize = 8 * 1024 * 1024;

/// Most of one message returned by `GetConversationHistory`: a longer one
/// is cut, and says so, so that one huge message neither fills the reply
/// nor pushes the newest messages out of it.
const MAX_HISTORY_MESSAGE: usize = 256 * 1024;

/// `SearchSessionsMsg` defaults: hits, and messages before and after each.
const DEFAULT_SEARCH_HITS: usize = 10;
const DEFAULT_SEARCH_CONTEXT: usize = 2;

pub(crate) struct DaemonServer {
    runtime: Arc<Runtime>,
}

impl DaemonServer {
    pub(crate) fn new(runtime: Arc<Runtime>) -> Self {
        Self { runtime }
    }

    fn turn(
        &self,
        request: TurnRequestParts,
        client: Option<crate::runtime::events::ClientOutlet>,
    ) -> Result<tokio::task::JoinHandle<TurnOutcome>, runtime::Error> {
        self.runtime.start_turn(TurnRequest {
            agent: request.agent,
            created_by: request.sender.clone().unwrap_or_default(),
            sender: request.sender.unwrap_or_default(),
            content: request.content,
            cwd: request.cwd.filter(|cwd| !cwd.is_empty()).map(PathBuf::from),
            guest: request.guest,
            tool_choice: request.tool_choice,
            client,
            chain: None,
            trigger: request.trigger,
            origin: request.origin,
        })
    }

    /// The agent whose memory a request names (empty: the default
    /// agent), which must exist and keep a memory.
    fn memory_agent(&self, requested: &str) -> Result<String, ErrorMsg> {
        let name = self.runtime.key(requested, "").agent;
        let agent = self
            .runtime
            .snapshot()
            .agent(&name)
            .map_err(ErrorMsg::not_found)?;
        if !agent.config.memory.enabled {
            return Err(ErrorMsg::conflict(format!(
                "agent {name} keeps no memory ([memory] enabled = false in agents/{name}.toml)"
            )));
        }
        Ok(name)
    }

    fn agent_info(agent: &AgentDef) -> AgentInfo {
        let config = &agent.config;
        AgentInfo {
            name: agent.name.clone(),
            description: config.description.clone(),
            config: serde_json::to_string(&config.redacted()).unwrap_or_default(),
            model: config.model.clone().unwrap_or_default(),
            max_iterations: config.max_iterations,
            thinking: config.thinking,
            skills: config.skills.clone(),
            mcps: config.mcps.iter().map(|mcp| mcp.name.clone()).collect(),
            compact_tool_max_len: config.compact_tool_max_len,
        }
    }
}

/// The fields `SendMsg` and `StreamMsg` share.
struct TurnRequestParts {
    agent: String,
    content: String,
    sender: Option<String>,
    cwd: Option<String>,
    guest: Option<String>,
    tool_choice: Option<String>,
    trigger: Option<String>,
    origin: Option<String>,
}

impl From<SendMsg> for TurnRequestParts {
    fn from(msg: SendMsg) -> Self {
        Self {
            agent: msg.agent,
            content: msg.content,
            sender: msg.sender,
            cwd: msg.cwd,
            guest: msg.guest,
            tool_choice: msg.tool_choice,
            trigger: msg.trigger,
            origin: msg.origin,
        }
    }
}

impl From<StreamMsg> for TurnRequestParts {
    fn from(msg: StreamMsg) -> Self {
        Self {
            agent: msg.agent,
            content: msg.content,
            sender: msg.sender,
            cwd: msg.cwd,
            guest: msg.guest,
            tool_choice: msg.tool_choice,
            trigger: msg.trigger,
            origin: msg.origin,
        }
    }
}

fn pong() -> Pong {
    Pong {
        server_version: VERSION.into(),
        protocol: crabtalk_proto::PROTOCOL.into(),
        notes: Vec::new(),
    }
}

/// A `Pong` that tells the caller something about what it asked for.
fn pong_with(notes: Vec<String>) -> Pong {
    Pong { notes, ..pong() }
}

/// The wire form of a runtime error: its kind becomes the protocol code,
/// its text the message.
impl From<runtime::Error> for ErrorMsg {
    fn from(err: runtime::Error) -> Self {
        let code = match &err {
            runtime::Error::Invalid(_) => ErrorMsg::BAD_REQUEST,
            runtime::Error::NotFound(_) => ErrorMsg::NOT_FOUND,
            runtime::Error::Conflict(_) => ErrorMsg::CONFLICT,
            runtime::Error::RateLimited(_) => ErrorMsg::TOO_MANY_REQUESTS,
            runtime::Error::Internal(_) => ErrorMsg::INTERNAL,
            runtime::Error::Unavailable(_) => ErrorMsg::UNAVAILABLE,
        };
        ErrorMsg::new(code, err.to_string())
    }
}

fn handle_error(err: HandleError) -> ErrorMsg {
    match err {
        HandleError::Malformed(_) => ErrorMsg::bad_request(err.to_string()),
        HandleError::NotFound(_) => ErrorMsg::not_found(err.to_string()),
    }
}

impl Server for DaemonServer {
    async fn ping(&self, _: Ping) -> Result<Pong, ErrorMsg> {
        runtime::release::touch();
        Ok(pong())
    }

    async fn send(&self, request: SendMsg) -> Result<SendResponse, ErrorMsg> {
        // The turn's events are not needed; the outcome is.
        let turn = self.turn(request.into(), None)?;
        let outcome = turn
            .await
            .map_err(|err| ErrorMsg::internal(format!("the turn failed: {err}")))?;
        if let Some(failure) = outcome.error {
            return Err(failure.into());
        }
        Ok(SendResponse {
            agent: outcome.agent,
            content: outcome.final_text,
            model: outcome.model,
            usage: Some(outcome.usage),
        })
    }

    fn stream(
        &self,
        request: StreamMsg,
    ) -> impl Stream<Item = Result<StreamEvent, ErrorMsg>> + Send + 'static {
        self.stream_on(request, None)
    }

    fn stream_on(
        &self,
        request: StreamMsg,
        lane: Option<ReplyLane>,
    ) -> impl Stream<Item = Result<StreamEvent, ErrorMsg>> + Send + 'static {
        // Bounded: a client that stops reading is dropped from the turn
        // with an error, and the turn goes on (see `ClientOutlet`), which
        // writes an event straight to the socket through the lane when it
        // can.
        let (client, events) = crate::runtime::events::client_outlet(lane);
        let stream: BoxStream<'static, Result<StreamEvent, ErrorMsg>> =
            match self.turn(request.into(), Some(client)) {
                Ok(_turn) => events.map(|event| event.map_err(ErrorMsg::from)).boxed(),
                Err(error) => stream::iter([Err(error.into())]).boxed(),
            };
        stream
    }

    async fn reply_to_ask(&self, request: ReplyToAsk) -> Result<Pong, ErrorMsg> {
        self.runtime.answer(
            &request.agent,
            &request.sender,
            &request.call_id,
            &request.content,
        )?;
        Ok(pong())
    }

    async fn steer_session(&self, request: SteerSessionMsg) -> Result<Pong, ErrorMsg> {
        self.runtime
            .steer(&request.agent, &request.sender, &request.content)?;
        Ok(pong())
    }

    async fn kill(&self, request: KillMsg) -> Result<Pong, ErrorMsg> {
        self.runtime.kill(&request.agent, &request.sender);
        Ok(pong())
    }

    async fn list_active_conversations(
        &self,
        request: ListActiveConversationsMsg,
    ) -> Result<ActiveConversationList, ErrorMsg> {
        let conversations = self
            .runtime
            .conversations
            .all()
            .into_iter()
            .filter(|c| request.agent.is_empty() || c.key.agent == request.agent)
            .filter(|c| request.sender.is_empty() || c.key.sender == request.sender)
            .map(|c| {
                let meta = c.latest_meta().unwrap_or_default();
                ActiveConversationInfo {
                    agent: c.key.agent.clone(),
                    sender: c.key.sender.clone(),
                    message_count: meta.message_count,
                    alive_secs: c.alive().as_secs(),
                    title: meta.title,
                }
            })
            .collect();
        Ok(ActiveConversationList { conversations })
    }

    async fn list_conversations(
        &self,
        request: ListConversationsMsg,
    ) -> Result<ConversationList, ErrorMsg> {
        let storage = self.runtime.conversations.storage();
        let agent = (!request.agent.is_empty()).then_some(request.agent.as_str());
        let sender = (!request.sender.is_empty()).then_some(request.sender.as_str());
        let stored = storage
            .list(agent, sender)
            .map_err(|err| ErrorMsg::internal(format!("cannot list conversations: {err}")))?;
        let now = chrono::Utc::now();
        let conversations = stored
            .into_iter()
            .map(|stored| {
                // A conversation in memory knows more than its file, whose
                // update may still be on its way.
                let key = self.runtime.key(&stored.meta.agent, &stored.meta.sender);
                let meta = self
                    .runtime
                    .conversations
                    .get(&key)
                    .and_then(|conversation| conversation.latest_meta())
                    .unwrap_or_else(|| {
                        // A sidecar lags its log after a crash; the log,
                        // counted at start, does not.
                        let mut meta = stored.meta;
                        let handle = stored.files.handle.as_str();
                        if let Some(logged) = self.runtime.sessions().logged_messages(handle) {
                            meta.message_count = meta.message_count.max(logged);
                        }
                        meta
                    });
                let created = chrono::DateTime::parse_from_rfc3339(&meta.created_at).ok();
                ConversationInfo {
                    alive_secs: created.map_or(0, |created| {
                        (now - created.to_utc()).num_seconds().max(0) as u64
                    }),
                    date: meta.updated_at.clone(),
                    agent: meta.agent,
                    sender: meta.sender,
                    seq: meta.compactions,
                    title: meta.title,
                    file_path: stored.files.handle.to_string(),
                    message_count: meta.message_count,
                }
            })
            .collect();
        Ok(ConversationList { conversations })
    }

    async fn get_conversation_history(
        &self,
        request: GetConversationHistoryMsg,
    ) -> Result<ConversationHistory, ErrorMsg> {
        let storage = self.runtime.conversations.storage();
        let files = storage.resolve(&request.file_path).map_err(handle_error)?;
        let meta = crate::storage::Meta::load(&files.meta)
            .ok()
            .flatten()
            .unwrap_or_default();
        let entries = read_entries(&files.log)
            .map_err(|err| ErrorMsg::internal(format!("cannot read the conversation: {err}")))?;
        Ok(ConversationHistory {
            messages: history_messages(entries),
            title: meta.title,
            agent: meta.agent,
        })
    }

    async fn delete_conversation(&self, request: DeleteConversationMsg) -> Result<Pong, ErrorMsg> {
        let storage = self.runtime.conversations.storage();
        let files = storage.resolve(&request.file_path).map_err(handle_error)?;
        self.runtime.release_conversation(&files).await?;
        let meta = crate::storage::Meta::load(&files.meta).ok().flatten();
        storage
            .delete(&files)
            .map_err(|err| ErrorMsg::internal(format!("cannot delete the conversation: {err}")))?;
        if let Some(meta) = meta {
            self.runtime
                .sessions()
                .forget(&meta.agent, files.handle.as_str());
        }
        Ok(pong())
    }

    async fn compact(&self, request: CompactMsg) -> Result<CompactResponse, ErrorMsg> {
        if request.fresh {
            self.runtime
                .start_fresh(&request.agent, &request.sender)
                .await?;
            return Ok(CompactResponse {
                summary: String::new(),
            });
        }
        let summary = self
            .runtime
            .compact(&request.agent, &request.sender)
            .await?;
        Ok(CompactResponse { summary })
    }

    async fn search_sessions(
        &self,
        request: SearchSessionsMsg,
    ) -> Result<SessionHitList, ErrorMsg> {
        if request.query.trim().is_empty() {
            return Err(ErrorMsg::bad_request("the search query is empty"));
        }
        let agent = self.runtime.key(&request.agent, "").agent;
        self.runtime
            .snapshot()
            .agent(&agent)
            .map_err(ErrorMsg::not_found)?;
        let query = SessionQuery {
            agent: agent.clone(),
            sender: Some(request.sender).filter(|sender| !sender.is_empty()),
            query: request.query,
            limit: match request.limit {
                None | Some(0) => DEFAULT_SEARCH_HITS,
                Some(limit) => limit as usize,
            },
            context: request
                .context
                .map_or(DEFAULT_SEARCH_CONTEXT, |c| c as usize),
        };
        let hits = self
            .runtime
            .sessions()
            .run(query)
            .await
            .map_err(|err| ErrorMsg::internal(err.to_string()))?;
        Ok(SessionHitList {
            hits: hits.into_iter().map(session_hit).collect(),
        })
    }

    async fn recall(&self, request: RecallMsg) -> Result<MemoryEntryList, ErrorMsg> {
        if request.query.trim().is_empty() {
            return Err(ErrorMsg::bad_request(
                "the recall query is empty; give keywords to search for",
            ));
        }
        let agent = self.memory_agent(&request.agent)?;
        let limit = notes::recall_limit(request.limit.map(|limit| limit as usize));
        let query = request.query;
        let entries = self
            .runtime
            .memories()
            .run(&agent, move |memory| {
                memory
                    .search(&query, limit)
                    .into_iter()
                    .map(|found| memory_entry(found.entry, found.score))
                    .collect()
            })
            .await
            .map_err(|err| ErrorMsg::internal(format!("{agent}'s memory: {err}")))?;
        Ok(MemoryEntryList { entries })
    }

    async fn remember(&self, request: RememberMsg) -> Result<Remembered, ErrorMsg> {
        if request.name.trim().is_empty() || request.content.trim().is_empty() {
            return Err(ErrorMsg::bad_request(
                "a note needs a name and some content",
            ));
        }
        let agent = self.memory_agent(&request.agent)?;
        let aliases = (!request.aliases.is_empty()).then_some(request.aliases);
        let name = request.name;
        let content = request.content;
        let saved = self
            .runtime
            .memories()
            .run(&agent, move |memory| {
                notes::save_note(memory, &name, content, aliases, |_| true)
            })
            .await
            .map_err(|err| ErrorMsg::internal(format!("{agent}'s memory: {err}")))?
            .map_err(|err| ErrorMsg::bad_request(err.to_string()))?;
        Ok(Remembered {
            agent,
            name: saved.name,
            updated: saved.updated,
        })
    }

    async fn list_agents(&self, _: ListAgentsMsg) -> Result<AgentList, ErrorMsg> {
        let snapshot = self.runtime.snapshot();
        Ok(AgentList {
            agents: snapshot
                .agents
                .values()
                .map(|agent| Self::agent_info(agent))
                .collect(),
        })
    }

    async fn get_agent(&self, request: GetAgentMsg) -> Result<AgentInfo, ErrorMsg> {
        let agent = self
            .runtime
            .snapshot()
            .agent(&request.name)
            .map_err(ErrorMsg::not_found)?;
        Ok(Self::agent_info(&agent))
    }

    async fn create_agent(&self, request: CreateAgentMsg) -> Result<AgentInfo, ErrorMsg> {
        let agent = self
            .runtime
            .create_agent(&request.name, &request.config, &request.prompt)?;
        Ok(Self::agent_info(&agent))
    }

    async fn update_agent(&self, request: UpdateAgentMsg) -> Result<AgentInfo, ErrorMsg> {
        let agent = self
            .runtime
            .update_agent(&request.name, &request.config, &request.prompt)?;
        Ok(Self::agent_info(&agent))
    }

    async fn delete_agent(&self, request: DeleteAgentMsg) -> Result<Pong, ErrorMsg> {
        self.runtime.delete_agent(&request.name).await?;
        Ok(pong())
    }

    async fn rename_agent(&self, request: RenameAgentMsg) -> Result<AgentInfo, ErrorMsg> {
        let agent = self
            .runtime
            .rename_agent(&request.old_name, &request.new_name)
            .await?;
        Ok(Self::agent_info(&agent))
    }

    async fn list_models(&self, _: ListModelsMsg) -> Result<ModelList, ErrorMsg> {
        let models = self
            .runtime
            .snapshot()
            .registry
            .models()
            .into_iter()
            .map(|(name, active)| ModelInfo { name, active })
            .collect();
        Ok(ModelList {
            models,
            active_source: self.runtime.snapshot().registry.active_source(),
        })
    }

    async fn set_active_model(&self, request: SetActiveModelMsg) -> Result<Pong, ErrorMsg> {
        let snapshot = self.runtime.snapshot();
        snapshot
            .registry
            .set_active(&request.model)
            .map_err(runtime::Error::from)?;
        let note = match &snapshot.config.default_model {
            Some(saved) => format!(
                "{} is the default model now, but this is not saved: a restart or reload brings back default_model = {saved:?} from config.toml; change it there to keep {}",
                request.model, request.model
            ),
            None => format!(
                "{} is the default model now, but this is not saved: a restart brings back the first model of the first provider; set default_model in config.toml to keep {}",
                request.model, request.model
            ),
        };
        Ok(pong_with(vec![note]))
    }

    async fn get_stats(&self, _: GetStats) -> Result<DaemonStats, ErrorMsg> {
        let snapshot = self.runtime.snapshot();
        Ok(DaemonStats {
            uptime_secs: self.runtime.uptime().as_secs(),
            active_conversations: self.runtime.conversations.len() as u32,
            registered_agents: snapshot.agents.len() as u32,
            active_model: snapshot.registry.active_model().unwrap_or_default(),
            default_agent: snapshot.config.default_agent.clone(),
        })
    }

    async fn get_config(&self, _: GetConfig) -> Result<ConfigMsg, ErrorMsg> {
        let snapshot = self.runtime.snapshot();
        let mut json = snapshot.config.redacted_json();
        if let Some(object) = json.as_object_mut() {
            let problems = snapshot.registry.problems();
            if !problems.is_empty() {
                object.insert("problems".into(), serde_json::json!(problems));
            }
        }
        Ok(ConfigMsg {
            config: json.to_string(),
        })
    }

    async fn reload(&self, _: ReloadMsg) -> Result<Pong, ErrorMsg> {
        let notes = self.runtime.reload()?;
        Ok(pong_with(notes))
    }

    async fn list_skills(&self, _: ListSkillsMsg) -> Result<SkillList, ErrorMsg> {
        let skills = self
            .runtime
            .snapshot()
            .skills
            .discover()
            .skills
            .into_iter()
            .map(|skill| SkillInfo {
                name: skill.name,
                source: skill.path.display().to_string(),
                source_kind: SourceKind::Local as i32,
            })
            .collect();
        Ok(SkillList { skills })
    }

    async fn subscribe_event(
        &self,
        request: SubscribeEventMsg,
    ) -> Result<SubscriptionInfo, ErrorMsg> {
        if request.source.trim().is_empty() {
            return Err(ErrorMsg::bad_request(
                "the event source is empty; e.g. agent:scout:done",
            ));
        }
        self.runtime
            .snapshot()
            .agent(&request.target_agent)
            .map_err(ErrorMsg::not_found)?;
        let subscription = self
            .runtime
            .bus()
            .subscribe(&request.source, &request.target_agent, request.once)
            .map_err(|err| ErrorMsg::internal(err.to_string()))?;
        Ok(subscription_info(subscription))
    }

    async fn unsubscribe_event(&self, request: UnsubscribeEventMsg) -> Result<Pong, ErrorMsg> {
        let removed = self
            .runtime
            .bus()
            .unsubscribe(request.id)
            .map_err(|err| ErrorMsg::internal(err.to_string()))?;
        if !removed {
            return Err(ErrorMsg::not_found(format!(
                "no subscription has the id {}",
                request.id
            )));
        }
        Ok(pong())
    }

    async fn list_subscriptions(
        &self,
        _: ListSubscriptionsMsg,
    ) -> Result<SubscriptionList, ErrorMsg> {
        let subscriptions = self
            .runtime
            .bus()
            .list()
            .into_iter()
            .map(subscription_info)
            .collect();
        Ok(SubscriptionList { subscriptions })
    }

    async fn publish_event(&self, request: PublishEventMsg) -> Result<Pong, ErrorMsg> {
        if request.source.trim().is_empty() {
            return Err(ErrorMsg::bad_request("the event source is empty"));
        }
        if request.payload.trim().is_empty() {
            return Err(ErrorMsg::bad_request(
                "the event payload is empty: it becomes the message the agent gets",
            ));
        }
        let cause = Chain::begun_by(&format!("event:{}", request.source));
        self.runtime
            .publish(&request.source, &request.payload, &cause);
        Ok(pong())
    }

    async fn list_mcps(&self, request: ListMcpsMsg) -> Result<McpList, ErrorMsg> {
        let agent = (!request.agent.is_empty()).then_some(request.agent.as_str());
        Ok(McpList {
            mcps: self.runtime.mcp.list(agent),
        })
    }

    async fn upsert_mcp(&self, request: UpsertMcpMsg) -> Result<McpInfo, ErrorMsg> {
        let name = self.runtime.upsert_mcp(&request.agent, &request.config)?;
        let agent = self.runtime.key(&request.agent, "").agent;
        self.runtime
            .mcp
            .list(Some(&agent))
            .into_iter()
            .find(|info| info.name == name && info.source_kind == SourceKind::Local as i32)
            .ok_or_else(|| ErrorMsg::internal("the server was saved but is not listed"))
    }

    async fn delete_mcp(&self, request: DeleteMcpMsg) -> Result<Pong, ErrorMsg> {
        self.runtime.delete_mcp(&request.agent, &request.name)?;
        Ok(pong())
    }

    fn subscribe_mcp_events(
        &self,
        _: SubscribeMcpEventsMsg,
    ) -> impl Stream<Item = Result<McpEventMsg, ErrorMsg>> + Send + 'static {
        self.runtime.mcp.subscribe().map(Ok)
    }

    fn subscribe_events(
        &self,
        _: SubscribeEvents,
    ) -> impl Stream<Item = Result<AgentEventMsg, ErrorMsg>> + Send + 'static {
        self.runtime.hub.subscribe().map(Ok)
    }
}

/// A search hit in its wire shape.
/// A memory entry as `Recall` answers with it (its content cut as the
/// `recall` tool cuts it).
fn memory_entry(entry: &crabtalk_memory::Entry, score: f64) -> MemoryEntry {
    let (content, truncated) = notes::recalled_content(entry);
    MemoryEntry {
        name: entry.name.clone(),
        kind: match entry.kind {
            crabtalk_memory::EntryKind::Note => "note",
            crabtalk_memory::EntryKind::Archive => "summary",
        }
        .to_owned(),
        content: content.to_owned(),
        truncated,
        aliases: entry.aliases.clone(),
        created_at: entry.created_at,
        score,
    }
}

fn session_hit(hit: crabtalk_session_index::SessionHit) -> SessionHit {
    SessionHit {
        conversation: hit.conversation,
        sender: hit.sender,
        title: hit.title.unwrap_or_default(),
        field: hit.field.name().into(),
        msg_idx: hit.msg_idx.map(u64::from),
        score: hit.score,
        window: hit
            .window
            .into_iter()
            .map(|item| SessionWindowItem {
                field: item.field.name().into(),
                msg_idx: item.msg_idx.map(u64::from),
                snippet: item.snippet,
                truncated: item.truncated,
                tool_name: item.tool_name.unwrap_or_default(),
            })
            .collect(),
    }
}

fn subscription_info(subscription: crate::bus::Subscription) -> SubscriptionInfo {
    SubscriptionInfo {
        id: subscription.id,
        source: subscription.source,
        target_agent: subscription.target_agent,
        once: subscription.once,
    }
}

/// Cuts `content` to [`MAX_HISTORY_MESSAGE`] bytes on a character boundary,
/// with a note saying how much there was.
fn cut_message(content: &mut String) {
    if content.len() <= MAX_HISTORY_MESSAGE {
        return;
    }
    let total = content.len();
    let mut cut = MAX_HISTORY_MESSAGE;
    while !content.is_char_boundary(cut) {
        cut -= 1;
    }
    content.truncate(cut);
    content.push_str(&format!(
        "\n[message cut for the history view: {total} bytes, the first {cut} shown]"
    ));
}

/// A stored log as protocol messages, each cut to a size a client can
/// show, the newest kept when they are too large together.
fn history_messages(entries: Vec<Entry>) -> Vec<ConversationMessage> {
    let mut messages: Vec<ConversationMessage> = entries
        .into_iter()
        .flat_map(|entry| match entry {
            Entry::Compact(marker) => vec![ConversationMessage {
                role: "compact".into(),
                content: marker.compact,
            }],
            Entry::Message(message) => {
                let mut out = Vec::new();
                let content = if message.agent.is_empty() {
                    message.content.clone()
                } else {
                    crate::runtime::request::tagged(&message.agent, &message.content)
                };
                if !content.is_empty() || message.tool_calls.is_empty() {
                    out.push(ConversationMessage {
                        role: message.role.as_str().into(),
                        content,
                    });
                }
                if message.role == Role::Assistant {
                    out.extend(message.tool_calls.iter().map(|call| ConversationMessage {
                        role: "tool_call".into(),
                        content: format!("{} {}", call.name, call.arguments),
                    }));
                }
                out
            }
        })
        .collect();
    for message in &mut messages {
        cut_message(&mut message.content);
    }
    let mut total = 0;
    let keep_from = messages
        .iter()
        .rposition(|message| {
            total += message.content.len();
            total > MAX_HISTORY_BYTES
        })
        .map_or(0, |position| position + 1);
    if keep_from > 0 {
        messages.drain(..keep_from);
        messages.insert(0, ConversationMessage {
            role: "system".into(),
            content: format!("[{keep_from} earlier messages omitted: the history is over {MAX_HISTORY_BYTES} bytes]"),
        });
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Message;

    #[test]
    fn runtime_errors_get_their_protocol_codes_and_keep_their_text() {
        let cases = [
            (runtime::Error::invalid("bad"), 400),
            (runtime::Error::not_found("missing"), 404),
            (runtime::Error::conflict("busy"), 409),
            (runtime::Error::RateLimited("slow down".into()), 429),
            (runtime::Error::internal("disk"), 500),
            (runtime::Error::unavailable("closing"), 503),
        ];
        for (err, code) in cases {
            let text = err.to_string();
            let wire = ErrorMsg::from(err);
            assert_eq!((wire.code, wire.message), (code, text));
        }
    }

    #[test]
    fn a_huge_message_is_cut_and_the_newest_messages_stay() {
        let entries = vec![
            Entry::Message(Message::user("before")),
            Entry::Message(Message::user("é".repeat(6 * 1024 * 1024))),
            Entry::Message(Message::assistant("the newest answer")),
        ];
        let messages = history_messages(entries);
        assert_eq!(messages.len(), 3, "nothing omitted");
        assert_eq!(messages[0].content, "before");
        let cut = &messages[1].content;
        assert!(
            cut.ends_with(
                "[message cut for the history view: 12582912 bytes, the first 262144 shown]"
            ),
            "{}",
            &cut[cut.len() - 100..]
        );
        assert!(cut.len() < MAX_HISTORY_MESSAGE + 100);
        assert_eq!(messages[2].content, "the newest answer");
    }

    #[test]
    fn when_the_whole_is_too_large_the_oldest_are_counted_instead() {
        let entries: Vec<Entry> = (0..40)
            .map(|i| {
                Entry::Message(Message::user(format!(
                    "{i}{}",
                    "x".repeat(MAX_HISTORY_MESSAGE)
                )))
            })
            .collect();
        let messages = history_messages(entries);
        assert_eq!(messages[0].role, "system");
        assert!(messages[0].content.contains("earlier messages omitted"));
        assert!(messages.last().unwrap().content.starts_with("39"));
        let total: usize = messages.iter().map(|m| m.content.len()).sum();
        assert!(total <= MAX_HISTORY_BYTES + 200, "{total}");
    }
}
