//! An agent's `ask_user` questions, put to the person behind the host.
//!
//! Where the host declared the `elicitation` capability, the questions go
//! to it as one form: a field per question — a choice of the offered
//! labels (several for a multi-select question), or free text when none
//! are offered — and the answers go back to the agent as its tool result,
//! one `question: answer` line each (the answer alone for one question,
//! as the terminal client answers). Declined or dismissed, the agent is
//! told so and goes on without an answer.
//!
//! A host without elicitation cannot ask anyone: the agent is told that
//! nobody can answer now, and the call's result lists the questions, so
//! the host's model can answer them in its next `ask_agent` message.

use crabtalk_proto::msg::{AskQuestion, AskUserEvent};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::{Map, Value, json};

/// What the agent is told when the host cannot put its question to anyone.
pub(super) const NO_ONE_TO_ASK: &str = "nobody can answer now: this turn came through an MCP \
host that cannot ask its user (no elicitation). Your questions are passed back with your reply; \
the answer may come in the next message. Go on as well as you can without it.";

/// What the agent is told when the person declines or dismisses the form.
pub(super) const DECLINED: &str = "the user declined to answer (through the MCP host); go on \
without the answer, or ask differently";

/// The form field of question `index`.
fn field(index: usize) -> String {
    format!("answer_{}", index + 1)
}

/// The label a question goes by: its header, else the question.
fn label(question: &AskQuestion) -> &str {
    let header = question.header.trim();
    if header.is_empty() {
        question.question.trim()
    } else {
        header
    }
}

/// Questions that make no elicitation form (the schema built for them is
/// not one rmcp takes).
#[derive(Debug, thiserror::Error)]
#[error("the questions do not make a form: {0}")]
pub(super) struct NotAForm(serde_json::Error);

/// The elicitation for `ask`: the message and the form.
pub(super) fn elicitation(
    agent: &str,
    ask: &AskUserEvent,
) -> Result<ElicitRequestParams, NotAForm> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (index, question) in ask.questions.iter().enumerate() {
        let labels: Vec<&str> = question
            .options
            .iter()
            .map(|option| option.label.as_str())
            .filter(|label| !label.trim().is_empty())
            .collect();
        let description = question.question.trim();
        let property = match (labels.is_empty(), question.multi_select) {
            (true, _) => json!({
                "type": "string",
                "title": label(question),
                "description": description,
            }),
            (false, false) => json!({
                "type": "string",
                "title": label(question),
                "description": description,
                "enum": labels,
            }),
            (false, true) => json!({
                "type": "array",
                "title": label(question),
                "description": description,
                "items": {"type": "string", "enum": labels},
            }),
        };
        properties.insert(field(index), property);
        required.push(field(index));
    }
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": properties,
        "required": required,
    }))
    .map_err(NotAForm)?;
    let message = match ask.questions.as_slice() {
        [only] => format!("{agent} asks: {}", only.question.trim()),
        _ => format!("{agent} asks {} questions", ask.questions.len()),
    };
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema,
    })
}

/// The agent's tool result for the host's answer to [`elicitation`].
pub(super) fn reply(ask: &AskUserEvent, result: &ElicitResult) -> String {
    if result.action != ElicitationAction::Accept {
        return DECLINED.to_owned();
    }
    let content = result.content.clone().unwrap_or(Value::Null);
    let answer = |index: usize| -> String {
        match content.get(field(index)) {
            Some(Value::String(text)) => text.trim().to_owned(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", "),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        }
    };
    if let [_] = ask.questions.as_slice() {
        return answer(0);
    }
    ask.questions
        .iter()
        .enumerate()
        .map(|(index, question)| format!("{}: {}", label(question), answer(index)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The questions, for the result of a call whose host could not ask: one
/// line each, with the options offered.
pub(super) fn describe(ask: &AskUserEvent) -> Vec<String> {
    ask.questions
        .iter()
        .map(|question| {
            let options: Vec<&str> = question
                .options
                .iter()
                .map(|option| option.label.as_str())
                .collect();
            if options.is_empty() {
                question.question.trim().to_owned()
            } else {
                let how = if question.multi_select {
                    "one or more of"
                } else {
                    "one of"
                };
                format!(
                    "{} ({how}: {})",
                    question.question.trim(),
                    options.join(", ")
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crabtalk_proto::msg::AskOption;

    use super::*;

    fn ask() -> AskUserEvent {
        AskUserEvent {
            questions: vec![
                AskQuestion {
                    question: "Which database?".into(),
                    header: "Database".into(),
                    options: vec![
                        AskOption {
                            label: "Postgres".into(),
                            description: String::new(),
                        },
                        AskOption {
                            label: "SQLite".into(),
                            description: String::new(),
                        },
                    ],
                    multi_select: false,
                },
                AskQuestion {
                    question: "Which regions?".into(),
                    header: String::new(),
                    options: vec![
                        AskOption {
                            label: "eu".into(),
                            description: String::new(),
                        },
                        AskOption {
                            label: "us".into(),
                            description: String::new(),
                        },
                    ],
                    multi_select: true,
                },
                AskQuestion {
                    question: "Anything else?".into(),
                    header: String::new(),
                    options: Vec::new(),
                    multi_select: false,
                },
            ],
            call_id: "c1".into(),
        }
    }

    #[test]
    fn each_question_is_a_field_and_the_answers_go_back_one_per_line() {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = elicitation("crab", &ask()).unwrap()
        else {
            panic!("a form")
        };
        assert_eq!(message, "crab asks 3 questions");
        let schema = serde_json::to_value(&requested_schema).unwrap();
        assert_eq!(
            schema["properties"]["answer_1"]["enum"],
            json!(["Postgres", "SQLite"])
        );
        assert_eq!(schema["properties"]["answer_1"]["title"], "Database");
        assert_eq!(
            schema["properties"]["answer_2"]["items"]["enum"],
            json!(["eu", "us"])
        );
        assert_eq!(schema["properties"]["answer_3"]["type"], "string");
        assert_eq!(
            schema["required"],
            json!(["answer_1", "answer_2", "answer_3"])
        );

        let mut result = ElicitResult::new(ElicitationAction::Accept);
        result.content = Some(json!({
            "answer_1": "SQLite",
            "answer_2": ["eu", "us"],
            "answer_3": " no ",
        }));
        assert_eq!(
            reply(&ask(), &result),
            "Database: SQLite\nWhich regions?: eu, us\nAnything else?: no"
        );
        assert_eq!(
            reply(&ask(), &ElicitResult::new(ElicitationAction::Decline)),
            DECLINED
        );
        assert_eq!(
            describe(&ask()),
            [
                "Which database? (one of: Postgres, SQLite)",
                "Which regions? (one or more of: eu, us)",
                "Anything else?"
            ]
        );
    }

    #[test]
    fn one_question_is_answered_by_its_answer_alone() {
        let mut one = ask();
        one.questions.truncate(1);
        let ElicitRequestParams::FormElicitationParams { message, .. } =
            elicitation("crab", &one).unwrap()
        else {
            panic!("a form")
        };
        assert_eq!(message, "crab asks: Which database?");
        let mut result = ElicitResult::new(ElicitationAction::Accept);
        result.content = Some(json!({"answer_1": "Postgres"}));
        assert_eq!(reply(&one, &result), "Postgres");
    }
}
