//! Tools: what an agent can do besides talk.
//!
//! Each subsystem is a [`Hook`] that owns some tools: it declares their
//! schemas and dispatches calls to them. [`Tools`] composes the hooks and is
//! the one place where a call is checked before it is routed: against the
//! agent's scope ([`scope`]) and against the gateway rule ([`gateway`]) —
//! the model being told what it may use is a courtesy, this check is the
//! rule. A call nobody owns, or one the gate refuses, becomes an error
//! result the model can read; it never fails the turn.

mod ask_user;
pub mod bash;
pub mod delegate;
mod edit;
pub mod files;
pub mod gateway;
mod mcp;
mod memory;
mod read;
pub mod scope;
mod search_sessions;
mod skill;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

pub use self::ask_user::AskUserHook;
pub use self::bash::BashHook;
pub use self::delegate::DelegateHook;
pub use self::edit::EditHook;
use self::gateway::GatewayPolicy;
pub use self::mcp::McpHook;
pub use self::memory::MemoryHook;
pub use self::read::ReadHook;
use self::scope::Scope;
pub use self::search_sessions::SessionSearchHook;
pub use self::skill::SkillHook;
use crate::config::agent::AgentDef;
use crate::runtime::chain::Chain;
use crate::runtime::conversation::Conversation;
use crate::runtime::events::TurnSink;
use crate::storage::ToolCallRecord;

/// Tool output longer than this is cut (with a marker) before the model
/// sees it.
pub const MAX_TOOL_OUTPUT: usize = 256 * 1024;

/// A tool's schema, as offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// What a tool returns. The model sees `text` either way; `is_error` lets
/// clients style failures and agents decide to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
        }
    }
}

/// Everything a tool call may need to know about where it runs.
#[derive(Clone)]
pub struct ToolContext {
    pub agent: Arc<AgentDef>,
    pub sender: String,
    /// The chain of turns this one belongs to (who began it, how deep).
    pub chain: Chain,
    /// The effective working directory of this turn.
    pub cwd: PathBuf,
    pub conversation: Arc<Conversation>,
    pub sink: TurnSink,
    /// How long `ask_user` waits.
    pub ask_timeout: Duration,
    /// The gateway sender whose chain this is, if any. Set by the gate in
    /// [`Tools::dispatch`] (whatever the caller put here), so that hooks
    /// read one answer to "is this a gateway conversation".
    pub gateway: Option<String>,
}

/// A running tool call.
pub type ToolFuture = Pin<Box<dyn Future<Output = ToolOutput> + Send>>;

/// What a hook may look at when it contributes to a system prompt.
pub struct PromptContext<'a> {
    pub agent: &'a AgentDef,
    /// Every agent, for hooks that point to the others (delegation).
    pub agents: &'a BTreeMap<String, Arc<AgentDef>>,
}

/// How the daemon's tools are set up.
pub struct ToolSettings {
    /// The daemon's home: `read` and `edit` never touch what it keeps there.
    pub home: crabtalk_home::Home,
    pub gateway: GatewayPolicy,
    pub skill_dirs: crate::skills::SkillDirs,
    pub mcp: Arc<crate::mcp::McpHub>,
    pub max_delegation_depth: u32,
    pub max_delegated_tasks: usize,
}

/// A subsystem that owns tools.
pub trait Hook: Send + Sync {
    /// The tools this hook owns.
    fn tools(&self) -> Vec<ToolSpec>;

    /// The tools this hook offers `agent` in a turn of `chain`: by default
    /// those of [`Hook::tools`] that [`Hook::offers`] lets through. Hooks
    /// whose tools depend on the agent or the chain (MCP servers) answer
    /// directly.
    fn tools_for(&self, agent: &AgentDef, chain: &Chain) -> Vec<ToolSpec> {
        let _ = chain;
        self.tools()
            .into_iter()
            .filter(|spec| self.offers(agent, &spec.name))
            .collect()
    }

    /// Whether this hook offers `tool` to `agent` at all (for example, memory
    /// tools only where memory is enabled).
    fn offers(&self, agent: &AgentDef, tool: &str) -> bool {
        let _ = (agent, tool);
        true
    }

    /// A fragment for the agent's system prompt.
    fn system_prompt(&self, context: &PromptContext<'_>) -> Option<String> {
        let _ = context;
        None
    }

    /// Rewrites a user message before it enters the history; `None` leaves
    /// it as it is.
    fn preprocess(&self, agent: &AgentDef, content: &str) -> Option<String> {
        let _ = (agent, content);
        None
    }

    /// Starts `call` if this hook owns its tool.
    fn dispatch(&self, call: &ToolCallRecord, context: ToolContext) -> Option<ToolFuture>;
}

/// The composite of every hook, and the gate in front of them.
#[derive(Clone, Default)]
pub struct Tools {
    hooks: Vec<Arc<dyn Hook>>,
    gateway: GatewayPolicy,
}

impl Tools {
    pub fn new(hooks: Vec<Arc<dyn Hook>>) -> Self {
        Self {
            hooks,
            gateway: GatewayPolicy::default(),
        }
    }

    /// These tools, with `policy` as the gateway rule.
    pub fn with_gateway(mut self, policy: GatewayPolicy) -> Self {
        self.gateway = policy;
        self
    }

    /// The daemon's standard set of hooks.
    pub fn standard(runtime: Weak<crate::runtime::Runtime>, settings: &ToolSettings) -> Self {
        let files = files::HomeGuard::new(&settings.home);
        Self::new(vec![
            Arc::new(BashHook),
            Arc::new(ReadHook::new(files.clone())),
            Arc::new(EditHook::new(files)),
            Arc::new(AskUserHook),
            Arc::new(SkillHook::new(settings.skill_dirs.clone())),
            Arc::new(DelegateHook::new(
                runtime.clone(),
                settings.max_delegation_depth,
                settings.max_delegated_tasks,
            )),
            Arc::new(McpHook::new(settings.mcp.clone())),
            Arc::new(MemoryHook::new(runtime.clone())),
            Arc::new(SessionSearchHook::new(runtime)),
        ])
        .with_gateway(settings.gateway.clone())
    }

    /// Whether `agent`'s scope lets it call `tool`.
    pub fn in_scope(agent: &AgentDef, tool: &str) -> bool {
        Scope::of(agent).allows_tool(tool)
    }

    /// Whether the gate lets `agent` call `tool` in a turn of `chain`:
    /// in scope, and not denied to the chain's gateway sender.
    fn passes_gate(&self, agent: &AgentDef, chain: &Chain, tool: &str) -> bool {
        Self::in_scope(agent, tool)
            && (self.gateway.gateway_of(&chain.origin, chain).is_none()
                || self.gateway.allows(agent, tool))
    }

    /// The tools offered to `agent` in a turn of `chain`: owned by a hook
    /// that offers them, and let through by the gate.
    pub fn specs_for(&self, agent: &AgentDef, chain: &Chain) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        for hook in &self.hooks {
            for spec in hook.tools_for(agent, chain) {
                if self.passes_gate(agent, chain, &spec.name) {
                    specs.push(spec);
                }
            }
        }
        specs
    }

    /// Every hook's system-prompt fragment for `agent`, then the `<scope>`
    /// block if the agent is scoped.
    pub fn system_prompts(
        &self,
        agent: &AgentDef,
        agents: &BTreeMap<String, Arc<AgentDef>>,
        chain: &Chain,
    ) -> Vec<String> {
        let context = PromptContext { agent, agents };
        let mut fragments: Vec<String> = self
            .hooks
            .iter()
            .filter_map(|hook| hook.system_prompt(&context))
            .collect();
        let offered: Vec<String> = self
            .specs_for(agent, chain)
            .into_iter()
            .map(|spec| spec.name)
            .collect();
        fragments.extend(Scope::of(agent).block(&offered));
        fragments
    }

    /// A user message after every hook's rewriting.
    pub fn preprocess(&self, agent: &AgentDef, content: &str) -> String {
        let mut content = content.to_owned();
        for hook in &self.hooks {
            if let Some(rewritten) = hook.preprocess(agent, &content) {
                content = rewritten;
            }
        }
        content
    }

    /// Runs a call: the gate first (scope, then the gateway rule), then
    /// the hook that owns the tool.
    pub fn dispatch(&self, call: &ToolCallRecord, mut context: ToolContext) -> ToolFuture {
        let agent = context.agent.clone();
        context.gateway = self.gateway.gateway_of(&context.sender, &context.chain);
        if !Self::in_scope(&agent, &call.name) {
            let allowed: Vec<String> = self
                .specs_for(&agent, &context.chain)
                .into_iter()
                .map(|spec| spec.name)
                .collect();
            let message = format!(
                "tool {:?} is outside this agent's scope; allowed tools: {}",
                call.name,
                allowed.join(", ")
            );
            return Box::pin(std::future::ready(ToolOutput::error(message)));
        }
        if let Some(gateway) = &context.gateway
            && !self.gateway.allows(&agent, &call.name)
        {
            let message = self.gateway.refusal(&call.name, gateway);
            return Box::pin(std::future::ready(ToolOutput::error(message)));
        }
        for hook in &self.hooks {
            if !hook
                .tools_for(&agent, &context.chain)
                .iter()
                .any(|spec| spec.name == call.name)
            {
                continue;
            }
            if let Some(running) = hook.dispatch(call, context.clone()) {
                return Box::pin(async move { cap_output(running.await) });
            }
        }
        let known: Vec<String> = self
            .specs_for(&agent, &context.chain)
            .into_iter()
            .map(|spec| spec.name)
            .collect();
        let message = format!(
            "there is no tool named {:?}; available tools: {}",
            call.name,
            known.join(", ")
        );
        Box::pin(std::future::ready(ToolOutput::error(message)))
    }
}

/// Cuts an output to [`MAX_TOOL_OUTPUT`] bytes on a char boundary.
fn cap_output(mut output: ToolOutput) -> ToolOutput {
    if output.text.len() > MAX_TOOL_OUTPUT {
        let total = output.text.len();
        let mut cut = MAX_TOOL_OUTPUT;
        while !output.text.is_char_boundary(cut) {
            cut -= 1;
        }
        output.text.truncate(cut);
        output.text.push_str(&format!(
            "\n[output truncated: {total} bytes, first {cut} shown]"
        ));
    }
    output
}

/// Parses a call's JSON arguments into `T`, or an error the model can act on.
pub fn parse_arguments<T: serde::de::DeserializeOwned>(
    call: &ToolCallRecord,
) -> Result<T, ToolOutput> {
    let raw = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        &call.arguments
    };
    serde_json::from_str(raw).map_err(|err| {
        ToolOutput::error(format!(
            "invalid arguments for {}: {err}; arguments were: {raw}",
            call.name
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_is_cut_on_a_char_boundary() {
        let text = "é".repeat(MAX_TOOL_OUTPUT);
        let capped = cap_output(ToolOutput::ok(text));
        assert!(capped.text.contains("[output truncated"));
        assert!(capped.text.len() < MAX_TOOL_OUTPUT + 100);
    }

    #[test]
    fn bad_arguments_name_the_tool() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Args {
            n: u32,
        }
        let call = ToolCallRecord {
            id: "c".into(),
            name: "count".into(),
            arguments: "{\"n\":\"x\"}".into(),
        };
        let err = parse_arguments::<Args>(&call).unwrap_err();
        assert!(err.is_error && err.text.contains("count"), "{}", err.text);
    }
}
