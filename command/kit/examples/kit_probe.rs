//! A component built on the kit that exercises all of it, for the kit's
//! tests (and as a second example).
//!
//! `kit_probe run` reads its required `config/probe.toml`
//! (`greeting = "…"`), serves one MCP tool, `greet`, and follows the
//! daemon's events through a [`DaemonLink`](crabtalk_kit::daemon::DaemonLink)
//! — whether the daemon is up yet or not, and across its restarts. It
//! prints one line per thing that happens, for a test to read:
//!
//! ```text
//! subscribed            the event subscription is in place
//! resubscribed          … again, after the daemon came back
//! event <KIND> <agent>  an agent event (TEXT_DELTA, DONE, …)
//! ```
//!
//! ```sh
//! cargo run -p crabtalk-kit --example kit_probe -- run -v
//! ```

use std::io::Write;
use std::process::ExitCode;

use crabtalk_home::Service;
use crabtalk_kit::Component;
use crabtalk_kit::daemon::Followed;
use crabtalk_kit::mcp::mcp_router;
use crabtalk_proto::msg::SubscribeEvents;
use futures::StreamExt;
use rmcp::{tool, tool_router};

/// `config/probe.toml`.
#[derive(Debug, Clone, serde::Deserialize)]
struct ProbeConfig {
    /// What `greet` answers.
    greeting: String,
}

/// The probe's one tool.
#[derive(Clone)]
struct Greeter {
    greeting: String,
}

#[tool_router(server_handler)]
impl Greeter {
    #[tool(description = "Answer with the configured greeting")]
    fn greet(&self) -> String {
        self.greeting.clone()
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Prints what the followed subscription yields until it ends.
async fn print_events(component: Component) {
    let daemon = component.daemon();
    let mut events = daemon.follow(SubscribeEvents {});
    while let Some(item) = events.next().await {
        match item {
            Ok(Followed::Started) => say("subscribed"),
            Ok(Followed::Resumed) => say("resubscribed"),
            Ok(Followed::Item(event)) => say(&format!(
                "event {} {}",
                event.kind().as_str_name(),
                event.agent
            )),
            Err(err) => {
                say(&format!("refused {err}"));
                return;
            }
        }
    }
}

fn main() -> ExitCode {
    let service = Service::new("probe", "kit-probe", "crabtalk kit probe").expect("a valid name");
    crabtalk_kit::main_run(
        service,
        "A crabtalk component exercising the kit (a test and an example)",
        crabtalk_kit::check::required::<ProbeConfig>,
        |component| async move {
            let config: ProbeConfig = component.config()?;
            tokio::spawn(print_events(component.clone()));
            let greeter = Greeter {
                greeting: config.greeting,
            };
            component
                .serve_mcp(mcp_router(move || greeter.clone()))
                .await?;
            Ok(())
        },
    )
}
