//! Driving turns: starting one on a conversation (its key, its working
//! folder, its place in the queue), killing and steering a running one,
//! and answering the question it asked.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crabtalk_home::Home;
use tokio::task::JoinHandle;

use super::conversation::ConversationKey;
use super::error::Error;
use super::turn::TurnPlan;
use super::turn::{TurnOutcome, TurnRequest};
use super::{DEFAULT_SENDER, Runtime};
use crate::hook::Chain;

impl Runtime {
    /// Starts a turn; its events go to `request.client`, its outcome to the
    /// returned handle. The turn runs to its end even if nobody listens.
    pub(crate) fn start_turn(
        self: &Arc<Self>,
        mut request: TurnRequest,
    ) -> Result<JoinHandle<TurnOutcome>, Error> {
        if self.closing.load(Ordering::Acquire) {
            return Err(Error::unavailable("the daemon is shutting down"));
        }
        let snapshot = self.snapshot();
        if request.agent.is_empty() {
            request.agent = snapshot.config.default_agent.clone();
        }
        if request.sender.is_empty() {
            request.sender = DEFAULT_SENDER.into();
        }
        if request.created_by.is_empty() {
            request.created_by = request.sender.clone();
        }
        if request.content.trim().is_empty() {
            return Err(Error::invalid("the message is empty"));
        }
        let primary = snapshot.agent(&request.agent).map_err(Error::not_found)?;
        let guest = match request.guest.as_deref().filter(|guest| !guest.is_empty()) {
            Some(name) => Some(snapshot.agent(name).map_err(Error::not_found)?),
            None => None,
        };
        let cwd = match request.cwd.take() {
            Some(cwd) => validate_cwd(&cwd)?,
            None => default_cwd(&self.home),
        };
        let chain = request.chain.take().unwrap_or_else(|| {
            let origin = request
                .origin
                .as_deref()
                .filter(|origin| !origin.trim().is_empty())
                .unwrap_or(&request.sender);
            Chain::begun_by(origin).triggered_by(request.trigger.as_deref())
        });
        let run_id = self.next_run.fetch_add(1, Ordering::Relaxed);
        let key = ConversationKey {
            agent: primary.name.clone(),
            sender: request.sender.clone(),
        };
        let conversation = self.conversations.get_or_create(&key);
        let ticket = conversation.take_ticket();
        let plan = TurnPlan {
            request,
            conversation,
            ticket,
            snapshot,
            primary,
            guest,
            cwd,
            run_id,
            chain: chain.clone(),
        };
        let runtime = self.clone();
        let thread = self.threads.for_turn();
        let turn = async move {
            let busy = super::release::busy();
            let outcome = super::turn::run(runtime.clone(), plan).await;
            // The turn has let go of its conversation: now it can be evicted.
            runtime.conversations.trim();
            let payload = match &outcome.error {
                None => outcome.final_text.clone(),
                Some(failure) => format!("[the turn failed: {}]\n{}", failure, outcome.final_text),
            };
            runtime.publish(&format!("agent:{}:done", outcome.agent), &payload, &chain);
            // The turn's memory is free now; once all is quiet, give it back.
            drop(busy);
            super::release::soon();
            outcome
        };
        // On this serving thread, or the least busy one (RFC 0049), counted
        // there while it runs; with no serving threads, here.
        Ok(match thread {
            Some((handle, running)) => self.turns.spawn_on(
                async move {
                    let _running = running;
                    turn.await
                },
                &handle,
            ),
            None => self.turns.spawn(turn),
        })
    }

    /// Cancels the turn running on `(agent, sender)`, if any.
    pub(crate) fn kill(&self, agent: &str, sender: &str) -> bool {
        let key = self.key(agent, sender);
        self.conversations
            .get(&key)
            .is_some_and(|conversation| conversation.kill("cancelled by the user"))
    }

    /// Injects a user message into the running turn of `(agent, sender)`.
    pub(crate) fn steer(&self, agent: &str, sender: &str, content: &str) -> Result<(), Error> {
        let key = self.key(agent, sender);
        let steered = self
            .conversations
            .get(&key)
            .is_some_and(|conversation| conversation.steer(content));
        if steered {
            Ok(())
        } else {
            Err(Error::conflict(format!(
                "no turn is running on {}/{}; send the message as a new turn instead",
                key.agent, key.sender
            )))
        }
    }

    /// Answers a question waiting on `(agent, sender)`.
    pub(crate) fn answer(
        &self,
        agent: &str,
        sender: &str,
        call_id: &str,
        content: &str,
    ) -> Result<(), Error> {
        let key = self.key(agent, sender);
        let conversation = self.conversations.get(&key).ok_or_else(|| {
            Error::not_found(format!(
                "no question is waiting on {}/{}",
                key.agent, key.sender
            ))
        })?;
        conversation
            .answer(Some(call_id), content)
            .map_err(|err| Error::not_found(format!("{}/{}: {err}", key.agent, key.sender)))
    }

    /// `(agent, sender)` with the defaults filled in.
    pub(crate) fn key(&self, agent: &str, sender: &str) -> ConversationKey {
        let agent = if agent.is_empty() {
            self.snapshot().config.default_agent.clone()
        } else {
            agent.to_owned()
        };
        let sender = if sender.is_empty() {
            DEFAULT_SENDER.to_owned()
        } else {
            sender.to_owned()
        };
        ConversationKey { agent, sender }
    }
}

fn validate_cwd(cwd: &Path) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() {
        return Err(Error::invalid(format!(
            "cwd {} must be an absolute path",
            cwd.display()
        )));
    }
    if !cwd.is_dir() {
        return Err(Error::invalid(format!(
            "cwd {} is not a directory",
            cwd.display()
        )));
    }
    Ok(cwd.to_owned())
}

fn default_cwd(home: &Home) -> PathBuf {
    dirs::home_dir()
        .filter(|dir| dir.is_dir())
        .unwrap_or_else(|| home.root().to_owned())
}
