//! Will the daemon find a language model? Answered the way the daemon
//! looks, before it starts: `[[providers]]` in `config.toml` first; when
//! there are none, the provider keys and `OLLAMA_HOST` of the environment
//! the service will get (names and parsing shared with the daemon through
//! [`crabtalk_home::provider_env`]).
//!
//! Which environment that is depends on the service manager: the process
//! backend starts the daemon from crabup, so it inherits this shell's
//! variables; systemd, launchd and Task Scheduler do not, and the daemon
//! sees only `$CRABTALK_HOME/env` there. A key set only in the shell is
//! then worth a note that says where to put it.

use std::net::{TcpStream, ToSocketAddrs};

use crabtalk_command::ManagerKind;
use crabtalk_home::provider_env::{
    OLLAMA_HOST_VAR, OLLAMA_PROBE, OllamaAddress, PROVIDER_KEY_VARS,
};
use crabtalk_home::{EnvFile, Home};

/// Where a service's variables come from.
struct ServiceEnv {
    file: EnvFile,
    /// Whether the service inherits crabup's own environment.
    inherits: bool,
}

impl ServiceEnv {
    fn new(home: &Home, manager: ManagerKind) -> Self {
        Self {
            file: EnvFile::read(&home.env_file()).unwrap_or_default(),
            inherits: inherits_shell(manager),
        }
    }

    /// The value the service will see for `key`, and where it comes from
    /// (the process environment wins over the file, as in every service).
    fn get(&self, key: &str) -> Option<(String, Source)> {
        if self.inherits
            && let Some(value) = shell(key)
        {
            return Some((value, Source::Shell));
        }
        self.file
            .vars
            .iter()
            .rev()
            .find(|var| var.key == key && !var.value.is_empty())
            .map(|var| (var.value.clone(), Source::EnvFile))
    }
}

/// Whether services of `manager` inherit the environment of the crabup
/// that starts them.
pub(crate) fn inherits_shell(manager: ManagerKind) -> bool {
    manager == ManagerKind::Process
}

fn shell(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|value| !value.is_empty())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Shell,
    EnvFile,
}

impl Source {
    fn describe(self, home: &Home) -> String {
        match self {
            Source::Shell => "this shell's environment (the daemon inherits it)".to_owned(),
            Source::EnvFile => home.env_file().display().to_string(),
        }
    }
}

/// What the daemon will find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finding {
    /// `config.toml` lists providers: the daemon uses those.
    Configured,
    /// No `[[providers]]`, but the environment offers a model; in words.
    FromEnvironment(String),
    /// Keys set in this shell that the service will not see; the
    /// variables' names.
    ShellOnly(Vec<String>),
    /// Nothing at all.
    Nothing,
}

impl Finding {
    /// Whether the daemon will find a model.
    pub(crate) fn found(&self) -> bool {
        matches!(self, Self::Configured | Self::FromEnvironment(_))
    }

    /// One line for a person.
    pub(crate) fn describe(&self, home: &Home, manager: ManagerKind) -> String {
        let env = home.env_file();
        match self {
            Self::Configured => format!(
                "config.toml lists providers ({})",
                home.config_file().display()
            ),
            Self::FromEnvironment(what) => format!("no [[providers]] in config.toml; {what}"),
            Self::ShellOnly(vars) => format!(
                "{} is set in this shell, but {manager} services do not see this shell's \
                 environment: add the line {}=… to {} (which every service loads), then \
                 `crabup daemon restart`",
                vars.join(" and "),
                vars[0],
                env.display()
            ),
            Self::Nothing => format!(
                "no LLM provider yet: no [[providers]] in config.toml, no OPENAI_API_KEY or \
                 ANTHROPIC_API_KEY, no Ollama answering. Add one as NAME=value (e.g. \
                 OPENAI_API_KEY=sk-…) to {}, then `crabup daemon restart`",
                env.display()
            ),
        }
    }
}

/// Looks as the daemon will: `config.toml`'s providers, else the keys and
/// Ollama in the environment its service gets under `manager`.
pub(crate) fn find(home: &Home, manager: ManagerKind) -> Finding {
    if config_lists_providers(home) {
        return Finding::Configured;
    }
    let env = ServiceEnv::new(home, manager);
    let mut found = Vec::new();
    for (var, _) in PROVIDER_KEY_VARS {
        if let Some((_, source)) = env.get(var) {
            found.push(format!("{var} from {}", source.describe(home)));
        }
    }
    let ollama_host = env.get(OLLAMA_HOST_VAR).map(|(value, _)| value);
    let ollama = OllamaAddress::parse(ollama_host.as_deref());
    if answers(&ollama.authority()) {
        found.push(format!("the Ollama answering at {}", ollama.base_url()));
    }
    if !found.is_empty() {
        return Finding::FromEnvironment(format!("the daemon will use {}", found.join(", ")));
    }
    let shell_only: Vec<String> = PROVIDER_KEY_VARS
        .iter()
        .filter(|(var, _)| shell(var).is_some())
        .map(|(var, _)| (*var).to_owned())
        .collect();
    if shell_only.is_empty() {
        Finding::Nothing
    } else {
        Finding::ShellOnly(shell_only)
    }
}

/// Whether `config.toml` has a non-empty `[[providers]]`.
fn config_lists_providers(home: &Home) -> bool {
    std::fs::read_to_string(home.config_file())
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|config| config.get("providers")?.as_array().map(|p| !p.is_empty()))
        .unwrap_or(false)
}

/// A TCP connect to `authority` within the daemon's own probe time.
fn answers(authority: &str) -> bool {
    let Ok(addrs) = authority.to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|addr| TcpStream::connect_timeout(&addr, OLLAMA_PROBE).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_providers_come_first_and_env_file_keys_count_for_every_manager() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        std::fs::write(home.env_file(), "OPENAI_API_KEY=sk-file\n").unwrap();
        for manager in ManagerKind::ALL {
            let finding = find(&home, manager);
            assert!(finding.found(), "{manager}: {finding:?}");
            assert!(
                finding
                    .describe(&home, manager)
                    .contains("OPENAI_API_KEY from"),
                "{finding:?}"
            );
        }
        std::fs::write(
            home.config_file(),
            "[[providers]]\nkind = \"ollama\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
        )
        .unwrap();
        assert_eq!(find(&home, ManagerKind::Systemd), Finding::Configured);
    }

    #[test]
    fn an_empty_key_or_an_unrelated_variable_is_no_provider() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        // An Ollama nobody runs: a closed port.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        std::fs::write(
            home.env_file(),
            format!("ANTHROPIC_API_KEY=\nBRAVE_API_KEY=x\nOLLAMA_HOST=127.0.0.1:{port}\n"),
        )
        .unwrap();
        let finding = find(&home, ManagerKind::Systemd);
        assert!(
            matches!(finding, Finding::Nothing | Finding::ShellOnly(_)),
            "{finding:?}"
        );
    }

    #[test]
    fn an_ollama_that_answers_where_ollama_host_says_is_a_provider() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let ollama = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = ollama.local_addr().unwrap().port();
        std::fs::write(home.env_file(), format!("OLLAMA_HOST=127.0.0.1:{port}\n")).unwrap();
        let finding = find(&home, ManagerKind::Launchd);
        assert_eq!(
            finding,
            Finding::FromEnvironment(format!(
                "the daemon will use the Ollama answering at http://127.0.0.1:{port}/v1"
            ))
        );
    }
}
