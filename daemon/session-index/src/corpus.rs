//! The unlocked index of every agent's conversations: what a
//! [`SessionIndex`](crate::SessionIndex) guards and what a rebuild fills off
//! to the side before it is swapped in.
//!
//! Each agent has its own BM25 index, so a search can only ever see the
//! calling agent's documents, and IDF is computed over that agent's
//! conversations alone. A document is one message, one title or one summary,
//! keyed by a `u32` slot; slots are handed out in increasing order, so
//! posting lists grow by appending.

use std::collections::HashMap;
use std::ops::Range;

use crate::hit::floor_boundary;
use crate::{ConversationRef, Field, MAX_INDEXED_BYTES, MAX_MESSAGES_PER_CONVERSATION, Role};
use crabtalk_bm25 as bm25;

const NO_SLOT: u32 = u32::MAX;
const DEAD: u32 = u32::MAX;

#[derive(Debug, Default)]
pub(super) struct Corpus {
    agents: HashMap<Box<str>, AgentCorpus>,
}

#[derive(Debug, Default)]
struct AgentCorpus {
    index: bm25::Index<u32>,
    /// By slot. Removed documents keep their slot with `conv == DEAD`.
    docs: Vec<Doc>,
    /// By conversation slot; removed conversations stay as empty tombstones so
    /// slots stay valid.
    conversations: Vec<Conversation>,
    by_id: HashMap<Box<str>, u32>,
    messages: usize,
}

#[derive(Debug, Clone, Copy)]
struct Doc {
    conv: u32,
    msg_idx: u32,
    field: Field,
}

#[derive(Debug, Default)]
struct Conversation {
    id: Box<str>,
    sender: Box<str>,
    title: Option<Box<str>>,
    summary: Option<Box<str>>,
    title_slot: Option<u32>,
    summary_slot: Option<u32>,
    /// Document slot by message index (`NO_SLOT` for messages not indexed).
    slots: Vec<u32>,
}

/// A ranked document, with what the search needs after the lock is released.
#[derive(Debug, Clone)]
pub(super) struct Ranked {
    pub conversation: String,
    pub sender: String,
    pub title: Option<String>,
    pub field: Field,
    pub msg_idx: Option<u32>,
    pub score: f64,
    /// Message window to read (message hits).
    pub window: Range<u32>,
    /// The title or summary text (title and summary hits).
    pub text: Option<String>,
}

/// Counts, for stats and benches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexStats {
    pub agents: usize,
    pub conversations: usize,
    pub messages: usize,
}

impl Corpus {
    pub(crate) fn add_message(
        &mut self,
        conv: ConversationRef<'_>,
        msg_idx: u32,
        role: Role,
        text: &str,
        tool_name: Option<&str>,
    ) -> bool {
        if msg_idx >= MAX_MESSAGES_PER_CONVERSATION {
            return false;
        }
        let agent = self.agent(conv.agent);
        let c = agent.conversation(conv);
        let text = &text[..floor_boundary(text, MAX_INDEXED_BYTES)];
        let at = msg_idx as usize;
        let slots = &mut agent.conversations[c as usize].slots;
        if slots.len() <= at {
            slots.resize(at + 1, NO_SLOT);
        }
        let existing = slots[at];
        let tool_text;
        let indexed = match tool_name {
            Some(name) if matches!(role, Role::ToolCall | Role::ToolResult) => {
                tool_text = format!("{name}\n{text}");
                tool_text.as_str()
            }
            _ => text,
        };
        let doc = Doc {
            conv: c,
            msg_idx,
            field: Field::Message(role),
        };
        let slot = if existing == NO_SLOT {
            agent.messages += 1;
            let slot = agent.new_slot(doc);
            agent.conversations[c as usize].slots[at] = slot;
            slot
        } else {
            agent.docs[existing as usize] = doc;
            existing
        };
        agent.index.insert(slot, indexed);
        true
    }

    pub(crate) fn set_title(&mut self, conv: ConversationRef<'_>, title: &str) {
        let title = &title[..floor_boundary(title, MAX_INDEXED_BYTES)];
        let agent = self.agent(conv.agent);
        let c = agent.conversation(conv);
        agent.set_field(c, Field::Title, (!title.is_empty()).then_some(title));
    }

    pub(crate) fn set_summary(&mut self, conv: ConversationRef<'_>, summary: Option<&str>) {
        let summary = summary
            .map(|s| &s[..floor_boundary(s, MAX_INDEXED_BYTES)])
            .filter(|s| !s.is_empty());
        let agent = self.agent(conv.agent);
        let c = agent.conversation(conv);
        agent.set_field(c, Field::Summary, summary);
    }

    pub(crate) fn remove_conversation(&mut self, agent_name: &str, conversation: &str) -> bool {
        let Some(agent) = self.agents.get_mut(agent_name) else {
            return false;
        };
        let Some(c) = agent.by_id.remove(conversation) else {
            return false;
        };
        let removed = std::mem::take(&mut agent.conversations[c as usize]);
        let fields = [removed.title_slot, removed.summary_slot];
        for slot in removed.slots.iter().copied().filter(|s| *s != NO_SLOT) {
            agent.messages -= 1;
            agent.kill(slot);
        }
        for slot in fields.into_iter().flatten() {
            agent.kill(slot);
        }
        if agent.by_id.is_empty() {
            self.agents.remove(agent_name);
        }
        true
    }

    pub(crate) fn stats(&self) -> IndexStats {
        IndexStats {
            agents: self.agents.len(),
            conversations: self.agents.values().map(|a| a.by_id.len()).sum(),
            messages: self.agents.values().map(|a| a.messages).sum(),
        }
    }

    /// The best `limit` documents of `agent` for `query`, weighted by field,
    /// filtered by sender, with windows of `before` + 1 + `after` messages.
    pub(crate) fn rank(
        &self,
        agent: &str,
        sender: Option<&str>,
        query: &str,
        limit: usize,
        before: u32,
        after: u32,
    ) -> Vec<Ranked> {
        let Some(agent) = self.agents.get(agent) else {
            return Vec::new();
        };
        let scored = agent.index.search_dense(query, limit, |slot| {
            let doc = agent.docs[slot as usize];
            if doc.conv == DEAD {
                return None;
            }
            if let Some(sender) = sender
                && *agent.conversations[doc.conv as usize].sender != *sender
            {
                return None;
            }
            Some(doc.field.weight())
        });
        scored
            .into_iter()
            .map(|hit| {
                let doc = agent.docs[hit.doc as usize];
                let c = &agent.conversations[doc.conv as usize];
                let (msg_idx, window, text) = match doc.field {
                    Field::Message(_) => {
                        let start = doc.msg_idx.saturating_sub(before);
                        let end = doc
                            .msg_idx
                            .saturating_add(after)
                            .saturating_add(1)
                            .min(c.slots.len() as u32);
                        (Some(doc.msg_idx), start..end, None)
                    }
                    Field::Title => (None, 0..0, c.title.as_deref().map(str::to_owned)),
                    Field::Summary => (None, 0..0, c.summary.as_deref().map(str::to_owned)),
                };
                Ranked {
                    conversation: c.id.to_string(),
                    sender: c.sender.to_string(),
                    title: c.title.as_deref().map(str::to_owned),
                    field: doc.field,
                    msg_idx,
                    score: hit.score,
                    window,
                    text,
                }
            })
            .collect()
    }

    fn agent(&mut self, name: &str) -> &mut AgentCorpus {
        if !self.agents.contains_key(name) {
            self.agents.insert(name.into(), AgentCorpus::default());
        }
        self.agents.get_mut(name).expect("just inserted")
    }
}

impl AgentCorpus {
    /// The slot of `conv`, created on first sight. A conversation's sender is
    /// fixed by its first reference.
    fn conversation(&mut self, conv: ConversationRef<'_>) -> u32 {
        if let Some(&c) = self.by_id.get(conv.conversation) {
            return c;
        }
        let c = u32::try_from(self.conversations.len()).expect("fewer than 2^32 conversations");
        self.conversations.push(Conversation {
            id: conv.conversation.into(),
            sender: conv.sender.into(),
            ..Conversation::default()
        });
        self.by_id.insert(conv.conversation.into(), c);
        c
    }

    fn new_slot(&mut self, doc: Doc) -> u32 {
        let slot = u32::try_from(self.docs.len()).expect("fewer than 2^32 documents per agent");
        assert!(slot != NO_SLOT, "fewer than 2^32 - 1 documents per agent");
        self.docs.push(doc);
        slot
    }

    fn kill(&mut self, slot: u32) {
        self.index.remove(slot);
        self.docs[slot as usize].conv = DEAD;
    }

    fn set_field(&mut self, c: u32, field: Field, text: Option<&str>) {
        let conv = &mut self.conversations[c as usize];
        let (stored, slot) = match field {
            Field::Title => (&mut conv.title, conv.title_slot),
            Field::Summary => (&mut conv.summary, conv.summary_slot),
            Field::Message(_) => unreachable!("messages are not conversation fields"),
        };
        *stored = text.map(Into::into);
        match (text, slot) {
            (None, None) => {}
            (None, Some(slot)) => {
                self.kill(slot);
                let conv = &mut self.conversations[c as usize];
                match field {
                    Field::Title => conv.title_slot = None,
                    _ => conv.summary_slot = None,
                }
            }
            (Some(text), Some(slot)) => self.index.insert(slot, text),
            (Some(text), None) => {
                let slot = self.new_slot(Doc {
                    conv: c,
                    msg_idx: 0,
                    field,
                });
                self.index.insert(slot, text);
                let conv = &mut self.conversations[c as usize];
                match field {
                    Field::Title => conv.title_slot = Some(slot),
                    _ => conv.summary_slot = Some(slot),
                }
            }
        }
    }
}
