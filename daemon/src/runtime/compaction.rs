//! Compaction (`CompactMsg`; RFC 0021): the
//! history since the last marker becomes a summary, the summary becomes an
//! Archive entry in the agent's memory, and a compact marker in the log
//! makes the next turn start from the summary.
//!
//! 1. Take the conversation's turn lock and keep it to the end: a turn sent
//!    meanwhile waits and runs after, on the compacted history.
//! 2. Ask the agent's model (one non-streamed call, with the retries of
//!    [`crate::provider::retry`]) for a summary of a transcript of the history
//!    since the last marker (the previous summary first; tool outputs and
//!    arguments cut to the agent's `compact_tool_max_len`; guests' messages
//!    under their names).
//! 3. Write the summary to the agent's memory as an Archive with a fresh
//!    name, then append the marker `{compact, archive_name, archived_at,
//!    title}` (title: the summary's first sentence, at most 60 characters).
//!    If the marker cannot be written, the archive is taken back.
//! 4. Record the summary in the conversation's metadata and the session
//!    index.
//!
//! The work runs in its own task, so a client that hangs up halfway does
//! not leave an archive without its marker.

use std::sync::Arc;

use chrono::Utc;
use crabllm_core::ChatCompletionRequest;

use super::conversation::ConversationKey;
use super::request::tagged;
use super::snapshot::Snapshot;
use super::{Error, Runtime};
use crate::config::agent::AgentDef;
use crate::memories::archive::archive_name;
use crate::provider::LlmError;
use crate::storage::{CompactMarker, Message, Role};
use crabtalk_memory::{EntryKind, Op};

/// The longest title, in characters.
const MAX_TITLE_CHARS: usize = 60;

/// What the summarising model is told.
const SUMMARY_PROMPT: &str = "\
You compact conversations. Below is a transcript of a conversation between a user and an AI agent \
(and sometimes guest agents). The agent will continue the conversation from your summary alone: \
it will not see the transcript again. Write that summary.

- Start with one plain sentence that says what the conversation is about; it becomes the \
archive's title.
- Keep what the agent needs to carry on: the user's goals and preferences, decisions and their \
reasons, facts, names, numbers, file paths, commands and their outcomes, what is done and what is \
still open, and any promise the agent made.
- Say who said or did what: the user, the agent, or a guest agent by name. Do not merge a guest's \
views into the agent's.
- If the transcript starts with an earlier summary, fold it in: your summary replaces it.
- Be concise: drop pleasantries, repetition and tool output that no longer matters.
- Write in the language of the conversation. Reply with the summary only.";

impl Runtime {
    /// Compacts the conversation `(agent, sender)` and returns the summary.
    pub(crate) async fn compact(
        self: &Arc<Self>,
        agent: &str,
        sender: &str,
    ) -> Result<String, Error> {
        if self.closing.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::unavailable("the daemon is shutting down"));
        }
        let key = self.key(agent, sender);
        let snapshot = self.snapshot();
        let agent = snapshot.agent(&key.agent).map_err(Error::not_found)?;
        let files = self.conversations.storage().files(&key.agent, &key.sender);
        if self.conversations.get(&key).is_none() && !files.log.is_file() {
            return Err(Error::not_found(format!(
                "there is no conversation between agent {:?} and sender {:?}",
                key.agent, key.sender
            )));
        }
        let runtime = self.clone();
        let compaction = self
            .turns
            .spawn(async move { runtime.run_compaction(snapshot, agent, key).await });
        compaction
            .await
            .map_err(|err| Error::internal(format!("the compaction failed: {err}")))?
    }

    /// Starts the conversation `(agent, sender)` afresh: a marker without
    /// a summary, so the next turn sees none of the messages so far, which
    /// stay in the log (listed, readable and searchable). No model is
    /// called. Turns started before it run first, turns after it start
    /// from nothing. Nothing to do for a conversation with no messages
    /// since its last marker.
    pub(crate) async fn start_fresh(
        self: &Arc<Self>,
        agent: &str,
        sender: &str,
    ) -> Result<(), Error> {
        if self.closing.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::unavailable("the daemon is shutting down"));
        }
        let key = self.key(agent, sender);
        self.snapshot()
            .agent(&key.agent)
            .map_err(Error::not_found)?;
        let files = self.conversations.storage().files(&key.agent, &key.sender);
        if self.conversations.get(&key).is_none() && !files.log.is_file() {
            return Ok(());
        }
        let runtime = self.clone();
        let fresh = self.turns.spawn(async move {
            let conversation = runtime.conversations.get_or_create(&key);
            let ticket = conversation.take_ticket();
            ticket.wait().await;
            let mut history = conversation
                .lock_history(&key.sender)
                .await
                .map_err(|err| {
                    Error::internal(format!(
                        "cannot load the conversation {}/{}: {err}",
                        key.agent, key.sender
                    ))
                })?;
            if history.messages.is_empty() {
                return Ok(());
            }
            let marker = CompactMarker {
                compact: String::new(),
                archive_name: String::new(),
                archived_at: crate::storage::now_rfc3339(),
                title: String::new(),
                messages_before: None,
            };
            history.append_marker(marker).map_err(|err| {
                Error::internal(format!(
                    "the conversation was not started afresh: cannot write the marker: {err}"
                ))
            })?;
            conversation.save_meta(&history.meta);
            drop(history);
            drop(ticket);
            let flushing = conversation.clone();
            let _ = tokio::task::spawn_blocking(move || flushing.flush_meta()).await;
            drop(conversation);
            runtime.conversations.trim();
            Ok(())
        });
        fresh
            .await
            .map_err(|err| Error::internal(format!("the fresh start failed: {err}")))?
    }

    async fn run_compaction(
        self: Arc<Self>,
        snapshot: Arc<Snapshot>,
        agent: Arc<AgentDef>,
        key: ConversationKey,
    ) -> Result<String, Error> {
        let conversation = self.conversations.get_or_create(&key);
        // Queue with the conversation's turns: turns started before this
        // compaction run first, turns started after it wait for it.
        let ticket = conversation.take_ticket();
        ticket.wait().await;
        let mut history = conversation
            .lock_history(&key.sender)
            .await
            .map_err(|err| {
                Error::internal(format!(
                    "cannot load the conversation {}/{}: {err}",
                    key.agent, key.sender
                ))
            })?;
        if history.messages.is_empty() {
            let since = if history.marker.is_some() {
                "since its last compaction"
            } else {
                "yet"
            };
            return Err(Error::conflict(format!(
                "nothing to compact: the conversation {}/{} has no messages {since}",
                key.agent, key.sender
            )));
        }
        let transcript = Transcript {
            agent: &agent.name,
            sender: &key.sender,
            earlier: history
                .marker
                .as_ref()
                .map(|marker| marker.compact.as_str())
                .filter(|summary| !summary.trim().is_empty()),
            messages: &history.messages,
            max_tool_len: agent.config.compact_tool_max_len as usize,
        }
        .render();
        let request = ChatCompletionRequest {
            model: agent.config.model.clone().unwrap_or_default(),
            messages: vec![
                crabllm_core::Message::system(SUMMARY_PROMPT),
                crabllm_core::Message::user(transcript),
            ],
            ..Default::default()
        };
        let summary = summarize(&snapshot, request).await.map_err(|err| {
            Error::of_model(&err, format!("the conversation was not compacted: {err}"))
        })?;
        let summary = summary.trim().to_owned();
        if summary.is_empty() {
            return Err(Error::unavailable(
                "the conversation was not compacted: the model returned an empty summary",
            ));
        }

        let now = Utc::now();
        let archived_at = now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let archive = {
            let sender = key.sender.clone();
            let content = summary.clone();
            self.memories
                .run(&agent.name, move |memory| {
                    let name = archive_name(memory, &sender, now);
                    let op = Op::Add {
                        name: name.clone(),
                        content,
                        aliases: Vec::new(),
                        kind: EntryKind::Archive,
                    };
                    memory
                        .apply_at(op, now.timestamp().max(0) as u64)
                        .map(|_| name)
                })
                .await
                .and_then(|written| written)
                .map_err(|err| {
                    Error::internal(format!(
                        "the conversation was not compacted: cannot write the archive to {}'s memory: {err}",
                        agent.name
                    ))
                })?
        };
        let marker = CompactMarker {
            compact: summary.clone(),
            archive_name: archive.clone(),
            archived_at,
            title: title(&summary),
            messages_before: None,
        };
        if let Err(err) = history.append_marker(marker) {
            let taken_back = self
                .memories
                .run(&agent.name, move |memory| {
                    memory.apply(Op::Remove { name: archive })
                })
                .await;
            if let Err(undo) = taken_back.and_then(|removed| removed) {
                tracing::warn!("cannot take back the archive of a failed compaction: {undo}");
            }
            return Err(Error::internal(format!(
                "the conversation was not compacted: cannot write the compact marker: {err}"
            )));
        }
        conversation.save_meta(&history.meta);
        drop(history);
        let flushing = conversation.clone();
        let _ = tokio::task::spawn_blocking(move || flushing.flush_meta()).await;
        drop(conversation);
        self.conversations.trim();
        Ok(summary)
    }
}

/// Asks for the summary in one non-streamed call: nobody watches it arrive,
/// and a whole call can be retried after any transient failure (a stream
/// only until its first chunk).
async fn summarize(
    snapshot: &Snapshot,
    request: ChatCompletionRequest,
) -> Result<String, LlmError> {
    let response = snapshot.registry.complete(request).await?;
    Ok(response.content().unwrap_or_default().to_owned())
}

/// The history since the last marker, as text for the summarising model.
struct Transcript<'a> {
    agent: &'a str,
    sender: &'a str,
    /// The previous summary, if the conversation was compacted before.
    earlier: Option<&'a str>,
    messages: &'a [Message],
    /// Tool outputs and arguments are cut to this many bytes.
    max_tool_len: usize,
}

impl Transcript<'_> {
    fn render(&self) -> String {
        let mut out = format!(
            "Transcript of the conversation between the user {:?} and the agent {:?}.\n",
            self.sender, self.agent
        );
        if let Some(earlier) = self.earlier {
            out.push_str("\n### Summary of the conversation before this transcript\n");
            out.push_str(earlier.trim());
            out.push('\n');
        }
        for message in self.messages {
            match message.role {
                Role::User => section(&mut out, "the user", &message.content),
                Role::System => section(&mut out, "system", &message.content),
                Role::Assistant => {
                    let speaker = if message.agent.is_empty() {
                        format!("the agent {}", self.agent)
                    } else {
                        format!("the guest agent {}", message.agent)
                    };
                    if !message.content.trim().is_empty() {
                        let content = if message.agent.is_empty() {
                            message.content.clone()
                        } else {
                            tagged(&message.agent, &message.content)
                        };
                        section(&mut out, &speaker, &content);
                    }
                    for call in &message.tool_calls {
                        section(
                            &mut out,
                            &format!("{speaker} calls the tool {}", call.name),
                            &cut(&call.arguments, self.max_tool_len),
                        );
                    }
                }
                Role::Tool => {
                    let tool = message.tool_name.as_deref().unwrap_or("a tool");
                    let outcome = if message.is_error { "error" } else { "result" };
                    section(
                        &mut out,
                        &format!("{outcome} of {tool}"),
                        &cut(&message.content, self.max_tool_len),
                    );
                }
            }
        }
        out
    }
}

fn section(out: &mut String, heading: &str, body: &str) {
    out.push_str("\n### ");
    out.push_str(heading);
    out.push('\n');
    out.push_str(body.trim());
    out.push('\n');
}

/// `text` cut to `max` bytes on a char boundary, saying how much was cut;
/// `max` 0 leaves it out entirely.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… {} more bytes cut for the summary]",
        &text[..end],
        text.len() - end
    )
}

/// The archive's title: the summary's first sentence, at most 60
/// characters (cut at a word and marked with `…` when longer).
fn title(summary: &str) -> String {
    let text = summary.trim_start_matches(|c: char| {
        c.is_whitespace() || matches!(c, '#' | '*' | '-' | '>' | '_' | '`')
    });
    let line = text.lines().next().unwrap_or("").trim();
    let mut end = line.len();
    let mut chars = line.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let closes = match c {
            '。' | '！' | '？' => true,
            '.' | '!' | '?' => chars.peek().is_none_or(|(_, next)| next.is_whitespace()),
            _ => false,
        };
        if closes {
            end = at + c.len_utf8();
            break;
        }
    }
    let sentence = line[..end].trim_end_matches(['*', '_']);
    if sentence.chars().count() <= MAX_TITLE_CHARS {
        return sentence.to_owned();
    }
    let keep: String = sentence.chars().take(MAX_TITLE_CHARS - 1).collect();
    let cut_at = match keep.rfind(char::is_whitespace) {
        Some(space) if space >= keep.len() / 2 => space,
        _ => keep.len(),
    };
    let keep = keep[..cut_at].trim_end_matches(|c: char| c.is_whitespace() || c == ',' || c == ';');
    format!("{keep}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::storage::ToolCallRecord;

    #[test]
    fn the_title_is_the_first_sentence_within_sixty_characters() {
        assert_eq!(
            title("Pricing analysis for solo dev tools. Then we compared."),
            "Pricing analysis for solo dev tools."
        );
        assert_eq!(title("## Plan\nRest"), "Plan");
        assert_eq!(
            title("Version 1.2 ships today! More later"),
            "Version 1.2 ships today!"
        );
        assert_eq!(title("会议记录。其他"), "会议记录。");
        let long = title(
            "The user and the agent spent the afternoon refactoring the cron scheduler into smaller modules.",
        );
        assert!(long.chars().count() <= 60, "{long}");
        assert!(
            long.ends_with('…') && long.starts_with("The user and the agent"),
            "{long}"
        );
        let unbroken = title(&"x".repeat(100));
        assert_eq!(unbroken.chars().count(), 60);
    }

    #[test]
    fn the_transcript_cuts_tool_output_and_names_guests() {
        let call = ToolCallRecord {
            id: "c1".into(),
            name: "bash".into(),
            arguments: "{\"command\":\"ls\"}".into(),
        };
        let mut calling = Message::assistant("");
        calling.tool_calls.push(call.clone());
        let mut guest = Message::assistant("I disagree");
        guest.agent = "owl".into();
        let messages = vec![
            Message::user("list the files"),
            calling,
            Message::tool_result(&call, "é".repeat(100), false),
            guest,
        ];
        let text = Transcript {
            agent: "crab",
            sender: "user",
            earlier: Some("We met before."),
            messages: &messages,
            max_tool_len: 11,
        }
        .render();
        assert!(text.contains("We met before."), "{text}");
        assert!(
            text.contains("### the agent crab calls the tool bash"),
            "{text}"
        );
        assert!(
            text.contains("### result of bash\néééé\u{e9}\n[… 190 more bytes"),
            "{text}"
        );
        assert!(
            text.contains("### the guest agent owl\n<from agent=\"owl\">"),
            "{text}"
        );
    }
}
