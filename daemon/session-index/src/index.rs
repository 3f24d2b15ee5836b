//! [`SessionIndex`]: the shared, locked session index, its search, and
//! background rebuilds that lose no live append.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::corpus::{Corpus, IndexStats, Ranked};
use crate::hit::{MessageSource, SessionHit, WindowItem, prefix_snippet, snippet_around};
use crate::{ConversationRef, Field, MAX_HITS, MAX_WINDOW_ITEMS, Role};
use crabtalk_bm25 as bm25;

/// What to search for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchQuery<'a> {
    /// Only this agent's conversations are searched.
    pub agent: &'a str,
    /// Only conversations with this sender, when given.
    pub sender: Option<&'a str>,
    pub query: &'a str,
    /// Messages to show before each matching message.
    pub context_before: usize,
    /// Messages to show after it. Together with the match, the window is
    /// capped at [`MAX_WINDOW_ITEMS`], trimming the longer side first.
    pub context_after: usize,
    /// At most this many hits, itself capped at [`MAX_HITS`]; 0 means
    /// [`MAX_HITS`].
    pub limit: usize,
}

/// Why a search failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(
        "reading messages of conversation {conversation:?} (agent {agent:?}) for a search window: {source}"
    )]
    Source {
        agent: String,
        conversation: String,
        source: std::io::Error,
    },
}

/// Why a rebuild was not swapped in.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RebuildError {
    #[error("a newer rebuild was started; this one was discarded")]
    Superseded,
}

/// The session index of every agent, shared by the daemon's tasks: clones are
/// handles to the same index.
///
/// Writers (`add_message`, `set_title`, `set_summary`, `remove_conversation`)
/// take a write lock for one document; a search takes a read lock only while
/// ranking, then reads windows from the [`MessageSource`] without it.
#[derive(Debug, Clone, Default)]
pub struct SessionIndex {
    shared: Arc<RwLock<Shared>>,
}

#[derive(Debug, Default)]
struct Shared {
    corpus: Corpus,
    /// Bumped by every `start_rebuild`; a rebuild only swaps in if it is the
    /// latest.
    generation: u64,
    /// While a rebuild runs: every live change since it started, to replay
    /// onto the rebuilt corpus before the swap.
    log: Option<Vec<Change>>,
}

/// A live change, owned, for the rebuild log.
#[derive(Debug)]
enum Change {
    Message {
        conv: OwnedRef,
        msg_idx: u32,
        role: Role,
        text: Box<str>,
        tool_name: Option<Box<str>>,
    },
    Title {
        conv: OwnedRef,
        title: Box<str>,
    },
    Summary {
        conv: OwnedRef,
        summary: Option<Box<str>>,
    },
    Remove {
        agent: Box<str>,
        conversation: Box<str>,
    },
}

#[derive(Debug)]
struct OwnedRef {
    agent: Box<str>,
    sender: Box<str>,
    conversation: Box<str>,
}

impl OwnedRef {
    fn new(conv: ConversationRef<'_>) -> Self {
        Self {
            agent: conv.agent.into(),
            sender: conv.sender.into(),
            conversation: conv.conversation.into(),
        }
    }

    fn borrow(&self) -> ConversationRef<'_> {
        ConversationRef {
            agent: &self.agent,
            sender: &self.sender,
            conversation: &self.conversation,
        }
    }
}

impl Change {
    fn apply(&self, corpus: &mut Corpus) {
        match self {
            Change::Message {
                conv,
                msg_idx,
                role,
                text,
                tool_name,
            } => {
                corpus.add_message(conv.borrow(), *msg_idx, *role, text, tool_name.as_deref());
            }
            Change::Title { conv, title } => corpus.set_title(conv.borrow(), title),
            Change::Summary { conv, summary } => {
                corpus.set_summary(conv.borrow(), summary.as_deref())
            }
            Change::Remove {
                agent,
                conversation,
            } => {
                corpus.remove_conversation(agent, conversation);
            }
        }
    }
}

impl SessionIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// Indexes message `msg_idx` of a conversation (replacing what that index
    /// held). For [`Role::ToolCall`] and [`Role::ToolResult`], `tool_name` is
    /// indexed too. Only the first
    /// [`MAX_INDEXED_BYTES`](crate::MAX_INDEXED_BYTES) of `text` are indexed.
    /// Returns `false` (and indexes nothing) when `msg_idx` is at or above
    /// [`MAX_MESSAGES_PER_CONVERSATION`](crate::MAX_MESSAGES_PER_CONVERSATION).
    pub fn add_message(
        &self,
        conv: ConversationRef<'_>,
        msg_idx: u32,
        role: Role,
        text: &str,
        tool_name: Option<&str>,
    ) -> bool {
        let mut shared = self.shared.write();
        let indexed = shared
            .corpus
            .add_message(conv, msg_idx, role, text, tool_name);
        if indexed && let Some(log) = shared.log.as_mut() {
            let text = &text[..crate::hit::floor_boundary(text, crate::MAX_INDEXED_BYTES)];
            log.push(Change::Message {
                conv: OwnedRef::new(conv),
                msg_idx,
                role,
                text: text.into(),
                tool_name: tool_name.map(Into::into),
            });
        }
        indexed
    }

    /// Sets the conversation's title (weight 2.0); empty removes it.
    pub fn set_title(&self, conv: ConversationRef<'_>, title: &str) {
        let mut shared = self.shared.write();
        shared.corpus.set_title(conv, title);
        if let Some(log) = shared.log.as_mut() {
            log.push(Change::Title {
                conv: OwnedRef::new(conv),
                title: title.into(),
            });
        }
    }

    /// Sets the conversation's summary (weight 3.0; written by compaction);
    /// `None` removes it.
    pub fn set_summary(&self, conv: ConversationRef<'_>, summary: Option<&str>) {
        let mut shared = self.shared.write();
        shared.corpus.set_summary(conv, summary);
        if let Some(log) = shared.log.as_mut() {
            log.push(Change::Summary {
                conv: OwnedRef::new(conv),
                summary: summary.map(Into::into),
            });
        }
    }

    /// Forgets a conversation: its messages, title and summary. Returns
    /// whether it was indexed.
    pub fn remove_conversation(&self, agent: &str, conversation: &str) -> bool {
        let mut shared = self.shared.write();
        let removed = shared.corpus.remove_conversation(agent, conversation);
        if let Some(log) = shared.log.as_mut() {
            log.push(Change::Remove {
                agent: agent.into(),
                conversation: conversation.into(),
            });
        }
        removed
    }

    pub fn stats(&self) -> IndexStats {
        self.shared.read().corpus.stats()
    }

    /// Searches one agent's conversations and reads each hit's window from
    /// `source`. Hits are best first (score = BM25 × field weight, the weight
    /// applied before the cut), equal scores in indexing order.
    pub fn search(
        &self,
        query: &SearchQuery<'_>,
        source: &dyn MessageSource,
    ) -> Result<Vec<SessionHit>, SearchError> {
        let ranked = self.rank(query);
        let terms: HashSet<String> = bm25::terms(query.query).into_iter().collect();
        let mut hits = Vec::with_capacity(ranked.len());
        for r in ranked {
            let window = match (r.msg_idx, r.text.as_deref()) {
                (Some(anchor), _) => {
                    let messages = source
                        .read(query.agent, &r.conversation, r.window.clone())
                        .map_err(|source| SearchError::Source {
                            agent: query.agent.to_owned(),
                            conversation: r.conversation.clone(),
                            source,
                        })?;
                    messages
                        .into_iter()
                        .filter(|m| r.window.contains(&m.msg_idx))
                        .take(MAX_WINDOW_ITEMS)
                        .map(|m| {
                            let (snippet, truncated) = if m.msg_idx == anchor {
                                snippet_around(&m.text, &terms)
                            } else {
                                prefix_snippet(&m.text)
                            };
                            WindowItem {
                                field: Field::Message(m.role),
                                msg_idx: Some(m.msg_idx),
                                snippet,
                                truncated,
                                tool_name: m.tool_name,
                            }
                        })
                        .collect()
                }
                (None, text) => {
                    let (snippet, truncated) = snippet_around(text.unwrap_or(""), &terms);
                    vec![WindowItem {
                        field: r.field,
                        msg_idx: None,
                        snippet,
                        truncated,
                        tool_name: None,
                    }]
                }
            };
            hits.push(SessionHit {
                conversation: r.conversation,
                sender: r.sender,
                title: r.title,
                field: r.field,
                msg_idx: r.msg_idx,
                score: r.score,
                window,
            });
        }
        Ok(hits)
    }

    /// The ranking half of [`search`](SessionIndex::search), without window
    /// text: what the index alone costs.
    pub(super) fn rank(&self, query: &SearchQuery<'_>) -> Vec<Ranked> {
        let limit = match query.limit {
            0 => MAX_HITS,
            n => n.min(MAX_HITS),
        };
        let (before, after) = window_sides(query.context_before, query.context_after);
        self.shared
            .read()
            .corpus
            .rank(query.agent, query.sender, query.query, limit, before, after)
    }

    /// Starts a rebuild: a fresh, empty index that the caller fills (on any
    /// thread, without holding any lock) from storage, then swaps in with
    /// [`Rebuild::finish`]. Live changes keep going to this index as usual
    /// and are also logged; `finish` replays them onto the rebuilt index
    /// before the swap, so none is lost, whether or not the rebuild also
    /// read them from storage (adding a message twice is harmless: it
    /// replaces itself). Starting another rebuild discards this one.
    pub fn start_rebuild(&self) -> Rebuild {
        let mut shared = self.shared.write();
        shared.generation += 1;
        shared.log = Some(Vec::new());
        Rebuild {
            index: self.clone(),
            generation: shared.generation,
            corpus: Some(Corpus::default()),
        }
    }

    /// Whether a rebuild is running.
    pub fn rebuilding(&self) -> bool {
        self.shared.read().log.is_some()
    }
}

/// An index being rebuilt off to the side; see
/// [`SessionIndex::start_rebuild`]. Dropping it without `finish` abandons it.
#[derive(Debug)]
pub struct Rebuild {
    index: SessionIndex,
    generation: u64,
    corpus: Option<Corpus>,
}

impl Rebuild {
    /// Like [`SessionIndex::add_message`], into the index being rebuilt.
    pub fn add_message(
        &mut self,
        conv: ConversationRef<'_>,
        msg_idx: u32,
        role: Role,
        text: &str,
        tool_name: Option<&str>,
    ) -> bool {
        self.corpus_mut()
            .add_message(conv, msg_idx, role, text, tool_name)
    }

    pub fn set_title(&mut self, conv: ConversationRef<'_>, title: &str) {
        self.corpus_mut().set_title(conv, title);
    }

    pub fn set_summary(&mut self, conv: ConversationRef<'_>, summary: Option<&str>) {
        self.corpus_mut().set_summary(conv, summary);
    }

    /// Replays the live changes made since the start and swaps the rebuilt
    /// index in. The write lock is held only for the replay and the swap; the
    /// old index is freed after it is released.
    pub fn finish(mut self) -> Result<IndexStats, RebuildError> {
        let mut corpus = self.corpus.take().expect("finish runs once");
        let old = {
            let mut shared = self.index.shared.write();
            if shared.generation != self.generation {
                return Err(RebuildError::Superseded);
            }
            for change in shared.log.take().unwrap_or_default() {
                change.apply(&mut corpus);
            }
            std::mem::replace(&mut shared.corpus, corpus)
        };
        drop(old);
        Ok(self.index.stats())
    }

    fn corpus_mut(&mut self) -> &mut Corpus {
        self.corpus
            .as_mut()
            .expect("a rebuild is filled before it finishes")
    }
}

impl Drop for Rebuild {
    fn drop(&mut self) {
        if self.corpus.is_none() {
            return;
        }
        // Abandoned: stop logging, unless a newer rebuild owns the log.
        let mut shared = self.index.shared.write();
        if shared.generation == self.generation {
            shared.log = None;
        }
    }
}

/// `(before, after)` with `before + 1 + after <= MAX_WINDOW_ITEMS`, taking
/// from the longer side first.
pub(super) fn window_sides(before: usize, after: usize) -> (u32, u32) {
    let room = MAX_WINDOW_ITEMS - 1;
    let mut before = before.min(room);
    let mut after = after.min(room);
    while before + after > room {
        if before >= after {
            before -= 1;
        } else {
            after -= 1;
        }
    }
    (before as u32, after as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_sides_are_capped_and_balanced() {
        assert_eq!(window_sides(4, 4), (4, 4));
        assert_eq!(window_sides(100, 100), (7, 8));
        assert_eq!(window_sides(100, 0), (15, 0));
        assert_eq!(window_sides(0, 100), (0, 15));
        assert_eq!(window_sides(3, 100), (3, 12));
    }
}
