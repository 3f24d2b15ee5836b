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

use crabtalk_kit::tool_server::{
    Hints, Input, OnCancel, ToolCall, ToolError, ToolServer, ToolSpec,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::admin::{Admin, AdminError, Caller, EntryFields};
use crate::config::Deliver;
use crate::engine::{Clock, EngineHandle};

/// `_meta` key: the calling conversation's agent.
pub(crate) const META_AGENT: &str = "ai.crabtalk/agent";
/// `_meta` key: the calling conversation's sender.
pub(crate) const META_SENDER: &str = "ai.crabtalk/sender";
/// `_meta` key: the component that started the chain (`cron`, `telegram`).
pub(crate) const META_TRIGGER: &str = "ai.crabtalk/trigger";
/// `_meta` key: the gateway sender behind the chain, for a gateway chain.
pub(crate) const META_GATEWAY: &str = "ai.crabtalk/gateway";

/// What the tools share: the entries, the engine that runs them, the time.
pub(crate) struct CronTools {
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

/// Each tool's hints. Changing an entry is destructive (it is not only
/// added to); the entries are cron's own world, except a run, whose turn
/// may do anything its agent can.
const ADDS: Hints = Hints {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: false,
};
const READS: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};
const CHANGES: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: true,
    open_world: false,
};
const RUNS: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

/// The tools, served as one MCP server. A call its client cancels runs to
/// its end: an entry is written to the file and then the engine told, and
/// a run once started is the engine's.
pub(crate) fn server(admin: Arc<Admin>, engine: EngineHandle, clock: Arc<dyn Clock>) -> ToolServer {
    let spec = |name, title, description, input, hints| ToolSpec {
        name,
        title,
        description,
        input,
        hints,
        on_cancel: OnCancel::Finish,
    };
    ToolServer::builder(crabtalk_kit::this_program!(), CronTools { admin, engine, clock })
        .instructions("crabtalk's scheduler: run skills or messages on a schedule (crontab, one time, interval or `in`). Entries speak in the calling conversation unless agent/sender say otherwise.")
        .tool(
            spec(
                "cron_add",
                "Schedule a message or skill",
                "Schedule a skill or a message. Give exactly one of `cron` (crontab: \"0 9 * * 1-5\"), `at` (one time), `every` (\"15m\") or `in` (once, this long from now: \"20m\" — prefer it to computing times yourself). By default it speaks in this conversation. The answer shows the next slots in local time and UTC: check them.",
                Input::of::<EntryFields>(),
                ADDS,
            ),
            CronTools::add,
        )
        .tool(
            spec(
                "cron_list",
                "List scheduled entries",
                "List scheduled entries with their next slots, health and last error.",
                Input::of::<NoArgs>(),
                READS,
            ),
            CronTools::list,
        )
        .tool(
            spec(
                "cron_update",
                "Change a scheduled entry",
                "Change fields of the entry `id` (an empty string resets a field to its default). Setting one of cron/at/every/in replaces the schedule.",
                Input::of::<EntryFields>(),
                CHANGES,
            ),
            CronTools::update,
        )
        .tool(
            spec(
                "cron_remove",
                "Delete a scheduled entry",
                "Delete the entry `id`.",
                Input::of::<IdArgs>(),
                CHANGES,
            ),
            CronTools::remove,
        )
        .tool(
            spec(
                "cron_pause",
                "Pause a scheduled entry",
                "Stop the entry `id` from firing until resumed.",
                Input::of::<IdArgs>(),
                CHANGES,
            ),
            CronTools::pause,
        )
        .tool(
            spec(
                "cron_resume",
                "Resume a scheduled entry",
                "Let the paused entry `id` fire again.",
                Input::of::<IdArgs>(),
                CHANGES,
            ),
            CronTools::resume,
        )
        .tool(
            spec(
                "cron_run",
                "Run a scheduled entry now",
                "Run the entry `id` now, outside its schedule.",
                Input::of::<RunArgs>(),
                RUNS,
            ),
            CronTools::run,
        )
        .tool(
            spec(
                "cron_runs",
                "Show recent scheduled runs",
                "The newest run records (ok, error, missed, quiet, overlap, unknown), of one entry or all.",
                Input::of::<RunsArgs>(),
                READS,
            ),
            CronTools::runs,
        )
        .build()
}

/// Who called, from the call's `_meta`.
fn caller(call: &ToolCall) -> Caller {
    let text = |key| call.meta_text(key).map(str::to_owned);
    Caller {
        agent: text(META_AGENT),
        sender: text(META_SENDER),
        gateway: text(META_GATEWAY),
    }
}

impl CronTools {
    async fn add(self: Arc<Self>, call: ToolCall) -> Result<Value, ToolError> {
        if call.meta_text(META_TRIGGER) == Some("cron") {
            return Err(ToolError::failed(
                "turns started by cron cannot create schedules (no self-replicating schedules)",
            ));
        }
        let caller = caller(&call);
        let mut fields: EntryFields = call.read()?;
        if fields.deliver.is_none() {
            fields.deliver = telegram_default(&fields, &caller);
        }
        let view = self
            .admin
            .add(&fields, &caller, self.clock.now())
            .map_err(refused)?;
        self.engine.reload().await;
        Ok(json!({ "added": view }))
    }

    async fn list(self: Arc<Self>, call: ToolCall) -> Result<Value, ToolError> {
        let _: NoArgs = call.read()?;
        let entries = self
            .admin
            .list(&caller(&call), self.clock.now())
            .map_err(refused)?;
        Ok(json!({ "entries": entries }))
    }

    async fn update(self: Arc<Self>, call: ToolCall) -> Result<Value, ToolError> {
        let fields: EntryFields = call.read()?;
        let id = fields
            .id
            .clone()
            .ok_or_else(|| ToolError::arguments("give the `id` of the entry to update"))?;
        let view = self
            .admin
            .update(&id, &fields, &caller(&call), self.clock.now())
            .map_err(refused)?;
        self.engine.reload().await;
        Ok(json!({ "updated": view }))
    }

    async fn remove(self: Arc<Self>, call: ToolCall) -> Result<Value, ToolError> {
        let IdArgs { id } = call.read()?;
        self.admin.remove(&id, &caller(&call)).map_err(refused)?;
        self.engine.reload().await;
        Ok(json!({ "removed": id }))
    }

    async fn pause(self: Arc<Self>, call: ToolCall) -> Result<Value, ToolError> {
        self.set_enabled(call, false).await
    }

    async fn resume(self: Arc<Self>, call: ToolCall) -> Result<Value, ToolError> {
        self.set_enabled(call, true).await
    }

    async fn set_enabled(&self, call: ToolCall, enabled: bool) -> Result<Value, ToolError> {
        let IdArgs { id } = call.read()?;
        let view = self
            .admin
            .set_enabled(&id, enabled, &caller(&call), self.clock.now())
            .map_err(refused)?;
        self.engine.reload().await;
        Ok(json!({ "entry": view }))
    }

    async fn run(self: Arc<Self>, call: ToolCall) -> Result<Value, ToolError> {
        let RunArgs { id, wait } = call.read()?;
        self.admin
            .check_touch(&id, &caller(&call))
            .map_err(refused)?;
        if wait {
            let record = self
                .engine
                .run_now_and_wait(&id)
                .await
                .map_err(ToolError::failed)?;
            Ok(json!({ "run": record }))
        } else {
            let started = self.engine.run_now(&id).await.map_err(ToolError::failed)?;
            Ok(json!({ "started": id, "scheduled": started }))
        }
    }

    async fn runs(self: Arc<Self>, call: ToolCall) -> Result<Value, ToolError> {
        let RunsArgs { id, n } = call.read()?;
        let runs = self
            .admin
            .runs(id.as_deref(), n.unwrap_or(20), &caller(&call))
            .map_err(refused)?;
        Ok(json!({ "runs": runs }))
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

/// The entries' refusal as the tools' error: fields that do not make an
/// entry are the call's arguments; the rest (no such entry, not the
/// caller's, the file unwritable) is the tool failing.
fn refused(err: AdminError) -> ToolError {
    match err {
        AdminError::Invalid(_) => ToolError::arguments(err),
        _ => ToolError::failed(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
