//! `crabtalk-telegram pair list|approve|deny|revoke`: pairing decided on
//! this machine, on the same file the running gateway reads.

use anyhow::Context;
use chrono::Utc;
use crabtalk_home::Home;

use crate::access::pairing::PairingStore;
use crate::cli::PairCommand;

/// Runs a pairing command.
pub fn pair(home: &Home, command: PairCommand) -> anyhow::Result<()> {
    let store = PairingStore::of(home);
    let now = Utc::now();
    match command {
        PairCommand::List { json } => {
            let file = store.read(now);
            if json {
                println!("{}", serde_json::to_string_pretty(&file)?);
                return Ok(());
            }
            if file.pending.is_empty() {
                println!("No pairing codes are waiting.");
            } else {
                println!("Waiting:");
                for p in &file.pending {
                    let username = p
                        .username
                        .as_deref()
                        .map(|u| format!(" @{u}"))
                        .unwrap_or_default();
                    println!(
                        "  {}  {}{} (user {}), asked {}, expires {}",
                        p.code,
                        p.name,
                        username,
                        p.user_id,
                        p.created.format("%Y-%m-%d %H:%M UTC"),
                        p.expires.format("%H:%M UTC")
                    );
                }
            }
            if !file.approved.is_empty() {
                println!("Approved:");
                for a in &file.approved {
                    println!(
                        "  {} {} (since {})",
                        a.user_id,
                        a.name,
                        a.approved_at.format("%Y-%m-%d")
                    );
                }
            }
            Ok(())
        }
        PairCommand::Approve { code } => {
            let approved = store.approve(&code, now).context("approving")?;
            println!(
                "Approved {} (user {}): they may talk to the agent now.",
                approved.name, approved.user_id
            );
            Ok(())
        }
        PairCommand::Deny { code } => {
            let denied = store.deny(&code, now).context("denying")?;
            println!(
                "Denied {} (user {}); they get no further codes.",
                denied.name, denied.user_id
            );
            Ok(())
        }
        PairCommand::Revoke { user_id } => {
            let revoked = store.revoke(user_id, now).context("revoking")?;
            println!(
                "User {} ({}) may no longer talk to the agent.",
                revoked.user_id, revoked.name
            );
            Ok(())
        }
    }
}
