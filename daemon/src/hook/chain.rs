//! Where a turn comes from: the chain of turns it belongs to.
//!
//! Turns start other turns. `delegate` starts one per task, and the end of
//! every turn fires the subscriptions on its `agent:<name>:done` event. A
//! turn started that way runs under a sender of the daemon's own
//! (`delegate:17`, `event:agent:a:done`), which says nothing about who set
//! the whole thing going. The [`Chain`] travels with each turn to the turns
//! it starts, so that limits meant for the beginning of a chain hold at
//! every link of it:
//!
//! ```text
//! tg:42 → crab ──delegate──▶ worker (delegate:17) ──done──▶ b (event:agent:worker:done)
//! origin  tg:42              tg:42                          tg:42
//! depth   0                  1                              0
//! hops    0                  0                              1
//! ```
//!
//! - `origin` keeps a gateway user (`tg:42`) from reaching `bash` through
//!   another agent.
//! - `depth` bounds nested delegation; it lives with the turn, so nothing a
//!   reload rebuilds can forget it.
//! - `hops` bounds event firings; a delegated turn keeps its parent's count,
//!   so a cycle that passes through `delegate` still reaches the limit.
//! - `trigger` names the component that started the chain on the origin's
//!   behalf (`cron`, `telegram`; the client's `trigger` field). No turn of
//!   the chain is offered that component's own MCP tools, so a scheduled
//!   turn cannot schedule more of itself.

/// A turn's place in the chain of turns that led to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chain {
    /// The sender whose message began the chain: a client's user, a gateway
    /// user (`tg:42`), or an external event (`event:<source>`).
    pub origin: String,
    /// How many delegations separate this turn from the origin's turn.
    pub depth: u32,
    /// How many event firings led to this turn.
    pub hops: u32,
    /// The component that started the chain, if one did.
    pub trigger: Option<String>,
}

impl Chain {
    /// A chain begun by a message from `sender`.
    pub(crate) fn begun_by(sender: &str) -> Self {
        Self {
            origin: sender.to_owned(),
            depth: 0,
            hops: 0,
            trigger: None,
        }
    }

    /// This chain, started by the component `trigger` (blank: by nobody in
    /// particular).
    pub(crate) fn triggered_by(mut self, trigger: Option<&str>) -> Self {
        self.trigger = trigger
            .map(str::trim)
            .filter(|trigger| !trigger.is_empty())
            .map(str::to_owned);
        self
    }

    /// The chain of a task this turn delegates: one level deeper.
    pub(crate) fn delegated(&self) -> Self {
        Self {
            origin: self.origin.clone(),
            depth: self.depth + 1,
            hops: self.hops,
            trigger: self.trigger.clone(),
        }
    }

    /// The chain of a turn fired by this turn's done-event: one hop further.
    /// Nobody waits for a fired turn, so it is not nested: depth starts over.
    pub(crate) fn fired(&self) -> Self {
        Self {
            origin: self.origin.clone(),
            depth: 0,
            hops: self.hops + 1,
            trigger: self.trigger.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origin_survives_delegation_and_events() {
        let chain = Chain::begun_by("tg:42").delegated().fired().delegated();
        assert_eq!(
            chain,
            Chain {
                origin: "tg:42".into(),
                depth: 1,
                hops: 1,
                trigger: None,
            }
        );
    }

    #[test]
    fn the_trigger_travels_with_the_chain() {
        let chain = Chain::begun_by("tg:42")
            .triggered_by(Some("cron"))
            .delegated()
            .fired();
        assert_eq!(chain.trigger.as_deref(), Some("cron"));
        assert_eq!(Chain::begun_by("u").triggered_by(Some("  ")).trigger, None);
    }

    #[test]
    fn delegation_keeps_the_hop_count_and_events_keep_counting() {
        let chain = Chain::begun_by("user").fired().delegated().fired();
        assert_eq!((chain.depth, chain.hops), (0, 2));
    }
}
