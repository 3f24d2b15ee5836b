//! `ask_user`: the agent asks the person on the other end, and waits.
//!
//! The call emits an `AskUser` event (with its call id) and waits for a
//! `ReplyToAsk` on the same conversation, up to the configured timeout. The
//! reply becomes the tool's result. Several questions can wait at once; a
//! reply names the call it answers, or answers the oldest.

use crabtalk_proto::msg::{AskOption, AskQuestion, AskUserEvent};
use serde::Deserialize;

use crate::config::agent::AgentDef;
use crate::hook::{Hook, ToolContext, ToolFuture, ToolOutput, ToolSpec, parse_arguments};
use crate::storage::ToolCallRecord;

/// The `ask_user` tool.
pub(crate) struct AskUserHook;

#[derive(Deserialize)]
struct Arguments {
    questions: Vec<Question>,
}

#[derive(Deserialize)]
struct Question {
    question: String,
    #[serde(default)]
    header: String,
    #[serde(default)]
    options: Vec<Choice>,
    #[serde(default)]
    multi_select: bool,
}

#[derive(Deserialize)]
struct Choice {
    label: String,
    #[serde(default)]
    description: String,
}

impl Hook for AskUserHook {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "ask_user".into(),
            description: "Ask the user one or more questions and wait for the answer. Use it when a \
                wrong guess would be costly. Offer options when the answer is a choice; the user can \
                always answer in their own words."
                .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "questions": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {
                                "question": {"type": "string", "description": "The question, as a full sentence."},
                                "header": {"type": "string", "description": "A short label (a few words)."},
                                "options": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "label": {"type": "string"},
                                            "description": {"type": "string"}
                                        },
                                        "required": ["label"]
                                    }
                                },
                                "multi_select": {"type": "boolean", "description": "Whether several options may be chosen."}
                            },
                            "required": ["question"]
                        }
                    }
                },
                "required": ["questions"]
            }),
        }]
    }

    fn offers(&self, agent: &AgentDef, tool: &str) -> bool {
        let _ = (agent, tool);
        true
    }

    fn dispatch(&self, call: &ToolCallRecord, context: ToolContext) -> Option<ToolFuture> {
        let arguments: Arguments = match parse_arguments(call) {
            Ok(arguments) => arguments,
            Err(error) => return Some(Box::pin(std::future::ready(error))),
        };
        if arguments.questions.is_empty() {
            return Some(Box::pin(std::future::ready(ToolOutput::error(
                "ask_user needs at least one question",
            ))));
        }
        let call_id = call.id.clone();
        Some(Box::pin(async move {
            let answer = context.conversation.ask(AskUserEvent {
                call_id: call_id.clone(),
                questions: arguments
                    .questions
                    .into_iter()
                    .map(|q| AskQuestion {
                        question: q.question,
                        header: q.header,
                        multi_select: q.multi_select,
                        options: q
                            .options
                            .into_iter()
                            .map(|o| AskOption {
                                label: o.label,
                                description: o.description,
                            })
                            .collect(),
                    })
                    .collect(),
            });
            match tokio::time::timeout(context.ask_timeout, answer).await {
                Ok(Some(answer)) => ToolOutput::ok(answer),
                Ok(None) => {
                    ToolOutput::error("the question was withdrawn before the user answered")
                }
                Err(_) => ToolOutput::error(format!(
                    "the user did not answer within {} s; continue without the answer or ask again later",
                    context.ask_timeout.as_secs()
                )),
            }
        }))
    }
}
