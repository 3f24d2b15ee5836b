//! The outside world of a crabtalk family, on 127.0.0.1, for trying the
//! family by hand: a scripted model (OpenAI-compatible), a fake Telegram
//! Bot API with one allowed user (Alice, id 111), and two search engines
//! answering from crabtalk-search's test fixtures (Wikipedia's API and
//! DuckDuckGo's HTML page).
//!
//! ```text
//! cargo run -p crabtalk-fake-bot-api --example world -- /tmp/world.env
//! ```
//!
//! It writes the addresses to the given file (`LLM_URL=…`, `BOT_API_URL=…`,
//! `ENGINES_URL=…`) and then reads commands on stdin:
//!
//! - `llm text <text>`: the model's next answer is `<text>`;
//! - `llm tool <name> <json>`: its next answer calls `<name>` with `<json>`;
//! - `tg <text>`: Alice writes `<text>` to the bot;
//! - `chat`: what the bot sent Alice so far (the HTML Telegram got);
//! - `quit`.
//!
//! When nothing is scripted the model answers `(nothing scripted)`.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use crabtalk_fake_bot_api::{FakeBotApi, TgUser};
use crabtalk_testkit::{Reply, ScriptedLlm, ToolCall};

#[tokio::main]
async fn main() {
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("world.env"));
    let llm = ScriptedLlm::start().await;
    llm.set_default(Reply::text("(nothing scripted)"));
    let api = FakeBotApi::start().await;
    let engines = crabtalk_testkit::fixture_engines().await;
    let env = format!(
        "LLM_URL={}\nBOT_API_URL={}\nENGINES_URL={engines}\n",
        llm.base_url(),
        api.url()
    );
    std::fs::write(&out, &env).unwrap();
    print!("{env}");
    let alice = TgUser::new(111, "Alice");
    let (lines_tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut calls = 0;
    while let Some(line) = lines.recv().await {
        let line = line.trim();
        let (command, rest) = line.split_once(' ').unwrap_or((line, ""));
        match command {
            "llm" => {
                let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
                match kind {
                    "text" => llm.push(Reply::text(rest)),
                    "tool" => {
                        let (name, json) = rest.split_once(' ').unwrap_or((rest, "{}"));
                        calls += 1;
                        let arguments = serde_json::from_str(json).unwrap_or_default();
                        llm.push(Reply::tools(vec![ToolCall::new(
                            &format!("call-{calls}"),
                            name,
                            arguments,
                        )]));
                    }
                    other => println!("llm text <text> | llm tool <name> <json>, not {other:?}"),
                }
            }
            "tg" => {
                api.text(&alice, rest);
            }
            "chat" => {
                for message in api.messages(alice.id) {
                    println!(
                        "--- message {}\n{}",
                        message.id,
                        message.html.as_deref().unwrap_or(&message.text)
                    );
                }
            }
            "quit" => break,
            "" => {}
            other => println!("unknown command {other:?}: llm, tg, chat, quit"),
        }
        let _ = std::io::stdout().flush();
    }
}
