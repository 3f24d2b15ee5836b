//! A turn of the agent, streamed into the chat.
//!
//! [`start`] sends the message to the daemon (`StreamMsg` with the trigger
//! `telegram`) and returns once it is sent, so the poller may record the
//! update as handled (a refusal arrives as the stream's first frame and is
//! told to the chat); the rest runs in its own task: `typing` every 4 s, text into a
//! [`LiveReply`], tool calls as status lines (the web tools' answers
//! summarised under theirs: titles, links, engines; a page's title and
//! length), thinking left out, questions handed to [`ask`](super::ask),
//! errors in words.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crabtalk_kit::tool_view::{self, ToolView};
use crabtalk_proto::msg::{StreamEvent, StreamMsg, stream_event::Event};
use crabtalk_proto::{ClientError, ReplyStream};
use futures::StreamExt;

use super::{Conversation, Gateway, TRIGGER, error_words};
use crate::config::ToolStatus;
use crate::outbox::LiveReply;

/// How often "typing…" is sent while a turn runs (Telegram shows it 5 s);
/// a beat is skipped when the global limit has no room (replies first).
pub(crate) const TYPING_EVERY: Duration = Duration::from_secs(4);

/// Starts a turn with `content` in `conversation`.
pub(crate) async fn start(gateway: &Arc<Gateway>, conversation: Conversation, content: String) {
    let address = conversation.address;
    let client = match tokio::time::timeout(Duration::from_secs(3), gateway.daemon.client()).await {
        Ok(Ok(client)) => client,
        _ => {
            tracing::warn!(chat = %address, "the daemon is not reachable; the message was not passed on");
            let _ = gateway
                .outbox
                .prepared(
                    address,
                    "⚠️ The agent is not reachable right now (crabtalkd is not running), so your message did not reach it. Send it again in a moment.",
                    None,
                );
            return;
        }
    };
    // A reply of this conversation that never reached the chat: the agent
    // hears of it with the next message.
    let content = match gateway.outbox.undelivered_note(address) {
        Some(note) => format!("{note}\n\n{content}"),
        None => content,
    };
    let request = StreamMsg {
        agent: conversation.agent.clone(),
        content,
        sender: Some(conversation.sender()),
        trigger: Some(TRIGGER.into()),
        ..Default::default()
    };
    // Sent: the daemon has the message (a turn already running in this
    // conversation makes it wait its turn there, so its `StreamStart` may
    // come much later; the stream is read in its own task).
    let stream = match client.stream(request).await {
        Ok(stream) => stream,
        Err(err) => return refused(gateway, &conversation, &err),
    };
    *gateway
        .running
        .lock()
        .entry(conversation.sender())
        .or_default() += 1;
    let gateway = gateway.clone();
    tokio::spawn(async move {
        follow(&gateway, &conversation, stream).await;
        let mut running = gateway.running.lock();
        if let Some(count) = running.get_mut(&conversation.sender()) {
            *count -= 1;
            if *count == 0 {
                running.remove(&conversation.sender());
            }
        }
    });
}

fn refused(gateway: &Gateway, conversation: &Conversation, err: &ClientError) {
    let text = match err {
        ClientError::Server(error) => error_words(&error.message),
        other => error_words(&other.to_string()),
    };
    tracing::warn!(chat = %conversation.address, "the daemon refused a turn: {err}");
    let _ = gateway.outbox.prepared(conversation.address, &text, None);
}

/// Streams the turn into the chat until it ends.
async fn follow(
    gateway: &Arc<Gateway>,
    conversation: &Conversation,
    mut stream: ReplyStream<StreamEvent>,
) {
    let typing = {
        let gateway = gateway.clone();
        let address = conversation.address;
        tokio::spawn(async move {
            loop {
                let to = crate::address::ChatAddress {
                    chat: gateway.chats.current_chat(address.chat),
                    ..address
                };
                if !gateway.outbox.is_paused(to.chat)
                    && let Err(err) = gateway.api.typing(to).await
                {
                    tracing::debug!("typing: {err}");
                }
                tokio::time::sleep(TYPING_EVERY).await;
            }
        })
    };
    let mut turn = TurnView::new(gateway, conversation);
    loop {
        match stream.next().await {
            Some(Ok(event)) => {
                if turn.event(event).await {
                    break;
                }
            }
            Some(Err(err)) if turn.run_id.is_none() => {
                refused(gateway, conversation, &err);
                break;
            }
            Some(Err(err)) => {
                tracing::warn!(chat = %conversation.address, "a turn's stream broke: {err}");
                turn.reply().push_line(&format!(
                    "⚠️ The connection to the agent was lost before the reply ended ({err}). The agent may still finish; its reply is in the conversation."
                ));
                break;
            }
            None => break,
        }
    }
    typing.abort();
    if let Some(reply) = &turn.reply {
        reply.seal();
    }
    gateway
        .asks
        .close_run(gateway, turn.run_id, "(the turn ended)");
}

/// One turn's view in the chat.
struct TurnView<'a> {
    gateway: &'a Arc<Gateway>,
    conversation: &'a Conversation,
    /// The message the turn streams into, made when there is something to
    /// show (a reply waiting for text would hold up the chat's queue).
    reply: Option<Arc<LiveReply>>,
    run_id: Option<u64>,
    /// The tools called so far, by call id (a result names only its call).
    calls: HashMap<String, String>,
}

impl<'a> TurnView<'a> {
    fn new(gateway: &'a Arc<Gateway>, conversation: &'a Conversation) -> Self {
        Self {
            gateway,
            conversation,
            reply: None,
            run_id: None,
            calls: HashMap::new(),
        }
    }

    fn reply(&mut self) -> &Arc<LiveReply> {
        self.reply.get_or_insert_with(|| {
            let reply = self.gateway.outbox.live(self.conversation.address);
            self.gateway.track(&reply);
            reply
        })
    }

    /// Shows one event; whether the turn ended.
    async fn event(&mut self, event: StreamEvent) -> bool {
        let Some(event) = event.event else {
            return false;
        };
        match event {
            Event::Start(start) => self.run_id = Some(start.run_id),
            Event::Chunk(chunk) if !chunk.content.is_empty() => self.reply().push(&chunk.content),
            Event::ToolStart(start) => {
                for call in start.calls.iter().filter(|c| c.name != "ask_user") {
                    self.calls.insert(call.id.clone(), call.name.clone());
                    if let Some(line) =
                        status_line(self.gateway.config.tool_status, &call.name, &call.arguments)
                    {
                        self.reply().push_line(&line);
                    }
                }
            }
            Event::AskUser(ask) => {
                // The question goes below what was said so far; what the
                // agent says after the answer starts a new message.
                if let Some(reply) = self.reply.take() {
                    reply.seal();
                }
                self.gateway.asks.open(
                    self.gateway,
                    self.conversation.clone(),
                    self.run_id,
                    ask.call_id,
                    ask.questions,
                );
            }
            Event::ToolResult(result) => {
                self.gateway
                    .asks
                    .tool_result(self.gateway, &result.call_id, "(no answer in time)");
                if let Some(name) = self.calls.remove(&result.call_id)
                    && !result.is_error
                    && let Some(summary) =
                        result_summary(self.gateway.config.tool_status, &name, &result.output)
                {
                    self.reply().push_line(&summary);
                }
            }
            Event::End(end) => {
                if !end.error.is_empty() {
                    self.reply().push_line(&error_words(&end.error));
                }
                return true;
            }
            // Thinking is not sent; the rest has nothing to show.
            _ => {}
        }
        false
    }
}

/// A tool call's status line, as configured. The name is escaped, so
/// `cron__cron_add` shows as it is, not as Markdown emphasis.
pub(crate) fn status_line(status: ToolStatus, name: &str, arguments: &str) -> Option<String> {
    let name = escape_markdown(name);
    match status {
        ToolStatus::Off => None,
        ToolStatus::Name => Some(format!("🔧 _{name}_")),
        ToolStatus::Detail => {
            let mut args: String = arguments
                .chars()
                .filter(|c| !c.is_control())
                .take(80)
                .collect();
            if arguments.chars().count() > 80 {
                args.push('…');
            }
            Some(format!("🔧 _{name}_ `{}`", args.replace('`', "'")))
        }
    }
}

/// How many results of a search are shown under its status line.
const HITS_SHOWN: usize = 3;

/// A web tool's answer for people (Markdown), under its status line:
/// `↳ 3 results for "rust" (duckduckgo, wikipedia)` and the first hits as
/// links with their engines; a page's title as a link and its length.
/// `None` for other tools, and when tools are not shown.
pub(crate) fn result_summary(status: ToolStatus, name: &str, output: &str) -> Option<String> {
    if status == ToolStatus::Off {
        return None;
    }
    Some(match tool_view::view(name, output)? {
        ToolView::Search(found) => {
            let mut lines = vec![format!("↳ {}", escape_markdown(&found.headline()))];
            for hit in found.hits.iter().take(HITS_SHOWN) {
                let mut line = format!("• {}", link(&hit.title, &hit.url));
                if !hit.engines.is_empty() {
                    line.push_str(&format!(" · {}", escape_markdown(&hit.engines.join(", "))));
                }
                lines.push(line);
            }
            lines.join("\n")
        }
        ToolView::Page(page) => format!(
            "↳ {} — {} characters",
            link(page.title.as_deref().unwrap_or(&page.url), &page.url),
            tool_view::thousands(page.chars)
        ),
    })
}

/// A Markdown link whose text and address stay as they are (a title with
/// brackets, an address with parentheses).
fn link(text: &str, url: &str) -> String {
    let url: String = url.chars().filter(|c| !"<>\n\r".contains(*c)).collect();
    format!("[{}](<{url}>)", escape_markdown(text))
}

/// `text` with every ASCII punctuation character backslash-escaped, so
/// Markdown reads it as plain text.
pub(crate) fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().filter(|c| !c.is_control()) {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_html(markdown: &str) -> String {
        crate::render::render(markdown)
            .into_iter()
            .map(|part| part.html)
            .collect()
    }

    #[test]
    fn tool_names_are_shown_as_they_are_not_as_markdown() {
        let line = status_line(ToolStatus::Name, "cron__cron_add", "{}").unwrap();
        assert_eq!(to_html(&line), "🔧 <i>cron__cron_add</i>");
        let detail = status_line(ToolStatus::Detail, "a_*b*_[c]", r#"{"x":"`y`"}"#).unwrap();
        assert_eq!(
            to_html(&detail),
            "🔧 <i>a_*b*_[c]</i> <code>{\"x\":\"'y'\"}</code>"
        );
    }

    #[test]
    fn web_answers_are_summarised_with_links_and_engines() {
        let answer = r#"{"query":"rust","results":[
            {"title":"Rust (programming language)","url":"https://en.wikipedia.org/wiki/Rust_(programming_language)","snippet":"","score":1,"engines":[{"engine":"wikipedia","rank":1}]},
            {"title":"<b>Rust</b> [home]","url":"https://www.rust-lang.org/","snippet":"","score":1,"engines":[{"engine":"duckduckgo","rank":1},{"engine":"wikipedia","rank":4}]}],
            "engines":[{"engine":"bing","status":"disabled"},{"engine":"duckduckgo","status":"ok"},{"engine":"wikipedia","status":"ok"}],"cached":false}"#;
        let summary = result_summary(ToolStatus::Name, "search__web_search", answer).unwrap();
        assert_eq!(
            to_html(&summary),
            "↳ 2 results for \"rust\" (duckduckgo, wikipedia)\n\
             • <a href=\"https://en.wikipedia.org/wiki/Rust_(programming_language)\">Rust (programming language)</a> · wikipedia\n\
             • <a href=\"https://www.rust-lang.org/\">&lt;b&gt;Rust&lt;/b&gt; [home]</a> · duckduckgo, wikipedia"
        );
        let page = "# The Book\n<https://doc.rust-lang.org/book/> (text/html, HTTP 200)\n\nhello\n";
        assert_eq!(
            to_html(&result_summary(ToolStatus::Detail, "search__web_fetch", page).unwrap()),
            "↳ <a href=\"https://doc.rust-lang.org/book/\">The Book</a> — 5 characters"
        );
        assert_eq!(
            result_summary(ToolStatus::Off, "search__web_fetch", page),
            None
        );
        assert_eq!(result_summary(ToolStatus::Name, "bash", "anything"), None);
    }
}
