//! The MCP tools the service offers agents (`cron__cron_add` and so on, as
//! the daemon names them).
//!
//! An entry an agent makes speaks, unless told otherwise, in the
//! conversation that asked: the daemon puts the calling conversation in
//! each call's `_meta` (`ai.crabtalk/agent`, `ai.crabtalk/sender`,
//! `ai.crabtalk/origin`, and `ai.crabtalk/trigger` for turns a component
//! started; RFC 0005). An entry made from a Telegram conversation (`tg:…`)
//! delivers its replies to that chat unless `deliver` says otherwise. A
//! call from a turn that cron itself started is
//! refused, so schedules cannot replicate themselves even if a daemon
//! offered the tools to such a turn.

use std::sync::Arc;

use crabtalk_kit::tool_call::{call_arguments, call_meta, tool_arguments, tool_result};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::admin::{Admin, AdminError, Caller, EntryFields};
use crate::config::Deliver;
use crate::engine::{Clock, EngineHandle};

/// `_meta` key: the calling conversation's agent.
pub const META_AGENT: &str = "ai.crabtalk/agent";
/// `_meta` key: the calling conversation's sender.
pub const META_SENDER: &str = "ai.crabtalk/sender";
/// `_meta` key: the sender that began the turn's chain.
pub const META_ORIGIN: &str = "ai.crabtalk/origin";
/// `_meta` key: the component that started the chain (`cron`, `telegram`).
pub const META_TRIGGER: &str = "ai.crabtalk/trigger";
/// `_meta` key: the gateway sender behind the chain, for a gateway chain.
pub const META_GATEWAY: &str = "ai.crabtalk/gateway";

/// The tools, shared by every MCP session.
#[derive(Clone)]
pub struct CronTools {
    admin: Arc<Admin>,
    engine: EngineHandle,
    clock: Arc<dyn Clock>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct IdArgs {
    /// The entry's id.
    id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// The entry's id.
    id: String,
    /// Wait for the run to end and answer with its record (default: answer
    /// once it has started).
    #[serde(default)]
    wait: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunsArgs {
    /// Only this entry's runs.
    #[serde(default)]
    id: Option<String>,
    /// How many of the newest records (default 20).
    #[serde(default)]
    n: Option<usize>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

fn schema<T: schemars::JsonSchema>() -> Arc<serde_json::Map<String, Value>> {
    let schema = schemars::schema_for!(T);
    match serde_json::to_value(schema) {
        Ok(Value::Object(map)) => Arc::new(map),
        _ => Arc::new(serde_json::Map::new()),
    }
}

/// The tool list. Every tool has a title and says what it may do: a host
/// that offers them (`crabtalkd mcp`) asks its user before the ones that
/// change things.
pub fn tool_list() -> Vec<Tool> {
    vec![
        Tool::new(
            "cron_add",
            "Schedule a skill or a message. Give exactly one of `cron` (crontab: \"0 9 * * 1-5\"), `at` (one time), `every` (\"15m\") or `in` (once, this long from now: \"20m\" — prefer it to computing times yourself). By default it speaks in this conversation. The answer shows the next slots in local time and UTC: check them.",
            schema::<EntryFields>(),
        ).with_title("Schedule a message or skill")
        .with_annotations(
            ToolAnnotations::with_title("Schedule a message or skill")
                .read_only(false)
                .destructive(false)
                .idempotent(false)
                .open_world(false),
        ),
        Tool::new(
            "cron_list",
            "List scheduled entries with their next slots, health and last error.",
            schema::<NoArgs>(),
        ).with_title("List scheduled entries")
        .with_annotations(
            ToolAnnotations::with_title("List scheduled entries")
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        ),
        Tool::new(
            "cron_update",
            "Change fields of the entry `id` (an empty string resets a field to its default). Setting one of cron/at/every/in replaces the schedule.",
            schema::<EntryFields>(),
        ).with_title("Change a scheduled entry")
        .with_annotations(
            ToolAnnotations::with_title("Change a scheduled entry")
                .read_only(false)
                .destructive(true)
                .idempotent(true)
                .open_world(false),
        ),
        Tool::new("cron_remove", "Delete the entry `id`.", schema::<IdArgs>()).with_title("Delete a scheduled entry")
        .with_annotations(
            ToolAnnotations::with_title("Delete a scheduled entry")
                .read_only(false)
                .destructive(true)
                .idempotent(true)
                .open_world(false),
        ),
        Tool::new(
            "cron_pause",
            "Stop the entry `id` from firing until resumed.",
            schema::<IdArgs>(),
        ).with_title("Pause a scheduled entry")
        .with_annotations(
            ToolAnnotations::with_title("Pause a scheduled entry")
                .read_only(false)
                .destructive(true)
                .idempotent(true)
                .open_world(false),
        ),
        Tool::new(
            "cron_resume",
            "Let the paused entry `id` fire again.",
            schema::<IdArgs>(),
        ).with_title("Resume a scheduled entry")
        .with_annotations(
            ToolAnnotations::with_title("Resume a scheduled entry")
                .read_only(false)
                .destructive(true)
                .idempotent(true)
                .open_world(false),
        ),
        Tool::new(
            "cron_run",
            "Run the entry `id` now, outside its schedule.",
            schema::<RunArgs>(),
        ).with_title("Run a scheduled entry now")
        .with_annotations(
            ToolAnnotations::with_title("Run a scheduled entry now")
                .read_only(false)
                .destructive(true)
                .idempotent(false)
                .open_world(true),
        ),
        Tool::new(
            "cron_runs",
            "The newest run records (ok, error, missed, quiet, overlap, unknown), of one entry or all.",
            schema::<RunsArgs>(),
        ).with_title("Show recent scheduled runs")
        .with_annotations(
            ToolAnnotations::with_title("Show recent scheduled runs")
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        ),
    ]
}

impl CronTools {
    pub fn new(admin: Arc<Admin>, engine: EngineHandle, clock: Arc<dyn Clock>) -> Self {
        Self {
            admin,
            engine,
            clock,
        }
    }

    async fn call(
        &self,
        name: &str,
        arguments: Value,
        meta: &serde_json::Map<String, Value>,
    ) -> Result<Value, String> {
        let now = self.clock.now();
        let text = |key: &str| {
            meta.get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let caller = Caller {
            agent: text(META_AGENT),
            sender: text(META_SENDER),
            gateway: text(META_GATEWAY),
        };
        match name {
            "cron_add" => {
                if text(META_TRIGGER).as_deref() == Some("cron") {
                    return Err("turns started by cron cannot create schedules (no self-replicating schedules)".into());
                }
                let mut fields: EntryFields = tool_arguments(arguments)?;
                if fields.deliver.is_none() {
                    fields.deliver = telegram_default(&fields, &caller);
                }
                let view = self.admin.add(&fields, &caller, now).map_err(message)?;
                self.engine.reload().await;
                Ok(json!({ "added": view }))
            }
            "cron_list" => {
                let _: NoArgs = tool_arguments(arguments)?;
                Ok(json!({ "entries": self.admin.list(&caller, now).map_err(message)? }))
            }
            "cron_update" => {
                let fields: EntryFields = tool_arguments(arguments)?;
                let id = fields
                    .id
                    .clone()
                    .ok_or("give the `id` of the entry to update")?;
                let view = self
                    .admin
                    .update(&id, &fields, &caller, now)
                    .map_err(message)?;
                self.engine.reload().await;
                Ok(json!({ "updated": view }))
            }
            "cron_remove" => {
                let IdArgs { id } = tool_arguments(arguments)?;
                self.admin.remove(&id, &caller).map_err(message)?;
                self.engine.reload().await;
                Ok(json!({ "removed": id }))
            }
            "cron_pause" | "cron_resume" => {
                let IdArgs { id } = tool_arguments(arguments)?;
                let view = self
                    .admin
                    .set_enabled(&id, name == "cron_resume", &caller, now)
                    .map_err(message)?;
                self.engine.reload().await;
                Ok(json!({ "entry": view }))
            }
            "cron_run" => {
                let RunArgs { id, wait } = tool_arguments(arguments)?;
                self.admin.check_touch(&id, &caller).map_err(message)?;
                if wait {
                    let record = self.engine.run_now_and_wait(&id).await?;
                    Ok(json!({ "run": record }))
                } else {
                    let started = self.engine.run_now(&id).await?;
                    Ok(json!({ "started": id, "scheduled": started }))
                }
            }
            "cron_runs" => {
                let RunsArgs { id, n } = tool_arguments(arguments)?;
                let runs = self
                    .admin
                    .runs(id.as_deref(), n.unwrap_or(20), &caller)
                    .map_err(message)?;
                Ok(json!({ "runs": runs }))
            }
            other => Err(format!(
                "no tool `{other}`; the tools are cron_add, cron_list, cron_update, cron_remove, cron_pause, cron_resume, cron_run, cron_runs"
            )),
        }
    }
}

/// An entry made from a Telegram conversation delivers its replies there
/// unless `deliver` says otherwise: to the chat of the entry's sender when
/// that is a `tg:` conversation, else to the calling chat. Through the
/// run id the gateway sends each reply once, and the run log records the
/// delivery with its message ids.
fn telegram_default(fields: &EntryFields, caller: &Caller) -> Option<String> {
    let of = |sender: &Option<String>| {
        sender
            .as_deref()
            .and_then(Deliver::of_telegram_sender)
            .map(|d| d.to_text())
    };
    of(&fields.sender).or_else(|| of(&caller.sender))
}

fn message(err: AdminError) -> String {
    err.to_string()
}

impl ServerHandler for CronTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "crabtalk's scheduler: run skills or messages on a schedule (crontab, one time, interval or `in`). Entries speak in the calling conversation unless agent/sender say otherwise.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let meta = call_meta(&request, &context);
        let answer = self
            .call(&request.name, call_arguments(&request), &meta)
            .await;
        Ok(tool_result(answer).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hosts that ask before a tool that acts read these hints.
    #[test]
    fn every_tool_has_a_title_and_says_what_it_may_do() {
        let hints = |name: &str| {
            let tool = tool_list()
                .into_iter()
                .find(|tool| tool.name == name)
                .unwrap_or_else(|| panic!("no tool {name}"));
            assert!(tool.title.is_some(), "{name} has no title");
            let a = tool
                .annotations
                .unwrap_or_else(|| panic!("{name} has no hints"));
            assert!(a.title.is_some() && a.idempotent_hint.is_some(), "{name}");
            (
                a.read_only_hint.expect("readOnlyHint"),
                a.destructive_hint.expect("destructiveHint"),
                a.open_world_hint.expect("openWorldHint"),
            )
        };
        for tool in tool_list() {
            hints(&tool.name);
        }
        assert_eq!(hints("cron_list"), (true, false, false));
        assert_eq!(hints("cron_add"), (false, false, false));
        assert_eq!(hints("cron_remove"), (false, true, false));
        assert_eq!(hints("cron_run"), (false, true, true));
    }

    #[test]
    fn entries_from_telegram_conversations_deliver_there() {
        let caller = |sender: &str| Caller {
            agent: Some("crab".into()),
            sender: Some(sender.into()),
            gateway: None,
        };
        let fields = |sender: Option<&str>| EntryFields {
            sender: sender.map(str::to_owned),
            ..Default::default()
        };
        assert_eq!(
            telegram_default(&fields(None), &caller("tg:42")).as_deref(),
            Some("telegram:42")
        );
        assert_eq!(
            telegram_default(&fields(None), &caller("tg:-100123:7")).as_deref(),
            Some("telegram:-100123:7")
        );
        assert_eq!(
            telegram_default(&fields(Some("tg:99")), &caller("tg:42")).as_deref(),
            Some("telegram:99")
        );
        assert_eq!(
            telegram_default(&fields(Some("cron")), &caller("tg:42")).as_deref(),
            Some("telegram:42")
        );
        assert_eq!(telegram_default(&fields(None), &caller("user")), None);
    }
}
