//! Which variables offer the daemon a language model when `config.toml`
//! lists no provider, and where Ollama listens: read once, here, by the
//! daemon (which uses them) and by `crabup` (which tells a person whether
//! the daemon will find a model before it starts).
//!
//! The daemon uses `OPENAI_API_KEY` and `ANTHROPIC_API_KEY` when set and
//! not empty, and an Ollama that answers where `OLLAMA_HOST` says (else at
//! `127.0.0.1:11434`). A model named by a preset ([`PROVIDER_PRESETS`]:
//! `groq/llama-3.3-70b-versatile`) uses that preset's key variable. Every service also loads `$CRABTALK_HOME/env` at
//! start ([`crate::EnvFile`]), the process's own environment winning.

/// The OpenAI key the daemon uses when `config.toml` lists no provider.
pub const OPENAI_KEY_VAR: &str = "OPENAI_API_KEY";

/// The Anthropic key the daemon uses when `config.toml` lists no provider.
pub const ANTHROPIC_KEY_VAR: &str = "ANTHROPIC_API_KEY";

/// Where Ollama listens (read as Ollama's own clients read it).
pub const OLLAMA_HOST_VAR: &str = "OLLAMA_HOST";

/// The key variables, with the provider kind each one stands for.
pub const PROVIDER_KEY_VARS: [(&str, &str); 2] =
    [(OPENAI_KEY_VAR, "openai"), (ANTHROPIC_KEY_VAR, "anthropic")];

/// A provider the daemon knows by name: a model named `<name>/<model>`
/// goes to it (the daemon's `config::presets`, RFC 0023).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderPreset {
    /// The prefix of the models it serves (`groq`).
    pub name: &'static str,
    /// Its API kind, as `[[providers]] kind`.
    pub kind: &'static str,
    pub base_url: &'static str,
    /// Where its key may be, the first set one wins; none: no key needed.
    pub key_vars: &'static [&'static str],
}

/// The built-in presets. Gemini is reached through Google's
/// OpenAI-compatible endpoint, so its base URL can be overridden like the
/// others' (the native `google` kind fixes its host); Ollama's follows
/// `OLLAMA_HOST`.
pub const PROVIDER_PRESETS: &[ProviderPreset] = &[
    ProviderPreset {
        name: "openai",
        kind: "openai",
        base_url: "https://api.openai.com/v1",
        key_vars: &[OPENAI_KEY_VAR],
    },
    ProviderPreset {
        name: "anthropic",
        kind: "anthropic",
        base_url: "https://api.anthropic.com/v1",
        key_vars: &[ANTHROPIC_KEY_VAR],
    },
    ProviderPreset {
        name: "gemini",
        kind: "openai-compatible",
        base_url: "https://generativelanguage.googleapis.com/v1beta/openai",
        key_vars: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    },
    ProviderPreset {
        name: "groq",
        kind: "openai-compatible",
        base_url: "https://api.groq.com/openai/v1",
        key_vars: &["GROQ_API_KEY"],
    },
    ProviderPreset {
        name: "deepseek",
        kind: "openai-compatible",
        base_url: "https://api.deepseek.com/v1",
        key_vars: &["DEEPSEEK_API_KEY"],
    },
    ProviderPreset {
        name: "mistral",
        kind: "openai-compatible",
        base_url: "https://api.mistral.ai/v1",
        key_vars: &["MISTRAL_API_KEY"],
    },
    ProviderPreset {
        name: "openrouter",
        kind: "openai-compatible",
        base_url: "https://openrouter.ai/api/v1",
        key_vars: &["OPENROUTER_API_KEY"],
    },
    ProviderPreset {
        name: "together",
        kind: "openai-compatible",
        base_url: "https://api.together.ai/v1",
        key_vars: &["TOGETHER_API_KEY"],
    },
    ProviderPreset {
        name: "xai",
        kind: "openai-compatible",
        base_url: "https://api.x.ai/v1",
        key_vars: &["XAI_API_KEY"],
    },
    ProviderPreset {
        name: "ollama",
        kind: "ollama",
        base_url: "http://127.0.0.1:11434/v1",
        key_vars: &[],
    },
];

/// Ollama's own port, used when `OLLAMA_HOST` names none.
pub const OLLAMA_PORT: u16 = 11434;

/// How long a probe of Ollama's port may take.
pub const OLLAMA_PROBE: std::time::Duration = std::time::Duration::from_millis(300);

/// Where Ollama listens, from the value of `OLLAMA_HOST`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OllamaAddress {
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
    pub fn parse(value: Option<&str>) -> Self {
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
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The OpenAI-compatible API under this address.
    pub fn base_url(&self) -> String {
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
