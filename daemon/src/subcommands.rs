//! The subcommands besides `run`, for people at a terminal: each returns
//! the text to print, so tests check the same output.
//!
//! - `memory dump` reads the agent's memory file directly: the daemon only
//!   ever replaces it whole (temp file, rename), so a dump sees a complete
//!   memory even while the daemon runs.
//! - `memory load` replaces the file, which the daemon keeps open and would
//!   overwrite with its own copy on the next change; so it takes the home's
//!   lock first and refuses while a daemon holds it (and no daemon can start
//!   during the load).
//! - `sessions search` asks the running daemon, which holds the index.

use std::fmt::Write;
use std::path::Path;

use anyhow::{Context, anyhow, bail};
use crabtalk_home::Home;
use crabtalk_proto::msg::{SearchSessionsMsg, SessionHit};

use crate::cli::SearchArgs;
use crate::config::agent::{AgentStore, validate_agent_name};
use crate::lock::{InstanceLock, LockError};
use crate::memories::memory_file;
use crabtalk_memory::Memory;

/// `crabtalkd memory dump --agent AGENT DIR`.
pub fn memory_dump(home: &Home, agent: &str, dir: &Path) -> anyhow::Result<String> {
    let file = known_memory(home, agent)?;
    let memory = Memory::open(&file)?;
    let written = memory.dump(dir)?;
    Ok(format!(
        "wrote {} of {agent}'s memory ({}) to {}",
        entries(written),
        file.display(),
        dir.display()
    ))
}

/// The memory file of `agent`, which must be an agent or have a memory (a
/// mistyped name is an error, not an empty memory).
fn known_memory(home: &Home, agent: &str) -> anyhow::Result<std::path::PathBuf> {
    validate_agent_name(agent).map_err(|err| anyhow!(err))?;
    let file = memory_file(&home.memory_dir(), agent);
    if !file.is_file() && !AgentStore::new(home.agents_dir()).exists(agent) {
        bail!(
            "there is no agent {agent:?} and no memory file {}; --agent takes an agent's name",
            file.display()
        );
    }
    Ok(file)
}

fn entries(n: usize) -> String {
    match n {
        1 => "1 entry".to_owned(),
        n => format!("{n} entries"),
    }
}

/// `crabtalkd memory load --agent AGENT DIR`.
pub fn memory_load(home: &Home, agent: &str, dir: &Path) -> anyhow::Result<String> {
    let file = known_memory(home, agent)?;
    crate::process::prepare_home(home)?;
    let _lock = InstanceLock::acquire(&home.lock_file()).map_err(|err| match err {
        LockError::Held { pid, .. } => anyhow!(
            "crabtalkd is running with this home{}: it keeps {agent}'s memory open and would \
             overwrite what is loaded. Stop it (`crabup daemon stop`), load, then start it again",
            pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
        ),
        other => anyhow!(other),
    })?;
    let mut memory = Memory::open(&file)?;
    let before = memory.len();
    let loaded = memory
        .load(dir)
        .with_context(|| format!("nothing was changed in {}", file.display()))?;
    Ok(format!(
        "loaded {} from {} into {agent}'s memory ({}; it held {before})",
        entries(loaded),
        dir.display(),
        file.display()
    ))
}

/// `crabtalkd sessions search QUERY…`.
pub async fn sessions_search(home: &Home, args: &SearchArgs) -> anyhow::Result<String> {
    let client = crabtalk_kit::daemon::connect(home).await?;
    let query = args.query.join(" ");
    let found = client
        .search_sessions(SearchSessionsMsg {
            agent: args.agent.clone().unwrap_or_default(),
            sender: args.sender.clone().unwrap_or_default(),
            query: query.clone(),
            limit: Some(args.limit),
            context: Some(args.context),
        })
        .await?;
    Ok(render_hits(&query, &found.hits))
}

/// Hits for a terminal: a line per hit, then its window, the matching
/// message marked with `>`; snippets on one line, cut to fit.
fn render_hits(query: &str, hits: &[SessionHit]) -> String {
    const WIDTH: usize = 200;
    if hits.is_empty() {
        return format!("no conversation matches {query:?}");
    }
    let mut out = String::new();
    for hit in hits {
        let _ = write!(out, "{} · with {}", hit.conversation, hit.sender);
        if !hit.title.is_empty() {
            let _ = write!(out, " · {:?}", hit.title);
        }
        match hit.msg_idx {
            Some(idx) => {
                let _ = write!(out, " · message {idx}");
            }
            None => {
                let _ = write!(out, " · {}", hit.field);
            }
        }
        let _ = writeln!(out, " · score {:.2}", hit.score);
        for item in &hit.window {
            let mark = if item.msg_idx == hit.msg_idx {
                '>'
            } else {
                ' '
            };
            let number = item.msg_idx.map(|i| i.to_string()).unwrap_or_default();
            let who = if item.tool_name.is_empty() {
                item.field.clone()
            } else {
                format!("{} {}", item.field, item.tool_name)
            };
            let mut line: String = item
                .snippet
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if line.chars().count() > WIDTH {
                line = line.chars().take(WIDTH - 1).collect::<String>() + "…";
            } else if item.truncated {
                line.push('…');
            }
            let _ = writeln!(out, "  {mark} {number:>4} {who:<16} {line}");
        }
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out
}
