//! What the environment offers when `config.toml` lists no provider:
//! `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, and an Ollama that answers where
//! `OLLAMA_HOST` says (read as Ollama reads it), else at 127.0.0.1:11434.

use std::time::Duration;

use super::Environment;
use crate::config::ProviderEntry;

/// Ollama's own port, used when `OLLAMA_HOST` names none.
const OLLAMA_PORT: u16 = 11434;

/// Looks for provider keys in the environment and a local Ollama. The
/// Ollama probe is a TCP connect with a short timeout.
pub async fn detect_environment() -> Environment {
    let key = |name: &str| std::env::var(name).ok().filter(|key| !key.is_empty());
    let ollama = OllamaAddress::parse(std::env::var("OLLAMA_HOST").ok().as_deref());
    let answers = tokio::time::timeout(
        Duration::from_millis(300),
        tokio::net::TcpStream::connect(ollama.authority()),
    )
    .await
    .is_ok_and(|connected| connected.is_ok());
    Environment {
        openai_api_key: key("OPENAI_API_KEY"),
        anthropic_api_key: key("ANTHROPIC_API_KEY"),
        ollama: answers.then(|| ollama.base_url()),
    }
}

/// Where Ollama listens, from the value of `OLLAMA_HOST`.
#[derive(Debug, PartialEq, Eq)]
struct OllamaAddress {
    scheme: String,
    host: String,
    port: u16,
    /// A path prefix, without slashes at either end (usually empty).
    path: String,
}

impl OllamaAddress {
    /// Reads `OLLAMA_HOST` the way Ollama's clients do: `host`,
    /// `host:port`, `:port` or a URL (`https://host` means port 443,
    /// `http://host` port 80); without a port, 11434. A host of all
    /// interfaces (`0.0.0.0`, `::`, empty) means this machine.
    fn parse(value: Option<&str>) -> Self {
        let value = value.unwrap_or_default().trim().trim_matches(['"', '\'']);
        let (scheme, rest, default_port) = match value.split_once("://") {
            None => ("http", value, OLLAMA_PORT),
            Some(("http", rest)) => ("http", rest, 80),
            Some(("https", rest)) => ("https", rest, 443),
            Some((scheme, rest)) => (scheme, rest, OLLAMA_PORT),
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (host, port) = match split_host_port(authority) {
            Some((host, port)) => (host, port.parse().unwrap_or(default_port)),
            None => (authority.trim_matches(['[', ']']), default_port),
        };
        let host = match host {
            "" | "0.0.0.0" => "127.0.0.1",
            "::" => "::1",
            host => host,
        };
        Self {
            scheme: scheme.to_owned(),
            host: host.to_owned(),
            port,
            path: path.trim_matches('/').to_owned(),
        }
    }

    /// `host:port`, with an IPv6 host in brackets.
    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The OpenAI-compatible API under this address.
    fn base_url(&self) -> String {
        let mut url = format!("{}://{}", self.scheme, self.authority());
        if !self.path.is_empty() {
            url.push('/');
            url.push_str(&self.path);
        }
        url.push_str("/v1");
        url
    }
}

/// `host:port` or `[v6]:port` into its parts; `None` without a port.
fn split_host_port(authority: &str) -> Option<(&str, &str)> {
    if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, rest) = bracketed.split_once(']')?;
        return Some((host, rest.strip_prefix(':')?));
    }
    let (host, port) = authority.rsplit_once(':')?;
    // More colons: a bare IPv6 address, not a port.
    (!host.contains(':')).then_some((host, port))
}

/// Provider entries for what `environment` offers; models are discovered.
pub(super) fn entries(environment: &Environment) -> Vec<ProviderEntry> {
    let mut entries = Vec::new();
    if let Some(key) = &environment.openai_api_key {
        entries.push(ProviderEntry {
            kind: "openai".into(),
            api_key: Some(key.clone()),
            ..Default::default()
        });
    }
    if let Some(key) = &environment.anthropic_api_key {
        entries.push(ProviderEntry {
            kind: "anthropic".into(),
            api_key: Some(key.clone()),
            ..Default::default()
        });
    }
    if let Some(url) = &environment.ollama {
        entries.push(ProviderEntry {
            kind: "ollama".into(),
            base_url: Some(url.clone()),
            ..Default::default()
        });
    }
    entries
}

/// What to tell a person who has no usable provider.
pub(super) fn setup_hint(problems: &[String]) -> String {
    let mut hint = String::from(
        "no language model is configured. Add a provider to config.toml in your crabtalk home, for example:\n\n\
         [[providers]]\n\
         kind = \"openai\"                # or \"anthropic\", \"google\", \"ollama\", \"openai-compatible\"\n\
         api_key_env = \"OPENAI_API_KEY\"\n\
         models = [\"gpt-4o\"]\n\n\
         or export OPENAI_API_KEY or ANTHROPIC_API_KEY, or start Ollama (on 127.0.0.1:11434, \
         or where $OLLAMA_HOST says), then restart the daemon or run `crabtalkd reload`.",
    );
    if !problems.is_empty() {
        hint.push_str("\n\nWhat was wrong with the configured providers:\n");
        for problem in problems {
            hint.push_str("- ");
            hint.push_str(problem);
            hint.push('\n');
        }
    }
    hint
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(value: Option<&str>) -> String {
        OllamaAddress::parse(value).base_url()
    }

    #[test]
    fn ollama_host_is_read_as_ollama_reads_it() {
        assert_eq!(url(None), "http://127.0.0.1:11434/v1");
        assert_eq!(url(Some("")), "http://127.0.0.1:11434/v1");
        assert_eq!(url(Some("gpu-box")), "http://gpu-box:11434/v1");
        assert_eq!(url(Some("gpu-box:8080")), "http://gpu-box:8080/v1");
        assert_eq!(url(Some(":8080")), "http://127.0.0.1:8080/v1");
        assert_eq!(url(Some("0.0.0.0")), "http://127.0.0.1:11434/v1");
        assert_eq!(url(Some(" \"10.0.0.2:9\" ")), "http://10.0.0.2:9/v1");
        assert_eq!(url(Some("http://gpu-box")), "http://gpu-box:80/v1");
        assert_eq!(url(Some("https://gpu-box")), "https://gpu-box:443/v1");
        assert_eq!(
            url(Some("https://gpu-box:8443/ollama/")),
            "https://gpu-box:8443/ollama/v1"
        );
        assert_eq!(url(Some("[::1]:8080")), "http://[::1]:8080/v1");
        assert_eq!(url(Some("::1")), "http://[::1]:11434/v1");
        assert_eq!(url(Some("[::]")), "http://[::1]:11434/v1");
        assert_eq!(url(Some("gpu-box:port")), "http://gpu-box:11434/v1");
        assert_eq!(
            OllamaAddress::parse(Some("http://[::1]:8080")).authority(),
            "[::1]:8080"
        );
    }
}
