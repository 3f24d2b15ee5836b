//! MCP messages the family reads itself (the rest is rmcp's): a
//! `tools/call` whose arguments arrive as a JSON string (the kit fixes it
//! before rmcp sees it), and the lines a stdio MCP server writes, which
//! pass the daemon's guard against oversized replies.
//!
//! Oracles for string arguments: no panic; a request that is fixed is JSON
//! whose arguments are the object the string held — read back exactly as
//! the string itself reads, numbers to the last bit — and everything else
//! in it is unchanged; fixing twice changes nothing more.
//!
//! For the stdio guard (the first byte picks a small line limit): every
//! line within the limit passes byte for byte, in order; an oversized line
//! is dropped, and when it is a reply — JSON with a top-level `id` that is
//! a string or a number and no top-level `method`, as serde_json reads it
//! — the call it answers gets a JSON-RPC error with that same id, and
//! nothing else is answered. (A line that is not JSON may be answered or
//! not: a reply cut short still names its call.)

use crabtalk_kit::tool_server::fix_string_arguments;
use serde_json::Value;

use crate::runtime;

pub fn mcp_arguments(data: &[u8]) {
    let Some(fixed) = fix_string_arguments(data) else {
        return;
    };
    let before: Value = serde_json::from_slice(data).expect("a fixed request was JSON");
    let mut after: Value = serde_json::from_slice(&fixed).expect("the fixed request is JSON");
    let held: Value = serde_json::from_str(
        before["params"]["arguments"]
            .as_str()
            .expect("only string arguments are fixed"),
    )
    .expect("the string held JSON");
    assert!(after["params"]["arguments"].is_object());
    assert_eq!(after["params"]["arguments"], held, "the arguments changed");
    after["params"]["arguments"] = before["params"]["arguments"].clone();
    assert_eq!(after, before, "something besides the arguments changed");
    assert!(fix_string_arguments(&fixed).is_none(), "fixed twice");
}

pub fn mcp_stdio_reply(data: &[u8]) {
    let Some((&pick, stream)) = data.split_first() else {
        return;
    };
    let limit = 8 + usize::from(pick);
    let out = guard(stream, limit);

    // Walk the input and the output together.
    let mut at = 0;
    for line in stream.split_inclusive(|&b| b == b'\n') {
        let complete = line.ends_with(b"\n");
        if line.len() <= limit {
            // Passed byte for byte (an unfinished last line too).
            let passed = out.get(at..at + line.len());
            assert_eq!(
                passed.map(String::from_utf8_lossy),
                Some(String::from_utf8_lossy(line)),
                "a line within the limit ({limit}) did not pass as it was"
            );
            at += line.len();
            continue;
        }
        if !complete {
            break;
        }
        // What the guard makes of this line alone is what it made of it
        // in the stream (nothing carries over from one line to the next);
        // two oversized lines of one length cannot be told apart in the
        // stream's output otherwise.
        let alone = guard(line, limit);
        assert_eq!(
            out.get(at..at + alone.len()).map(String::from_utf8_lossy),
            Some(String::from_utf8_lossy(&alone)),
            "an oversized line was answered otherwise in the stream than alone"
        );
        at += alone.len();
        let answered = replacement(&alone, line.len() - 1);
        assert!(
            alone.is_empty()
                || answered
                    .as_ref()
                    .is_some_and(|(_, len)| *len == alone.len()),
            "an oversized line became something else than one answer: {:?}",
            String::from_utf8_lossy(&alone)
        );
        match (reply_id(line), answered) {
            (Verdict::Reply(id), Some((answer, _))) => {
                assert_eq!(answer, id, "the answer is for another call");
            }
            (Verdict::Reply(id), None) => panic!("the oversized reply to {id} got no answer"),
            (Verdict::NotReply, Some((answer, _))) => {
                panic!("an oversized line that answers nothing was answered as {answer}")
            }
            (Verdict::NotReply, None) | (Verdict::Either, _) => {}
        }
    }
    assert_eq!(at, out.len(), "the guard wrote more than it was given");
}

/// The guard's output for `stream`, with a line limit of `limit` bytes.
fn guard(stream: &[u8], limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    runtime().block_on(crabtalkd::fuzzing::guard_replies(stream, &mut out, limit));
    out
}

/// What the guard must do with an oversized line.
enum Verdict {
    /// Answer the call with this id.
    Reply(Value),
    /// Drop it: a request or notification, or no usable id.
    NotReply,
    /// Either: the line is not JSON (cut short, say), names `id` twice, or
    /// its id is longer than the guard looks at.
    Either,
}

/// The verdict on an oversized line, as serde_json reads it.
fn reply_id(line: &[u8]) -> Verdict {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Verdict::Either;
    };
    let Some(object) = value.as_object() else {
        return Verdict::NotReply;
    };
    if line.windows(4).filter(|w| w == b"\"id\"").count() > 1 {
        return Verdict::Either;
    }
    if object.contains_key("method") {
        return Verdict::NotReply;
    }
    match object.get("id") {
        Some(id) if id.to_string().len() > 200 => Verdict::Either,
        Some(id) if id.is_string() || id.is_number() => Verdict::Reply(id.clone()),
        _ => Verdict::NotReply,
    }
}

/// The guard's answer to an oversized line of `len` bytes (newline not
/// counted) at the start of `out`: its id and its length with the newline.
fn replacement(out: &[u8], len: usize) -> Option<(Value, usize)> {
    let end = out.iter().position(|&b| b == b'\n')?;
    let answer: Value = serde_json::from_slice(&out[..end]).ok()?;
    let message = answer["error"]["message"].as_str()?;
    message
        .starts_with(&format!("reply too large ({len} bytes"))
        .then(|| (answer["id"].clone(), end + 1))
}
