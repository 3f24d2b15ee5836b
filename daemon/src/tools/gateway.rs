//! The gateway rule: what a chain of turns begun by a gateway sender may
//! use.
//!
//! A gateway (the Telegram component, say) lets people other than the
//! daemon's user talk to an agent; their senders carry the gateway's prefix
//! (`tg:42`). Which prefixes mark a gateway sender is configuration
//! (`[gateway] senders`, default `["tg:"]`), and so is what their chains
//! may not use (`[gateway] deny_tools`, default `bash`, `read` and `edit`:
//! a shell, and the files of the daemon's user). One agent may still let
//! gateway chains use bash with `[bash] allow_gateway = true`.
//!
//! The rule is applied in one place, the gate in
//! [`Tools`](super::Tools) that also enforces scope: a denied tool is not
//! offered to the model, and a call to it is refused, whatever hook owns
//! it. It holds along the whole [`Chain`]: a task delegated for `tg:42`, or
//! a turn its done-event fires, is a gateway chain too. The gate also tells
//! every hook whose chain it is running ([`ToolContext::gateway`](super::ToolContext::gateway)),
//! which is how `search_sessions` and the memory tools keep a gateway
//! sender to its own conversations and notes.

use crate::config::GatewaySettings;
use crate::config::agent::AgentDef;
use crate::hook::Chain;

/// The gateway rule in force (rebuilt with the tools on every reload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GatewayPolicy {
    senders: Vec<String>,
    deny_tools: Vec<String>,
}

impl Default for GatewayPolicy {
    fn default() -> Self {
        Self::new(&GatewaySettings::default())
    }
}

impl GatewayPolicy {
    pub(crate) fn new(settings: &GatewaySettings) -> Self {
        Self {
            senders: settings
                .senders
                .iter()
                .filter(|prefix| !prefix.is_empty())
                .cloned()
                .collect(),
            deny_tools: settings.deny_tools.clone(),
        }
    }

    /// Whether `sender` came through a gateway (starts with a configured
    /// prefix).
    pub(crate) fn is_gateway_sender(&self, sender: &str) -> bool {
        self.senders
            .iter()
            .any(|prefix| sender.starts_with(prefix.as_str()))
    }

    /// The gateway sender behind a turn of `sender` in `chain`, if any: the
    /// one that began the chain, else the turn's own sender.
    pub(crate) fn gateway_of(&self, sender: &str, chain: &Chain) -> Option<String> {
        [chain.origin.as_str(), sender]
            .into_iter()
            .find(|sender| self.is_gateway_sender(sender))
            .map(str::to_owned)
    }

    /// Whether a gateway chain may use `tool` through `agent`.
    pub(crate) fn allows(&self, agent: &AgentDef, tool: &str) -> bool {
        if tool == "bash" && agent.config.bash.allow_gateway {
            return true;
        }
        !self.deny_tools.iter().any(|denied| matches(denied, tool))
    }

    /// What the model is told when it calls a denied tool.
    pub(crate) fn refusal(&self, tool: &str, gateway: &str) -> String {
        let lift = if tool == "bash" {
            "the agent's config can allow it with [bash] allow_gateway = true".to_owned()
        } else {
            format!(
                "the daemon's owner can lift it by taking {tool:?} out of [gateway] deny_tools in config.toml"
            )
        };
        format!(
            "{tool} is not available here: this turn goes back to a message that came through a \
             gateway (sender {gateway:?}), and gateway conversations may not use {tool}; {lift}"
        )
    }
}

/// Whether a `deny_tools` entry names `tool`: exactly, or by a prefix
/// ending in `*` (`github__*`).
fn matches(entry: &str, tool: &str) -> bool {
    match entry.strip_suffix('*') {
        Some(prefix) => tool.starts_with(prefix),
        None => entry == tool,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::agent::AgentConfig;

    fn agent(allow_gateway: bool) -> AgentDef {
        let mut config = AgentConfig::default();
        config.bash.allow_gateway = allow_gateway;
        AgentDef {
            name: "crab".into(),
            config,
            prompt: String::new(),
        }
    }

    #[test]
    fn gateway_senders_are_the_configured_prefixes() {
        let policy = GatewayPolicy::default();
        assert!(policy.is_gateway_sender("tg:42"));
        for other in [
            "user",
            "cron",
            "delegate:17",
            "event:agent:x:done",
            "",
            "wechat:1",
        ] {
            assert!(!policy.is_gateway_sender(other), "{other}");
        }
        let policy = GatewayPolicy::new(&GatewaySettings {
            senders: vec!["wechat:".into(), "slack:".into()],
            ..GatewaySettings::default()
        });
        assert!(policy.is_gateway_sender("wechat:abc") && policy.is_gateway_sender("slack:T1"));
        assert!(!policy.is_gateway_sender("tg:42"));
    }

    #[test]
    fn the_origin_of_the_chain_counts_as_much_as_the_sender() {
        let policy = GatewayPolicy::default();
        let chain = Chain::begun_by("tg:42").delegated();
        assert_eq!(
            policy.gateway_of("delegate:9", &chain).as_deref(),
            Some("tg:42")
        );
        assert_eq!(policy.gateway_of("user", &Chain::begun_by("user")), None);
    }

    #[test]
    fn bash_read_and_edit_are_denied_by_default_and_bash_can_be_lifted_per_agent() {
        let policy = GatewayPolicy::default();
        for denied in ["bash", "read", "edit"] {
            assert!(!policy.allows(&agent(false), denied), "{denied}");
        }
        for allowed in [
            "recall",
            "search_sessions",
            "ask_user",
            "delegate",
            "github__x",
        ] {
            assert!(policy.allows(&agent(false), allowed), "{allowed}");
        }
        assert!(policy.allows(&agent(true), "bash"));
        assert!(!policy.allows(&agent(true), "read"));
        let policy = GatewayPolicy::new(&GatewaySettings {
            deny_tools: vec!["cron__*".into()],
            ..GatewaySettings::default()
        });
        assert!(!policy.allows(&agent(false), "cron__add"));
        assert!(policy.allows(&agent(false), "read"));
    }
}
