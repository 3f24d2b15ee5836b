//! Everything the daemon creates is its user's alone.
//!
//! The home holds every conversation, every memory, provider keys and the
//! TCP token; on a shared machine none of it is for other users. So the
//! daemon does not leave modes to the umask it was started with (often
//! 022, which makes new folders 0755 and new files 0644): at start it sets
//! its own umask to 077, and every folder and file it creates afterwards —
//! sessions, sidecars, memory, agents, subscriptions, `run/`, logs, the
//! temp files of atomic writes — is 0700 or 0600, whichever code path
//! creates it. Processes it starts for others (a `bash` call, an MCP
//! server) get the umask it was started with back, so what they create in
//! a user's project is as the user expects.
//!
//! A home (or `run/`) that exists already and that other users can read or
//! write is not silently changed; the daemon warns with the command that
//! fixes it ([`warn_if_shared`]).

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

use crabtalk_home::Home;

/// The umask the daemon runs with: nothing for the group or others.
pub(crate) const DAEMON_UMASK: u32 = 0o077;

/// The umask the process had before [`restrict_umask`], for its children.
/// `u32::MAX` until it is set.
static INHERITED: AtomicU32 = AtomicU32::new(u32::MAX);

/// Sets the process umask to `DAEMON_UMASK` (0o077), remembering the one it had.
/// Idempotent: later calls keep the first remembered value.
pub fn restrict_umask() {
    #[cfg(unix)]
    {
        // SAFETY: umask has no preconditions; it only swaps a process-wide
        // value.
        let previous = unsafe { libc::umask(DAEMON_UMASK as libc::mode_t) } as u32;
        let _ = INHERITED.compare_exchange(u32::MAX, previous, Ordering::AcqRel, Ordering::Acquire);
    }
}

/// The umask to give back to processes the daemon starts for its agents:
/// the one it was started with (022 if [`restrict_umask`] never ran).
pub(crate) fn inherited_umask() -> u32 {
    match INHERITED.load(Ordering::Acquire) {
        u32::MAX => 0o022,
        umask => umask,
    }
}

/// Creates `dir` and its missing parents with mode 0700 (Unix), whatever
/// the umask.
pub(crate) fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Warns about every part of `home` the daemon relies on that other users
/// can read or write: the home itself, `run/`, `config.toml` and `env`.
/// Each warning names the command that fixes it.
pub(crate) fn warn_if_shared(home: &Home) {
    for (path, private_mode) in [
        (home.root().to_owned(), 0o700),
        (home.run_dir(), 0o700),
        (home.config_file(), 0o600),
        (home.env_file(), 0o600),
    ] {
        if let Some(warning) = shared_warning(&path, private_mode) {
            tracing::warn!("{warning}");
        }
    }
}

/// The warning for `path` if other users can read or write it.
pub(crate) fn shared_warning(path: &Path, private_mode: u32) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        let mode = meta.mode() & 0o7777;
        if mode & 0o077 == 0 {
            return None;
        }
        let who = match (mode & 0o070 != 0, mode & 0o007 != 0) {
            (true, true) => "its group and every other user",
            (true, false) => "its group",
            _ => "every other user",
        };
        Some(format!(
            "{} has mode {mode:o}: {who} can get at it, and it holds the daemon's conversations, memory and secrets; fix it with: chmod {private_mode:o} {}",
            path.display(),
            shell_quote(&path.display().to_string()),
        ))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, private_mode);
        None
    }
}

/// `path` quoted for a POSIX shell when it needs to be.
fn shell_quote(path: &str) -> String {
    let plain = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,".contains(c));
    if plain {
        path.to_owned()
    } else {
        format!("'{}'", path.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn an_open_folder_is_reported_with_the_command_that_closes_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("my home");
        std::fs::create_dir(&home).unwrap();
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
        let warning = shared_warning(&home, 0o700).unwrap();
        assert!(warning.contains("mode 755"), "{warning}");
        assert!(warning.contains("every other user"), "{warning}");
        assert!(
            warning.ends_with(&format!("chmod 700 '{}'", home.display())),
            "{warning}"
        );
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(shared_warning(&home, 0o700), None);
        assert_eq!(shared_warning(&dir.path().join("missing"), 0o700), None);
    }

    #[test]
    fn odd_paths_are_quoted_for_the_shell() {
        assert_eq!(shell_quote("/home/me/.crabtalk"), "/home/me/.crabtalk");
        assert_eq!(shell_quote("/a b/it's"), "'/a b/it'\\''s'");
    }
}
