//! The components' tools, offered to the host under their own names.
//!
//! The bridge keeps its own [`McpHub`] of components, fed by the daemon's
//! [`Discovery`](crate::mcp::discovery) of `run/*.port`: each running
//! component is connected with the owner's token (`run/token`), listed,
//! reconnected after a restart, and dropped when its port file goes — as
//! the daemon does for its agents. A component that is not running has no
//! tools here.
//!
//! A tool keeps its component's name for it (`web_search`, `cron_add`).
//! A name taken twice — by one of the bridge's own tools, or by two
//! components — is offered as `component__tool` instead, so nothing hides
//! anything. The tool's title and hints are the component's; what it
//! leaves out is filled with MCP's own defaults written out (not read-only,
//! destructive, open world), so every tool a host sees says what it may do.
//!
//! Calls carry who asked in `_meta`, as the daemon's calls do (RFC 0005):
//! the daemon's default agent and the sender `mcp`, so a cron entry made
//! through the bridge speaks in the agent's `mcp` conversation.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};

use super::DEFAULT_CONVERSATION;
use crate::mcp::caller::Caller;
use crate::mcp::names::qualify_all;
use crate::mcp::{CallError, McpHub, RemoteTool};

/// One component tool as the host sees it.
#[derive(Debug, Clone)]
pub(super) struct Offered {
    /// The name the host calls it by.
    pub(super) name: String,
    pub(super) component: String,
    pub(super) tool: RemoteTool,
}

impl Offered {
    /// The tool's definition for `tools/list`.
    pub(super) fn definition(&self) -> Tool {
        let mut tool = (*self.tool.listed).clone();
        tool.name = self.name.clone().into();
        let title = tool
            .title
            .clone()
            .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()))
            .unwrap_or_else(|| format!("{} ({})", self.tool.name, self.component));
        tool.title = Some(title.clone());
        let given = tool.annotations.take().unwrap_or_default();
        tool.annotations = Some(ToolAnnotations::from_raw(
            Some(given.title.unwrap_or(title)),
            Some(given.read_only_hint.unwrap_or(false)),
            Some(given.destructive_hint.unwrap_or(true)),
            Some(given.idempotent_hint.unwrap_or(false)),
            Some(given.open_world_hint.unwrap_or(true)),
        ));
        let description = tool.description.as_deref().unwrap_or_default().to_owned();
        tool.description = Some(format!("[crabtalk {}] {description}", self.component).into());
        tool
    }
}

/// What the host is offered of `components` (component name → its tools,
/// as [`McpHub::component_tools`] gives them), next to the bridge's own
/// tools `own`.
pub(super) fn offered(components: Vec<(String, Vec<RemoteTool>)>, own: &[&str]) -> Vec<Offered> {
    let mut uses: BTreeMap<String, usize> = BTreeMap::new();
    for (_, tools) in &components {
        for tool in tools {
            *uses.entry(tool.name.clone()).or_default() += 1;
        }
    }
    let mut offered = Vec::new();
    for (component, tools) in components {
        let names: Vec<String> = tools.iter().map(|tool| tool.name.clone()).collect();
        let qualified = qualify_all(&component, &names);
        for (tool, qualified) in tools.into_iter().zip(qualified) {
            let clash = own.contains(&tool.name.as_str()) || uses[&tool.name] > 1;
            offered.push(Offered {
                name: if clash { qualified } else { tool.name.clone() },
                component: component.clone(),
                tool,
            });
        }
    }
    offered.sort_by(|a, b| a.name.cmp(&b.name));
    offered
}

/// The component tools the host is offered now.
pub(super) fn current(hub: &McpHub) -> Vec<Offered> {
    offered(hub.component_tools(), &super::own_tools::NAMES)
}

/// Calls the offered tool `name` for the host; `None` when no component
/// offers it now.
pub(super) async fn call(
    hub: &Arc<McpHub>,
    name: &str,
    arguments: Option<JsonObject>,
    agent: Option<String>,
) -> Option<Result<CallToolResult, CallError>> {
    let offered = current(hub)
        .into_iter()
        .find(|offered| offered.name == name)?;
    let caller = Caller {
        agent: agent.unwrap_or_default(),
        sender: DEFAULT_CONVERSATION.to_owned(),
        origin: DEFAULT_CONVERSATION.to_owned(),
        trigger: None,
        gateway: None,
    };
    let call = hub.call_component(&offered.component, &offered.tool.name, arguments, caller)?;
    Some(call.await)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, annotations: Option<ToolAnnotations>) -> RemoteTool {
        let mut listed = Tool::new(name.to_owned(), "does things", Arc::new(JsonObject::new()));
        listed.annotations = annotations;
        RemoteTool {
            name: name.into(),
            qualified: String::new(),
            description: String::new(),
            schema: serde_json::Value::Null,
            listed: Arc::new(listed),
        }
    }

    #[test]
    fn tools_keep_their_names_unless_a_name_is_taken_twice() {
        let offered = offered(
            vec![
                (
                    "search".into(),
                    vec![tool("web_search", None), tool("recall", None)],
                ),
                (
                    "cron".into(),
                    vec![tool("cron_add", None), tool("status", None)],
                ),
                ("telegram".into(), vec![tool("status", None)]),
            ],
            &["recall", "ask_agent"],
        );
        let names: Vec<(&str, &str)> = offered
            .iter()
            .map(|o| (o.name.as_str(), o.tool.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("cron__status", "status"),
                ("cron_add", "cron_add"),
                ("search__recall", "recall"),
                ("telegram__status", "status"),
                ("web_search", "web_search"),
            ]
        );
    }

    #[test]
    fn every_definition_has_a_title_and_every_hint() {
        let given = ToolAnnotations::with_title("Search the web")
            .read_only(true)
            .open_world(true);
        let offered = offered(
            vec![(
                "search".into(),
                vec![tool("web_search", Some(given)), tool("bare", None)],
            )],
            &[],
        );
        let search = offered[1].definition();
        assert_eq!(search.title.as_deref(), Some("Search the web"));
        let hints = search.annotations.unwrap();
        assert_eq!(
            (
                hints.read_only_hint,
                hints.destructive_hint,
                hints.open_world_hint
            ),
            (Some(true), Some(true), Some(true))
        );
        assert!(search.description.unwrap().starts_with("[crabtalk search]"));
        let bare = offered[0].definition();
        assert_eq!(bare.title.as_deref(), Some("bare (search)"));
        let hints = bare.annotations.unwrap();
        assert_eq!(
            (
                hints.read_only_hint,
                hints.destructive_hint,
                hints.idempotent_hint,
                hints.open_world_hint
            ),
            (Some(false), Some(true), Some(false), Some(true))
        );
    }
}
