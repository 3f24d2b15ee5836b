//! Tools: what an agent can do besides talk.
//!
//! Built on the tool contract in [`crate::hook`]; nothing here names the
//! runtime. Each subsystem is a [`Hook`] that owns some tools: it declares their
//! schemas and dispatches calls to them. [`Tools`] composes the hooks and is
//! the one place where a call is checked before it is routed: against the
//! agent's scope ([`scope`]) and against the gateway rule ([`gateway`]) —
//! the model being told what it may use is a courtesy, this check is the
//! rule. A call nobody owns, or one the gate refuses, becomes an error
//! result the model can read; it never fails the turn.

mod ask_user;
pub(crate) mod bash;
pub(crate) mod delegate;
mod edit;
pub(crate) mod files;
pub(crate) mod gateway;
mod mcp;
mod memory;
mod read;
pub(crate) mod scope;
mod search_sessions;
mod skill;

use std::collections::BTreeMap;
use std::sync::Arc;

pub(crate) use self::ask_user::AskUserHook;
pub(crate) use self::bash::BashHook;
pub(crate) use self::delegate::DelegateHook;
pub(crate) use self::edit::EditHook;
use self::gateway::GatewayPolicy;
pub(crate) use self::mcp::McpHook;
pub(crate) use self::memory::MemoryHook;
pub(crate) use self::read::ReadHook;
use self::scope::Scope;
pub(crate) use self::search_sessions::SessionSearchHook;
pub(crate) use self::skill::SkillHook;
use crate::config::agent::AgentDef;
use crate::hook::{Chain, Hook, PromptContext, ToolContext, ToolFuture, ToolOutput, ToolSpec};
use crate::memories::Memories;
use crate::sessions::SessionSearch;
use crate::storage::ToolCallRecord;

/// Tool output longer than this is cut (with a marker) before the model
/// sees it.
pub(crate) const MAX_TOOL_OUTPUT: usize = 256 * 1024;

/// How the daemon's tools are set up: what the hooks are given once, when
/// the tools are built (at start and on every reload).
pub(crate) struct ToolSettings {
    /// The daemon's home: `read` and `edit` never touch what it keeps there.
    pub home: crabtalk_home::Home,
    pub gateway: GatewayPolicy,
    pub skill_dirs: crate::skills::SkillDirs,
    pub mcp: Arc<crate::mcp::McpHub>,
    /// Every agent's memory (the runtime's, shared).
    pub memories: Arc<Memories>,
    /// Session search over every stored conversation (the runtime's, shared).
    pub sessions: SessionSearch,
    pub max_delegation_depth: u32,
    pub max_delegated_tasks: usize,
}

/// The composite of every hook, and the gate in front of them.
#[derive(Clone, Default)]
pub(crate) struct Tools {
    hooks: Vec<Arc<dyn Hook>>,
    gateway: GatewayPolicy,
}

impl Tools {
    pub(crate) fn new(hooks: Vec<Arc<dyn Hook>>) -> Self {
        Self {
            hooks,
            gateway: GatewayPolicy::default(),
        }
    }

    /// These tools, with `policy` as the gateway rule.
    pub(crate) fn with_gateway(mut self, policy: GatewayPolicy) -> Self {
        self.gateway = policy;
        self
    }

    /// The daemon's standard set of hooks.
    pub(crate) fn standard(settings: &ToolSettings) -> Self {
        let files = files::HomeGuard::new(&settings.home);
        Self::new(vec![
            Arc::new(BashHook),
            Arc::new(ReadHook::new(files.clone())),
            Arc::new(EditHook::new(files)),
            Arc::new(AskUserHook),
            Arc::new(SkillHook::new(settings.skill_dirs.clone())),
            Arc::new(DelegateHook::new(
                settings.max_delegation_depth,
                settings.max_delegated_tasks,
            )),
            Arc::new(McpHook::new(settings.mcp.clone())),
            Arc::new(MemoryHook::new(settings.memories.clone())),
            Arc::new(SessionSearchHook::new(settings.sessions.clone())),
        ])
        .with_gateway(settings.gateway.clone())
    }

    /// Whether `agent`'s scope lets it call `tool`.
    pub(crate) fn in_scope(agent: &AgentDef, tool: &str) -> bool {
        Scope::of(agent).allows_tool(tool)
    }

    /// Whether the gate lets `agent` call `tool` in a turn of `chain`:
    /// in scope, and not denied to the chain's gateway sender.
    fn passes_gate(&self, agent: &AgentDef, chain: &Chain, tool: &str) -> bool {
        Self::in_scope(agent, tool)
            && (!self.is_gateway_chain(chain) || self.gateway.allows(agent, tool))
    }

    /// Every hook's [`Hook::stamp`] for `agent`, in order: with the
    /// snapshot, the agent and the chain, what the tools offered depend on.
    pub(crate) fn stamps(&self, agent: &AgentDef) -> Vec<u64> {
        self.hooks.iter().map(|hook| hook.stamp(agent)).collect()
    }

    /// Whether a turn of `chain` is under the gateway rule.
    pub(crate) fn is_gateway_chain(&self, chain: &Chain) -> bool {
        self.gateway.gateway_of(&chain.origin, chain).is_some()
    }

    /// The tools offered to `agent` in a turn of `chain`: owned by a hook
    /// that offers them, and let through by the gate.
    pub(crate) fn specs_for(&self, agent: &AgentDef, chain: &Chain) -> Vec<ToolSpec> {
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
    pub(crate) fn system_prompts(
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
        // Only a scoped agent's prompt lists its tools: the list costs a
        // copy of every tool's schema, on every model call.
        let scope = Scope::of(agent);
        if scope.is_restricted() {
            let offered: Vec<String> = self
                .specs_for(agent, chain)
                .into_iter()
                .map(|spec| spec.name)
                .collect();
            fragments.extend(scope.block(&offered));
        }
        fragments
    }

    /// A user message after every hook's rewriting.
    pub(crate) fn preprocess(&self, agent: &AgentDef, content: &str) -> String {
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
    pub(crate) fn dispatch(&self, call: &ToolCallRecord, mut context: ToolContext) -> ToolFuture {
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
        // A tool that was there (a component that stopped) is explained,
        // with how to bring it back, rather than said not to exist.
        if let Some(message) = self
            .hooks
            .iter()
            .find_map(|hook| hook.unavailable(&agent, &context.chain, &call.name))
        {
            return Box::pin(std::future::ready(ToolOutput::error(message)));
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
}
