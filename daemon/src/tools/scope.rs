//! What an agent may use (RFC 0004): allow-lists, never deny-lists.
//!
//! - `tools` non-empty: exactly those tools (plus `skill` when the agent has
//!   a skills list, and `delegate`, which is never scoped).
//! - `tools` empty but `skills` non-empty: the computed list — the base tools
//!   (`bash`, `ask_user`, `read`, `edit`), the memory tools when memory is
//!   on, `skill`, `delegate`, and the tools of the MCP servers the agent
//!   declared (named `server__tool`).
//! - both empty: everything.
//!
//! Skills: an empty list allows every skill.

use crate::config::agent::AgentDef;

/// Tools every scoped agent keeps.
pub(crate) const BASE_TOOLS: [&str; 4] = ["bash", "ask_user", "read", "edit"];

/// Tools that come with memory.
pub(crate) const MEMORY_TOOLS: [&str; 4] = ["remember", "forget", "recall", "search_sessions"];

/// Delegation is not scoped: any agent may hand work to any other.
pub(crate) const UNSCOPED_TOOLS: [&str; 1] = ["delegate"];

/// An agent's scope.
pub(crate) struct Scope<'a> {
    agent: &'a AgentDef,
}

impl<'a> Scope<'a> {
    pub(crate) fn of(agent: &'a AgentDef) -> Self {
        Self { agent }
    }

    fn tools(&self) -> &[String] {
        &self.agent.config.tools
    }

    fn skills(&self) -> &[String] {
        &self.agent.config.skills
    }

    /// Whether the agent's tools are restricted at all.
    pub(crate) fn is_restricted(&self) -> bool {
        !self.tools().is_empty() || !self.skills().is_empty()
    }

    pub(crate) fn allows_tool(&self, tool: &str) -> bool {
        if UNSCOPED_TOOLS.contains(&tool) {
            return true;
        }
        if !self.tools().is_empty() {
            return self.tools().iter().any(|allowed| allowed == tool)
                || (tool == "skill" && !self.skills().is_empty());
        }
        if !self.skills().is_empty() {
            let memory = self.agent.config.memory.enabled && MEMORY_TOOLS.contains(&tool);
            let mcp = tool.split_once("__").is_some_and(|(server, _)| {
                self.agent.config.mcps.iter().any(|mcp| mcp.name == server)
            });
            return BASE_TOOLS.contains(&tool) || memory || mcp || tool == "skill";
        }
        true
    }

    pub(crate) fn allows_skill(&self, skill: &str) -> bool {
        self.skills().is_empty() || self.skills().iter().any(|allowed| allowed == skill)
    }

    /// The `<scope>` block for the system prompt, when the agent is scoped.
    /// `offered` is the tool list the agent actually gets.
    pub(crate) fn block(&self, offered: &[String]) -> Option<String> {
        if !self.is_restricted() {
            return None;
        }
        let mut block = String::from("<scope>\n");
        block.push_str(&format!("tools: {}\n", offered.join(", ")));
        if !self.skills().is_empty() {
            block.push_str(&format!("skills: {}\n", self.skills().join(", ")));
        }
        block.push_str(
            "</scope>\nOnly these are available to you; calls to anything else are refused.",
        );
        Some(block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::agent::{AgentConfig, McpServerConfig};

    fn agent(tools: &[&str], skills: &[&str]) -> AgentDef {
        AgentDef {
            name: "a".into(),
            config: AgentConfig {
                tools: tools.iter().map(|t| t.to_string()).collect(),
                skills: skills.iter().map(|s| s.to_string()).collect(),
                mcps: vec![McpServerConfig {
                    name: "gh".into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
            prompt: String::new(),
        }
    }

    #[test]
    fn unscoped_agents_may_use_everything() {
        let a = agent(&[], &[]);
        let scope = Scope::of(&a);
        assert!(
            scope.allows_tool("bash") && scope.allows_tool("anything") && scope.allows_skill("x")
        );
        assert!(scope.block(&[]).is_none());
    }

    #[test]
    fn a_tool_list_is_exact_and_delegate_is_always_there() {
        let a = agent(&["read"], &[]);
        let scope = Scope::of(&a);
        assert!(scope.allows_tool("read") && scope.allows_tool("delegate"));
        assert!(!scope.allows_tool("bash") && !scope.allows_tool("skill"));
    }

    #[test]
    fn a_skill_list_computes_the_tool_list() {
        let a = agent(&[], &["summarize"]);
        let scope = Scope::of(&a);
        for tool in [
            "bash",
            "ask_user",
            "read",
            "edit",
            "recall",
            "skill",
            "delegate",
            "gh__search",
        ] {
            assert!(scope.allows_tool(tool), "{tool}");
        }
        assert!(!scope.allows_tool("other__search") && !scope.allows_tool("web_fetch"));
        assert!(scope.allows_skill("summarize") && !scope.allows_skill("haiku"));
        let block = scope.block(&["read".into(), "skill".into()]).unwrap();
        assert!(
            block.contains("tools: read, skill") && block.contains("skills: summarize"),
            "{block}"
        );
    }
}
