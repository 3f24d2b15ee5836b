//! The request/response operations of the protocol, listed once.
//!
//! Each row reads `method(ClientMessage variant, request type) -> ServerMessage
//! variant(reply type)`. The table is expanded into the [`Server`] trait and
//! its dispatch (in `server.rs`) and into the [`Client`] methods (in
//! `client/mod.rs`), so the three can never disagree about which reply
//! answers which request. Streaming operations (`stream`, `subscribe_events`,
//! `subscribe_mcp_events`) and `ping` are written out by hand in both places.
//!
//! [`Server`]: crate::Server
//! [`Client`]: crate::Client

macro_rules! unary_operations {
    ($expand:ident) => {
        $expand! {
            /// Runs one turn and answers with the whole reply.
            send(Send, SendMsg) -> Response(SendResponse);
            /// Answers a pending `ask_user` question of a conversation.
            reply_to_ask(ReplyToAsk, ReplyToAsk) -> Pong(Pong);
            /// Lists the conversations currently held in memory.
            list_active_conversations(ListActiveConversations, ListActiveConversationsMsg)
                -> ActiveConversations(ActiveConversationList);
            /// Cancels the turn in flight on a conversation, if any.
            kill(Kill, KillMsg) -> Pong(Pong);
            /// Summarises a conversation into its agent's memory and starts
            /// its history afresh from the summary.
            compact(Compact, CompactMsg) -> Compact(CompactResponse);
            /// Lists stored conversations, with opaque handles.
            list_conversations(ListConversations, ListConversationsMsg)
                -> ConversationList(ConversationList);
            /// Switches the default model.
            set_active_model(SetActiveModel, SetActiveModelMsg) -> Pong(Pong);
            /// Lists MCP servers (declared by agents, or discovered).
            list_mcps(ListMcps, ListMcpsMsg) -> McpList(McpList);
            /// Lists agents.
            list_agents(ListAgents, ListAgentsMsg) -> AgentList(AgentList);
            /// Describes one agent.
            get_agent(GetAgent, GetAgentMsg) -> AgentInfo(AgentInfo);
            /// Creates an agent from a config (JSON) and a prompt.
            create_agent(CreateAgent, CreateAgentMsg) -> AgentInfo(AgentInfo);
            /// Replaces an agent's config and prompt.
            update_agent(UpdateAgent, UpdateAgentMsg) -> AgentInfo(AgentInfo);
            /// Deletes an agent.
            delete_agent(DeleteAgent, DeleteAgentMsg) -> Pong(Pong);
            /// Lists skills.
            list_skills(ListSkills, ListSkillsMsg) -> SkillList(SkillList);
            /// Returns the daemon config as JSON, secrets redacted.
            get_config(GetConfig, GetConfig) -> Config(ConfigMsg);
            /// Re-reads the configuration and swaps the runtime in place.
            reload(Reload, ReloadMsg) -> Pong(Pong);
            /// Returns uptime and counters.
            get_stats(GetStats, GetStats) -> Stats(DaemonStats);
            /// Lists the models of every configured provider.
            list_models(ListModels, ListModelsMsg) -> ModelList(ModelList);
            /// Returns a stored conversation by its handle.
            get_conversation_history(GetConversationHistory, GetConversationHistoryMsg)
                -> ConversationHistory(ConversationHistory);
            /// Deletes a stored conversation by its handle.
            delete_conversation(DeleteConversation, DeleteConversationMsg) -> Pong(Pong);
            /// Subscribes an agent to an event source.
            subscribe_event(SubscribeEvent, SubscribeEventMsg)
                -> SubscriptionInfo(SubscriptionInfo);
            /// Removes an event subscription.
            unsubscribe_event(UnsubscribeEvent, UnsubscribeEventMsg) -> Pong(Pong);
            /// Lists event subscriptions.
            list_subscriptions(ListSubscriptions, ListSubscriptionsMsg)
                -> SubscriptionList(SubscriptionList);
            /// Publishes an event to the bus.
            publish_event(PublishEvent, PublishEventMsg) -> Pong(Pong);
            /// Injects a user message into a running turn.
            steer_session(SteerSession, SteerSessionMsg) -> Pong(Pong);
            /// Adds or replaces an MCP server in an agent's config.
            upsert_mcp(UpsertMcp, UpsertMcpMsg) -> McpInfo(McpInfo);
            /// Removes an MCP server from an agent's config.
            delete_mcp(DeleteMcp, DeleteMcpMsg) -> Pong(Pong);
            /// Renames an agent, keeping its conversations.
            rename_agent(RenameAgent, RenameAgentMsg) -> AgentInfo(AgentInfo);
            /// Searches one agent's stored conversations (extension).
            search_sessions(SearchSessions, SearchSessionsMsg) -> SessionHits(SessionHitList);
            /// Searches one agent's long-term memory (extension).
            recall(Recall, RecallMsg) -> MemoryEntries(MemoryEntryList);
            /// Saves a note in one agent's long-term memory (extension).
            remember(Remember, RememberMsg) -> Remembered(Remembered);
        }
    };
}

pub(crate) use unary_operations;
