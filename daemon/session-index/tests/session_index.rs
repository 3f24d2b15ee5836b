//! Session search through its public API: field weights and boosts, bounded
//! windows, agent scope, sender filter, hit cap, removal, and rebuilds that
//! lose no live append.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use crabtalk_session_index::{
    ConversationRef, Field, MAX_HITS, MAX_SNIPPET_BYTES, MAX_WINDOW_ITEMS, MessageSource,
    RebuildError, Role, SearchQuery, SessionHit, SessionIndex, SourceMessage,
};

/// Messages by (agent, conversation).
type LogMap = HashMap<(String, String), Vec<SourceMessage>>;

/// Conversation logs in RAM: the daemon's storage, as the index sees it.
#[derive(Default, Clone)]
struct Logs {
    convs: Arc<Mutex<LogMap>>,
}

impl Logs {
    fn push(
        &self,
        agent: &str,
        conv: &str,
        role: Role,
        text: &str,
        tool_name: Option<&str>,
    ) -> u32 {
        let mut convs = self.convs.lock().unwrap();
        let log = convs.entry((agent.into(), conv.into())).or_default();
        let msg_idx = log.len() as u32;
        log.push(SourceMessage {
            msg_idx,
            role,
            text: text.into(),
            tool_name: tool_name.map(Into::into),
        });
        msg_idx
    }
}

impl MessageSource for Logs {
    fn read(
        &self,
        agent: &str,
        conversation: &str,
        range: Range<u32>,
    ) -> std::io::Result<Vec<SourceMessage>> {
        let convs = self.convs.lock().unwrap();
        let log = convs
            .get(&(agent.to_owned(), conversation.to_owned()))
            .ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such conversation")
            })?;
        Ok(log
            .iter()
            .filter(|m| range.contains(&m.msg_idx))
            .cloned()
            .collect())
    }
}

/// An index and its logs, fed together as the daemon would.
#[derive(Default)]
struct Fixture {
    index: SessionIndex,
    logs: Logs,
}

impl Fixture {
    fn say(&self, agent: &str, sender: &str, conv: &str, role: Role, text: &str) -> u32 {
        self.say_tool(agent, sender, conv, role, text, None)
    }

    fn say_tool(
        &self,
        agent: &str,
        sender: &str,
        conv: &str,
        role: Role,
        text: &str,
        tool: Option<&str>,
    ) -> u32 {
        let msg_idx = self.logs.push(agent, conv, role, text, tool);
        let conv = ConversationRef {
            agent,
            sender,
            conversation: conv,
        };
        assert!(self.index.add_message(conv, msg_idx, role, text, tool));
        msg_idx
    }

    fn search(&self, agent: &str, query: &str) -> Vec<SessionHit> {
        self.search_with(SearchQuery {
            agent,
            sender: None,
            query,
            context_before: 0,
            context_after: 0,
            limit: 20,
        })
    }

    fn search_with(&self, query: SearchQuery<'_>) -> Vec<SessionHit> {
        self.index.search(&query, &self.logs).unwrap()
    }
}

fn conv<'a>(agent: &'a str, sender: &'a str, conversation: &'a str) -> ConversationRef<'a> {
    ConversationRef {
        agent,
        sender,
        conversation,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * a.abs().max(1.0)
}

#[test]
fn a_title_outranks_the_same_words_in_an_assistant_message() {
    let f = Fixture::default();
    f.say(
        "crab",
        "u",
        "c1",
        Role::Assistant,
        "kubernetes upgrade plan",
    );
    f.index
        .set_title(conv("crab", "u", "c2"), "kubernetes upgrade plan");
    let hits = f.search("crab", "kubernetes upgrade");
    assert_eq!(hits.len(), 2);
    assert_eq!(
        (hits[0].field, hits[0].conversation.as_str()),
        (Field::Title, "c2")
    );
    assert_eq!(hits[0].msg_idx, None);
    assert_eq!(hits[0].window[0].snippet, "kubernetes upgrade plan");
    assert_eq!(hits[1].field, Field::Message(Role::Assistant));
    // Same text, same length: the title scores exactly twice as much.
    assert!(close(hits[0].score, 2.0 * hits[1].score), "{hits:?}");
}

#[test]
fn a_summary_outranks_a_user_message_and_can_be_cleared() {
    let f = Fixture::default();
    f.say("crab", "u", "c1", Role::User, "the deploy pipeline broke");
    f.index
        .set_summary(conv("crab", "u", "c2"), Some("the deploy pipeline broke"));
    let hits = f.search("crab", "pipeline");
    assert_eq!(hits[0].field, Field::Summary);
    assert_eq!(hits[0].conversation, "c2");
    assert!(
        close(hits[0].score, 2.0 * hits[1].score),
        "3.0 vs 1.5: {hits:?}"
    );
    f.index.set_summary(conv("crab", "u", "c2"), None);
    let hits = f.search("crab", "pipeline");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].conversation, "c1");
}

#[test]
fn message_roles_are_weighted_user_tool_assistant() {
    let f = Fixture::default();
    let text = "flaky integration test";
    f.say("crab", "u", "assistant", Role::Assistant, text);
    f.say("crab", "u", "call", Role::ToolCall, text);
    f.say("crab", "u", "result", Role::ToolResult, text);
    f.say("crab", "u", "user", Role::User, text);
    let hits = f.search("crab", "flaky");
    let order: Vec<&str> = hits.iter().map(|h| h.conversation.as_str()).collect();
    assert_eq!(order, ["user", "call", "result", "assistant"]);
    let base = hits[3].score;
    for (hit, weight) in hits.iter().zip([1.5, 1.3, 1.3, 1.0]) {
        assert!(close(hit.score, weight * base), "{hit:?}");
        assert_eq!(hit.field.weight(), weight);
    }
}

#[test]
fn tool_names_are_searchable_and_shown() {
    let f = Fixture::default();
    f.say_tool(
        "crab",
        "u",
        "c",
        Role::ToolCall,
        "{\"cmd\": \"ls\"}",
        Some("bash"),
    );
    let hits = f.search("crab", "bash");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].window[0].tool_name.as_deref(), Some("bash"));
}

#[test]
fn weights_apply_before_the_cut() {
    let f = Fixture::default();
    // Raw BM25 favours the short assistant message over the longer title...
    f.say("crab", "u", "c1", Role::Assistant, "alpha");
    f.index
        .set_title(conv("crab", "u", "c2"), "alpha beta gamma");
    let all = f.search("crab", "alpha");
    let raw = |h: &SessionHit| h.score / h.field.weight();
    let assistant = all.iter().find(|h| h.conversation == "c1").unwrap();
    let title = all.iter().find(|h| h.conversation == "c2").unwrap();
    assert!(raw(assistant) > raw(title), "premise: {all:?}");
    // ...but with weights applied before taking the top one, the title wins.
    let top = f.search_with(SearchQuery {
        agent: "crab",
        sender: None,
        query: "alpha",
        context_before: 0,
        context_after: 0,
        limit: 1,
    });
    assert_eq!(top.len(), 1);
    assert_eq!(top[0].field, Field::Title);
}

#[test]
fn windows_are_bounded_in_items_bytes_and_char_boundaries() {
    let f = Fixture::default();
    let filler = "€".repeat(600); // 1800 bytes, 3-byte chars
    for i in 0..40 {
        let text = if i == 20 {
            format!("{filler} needle")
        } else {
            format!("{i} {filler}")
        };
        f.say("crab", "u", "long", Role::User, &text);
    }
    let hits = f.search_with(SearchQuery {
        agent: "crab",
        sender: None,
        query: "needle",
        context_before: 100,
        context_after: 100,
        limit: 20,
    });
    assert_eq!(hits.len(), 1);
    let window = &hits[0].window;
    assert_eq!(window.len(), MAX_WINDOW_ITEMS);
    let indices: Vec<u32> = window.iter().map(|w| w.msg_idx.unwrap()).collect();
    assert!(indices.windows(2).all(|p| p[1] == p[0] + 1), "{indices:?}");
    assert!(indices.contains(&20));
    for item in window {
        assert!(item.snippet.len() <= MAX_SNIPPET_BYTES);
        assert!(item.truncated);
        // Cut on a char boundary: whole '€'s plus the ASCII parts.
        assert!(item.snippet.chars().all(|c| c == '€' || c.is_ascii()));
    }
    let anchor = window.iter().find(|w| w.msg_idx == Some(20)).unwrap();
    assert!(anchor.snippet.contains("needle"), "the match is shown");
}

#[test]
fn windows_follow_the_requested_context_and_stop_at_the_ends() {
    let f = Fixture::default();
    for i in 0..10 {
        let text = if i == 1 {
            "target here".to_owned()
        } else {
            format!("message {i}")
        };
        f.say("crab", "u", "c", Role::User, &text);
    }
    let query = |before, after| SearchQuery {
        agent: "crab",
        sender: None,
        query: "target",
        context_before: before,
        context_after: after,
        limit: 20,
    };
    let idx = |hits: &[SessionHit]| -> Vec<u32> {
        hits[0].window.iter().map(|w| w.msg_idx.unwrap()).collect()
    };
    assert_eq!(idx(&f.search_with(query(4, 2))), [0, 1, 2, 3]);
    assert_eq!(idx(&f.search_with(query(0, 0))), [1]);
    assert_eq!(
        idx(&f.search_with(query(1, 100))),
        (0..10).collect::<Vec<_>>()
    );
    let short = &f.search_with(query(0, 0))[0].window[0];
    assert_eq!(
        (short.snippet.as_str(), short.truncated),
        ("target here", false)
    );
}

#[test]
fn another_agents_conversations_are_never_returned() {
    let f = Fixture::default();
    f.say(
        "crab",
        "u",
        "crab-1",
        Role::User,
        "the launch codes are 1234",
    );
    f.say(
        "fish",
        "u",
        "fish-1",
        Role::User,
        "the launch codes are 9999",
    );
    f.index
        .set_title(conv("fish", "u", "fish-2"), "launch codes");
    let hits = f.search("crab", "launch codes");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].conversation, "crab-1");
    assert!(f.search("nobody", "launch").is_empty());
    assert!(
        f.search("fish", "launch")
            .iter()
            .all(|h| h.conversation.starts_with("fish"))
    );
}

#[test]
fn the_sender_filter_keeps_one_senders_conversations() {
    let f = Fixture::default();
    f.say("crab", "alice", "a", Role::User, "budget report");
    f.say("crab", "bob", "b", Role::User, "budget report draft");
    f.index.set_title(conv("crab", "bob", "b"), "budget");
    let only_alice = f.search_with(SearchQuery {
        agent: "crab",
        sender: Some("alice"),
        query: "budget",
        context_before: 0,
        context_after: 0,
        limit: 20,
    });
    assert_eq!(only_alice.len(), 1);
    assert_eq!(
        (
            only_alice[0].sender.as_str(),
            only_alice[0].conversation.as_str()
        ),
        ("alice", "a")
    );
    assert_eq!(f.search("crab", "budget").len(), 3);
}

#[test]
fn hits_are_capped_at_twenty() {
    let f = Fixture::default();
    for i in 0..50 {
        f.say("crab", "u", &format!("c{i}"), Role::User, "common words");
    }
    let with_limit = |limit| {
        f.search_with(SearchQuery {
            agent: "crab",
            sender: None,
            query: "common",
            context_before: 4,
            context_after: 4,
            limit,
        })
        .len()
    };
    assert_eq!(with_limit(100), MAX_HITS);
    assert_eq!(with_limit(0), MAX_HITS);
    assert_eq!(with_limit(5), 5);
    // Equal scores come back in indexing order.
    let hits = f.search("crab", "common");
    assert_eq!(hits[0].conversation, "c0");
    assert_eq!(hits[19].conversation, "c19");
}

#[test]
fn re_adding_a_message_replaces_it_and_removal_forgets_a_conversation() {
    let f = Fixture::default();
    let c = conv("crab", "u", "c");
    f.index.add_message(c, 0, Role::User, "old words", None);
    f.index.add_message(c, 0, Role::User, "new words", None);
    f.logs.push("crab", "c", Role::User, "new words", None);
    assert!(f.search("crab", "old").is_empty());
    assert_eq!(f.search("crab", "new").len(), 1);
    assert_eq!(f.index.stats().messages, 1);
    f.index.set_title(c, "title words");
    assert!(f.index.remove_conversation("crab", "c"));
    assert!(!f.index.remove_conversation("crab", "c"));
    assert!(f.search("crab", "words").is_empty());
    assert_eq!(f.index.stats().conversations, 0);
}

#[test]
fn a_failing_source_names_the_conversation() {
    let index = SessionIndex::new();
    index.add_message(
        conv("crab", "u", "lost"),
        0,
        Role::User,
        "orphan text",
        None,
    );
    let err = index
        .search(
            &SearchQuery {
                agent: "crab",
                sender: None,
                query: "orphan",
                context_before: 0,
                context_after: 0,
                limit: 5,
            },
            &Logs::default(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("\"lost\""), "{err}");
}

#[test]
fn a_rebuild_swaps_in_without_losing_live_appends() {
    let f = Arc::new(Fixture::default());
    // The live index holds something storage no longer has: the rebuild must
    // drop it.
    f.index.add_message(
        conv("crab", "u", "stale"),
        0,
        Role::User,
        "stale ghost",
        None,
    );
    // Storage: 200 old messages.
    for i in 0..200 {
        f.logs.push(
            "crab",
            &format!("old{}", i % 10),
            Role::User,
            &format!("archived item{i}"),
            None,
        );
    }
    let rebuild = f.index.start_rebuild();
    assert!(f.index.rebuilding());
    // Fill the rebuild on another thread from a snapshot of storage while
    // live appends keep arriving here.
    let snapshot: Vec<((String, String), Vec<SourceMessage>)> = f
        .logs
        .convs
        .lock()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let filler = std::thread::spawn(move || {
        let mut rebuild = rebuild;
        for ((agent, id), messages) in snapshot {
            for m in messages {
                rebuild.add_message(conv(&agent, "u", &id), m.msg_idx, m.role, &m.text, None);
            }
        }
        rebuild
    });
    for i in 0..50 {
        f.say("crab", "u", "live", Role::User, &format!("fresh entry{i}"));
    }
    // A live append to a conversation the rebuild also read: indexed twice,
    // counted once.
    f.say("crab", "u", "old3", Role::User, "fresh entry50");
    let rebuild = filler.join().unwrap();
    // Live appends were searchable during the rebuild.
    assert_eq!(f.search("crab", "entry49").len(), 1);
    let stats = rebuild.finish().unwrap();
    assert!(!f.index.rebuilding());
    assert_eq!(stats.messages, 200 + 51);
    for i in [0, 123, 199] {
        assert_eq!(
            f.search("crab", &format!("item{i}")).len(),
            1,
            "old item{i}"
        );
    }
    for i in 0..=50 {
        assert_eq!(
            f.search("crab", &format!("entry{i}")).len(),
            1,
            "live entry{i}"
        );
    }
    assert!(
        f.search("crab", "ghost").is_empty(),
        "the old index was replaced"
    );
}

#[test]
fn a_newer_rebuild_supersedes_and_an_abandoned_one_stops_logging() {
    let index = SessionIndex::new();
    let first = index.start_rebuild();
    let second = index.start_rebuild();
    assert_eq!(first.finish().unwrap_err(), RebuildError::Superseded);
    assert!(index.rebuilding(), "the newer rebuild still runs");
    drop(second);
    assert!(!index.rebuilding());
    index.add_message(conv("crab", "u", "c"), 0, Role::User, "kept", None);
    assert_eq!(index.stats().messages, 1);
}

// ---- rebuild equivalence, for random histories ----

mod rebuild_property {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    const WORDS: [&str; 4] = ["red", "green", "blue", "cyan"];

    #[derive(Debug, Clone)]
    enum Event {
        Message(u8, u32, String),
        Title(u8, String),
        Summary(u8, Option<String>),
        Remove(u8),
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(&WORDS[..]), 1..4)
            .prop_map(|w| w.join(" "))
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            6 => (0u8..4, 0u32..3, text()).prop_map(|(c, i, t)| Event::Message(c, i, t)),
            1 => (0u8..4, text()).prop_map(|(c, t)| Event::Title(c, t)),
            1 => (0u8..4, proptest::option::of(text())).prop_map(|(c, t)| Event::Summary(c, t)),
            1 => (0u8..4).prop_map(Event::Remove),
        ]
    }

    fn ids(c: u8) -> (String, &'static str) {
        (
            format!("c{c}"),
            if c.is_multiple_of(2) { "even" } else { "odd" },
        )
    }

    fn apply_live(index: &SessionIndex, event: &Event) {
        match event {
            Event::Message(c, i, t) => {
                let (id, sender) = ids(*c);
                index.add_message(conv("crab", sender, &id), *i, Role::User, t, None);
            }
            Event::Title(c, t) => {
                let (id, sender) = ids(*c);
                index.set_title(conv("crab", sender, &id), t);
            }
            Event::Summary(c, t) => {
                let (id, sender) = ids(*c);
                index.set_summary(conv("crab", sender, &id), t.as_deref());
            }
            Event::Remove(c) => {
                index.remove_conversation("crab", &ids(*c).0);
            }
        }
    }

    /// What storage holds: per conversation, messages, title, summary.
    type Stored = BTreeMap<u8, (BTreeMap<u32, String>, Option<String>, Option<String>)>;

    fn store(stored: &mut Stored, event: &Event) {
        match event {
            Event::Message(c, i, t) => {
                stored.entry(*c).or_default().0.insert(*i, t.clone());
            }
            Event::Title(c, t) => stored.entry(*c).or_default().1 = Some(t.clone()),
            Event::Summary(c, t) => stored.entry(*c).or_default().2 = t.clone(),
            Event::Remove(c) => {
                stored.remove(c);
            }
        }
    }

    /// Hits as comparable rows, ignoring slot order among equal scores.
    fn rows(index: &SessionIndex, word: &str) -> Vec<(String, Option<u32>, String, f64)> {
        let mut rows: Vec<_> = index
            .search(
                &SearchQuery {
                    agent: "crab",
                    sender: None,
                    query: word,
                    context_before: 0,
                    context_after: 0,
                    limit: 20,
                },
                &Everything,
            )
            .unwrap()
            .into_iter()
            .map(|h| (h.conversation, h.msg_idx, format!("{:?}", h.field), h.score))
            .collect();
        rows.sort_by(|a, b| (&a.0, a.1, &a.2).cmp(&(&b.0, b.1, &b.2)));
        rows
    }

    /// A source that has every message (the windows are not under test).
    struct Everything;

    impl MessageSource for Everything {
        fn read(&self, _: &str, _: &str, range: Range<u32>) -> std::io::Result<Vec<SourceMessage>> {
            Ok(range
                .map(|msg_idx| SourceMessage {
                    msg_idx,
                    role: Role::User,
                    text: String::new(),
                    tool_name: None,
                })
                .collect())
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Whenever during a rebuild storage is read, and whatever live
        /// changes come before and after that read, the swapped-in index
        /// answers exactly like an index that saw every change live.
        #[test]
        fn a_rebuild_equals_the_live_index(
            before in proptest::collection::vec(event(), 0..20),
            during in proptest::collection::vec(event(), 0..20),
            read_at in 0usize..20,
        ) {
            let read_at = read_at.min(during.len());
            let reference = SessionIndex::new();
            for e in before.iter().chain(&during) {
                apply_live(&reference, e);
            }

            let subject = SessionIndex::new();
            let mut stored = Stored::new();
            for e in &before {
                apply_live(&subject, e);
                store(&mut stored, e);
            }
            let mut rebuild = subject.start_rebuild();
            for e in &during[..read_at] {
                apply_live(&subject, e);
                store(&mut stored, e);
            }
            // The rebuild reads storage as it is now.
            for (c, (messages, title, summary)) in &stored {
                let (id, sender) = ids(*c);
                let conv = conv("crab", sender, &id);
                for (i, t) in messages {
                    rebuild.add_message(conv, *i, Role::User, t, None);
                }
                if let Some(t) = title {
                    rebuild.set_title(conv, t);
                }
                rebuild.set_summary(conv, summary.as_deref());
            }
            for e in &during[read_at..] {
                apply_live(&subject, e);
            }
            rebuild.finish().unwrap();

            prop_assert_eq!(subject.stats(), reference.stats());
            for word in WORDS {
                let got = rows(&subject, word);
                let want = rows(&reference, word);
                prop_assert_eq!(got.len(), want.len(), "{}", word);
                for (g, w) in got.iter().zip(&want) {
                    prop_assert_eq!((&g.0, g.1, &g.2), (&w.0, w.1, &w.2));
                    prop_assert!((g.3 - w.3).abs() < 1e-9, "{:?} vs {:?}", g, w);
                }
            }
        }
    }
}
