//! Proptest strategies for the protocol messages, so property tests can
//! round-trip any frame a peer may send rather than one hand-picked shape.
//!
//! Every envelope variant is covered, with nested and repeated fields filled
//! in (tool-call lists, questions with options, history entries, search hits
//! with windows, MCP env maps) and the extension fields set to arbitrary
//! values. Enum fields take any `i32`: protobuf enums are open, so an unknown
//! value must survive a round trip too.

use std::fmt::Debug;

use proptest::collection::{hash_map, vec};
use proptest::option;
use proptest::prelude::*;

use super::*;

/// Any `ClientMessage`, including one with no variant set.
pub(crate) fn client_message() -> impl Strategy<Value = ClientMessage> {
    (option::of(client_msg()), any::<u64>())
        .prop_map(|(msg, request_id)| ClientMessage { msg, request_id })
}

/// Any `ServerMessage`, including one with no variant set.
pub(crate) fn server_message() -> impl Strategy<Value = ServerMessage> {
    (option::of(server_msg()), any::<u64>())
        .prop_map(|(msg, request_id)| ServerMessage { msg, request_id })
}

/// Short text; `.` covers multi-byte characters.
fn text() -> BoxedStrategy<String> {
    ".{0,12}".boxed()
}

fn few<T: Debug>(item: impl Strategy<Value = T>) -> impl Strategy<Value = Vec<T>> {
    vec(item, 0..4)
}

/// A finite `f64` (NaN would make the round trip compare unequal).
fn score() -> impl Strategy<Value = f64> {
    prop::num::f64::NORMAL | prop::num::f64::SUBNORMAL | prop::num::f64::ZERO
}

fn agent_and_sender() -> impl Strategy<Value = (String, String)> {
    (text(), text())
}

fn client_msg() -> impl Strategy<Value = client_message::Msg> {
    use client_message::Msg;
    let turn = (
        text(),
        text(),
        option::of(text()),
        option::of(text()),
        option::of(text()),
        option::of(text()),
        option::of(text()),
        option::of(text()),
    );
    prop_oneof![
        turn.clone().prop_map(
            |(agent, content, sender, cwd, guest, tool_choice, trigger, origin)| {
                Msg::Send(SendMsg {
                    agent,
                    content,
                    sender,
                    cwd,
                    guest,
                    tool_choice,
                    trigger,
                    origin,
                })
            }
        ),
        turn.prop_map(
            |(agent, content, sender, cwd, guest, tool_choice, trigger, origin)| {
                Msg::Stream(StreamMsg {
                    agent,
                    content,
                    sender,
                    cwd,
                    guest,
                    tool_choice,
                    trigger,
                    origin,
                })
            }
        ),
        (text(), text(), text(), text()).prop_map(|(agent, sender, content, call_id)| {
            Msg::ReplyToAsk(ReplyToAsk {
                agent,
                sender,
                content,
                call_id,
            })
        }),
        (text(), text(), text()).prop_map(|(agent, sender, content)| {
            Msg::SteerSession(SteerSessionMsg {
                agent,
                sender,
                content,
            })
        }),
        agent_and_sender().prop_map(|(agent, sender)| {
            Msg::ListActiveConversations(ListActiveConversationsMsg { agent, sender })
        }),
        agent_and_sender().prop_map(|(agent, sender)| Msg::Kill(KillMsg { agent, sender })),
        (agent_and_sender(), any::<bool>()).prop_map(|((agent, sender), fresh)| {
            Msg::Compact(CompactMsg {
                agent,
                sender,
                fresh,
            })
        }),
        agent_and_sender().prop_map(|(agent, sender)| {
            Msg::ListConversations(ListConversationsMsg { agent, sender })
        }),
        (
            text(),
            text(),
            text(),
            option::of(any::<u32>()),
            option::of(any::<u32>())
        )
            .prop_map(|(agent, sender, query, limit, context)| {
                Msg::SearchSessions(SearchSessionsMsg {
                    agent,
                    sender,
                    query,
                    limit,
                    context,
                })
            }),
        (text(), text(), option::of(any::<u32>())).prop_map(|(agent, query, limit)| Msg::Recall(
            RecallMsg {
                agent,
                query,
                limit
            }
        )),
        (text(), text(), text(), few(text())).prop_map(|(agent, name, content, aliases)| {
            Msg::Remember(RememberMsg {
                agent,
                name,
                content,
                aliases,
            })
        }),
        text().prop_map(|file_path| {
            Msg::GetConversationHistory(GetConversationHistoryMsg { file_path })
        }),
        text().prop_map(|file_path| Msg::DeleteConversation(DeleteConversationMsg { file_path })),
        text().prop_map(|model| Msg::SetActiveModel(SetActiveModelMsg { model })),
        text().prop_map(|agent| Msg::ListMcps(ListMcpsMsg { agent })),
        (text(), text()).prop_map(|(config, agent)| Msg::UpsertMcp(UpsertMcpMsg { config, agent })),
        (text(), text()).prop_map(|(name, agent)| Msg::DeleteMcp(DeleteMcpMsg { name, agent })),
        Just(Msg::SubscribeMcpEvents(SubscribeMcpEventsMsg {})),
        Just(Msg::ListAgents(ListAgentsMsg {})),
        text().prop_map(|name| Msg::GetAgent(GetAgentMsg { name })),
        (text(), text(), text()).prop_map(|(name, config, prompt)| {
            Msg::CreateAgent(CreateAgentMsg {
                name,
                config,
                prompt,
            })
        }),
        (text(), text(), text()).prop_map(|(name, config, prompt)| {
            Msg::UpdateAgent(UpdateAgentMsg {
                name,
                config,
                prompt,
            })
        }),
        text().prop_map(|name| Msg::DeleteAgent(DeleteAgentMsg { name })),
        (text(), text()).prop_map(|(old_name, new_name)| Msg::RenameAgent(RenameAgentMsg {
            old_name,
            new_name
        })),
        Just(Msg::ListSkills(ListSkillsMsg {})),
        Just(Msg::ListModels(ListModelsMsg {})),
        Just(Msg::PluginOp20(UnsupportedOperation {})),
        Just(Msg::PluginOp37(UnsupportedOperation {})),
        Just(Msg::ServiceOp25(UnsupportedOperation {})),
        text().prop_map(|client_version| Msg::Ping(Ping { client_version })),
        Just(Msg::GetConfig(GetConfig {})),
        Just(Msg::Reload(ReloadMsg {})),
        Just(Msg::GetStats(GetStats {})),
        Just(Msg::SubscribeEvents(SubscribeEvents {})),
        (text(), text(), any::<bool>()).prop_map(|(source, target_agent, once)| {
            Msg::SubscribeEvent(SubscribeEventMsg {
                source,
                target_agent,
                once,
            })
        }),
        any::<u64>().prop_map(|id| Msg::UnsubscribeEvent(UnsubscribeEventMsg { id })),
        Just(Msg::ListSubscriptions(ListSubscriptionsMsg {})),
        (text(), text())
            .prop_map(|(source, payload)| Msg::PublishEvent(PublishEventMsg { source, payload })),
        text().prop_map(|token| Msg::Hello(Hello { token })),
        any::<u64>().prop_map(|request_id| Msg::Cancel(Cancel { request_id })),
    ]
}

fn server_msg() -> impl Strategy<Value = server_message::Msg> {
    use server_message::Msg;
    prop_oneof![
        (any::<u32>(), text()).prop_map(|(code, message)| Msg::Error(ErrorMsg { code, message })),
        (text(), text(), few(text())).prop_map(|(server_version, protocol, notes)| {
            Msg::Pong(Pong {
                server_version,
                protocol,
                notes,
            })
        }),
        (text(), text(), text(), option::of(token_usage())).prop_map(
            |(agent, content, model, usage)| {
                Msg::Response(SendResponse {
                    agent,
                    content,
                    model,
                    usage,
                })
            }
        ),
        stream_event().prop_map(Msg::Stream),
        few(active_conversation()).prop_map(|conversations| {
            Msg::ActiveConversations(ActiveConversationList { conversations })
        }),
        text().prop_map(|summary| Msg::Compact(CompactResponse { summary })),
        few(conversation_info())
            .prop_map(|conversations| Msg::ConversationList(ConversationList { conversations })),
        (few(conversation_message()), text(), text()).prop_map(|(messages, title, agent)| {
            Msg::ConversationHistory(ConversationHistory {
                messages,
                title,
                agent,
            })
        }),
        few(session_hit()).prop_map(|hits| Msg::SessionHits(SessionHitList { hits })),
        few(memory_entry()).prop_map(|entries| Msg::MemoryEntries(MemoryEntryList { entries })),
        (text(), text(), any::<bool>()).prop_map(|(agent, name, updated)| {
            Msg::Remembered(Remembered {
                agent,
                name,
                updated,
            })
        }),
        agent_info().prop_map(Msg::AgentInfo),
        few(agent_info()).prop_map(|agents| Msg::AgentList(AgentList { agents })),
        few(
            (text(), text(), any::<i32>()).prop_map(|(name, source, source_kind)| {
                SkillInfo {
                    name,
                    source,
                    source_kind,
                }
            })
        )
        .prop_map(|skills| Msg::SkillList(SkillList { skills })),
        (
            few((text(), any::<bool>()).prop_map(|(name, active)| ModelInfo { name, active })),
            text()
        )
            .prop_map(|(models, active_source)| Msg::ModelList(ModelList {
                models,
                active_source
            })),
        text().prop_map(|config| Msg::Config(ConfigMsg { config })),
        (any::<u64>(), any::<u32>(), any::<u32>(), text(), text()).prop_map(
            |(
                uptime_secs,
                active_conversations,
                registered_agents,
                active_model,
                default_agent,
            )| {
                Msg::Stats(DaemonStats {
                    uptime_secs,
                    active_conversations,
                    registered_agents,
                    active_model,
                    default_agent,
                })
            }
        ),
        agent_event().prop_map(Msg::AgentEvent),
        subscription_info().prop_map(Msg::SubscriptionInfo),
        few(subscription_info())
            .prop_map(|subscriptions| Msg::SubscriptionList(SubscriptionList { subscriptions })),
        mcp_info().prop_map(Msg::McpInfo),
        few(mcp_info()).prop_map(|mcps| Msg::McpList(McpList { mcps })),
        mcp_event().prop_map(Msg::McpEvent),
    ]
}

fn token_usage() -> impl Strategy<Value = TokenUsage> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        option::of(any::<u32>()),
        option::of(any::<u32>()),
        option::of(any::<u32>()),
    )
        .prop_map(
            |(
                prompt_tokens,
                completion_tokens,
                total_tokens,
                cache_hit_tokens,
                cache_miss_tokens,
                reasoning_tokens,
            )| TokenUsage {
                prompt_tokens,
                completion_tokens,
                total_tokens,
                cache_hit_tokens,
                cache_miss_tokens,
                reasoning_tokens,
            },
        )
}

fn tool_call() -> impl Strategy<Value = ToolCallInfo> {
    (text(), text(), text()).prop_map(|(name, arguments, id)| ToolCallInfo {
        name,
        arguments,
        id,
    })
}

fn ask_question() -> impl Strategy<Value = AskQuestion> {
    let option = (text(), text()).prop_map(|(label, description)| AskOption { label, description });
    (text(), text(), few(option), any::<bool>()).prop_map(
        |(question, header, options, multi_select)| AskQuestion {
            question,
            header,
            options,
            multi_select,
        },
    )
}

fn stream_event() -> impl Strategy<Value = StreamEvent> {
    let event = prop_oneof![
        (text(), any::<u64>())
            .prop_map(|(agent, run_id)| StreamEvent::from(StreamStart { agent, run_id })),
        text().prop_map(|content| StreamChunk { content }.into()),
        text().prop_map(|content| StreamThinking { content }.into()),
        few(tool_call()).prop_map(|calls| ToolStartEvent { calls }.into()),
        (text(), text(), any::<u64>(), any::<bool>()).prop_map(
            |(call_id, output, duration_ms, is_error)| {
                ToolResultEvent {
                    call_id,
                    output,
                    duration_ms,
                    is_error,
                }
                .into()
            }
        ),
        Just(ToolsCompleteEvent {}.into()),
        (text(), text(), text(), option::of(token_usage())).prop_map(
            |(agent, error, model, usage)| {
                StreamEnd {
                    agent,
                    error,
                    model,
                    usage,
                }
                .into()
            }
        ),
        (few(ask_question()), text()).prop_map(|(questions, call_id)| AskUserEvent {
            questions,
            call_id
        }
        .into()),
        text().prop_map(|content| UserSteeredEvent { content }.into()),
        text().prop_map(|agent| TextStartEvent { agent }.into()),
        text().prop_map(|agent| TextEndEvent { agent }.into()),
        text().prop_map(|agent| ThinkingStartEvent { agent }.into()),
        text().prop_map(|agent| ThinkingEndEvent { agent }.into()),
        option::of(token_usage()).prop_map(|usage| ContextUsageEvent { usage }.into()),
    ];
    // An event with nothing set is legal on the wire as well.
    prop_oneof![
        9 => event,
        1 => Just(StreamEvent { event: None }),
    ]
}

fn agent_event() -> impl Strategy<Value = AgentEventMsg> {
    (
        (text(), text(), any::<i32>(), text(), text()),
        (few(tool_call()), text(), any::<bool>()),
        (
            option::of(token_usage()),
            any::<u64>(),
            text(),
            text(),
            text(),
        ),
    )
        .prop_map(
            |(
                (agent, sender, kind, content, timestamp),
                (tool_calls, tool_output, tool_is_error),
                (usage, run_id, error, trigger, conversation_agent),
            )| AgentEventMsg {
                conversation_agent,
                agent,
                sender,
                kind,
                content,
                timestamp,
                tool_calls,
                tool_output,
                tool_is_error,
                usage,
                run_id,
                error,
                trigger,
            },
        )
}

fn active_conversation() -> impl Strategy<Value = ActiveConversationInfo> {
    (text(), text(), any::<u64>(), any::<u64>(), text()).prop_map(
        |(agent, sender, message_count, alive_secs, title)| ActiveConversationInfo {
            agent,
            sender,
            message_count,
            alive_secs,
            title,
        },
    )
}

fn conversation_info() -> impl Strategy<Value = ConversationInfo> {
    (
        text(),
        text(),
        any::<u32>(),
        text(),
        text(),
        any::<u64>(),
        any::<u64>(),
        text(),
    )
        .prop_map(
            |(agent, sender, seq, title, file_path, message_count, alive_secs, date)| {
                ConversationInfo {
                    agent,
                    sender,
                    seq,
                    title,
                    file_path,
                    message_count,
                    alive_secs,
                    date,
                }
            },
        )
}

fn conversation_message() -> impl Strategy<Value = ConversationMessage> {
    (text(), text()).prop_map(|(role, content)| ConversationMessage { role, content })
}

fn session_hit() -> impl Strategy<Value = SessionHit> {
    let item = (
        text(),
        option::of(any::<u64>()),
        text(),
        any::<bool>(),
        text(),
    )
        .prop_map(
            |(field, msg_idx, snippet, truncated, tool_name)| SessionWindowItem {
                field,
                msg_idx,
                snippet,
                truncated,
                tool_name,
            },
        );
    (
        text(),
        text(),
        text(),
        text(),
        option::of(any::<u64>()),
        score(),
        few(item),
    )
        .prop_map(
            |(conversation, sender, title, field, msg_idx, score, window)| SessionHit {
                conversation,
                sender,
                title,
                field,
                msg_idx,
                score,
                window,
            },
        )
}

fn memory_entry() -> impl Strategy<Value = MemoryEntry> {
    (
        (text(), text(), text(), any::<bool>()),
        (few(text()), any::<u64>(), score()),
    )
        .prop_map(
            |((name, kind, content, truncated), (aliases, created_at, score))| MemoryEntry {
                name,
                kind,
                content,
                truncated,
                aliases,
                created_at,
                score,
            },
        )
}

fn agent_info() -> impl Strategy<Value = AgentInfo> {
    (
        (text(), text(), text(), text()),
        (any::<u32>(), any::<bool>(), few(text()), few(text())),
        any::<u32>(),
    )
        .prop_map(
            |(
                (name, description, config, model),
                (max_iterations, thinking, skills, mcps),
                compact_tool_max_len,
            )| AgentInfo {
                name,
                description,
                config,
                model,
                max_iterations,
                thinking,
                skills,
                mcps,
                compact_tool_max_len,
            },
        )
}

fn subscription_info() -> impl Strategy<Value = SubscriptionInfo> {
    (any::<u64>(), text(), text(), any::<bool>()).prop_map(|(id, source, target_agent, once)| {
        SubscriptionInfo {
            id,
            source,
            target_agent,
            once,
        }
    })
}

fn mcp_info() -> impl Strategy<Value = McpInfo> {
    (
        (text(), text(), few(text()), hash_map(text(), text(), 0..3)),
        (text(), text(), text(), any::<bool>()),
        (any::<i32>(), any::<i32>(), text(), any::<u32>()),
        (any::<u32>(), text()),
    )
        .prop_map(
            |(
                (name, command, args, env),
                (url, auth, source, auto_restart),
                (source_kind, status, error, tool_count),
                (restarts, last_stderr),
            )| McpInfo {
                name,
                command,
                args,
                env,
                url,
                auth,
                source,
                auto_restart,
                source_kind,
                status,
                error,
                tool_count,
                restarts,
                last_stderr,
            },
        )
}

fn mcp_event() -> impl Strategy<Value = McpEventMsg> {
    (
        (any::<i32>(), text(), few(text()), text(), text(), text()),
        (any::<u64>(), any::<u32>()),
    )
        .prop_map(
            |((kind, name, tools, error, timestamp, agent), (retry_in_ms, restarts))| McpEventMsg {
                kind,
                name,
                tools,
                error,
                timestamp,
                agent,
                retry_in_ms,
                restarts,
            },
        )
}
