//! Pairing codes (`telegram/pairing.json`).
//!
//! A stranger who writes to the bot (with `pairing = true`) gets a
//! 6-character code. The code is approved or denied only on this machine
//! (`crabtalk-telegram pair approve|deny <code>`), never from a chat, so a
//! stranger can never let themselves in. Bounds, so a stranger cannot make
//! the bot spam or the file grow: a code expires after an hour, at most
//! [`MAX_PENDING`] codes wait at once, and a stranger gets at most
//! [`MAX_REPLIES`] answers per code (then silence). A denied user gets no
//! further codes.
//!
//! The gateway and the CLI are two processes editing one file: every
//! change happens under an `flock` on `telegram/pairing.lock`, re-reading
//! the file first.

use std::path::PathBuf;

use chrono::{DateTime, Duration, Utc};
use crabtalk_home::Home;
use crabtalk_kit::FileLock;
use serde::{Deserialize, Serialize};

/// How long a code is valid.
pub(crate) const CODE_LIFETIME: Duration = Duration::hours(1);
/// Codes waiting at once.
pub(crate) const MAX_PENDING: usize = 3;
/// Answers a stranger gets for one code.
pub(crate) const MAX_REPLIES: u32 = 2;
/// Letters and digits that cannot be mistaken for each other.
const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// A code waiting for a person's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pending {
    pub code: String,
    pub user_id: i64,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    pub created: DateTime<Utc>,
    pub expires: DateTime<Utc>,
    /// Answers sent to the stranger for this code.
    pub replies: u32,
}

/// A user let in by a code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Approved {
    pub user_id: i64,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    pub approved_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PairingFile {
    #[serde(default)]
    pub pending: Vec<Pending>,
    #[serde(default)]
    pub approved: Vec<Approved>,
    #[serde(default)]
    pub denied: Vec<i64>,
}

/// Who wrote, as Telegram says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stranger {
    pub user_id: i64,
    pub name: String,
    pub username: Option<String>,
}

/// Why a pairing command failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PairingError {
    #[error(
        "no pending pairing code {0:?} (codes expire after an hour; `crabtalk-telegram pair list` shows the pending ones)"
    )]
    UnknownCode(String),
    #[error("user {0} is not approved (`crabtalk-telegram pair list` shows who is)")]
    NotApproved(i64),
    #[error("cannot update {path}: {source}", path = path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The pairing file of one home.
#[derive(Debug, Clone)]
pub(crate) struct PairingStore {
    path: PathBuf,
    lock: PathBuf,
}

impl PairingStore {
    pub(crate) fn of(home: &Home) -> Self {
        let dir = crate::data_dir(home);
        Self {
            path: dir.join("pairing.json"),
            lock: dir.join("pairing.lock"),
        }
    }

    /// What the file holds now (expired codes left out).
    pub(crate) fn read(&self, now: DateTime<Utc>) -> PairingFile {
        let mut file: PairingFile = crate::state::read_json(&self.path);
        file.pending.retain(|p| p.expires > now);
        file
    }

    pub(crate) fn is_approved(&self, user: i64) -> bool {
        self.approved().iter().any(|a| a.user_id == user)
    }

    pub(crate) fn approved(&self) -> Vec<Approved> {
        self.read(Utc::now()).approved
    }

    /// A stranger wrote: the text to answer with, if any (a new code, the
    /// same code again, or nothing).
    pub(crate) fn stranger(
        &self,
        who: &Stranger,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, PairingError> {
        self.edit(now, |file| {
            if file.denied.contains(&who.user_id) || file.approved.iter().any(|a| a.user_id == who.user_id) {
                return None;
            }
            if let Some(pending) = file.pending.iter_mut().find(|p| p.user_id == who.user_id) {
                if pending.replies >= MAX_REPLIES {
                    return None;
                }
                pending.replies += 1;
                return Some(message(&pending.code));
            }
            if file.pending.len() >= MAX_PENDING {
                tracing::warn!(
                    user = who.user_id,
                    "pairing: {MAX_PENDING} codes are already waiting; {} ({}) gets none until one is decided or expires",
                    who.name,
                    who.user_id
                );
                return None;
            }
            let code = new_code(&file.pending);
            tracing::info!(
                user = who.user_id,
                "pairing: code {code} for {} ({}); approve it with `crabtalk-telegram pair approve {code}`",
                who.name,
                who.user_id
            );
            file.pending.push(Pending {
                code: code.clone(),
                user_id: who.user_id,
                name: who.name.clone(),
                username: who.username.clone(),
                created: now,
                expires: now + CODE_LIFETIME,
                replies: 1,
            });
            Some(message(&code))
        })
    }

    /// Approves `code`: its user may talk to the agent.
    pub(crate) fn approve(&self, code: &str, now: DateTime<Utc>) -> Result<Approved, PairingError> {
        self.edit(now, |file| {
            let index = find(file, code)?;
            let pending = file.pending.remove(index);
            file.denied.retain(|d| *d != pending.user_id);
            let approved = Approved {
                user_id: pending.user_id,
                name: pending.name,
                username: pending.username,
                approved_at: now,
            };
            file.approved.retain(|a| a.user_id != approved.user_id);
            file.approved.push(approved.clone());
            Some(approved)
        })?
        .ok_or_else(|| PairingError::UnknownCode(code.to_owned()))
    }

    /// Denies `code`: its user gets no further codes.
    pub(crate) fn deny(&self, code: &str, now: DateTime<Utc>) -> Result<Pending, PairingError> {
        self.edit(now, |file| {
            let index = find(file, code)?;
            let pending = file.pending.remove(index);
            if !file.denied.contains(&pending.user_id) {
                file.denied.push(pending.user_id);
            }
            Some(pending)
        })?
        .ok_or_else(|| PairingError::UnknownCode(code.to_owned()))
    }

    /// Takes back the approval of `user`.
    pub(crate) fn revoke(&self, user: i64, now: DateTime<Utc>) -> Result<Approved, PairingError> {
        self.edit(now, |file| {
            let index = file.approved.iter().position(|a| a.user_id == user)?;
            Some(file.approved.remove(index))
        })?
        .ok_or(PairingError::NotApproved(user))
    }

    /// Runs `change` on the file under the lock and writes the result.
    fn edit<T>(
        &self,
        now: DateTime<Utc>,
        change: impl FnOnce(&mut PairingFile) -> Option<T>,
    ) -> Result<Option<T>, PairingError> {
        let io = |source| PairingError::Io {
            path: self.path.clone(),
            source,
        };
        let _lock = FileLock::exclusive(&self.lock).map_err(io)?;
        let before: PairingFile = crate::state::read_json(&self.path);
        let mut file = before.clone();
        file.pending.retain(|p| p.expires > now);
        let result = change(&mut file);
        if file != before {
            crate::state::write_json(&self.path, &file).map_err(io)?;
        }
        Ok(result)
    }
}

fn find(file: &PairingFile, code: &str) -> Option<usize> {
    let code = code.trim().to_ascii_uppercase();
    file.pending.iter().position(|p| p.code == code)
}

fn message(code: &str) -> String {
    format!(
        "This bot talks only to people its owner let in. To ask for access, give the owner this code: {code}\n\
         (they approve it on their machine with `crabtalk-telegram pair approve {code}`; it expires in an hour)"
    )
}

fn new_code(pending: &[Pending]) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    loop {
        let code: String = (0..6)
            .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
            .collect();
        if !pending.iter().any(|p| p.code == code) {
            return code;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stranger(id: i64) -> Stranger {
        Stranger {
            user_id: id,
            name: format!("user {id}"),
            username: None,
        }
    }

    #[test]
    fn codes_are_bounded_and_decided_only_here() {
        let dir = tempfile::tempdir().unwrap();
        let store = PairingStore::of(&Home::new(dir.path()));
        let now = Utc::now();
        let first = store.stranger(&stranger(1), now).unwrap().unwrap();
        let code = store.read(now).pending[0].code.clone();
        assert!(first.contains(&code) && code.len() == 6);
        // Two answers per stranger, then silence.
        assert!(
            store
                .stranger(&stranger(1), now)
                .unwrap()
                .unwrap()
                .contains(&code)
        );
        assert_eq!(store.stranger(&stranger(1), now).unwrap(), None);
        // At most three codes wait.
        assert!(store.stranger(&stranger(2), now).unwrap().is_some());
        assert!(store.stranger(&stranger(3), now).unwrap().is_some());
        assert_eq!(store.stranger(&stranger(4), now).unwrap(), None);
        // Approve (any case), deny, expiry.
        let approved = store.approve(&code.to_lowercase(), now).unwrap();
        assert_eq!(approved.user_id, 1);
        assert!(store.is_approved(1));
        assert!(matches!(
            store.approve(&code, now),
            Err(PairingError::UnknownCode(_))
        ));
        let code2 = store.read(now).pending[0].code.clone();
        assert_eq!(store.deny(&code2, now).unwrap().user_id, 2);
        assert_eq!(store.stranger(&stranger(2), now).unwrap(), None);
        let later = now + CODE_LIFETIME + Duration::seconds(1);
        assert!(store.read(later).pending.is_empty());
        assert!(store.stranger(&stranger(4), later).unwrap().is_some());
        assert_eq!(store.revoke(1, later).unwrap().user_id, 1);
        assert!(!store.is_approved(1));
    }
}
