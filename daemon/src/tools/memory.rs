//! `remember`, `forget` and `recall`: the agent's long-term memory (RFC
//! 0150), one store per agent (see [`crate::memories`]), which the hook is
//! given when the tools are built.
//!
//! Offered only to agents whose `[memory] enabled` is true (the default),
//! with a short guidance fragment in the system prompt. Recall is driven by
//! the model: nothing is searched or injected on its behalf (policy at the edge, RFC 0021).
//! Every failure is an error result the model can read and act on.
//!
//! **Gateway senders.** An agent's memory is its owner's: notes can hold
//! anything said in any conversation. In a chain begun by a gateway sender
//! (see [`super::gateway`]) the tools work on that sender's part of the
//! memory only ([`View`]): what it remembers is stored under its name
//! (`tg:42: deploy`, shown to it as `deploy`), and it recalls and forgets
//! only its own notes and the summaries of its own compacted
//! conversations. Everything else in the memory does not exist for it.

use std::fmt::Write;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use crate::config::agent::AgentDef;
use crate::hook::{
    Hook, PromptContext, ToolContext, ToolFuture, ToolOutput, ToolSpec, parse_arguments,
};
use crate::memories::Memories;
use crate::memories::notes::{self, DEFAULT_RECALL, MAX_RECALL, SaveError};
use crate::storage::ToolCallRecord;
use crabtalk_memory::{Entry, EntryKind, MemoryError, Op};

/// The memory tools.
pub(crate) struct MemoryHook {
    memories: Arc<Memories>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    name: String,
    content: String,
    #[serde(default)]
    aliases: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetArgs {
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

impl MemoryHook {
    pub(crate) fn new(memories: Arc<Memories>) -> Self {
        Self { memories }
    }
}

/// Whether `agent` gets memory tools at all.
pub(super) fn memory_enabled(agent: &AgentDef) -> bool {
    agent.config.memory.enabled
}

impl Hook for MemoryHook {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: "remember".into(),
                description:
                    "Save a note to your long-term memory, which lasts across conversations. \
                    Saving under a name that exists replaces that note's content."
                        .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "A short, unique name for the note, e.g. \"deploy steps\" or \"user's editor\"."},
                        "content": {"type": "string", "description": "What to remember, self-contained: you will read it without this conversation."},
                        "aliases": {"type": "array", "items": {"type": "string"}, "description": "Other names or keywords to find the note by. Given, they replace the note's aliases; omitted, they stay."}
                    },
                    "required": ["name", "content"],
                    "additionalProperties": false
                }),
            },
            ToolSpec {
                name: "forget".into(),
                description: "Delete a note from your long-term memory, by its name or an alias."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "The note's name or one of its aliases."}
                    },
                    "required": ["name"],
                    "additionalProperties": false
                }),
            },
            ToolSpec {
                name: "recall".into(),
                description:
                    "Search your long-term memory — your notes and the summaries of earlier \
                    conversations — by keywords. Returns the best matches, whole."
                        .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Keywords, e.g. \"deploy production\"."},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RECALL, "description": "How many entries at most (default 5)."}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
            },
        ]
    }

    fn offers(&self, agent: &AgentDef, _tool: &str) -> bool {
        memory_enabled(agent)
    }

    fn system_prompt(&self, context: &PromptContext<'_>) -> Option<String> {
        let agent = context.agent;
        if !memory_enabled(agent) {
            return None;
        }
        let has = |tool| super::Tools::in_scope(agent, tool);
        let mut lines = Vec::new();
        if has("remember") {
            lines.push(
                "- `remember` what will still matter in a later conversation: the user's preferences \
                 and circumstances, decisions and why they were made, how things are done here. \
                 Not passing details. Update a note rather than adding a near-copy.",
            );
        }
        if has("recall") {
            lines.push(
                "- Nothing from memory is shown to you unless you ask: `recall` when the user refers \
                 to something earlier, or before you redo work that may have been done. Summaries of \
                 compacted conversations are in memory too.",
            );
        }
        if has("search_sessions") {
            lines.push(
                "- `search_sessions` finds the exact passages of your past conversations when a \
                 summary is not enough.",
            );
        }
        if has("forget") {
            lines.push("- `forget` a note that turns out wrong or that the user asks you to drop.");
        }
        if lines.is_empty() {
            return None;
        }
        Some(format!(
            "<memory>\nYou have a long-term memory that outlasts this conversation.\n{}\n</memory>",
            lines.join("\n")
        ))
    }

    fn dispatch(&self, call: &ToolCallRecord, context: ToolContext) -> Option<ToolFuture> {
        let memories = self.memories.clone();
        let agent = context.agent.name.clone();
        let view = View::of(context.gateway);
        let run: ToolFuture = match call.name.as_str() {
            "remember" => {
                let args = match parse_arguments::<RememberArgs>(call) {
                    Ok(args) => args,
                    Err(output) => return Some(ready(output)),
                };
                Box::pin(with_memory(memories, agent, move |memory| {
                    remember(memory, args, &view)
                }))
            }
            "forget" => {
                let args = match parse_arguments::<ForgetArgs>(call) {
                    Ok(args) => args,
                    Err(output) => return Some(ready(output)),
                };
                Box::pin(with_memory(memories, agent, move |memory| {
                    forget(memory, args, &view)
                }))
            }
            "recall" => {
                let args = match parse_arguments::<RecallArgs>(call) {
                    Ok(args) => args,
                    Err(output) => return Some(ready(output)),
                };
                Box::pin(with_memory(memories, agent, move |memory| {
                    recall(memory, args, &view)
                }))
            }
            _ => return None,
        };
        Some(run)
    }
}

/// The part of an agent's memory a call works on.
#[derive(Debug, Clone, PartialEq, Eq)]
enum View {
    /// All of it: the daemon's user and the clients it trusts.
    Whole,
    /// What belongs to one gateway sender.
    Sender(String),
}

impl View {
    fn of(gateway: Option<String>) -> Self {
        gateway.map_or(Self::Whole, Self::Sender)
    }

    fn prefix(sender: &str) -> String {
        format!("{sender}: ")
    }

    /// The name an entry called `name` by this caller has in the memory.
    fn stored(&self, name: &str) -> String {
        match self {
            Self::Whole => name.to_owned(),
            Self::Sender(sender) => format!("{}{name}", Self::prefix(sender)),
        }
    }

    /// The name a stored entry has for this caller.
    fn shown<'a>(&self, stored: &'a str) -> &'a str {
        match self {
            Self::Whole => stored,
            Self::Sender(sender) => stored.strip_prefix(&Self::prefix(sender)).unwrap_or(stored),
        }
    }

    /// Whether this caller may see `entry` at all.
    fn sees(&self, entry: &Entry) -> bool {
        match self {
            Self::Whole => true,
            Self::Sender(sender) => match entry.kind {
                EntryKind::Note => entry.name.starts_with(&Self::prefix(sender)),
                EntryKind::Archive => crate::memories::archive::is_archive_of(&entry.name, sender),
            },
        }
    }
}

fn ready(output: ToolOutput) -> ToolFuture {
    Box::pin(std::future::ready(output))
}

/// Runs `f` on `agent`'s memory on a blocking thread.
async fn with_memory(
    memories: Arc<Memories>,
    agent: String,
    f: impl FnOnce(&mut crabtalk_memory::Memory) -> ToolOutput + Send + 'static,
) -> ToolOutput {
    match memories.run(&agent, f).await {
        Ok(output) => output,
        Err(err) => ToolOutput::error(format!("your memory is not available: {err}")),
    }
}

fn failed(err: MemoryError) -> ToolOutput {
    ToolOutput::error(err.to_string())
}

fn remember(memory: &mut crabtalk_memory::Memory, args: RememberArgs, view: &View) -> ToolOutput {
    let RememberArgs {
        name,
        content,
        aliases,
    } = args;
    let aliases: Option<Vec<String>> =
        aliases.map(|aliases| aliases.iter().map(|alias| view.stored(alias)).collect());
    match notes::save_note(memory, &view.stored(&name), content, aliases, |entry| {
        view.sees(entry)
    }) {
        Ok(saved) if saved.updated => {
            ToolOutput::ok(format!("Updated the note {:?}.", view.shown(&saved.name)))
        }
        Ok(_) => ToolOutput::ok(format!("Remembered the note {name:?}.")),
        Err(SaveError::Summary(_)) => ToolOutput::error(SaveError::Summary(name).to_string()),
        Err(err) => ToolOutput::error(err.to_string()),
    }
}

fn forget(memory: &mut crabtalk_memory::Memory, args: ForgetArgs, view: &View) -> ToolOutput {
    let Some(entry) = memory
        .get(&view.stored(&args.name))
        .filter(|entry| view.sees(entry))
    else {
        return ToolOutput::error(format!(
            "no note is named {:?}; `recall` finds notes by keywords",
            args.name
        ));
    };
    if entry.kind == EntryKind::Archive {
        return ToolOutput::error(format!(
            "{:?} is the summary of a compacted conversation, not a note; only notes can be forgotten",
            args.name
        ));
    }
    let name = entry.name.clone();
    match memory.apply(Op::Remove { name: name.clone() }) {
        Ok(_) => ToolOutput::ok(format!("Forgot the note {:?}.", view.shown(&name))),
        Err(err) => failed(err),
    }
}

fn recall(memory: &mut crabtalk_memory::Memory, args: RecallArgs, view: &View) -> ToolOutput {
    if args.query.trim().is_empty() {
        return ToolOutput::error("the query is empty; give keywords to search for");
    }
    let limit = args.limit.unwrap_or(DEFAULT_RECALL).clamp(1, MAX_RECALL);
    let found = memory.search_where(&args.query, limit, |entry| view.sees(entry));
    if found.is_empty() {
        let what = if !memory.list().any(|entry| view.sees(entry)) {
            "your memory is empty"
        } else {
            "nothing in your memory matches"
        };
        return ToolOutput::ok(format!("{what} ({:?}).", args.query));
    }
    let mut out = format!("{} found for {:?}, best first:\n", found.len(), args.query);
    for recalled in found {
        describe(&mut out, recalled.entry, view);
    }
    ToolOutput::ok(out)
}

/// One recalled entry: a heading with its name, kind, aliases and date,
/// then its content.
fn describe(out: &mut String, entry: &Entry, view: &View) {
    let kind = match entry.kind {
        EntryKind::Note => "note",
        EntryKind::Archive => "summary of a compacted conversation",
    };
    let date = chrono::DateTime::from_timestamp(entry.created_at as i64, 0)
        .map(|at| at.format("%Y-%m-%d").to_string())
        .unwrap_or_default();
    let _ = write!(out, "\n## {} ({kind}, {date}", view.shown(&entry.name));
    if !entry.aliases.is_empty() {
        let aliases: Vec<&str> = entry.aliases.iter().map(|a| view.shown(a)).collect();
        let _ = write!(out, "; aliases: {}", aliases.join(", "));
    }
    out.push_str(")\n");
    let (shown, cut) = notes::recalled_content(entry);
    out.push_str(shown);
    if cut {
        let _ = write!(
            out,
            "\n[… {} more bytes not shown]",
            entry.content.trim().len() - shown.len()
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crabtalk_memory::Memory;

    fn remember_args(name: &str, content: &str, aliases: Option<&[&str]>) -> RememberArgs {
        RememberArgs {
            name: name.into(),
            content: content.into(),
            aliases: aliases.map(|a| a.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn remember_upserts_keeps_aliases_unless_given_and_refuses_archives() {
        let dir = tempfile::tempdir().unwrap();
        let mut memory = Memory::open(dir.path().join("m.crmem")).unwrap();
        let out = remember(
            &mut memory,
            remember_args("deploy", "make release", Some(&["ship"])),
            &View::Whole,
        );
        assert!(!out.is_error, "{}", out.text);
        let out = remember(
            &mut memory,
            remember_args("ship", "make release && tag", None),
            &View::Whole,
        );
        assert_eq!(out.text, "Updated the note \"deploy\".");
        let entry = memory.get("deploy").unwrap();
        assert_eq!(
            (entry.content.as_str(), entry.aliases.clone()),
            ("make release && tag", vec!["ship".to_owned()])
        );

        memory
            .apply(Op::Add {
                name: "compaction-user-1".into(),
                content: "summary".into(),
                aliases: Vec::new(),
                kind: EntryKind::Archive,
            })
            .unwrap();
        let out = remember(
            &mut memory,
            remember_args("compaction-user-1", "x", None),
            &View::Whole,
        );
        assert!(
            out.is_error && out.text.contains("remember under another name"),
            "{}",
            out.text
        );
        let out = forget(
            &mut memory,
            ForgetArgs {
                name: "compaction-user-1".into(),
            },
            &View::Whole,
        );
        assert!(
            out.is_error && out.text.contains("only notes can be forgotten"),
            "{}",
            out.text
        );
        let archive = memory.get("compaction-user-1").unwrap();
        assert_eq!(
            (archive.kind, archive.content.as_str()),
            (EntryKind::Archive, "summary"),
            "a refused remember or forget leaves the archive as it was"
        );
        let out = remember(
            &mut memory,
            remember_args("bad\nname", "x", None),
            &View::Whole,
        );
        assert!(out.is_error && out.text.contains("control"), "{}", out.text);

        let out = recall(
            &mut memory,
            RecallArgs {
                query: "tag".into(),
                limit: None,
            },
            &View::Whole,
        );
        assert!(
            out.text.contains("## deploy (note, ") && out.text.contains("aliases: ship"),
            "{}",
            out.text
        );
        let out = forget(
            &mut memory,
            ForgetArgs {
                name: "ship".into(),
            },
            &View::Whole,
        );
        assert_eq!(out.text, "Forgot the note \"deploy\".");
        let out = recall(
            &mut memory,
            RecallArgs {
                query: "tag".into(),
                limit: Some(0),
            },
            &View::Whole,
        );
        assert!(
            !out.is_error && out.text.starts_with("nothing in your memory matches"),
            "{}",
            out.text
        );
    }

    #[test]
    fn a_gateway_sender_sees_only_its_own_notes_and_summaries() {
        let dir = tempfile::tempdir().unwrap();
        let mut memory = Memory::open(dir.path().join("m.crmem")).unwrap();
        let owner = View::Whole;
        let alice = View::Sender("tg:42".into());
        let mallory = View::Sender("tg:4".into());
        remember(
            &mut memory,
            remember_args("bank", "the owner's PIN is 4711", None),
            &owner,
        );
        let out = remember(
            &mut memory,
            remember_args("bank", "alice banks with the PIN 1234", Some(&["money"])),
            &alice,
        );
        assert_eq!(out.text, "Remembered the note \"bank\".");
        for (name, kind) in [
            ("compaction-tg:42-20260403-100000", EntryKind::Archive),
            ("compaction-user-20260403-100000", EntryKind::Archive),
        ] {
            memory
                .apply(Op::Add {
                    name: name.into(),
                    content: format!("summary with PIN talk from {name}"),
                    aliases: Vec::new(),
                    kind,
                })
                .unwrap();
        }
        let pin = |memory: &mut Memory, view: &View| {
            recall(
                memory,
                RecallArgs {
                    query: "PIN".into(),
                    limit: Some(20),
                },
                view,
            )
            .text
        };
        let seen = pin(&mut memory, &alice);
        assert!(
            seen.contains("1234") && seen.contains("compaction-tg:42-"),
            "{seen}"
        );
        assert!(
            !seen.contains("4711") && !seen.contains("compaction-user"),
            "{seen}"
        );
        assert!(
            seen.contains("## bank (note") && seen.contains("aliases: money"),
            "{seen}"
        );
        let everything = pin(&mut memory, &owner);
        assert!(
            everything.contains("4711") && everything.contains("1234"),
            "{everything}"
        );
        // Another gateway sender, even with a similar id, sees nothing.
        let nothing = pin(&mut memory, &mallory);
        assert!(nothing.starts_with("your memory is empty"), "{nothing}");
        let out = forget(
            &mut memory,
            ForgetArgs {
                name: "bank".into(),
            },
            &mallory,
        );
        assert!(out.is_error, "{}", out.text);
        // Forgetting in alice's view leaves the owner's note alone.
        let out = forget(
            &mut memory,
            ForgetArgs {
                name: "bank".into(),
            },
            &alice,
        );
        assert_eq!(out.text, "Forgot the note \"bank\".");
        assert!(memory.get("bank").is_some());
    }
}
