//! The Telegram gateway's readers and writers of outside text: a model's
//! Markdown turned into the Bot API's HTML and cut into messages, and the
//! updates the Bot API sends.
//!
//! Oracles for rendering, at Telegram's limit and at a small one the input
//! picks (so that short inputs are cut too):
//!
//! - every part is at most the limit in UTF-16 units;
//! - every part's HTML is what the Bot API accepts (read by the fake Bot API's
//!   reader of Telegram's HTML) and shows exactly the part's text;
//! - no cut falls inside a grapheme cluster (🇩🇪, 👍🏽, 👨‍👩‍👧), unless the
//!   cluster alone is longer than the limit;
//! - the parts' texts, put together, are the document's visible text.
//!
//! For updates: no panic; an update that is read keeps its id, and every
//! entity's text is a piece of the message's text whose UTF-16 length is
//! the entity's, or nothing when the entity points outside it.

use crabtalk_fake_bot_api::html;
use crabtalk_telegram::content;
use crabtalk_telegram::render::{self, LIMIT, Part, Piece};
use crabtalk_telegram::{Message, Update, UpdateKind};
use serde_json::Value;
use unicode_segmentation::UnicodeSegmentation;

pub fn telegram_render(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let pieces = render::pieces(&text);
    check_parts(&pieces, &render::render(&text), LIMIT);
    let small = 2 + usize::from(pick % 64);
    check_parts(&pieces, &render::split(&pieces, small), small);
}

fn check_parts(pieces: &[Piece], parts: &[Part], limit: usize) {
    let visible: String = pieces
        .iter()
        .filter_map(|piece| match piece {
            Piece::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let joined: String = parts.iter().map(|part| part.text.as_str()).collect();
    assert_eq!(joined, visible, "the parts do not add up to the text");
    let mut cut = 0;
    for (n, part) in parts.iter().enumerate() {
        assert!(!part.text.is_empty(), "part {n} is empty");
        let units = render::units(&part.text);
        assert!(
            units <= limit,
            "part {n} has {units} UTF-16 units, over {limit}"
        );
        let parsed = html::parse(&part.html)
            .unwrap_or_else(|err| panic!("part {n} is refused: {err}\n{}", part.html));
        assert_eq!(
            parsed.text, part.text,
            "part {n} shows other text than its own"
        );
        if n > 0 {
            assert_cut_between_clusters(&visible, cut, limit);
        }
        cut += part.text.len();
    }
}

/// `at` is a grapheme cluster boundary of `text`, or inside a cluster too
/// long for any message.
fn assert_cut_between_clusters(text: &str, at: usize, limit: usize) {
    for (start, cluster) in text.grapheme_indices(true) {
        let end = start + cluster.len();
        if start < at && at < end {
            assert!(
                render::units(cluster) > limit,
                "cut at byte {at} inside the cluster {cluster:?} ({} units, limit {limit})",
                render::units(cluster)
            );
            return;
        }
        if start >= at {
            return;
        }
    }
}

pub fn telegram_update(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    match &value {
        Value::Array(updates) => updates.iter().for_each(update),
        _ => update(&value),
    }
}

fn update(value: &Value) {
    let Ok(read) = Update::read(value) else {
        return;
    };
    assert_eq!(Some(read.id), value["update_id"].as_i64(), "the id changed");
    match &read.kind {
        UpdateKind::Message(message) | UpdateKind::Edited(message) => self::message(message),
        UpdateKind::Callback(query) => {
            if let Some(message) = query.regular_message() {
                self::message(message);
            }
        }
        UpdateKind::Other(_) => {}
    }
}

fn message(message: &Message) {
    let text = message.text_or_caption().unwrap_or_default();
    for (entity, piece) in message.entities_with_text() {
        if piece.is_empty() {
            continue;
        }
        let start = piece.as_ptr() as usize - text.as_ptr() as usize;
        assert!(
            start + piece.len() <= text.len(),
            "an entity's text outside the text"
        );
        let before = render::units(&text[..start]);
        assert_eq!(before, entity.offset, "an entity's text starts elsewhere");
        assert_eq!(
            render::units(piece),
            entity.length,
            "an entity's text is cut"
        );
    }
    let _ = message.from.as_ref().map(|user| user.full_name());
    let _ = (message.topic(), message.chat.is_private());
    let _ = (
        content::attachment(message),
        content::described(message),
        content::is_service(message),
        content::unreadable(message),
    );
    if let Some(reply) = &message.reply_to_message {
        self::message(reply);
    }
}
