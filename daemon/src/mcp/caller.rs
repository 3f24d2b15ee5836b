//! Who called a tool: every `tools/call` the daemon sends carries it in
//! `params._meta`, so that a server (a component such as cron) can act for
//! the conversation that asked.
//!
//! | key | value |
//! |---|---|
//! | `ai.crabtalk/agent` | the calling conversation's agent |
//! | `ai.crabtalk/sender` | the calling conversation's sender (`tg:42`, `user`) |
//! | `ai.crabtalk/origin` | the sender whose message began the chain of turns |
//! | `ai.crabtalk/trigger` | the component that started the chain, when one did |
//! | `ai.crabtalk/gateway` | the gateway sender behind the chain, when it is a gateway chain |
//!
//! `gateway` is how a component tells a call made for someone the daemon's
//! user let in through a gateway (`[gateway] senders`) from one of the
//! user's own: such a call may act only for that sender (cron keeps its
//! entries to their own conversation and runs them under the gateway rule;
//! telegram sends only to that chat).

use rmcp::model::{JsonObject, MetaObject, RequestMetaObject};

pub(crate) const AGENT_KEY: &str = "ai.crabtalk/agent";
pub(crate) const SENDER_KEY: &str = "ai.crabtalk/sender";
pub(crate) const ORIGIN_KEY: &str = "ai.crabtalk/origin";
pub(crate) const TRIGGER_KEY: &str = "ai.crabtalk/trigger";
pub(crate) const GATEWAY_KEY: &str = "ai.crabtalk/gateway";

/// The conversation a tool call comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Caller {
    pub agent: String,
    pub sender: String,
    pub origin: String,
    pub trigger: Option<String>,
    /// The gateway sender behind the chain, if it is a gateway chain.
    pub gateway: Option<String>,
}

impl Caller {
    /// The `_meta` object of a call from this caller.
    pub(crate) fn meta(&self) -> RequestMetaObject {
        let mut object = JsonObject::new();
        object.insert(AGENT_KEY.into(), self.agent.clone().into());
        object.insert(SENDER_KEY.into(), self.sender.clone().into());
        object.insert(ORIGIN_KEY.into(), self.origin.clone().into());
        if let Some(trigger) = &self.trigger {
            object.insert(TRIGGER_KEY.into(), trigger.clone().into());
        }
        if let Some(gateway) = &self.gateway {
            object.insert(GATEWAY_KEY.into(), gateway.clone().into());
        }
        RequestMetaObject(MetaObject(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trigger_is_there_only_when_set() {
        let mut caller = Caller {
            agent: "crab".into(),
            sender: "tg:42".into(),
            origin: "tg:42".into(),
            trigger: None,
            gateway: None,
        };
        let json = serde_json::to_value(caller.meta()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "ai.crabtalk/agent": "crab",
                "ai.crabtalk/sender": "tg:42",
                "ai.crabtalk/origin": "tg:42",
            })
        );
        caller.trigger = Some("cron".into());
        caller.gateway = Some("tg:42".into());
        let json = serde_json::to_value(caller.meta()).unwrap();
        assert_eq!(json["ai.crabtalk/trigger"], "cron");
        assert_eq!(json["ai.crabtalk/gateway"], "tg:42");
    }
}
