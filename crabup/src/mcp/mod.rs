//! Adding crabtalk to MCP hosts (`crabup mcp add`) and checking that the
//! bridge starts (`crabup doctor`). RFC 0022.
//!
//! A host runs `crabtalkd mcp` as a child over stdio; its entry names the
//! installed binary by absolute path (hosts start servers with a bare
//! environment, often without `~/.cargo/bin` on PATH) and sets
//! `CRABTALK_HOME`, so the bridge reaches this home's daemon whatever the
//! host's environment says.
//!
//! Where each host keeps its servers ([`Host::config_file`]):
//!
//! | host | file | key |
//! |---|---|---|
//! | Claude Desktop | macOS `~/Library/Application Support/Claude/claude_desktop_config.json`, Windows `%APPDATA%\Claude\claude_desktop_config.json`, Linux (no official build) `$XDG_CONFIG_HOME/Claude/claude_desktop_config.json` | `mcpServers` |
//! | Claude Code | `.mcp.json` in the project (the current directory) | `mcpServers` |
//! | Cursor | `~/.cursor/mcp.json` | `mcpServers` |
//! | Zed | `~/.config/zed/settings.json` (macOS and Linux, `$XDG_CONFIG_HOME/zed` when set), `%APPDATA%\Zed\settings.json` | `context_servers` |
//!
//! crabup links no MCP library: the entry is JSON it writes ([`jsonc`]),
//! and the doctor's check speaks the few lines of JSON-RPC it needs
//! ([`probe`]).

pub(crate) mod jsonc;
pub(crate) mod probe;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The name the entry has in a host's configuration.
pub(crate) const ENTRY_NAME: &str = "crabtalk";

/// An MCP host crabup knows how to configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Host {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Zed,
}

/// Where a person's configuration lives, read from the environment (and
/// set by tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dirs {
    /// `$HOME` (`%USERPROFILE%` on Windows).
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME` when set (Linux).
    pub xdg_config: Option<PathBuf>,
    /// `%APPDATA%` (Windows).
    pub app_data: Option<PathBuf>,
    /// The project a project-scoped entry goes in.
    pub project: PathBuf,
}

impl Dirs {
    /// This process's.
    pub(crate) fn from_env() -> Option<Self> {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
                .filter(|path| path.is_absolute())
        };
        Some(Self {
            home: dirs::home_dir()?,
            xdg_config: var("XDG_CONFIG_HOME"),
            app_data: var("APPDATA"),
            project: std::env::current_dir().ok()?,
        })
    }

    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    fn xdg(&self) -> PathBuf {
        self.xdg_config
            .clone()
            .unwrap_or_else(|| self.home.join(".config"))
    }

    /// `%APPDATA%`, else where it usually is.
    fn roaming(&self) -> PathBuf {
        self.app_data
            .clone()
            .unwrap_or_else(|| self.home.join("AppData").join("Roaming"))
    }
}

/// The operating systems whose paths differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Os {
    Macos,
    Windows,
    /// Linux and the other Unix systems.
    Unix,
}

impl Os {
    pub(crate) fn current() -> Self {
        if cfg!(target_os = "macos") {
            Self::Macos
        } else if cfg!(windows) {
            Self::Windows
        } else {
            Self::Unix
        }
    }
}

impl Host {
    /// The name a person types (`claude-desktop`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "claude-desktop",
            Host::ClaudeCode => "claude-code",
            Host::Cursor => "cursor",
            Host::Zed => "zed",
        }
    }

    /// The product's name.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "Claude Desktop",
            Host::ClaudeCode => "Claude Code",
            Host::Cursor => "Cursor",
            Host::Zed => "Zed",
        }
    }

    /// The key under which the host keeps its MCP servers.
    pub(crate) fn servers_key(self) -> &'static str {
        match self {
            Host::Zed => "context_servers",
            _ => "mcpServers",
        }
    }

    /// The file the host reads its MCP servers from.
    pub(crate) fn config_file(self, dirs: &Dirs, os: Os) -> PathBuf {
        match (self, os) {
            (Host::ClaudeDesktop, Os::Macos) => dirs
                .home
                .join("Library/Application Support/Claude/claude_desktop_config.json"),
            (Host::ClaudeDesktop, Os::Windows) => dirs
                .roaming()
                .join("Claude")
                .join("claude_desktop_config.json"),
            (Host::ClaudeDesktop, Os::Unix) => {
                dirs.xdg().join("Claude").join("claude_desktop_config.json")
            }
            (Host::ClaudeCode, _) => dirs.project.join(".mcp.json"),
            (Host::Cursor, _) => dirs.home.join(".cursor").join("mcp.json"),
            (Host::Zed, Os::Windows) => dirs.roaming().join("Zed").join("settings.json"),
            (Host::Zed, Os::Macos) => dirs.home.join(".config/zed/settings.json"),
            (Host::Zed, Os::Unix) => dirs.xdg().join("zed").join("settings.json"),
        }
    }

    /// What to do after the file is written.
    pub(crate) fn after_writing(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => {
                "Quit and reopen Claude Desktop; crabtalk's tools are under the tools icon of a new chat."
            }
            Host::ClaudeCode => {
                "Start Claude Code in this folder; it asks once whether to use the servers in .mcp.json (`/mcp` shows crabtalk)."
            }
            Host::Cursor => "Restart Cursor, or switch crabtalk on under Settings → MCP.",
            Host::Zed => {
                "Zed picks the change up at once; the agent panel's settings list crabtalk under MCP servers."
            }
        }
    }
}

/// How the bridge is started: the binary and this home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Launch {
    /// The absolute path of `crabtalkd`.
    pub binary: PathBuf,
    /// The absolute path of the crabtalk home.
    pub home: PathBuf,
}

impl Launch {
    /// The entry's value in a host's configuration.
    pub(crate) fn entry(&self) -> Value {
        json!({
            "command": self.binary.to_string_lossy(),
            "args": ["mcp"],
            "env": {"CRABTALK_HOME": self.home.to_string_lossy()},
        })
    }

    /// The whole snippet for `host`, as it stands in the file.
    pub(crate) fn snippet(&self, host: Host) -> String {
        let value = json!({ host.servers_key(): { ENTRY_NAME: self.entry() } });
        serde_json::to_string_pretty(&value).unwrap_or_default()
    }

    /// The `claude mcp add` line that adds the same server for every
    /// project (Claude Code's user scope).
    pub(crate) fn claude_code_command(&self) -> String {
        format!(
            "claude mcp add --scope user {ENTRY_NAME} --env CRABTALK_HOME={} -- {} mcp",
            shell_word(&self.home),
            shell_word(&self.binary)
        )
    }
}

/// `path` as one word for a POSIX shell.
fn shell_word(path: &Path) -> String {
    let text = path.to_string_lossy();
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%".contains(c))
    {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// What writing the entry did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Written {
    /// The file did not exist; it was made.
    Created,
    /// The entry was added beside the file's others.
    Added,
    /// An entry of that name was replaced.
    Replaced,
    /// The entry was there exactly so; nothing was written.
    Unchanged,
}

/// Merges the entry into `file` (made, with its folder, if missing): only
/// the entry's member changes; comments, layout and every other entry
/// stay. A file crabup cannot edit is left untouched and the error says
/// where it is wrong. A symbolic link is followed: the file it points to is
/// the one rewritten (dotfiles stay links).
pub(crate) fn write_entry(file: &Path, host: Host, launch: &Launch) -> anyhow::Result<Written> {
    use anyhow::Context as _;
    let target = match std::fs::canonicalize(file) {
        Ok(target) => target,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => file.to_owned(),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", file.display())),
    };
    let (text, existed) = match std::fs::read_to_string(&target) {
        Ok(text) => (text, true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => (String::new(), false),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", target.display())),
    };
    let path = [host.servers_key(), ENTRY_NAME];
    let before = jsonc::get_member(&text, &path).ok().flatten();
    let entry = launch.entry();
    if before.as_ref() == Some(&entry) {
        return Ok(Written::Unchanged);
    }
    let edited = jsonc::set_member(&text, &path, &entry).map_err(|err| {
        anyhow::anyhow!(
            "{}:{}:{}: {}; nothing was changed. Fix the file, or add the entry by hand (`crabup mcp add {}` prints it)",
            target.display(),
            err.line,
            err.column,
            err.message,
            host.name()
        )
    })?;
    // Read back before anything is written: the entry must be there.
    let read_back = jsonc::get_member(&edited, &path)
        .ok()
        .flatten()
        .filter(|value| *value == entry);
    anyhow::ensure!(
        read_back.is_some(),
        "the edit of {} did not read back; nothing was changed",
        target.display()
    );
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let written = match existing_mode(&target) {
        Some(mode) => crabtalk_home::write_atomic_mode(&target, edited.as_bytes(), mode),
        None => crabtalk_home::write_atomic(&target, edited.as_bytes()),
    };
    written.with_context(|| format!("cannot write {}", target.display()))?;
    Ok(match (existed, before) {
        (false, _) => Written::Created,
        (true, None) => Written::Added,
        (true, Some(_)) => Written::Replaced,
    })
}

/// The permission bits of an existing file, kept across the rewrite.
fn existing_mode(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(path)
            .ok()
            .map(|meta| meta.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> Dirs {
        Dirs {
            home: "/home/ann".into(),
            xdg_config: None,
            app_data: Some(r"C:\Users\ann\AppData\Roaming".into()),
            project: "/work/site".into(),
        }
    }

    #[test]
    fn every_host_has_its_file_on_every_system() {
        let d = dirs();
        let file = |host: Host, os| host.config_file(&d, os);
        assert_eq!(
            file(Host::ClaudeDesktop, Os::Macos),
            Path::new("/home/ann/Library/Application Support/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            file(Host::ClaudeDesktop, Os::Windows),
            Path::new(r"C:\Users\ann\AppData\Roaming")
                .join("Claude")
                .join("claude_desktop_config.json")
        );
        assert_eq!(
            file(Host::ClaudeDesktop, Os::Unix),
            Path::new("/home/ann/.config/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            file(Host::ClaudeCode, Os::Unix),
            Path::new("/work/site/.mcp.json")
        );
        assert_eq!(
            file(Host::Cursor, Os::Macos),
            Path::new("/home/ann/.cursor/mcp.json")
        );
        assert_eq!(
            file(Host::Zed, Os::Macos),
            Path::new("/home/ann/.config/zed/settings.json")
        );
        let xdg = Dirs {
            xdg_config: Some("/home/ann/cfg".into()),
            ..dirs()
        };
        assert_eq!(
            Host::Zed.config_file(&xdg, Os::Unix),
            Path::new("/home/ann/cfg/zed/settings.json")
        );
        assert_eq!(
            file(Host::Zed, Os::Windows),
            Path::new(r"C:\Users\ann\AppData\Roaming")
                .join("Zed")
                .join("settings.json")
        );
        assert_eq!(Host::Zed.servers_key(), "context_servers");
    }

    #[test]
    fn the_entry_names_the_binary_and_the_home() {
        let launch = Launch {
            binary: "/home/ann/.cargo/bin/crabtalkd".into(),
            home: "/home/ann/my crabs".into(),
        };
        assert_eq!(
            launch.entry(),
            json!({
                "command": "/home/ann/.cargo/bin/crabtalkd",
                "args": ["mcp"],
                "env": {"CRABTALK_HOME": "/home/ann/my crabs"}
            })
        );
        assert_eq!(
            launch.claude_code_command(),
            "claude mcp add --scope user crabtalk --env CRABTALK_HOME='/home/ann/my crabs' -- /home/ann/.cargo/bin/crabtalkd mcp"
        );
        let snippet: Value = serde_json::from_str(&launch.snippet(Host::Zed)).unwrap();
        assert_eq!(snippet["context_servers"]["crabtalk"], launch.entry());
    }
}
