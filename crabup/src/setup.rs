//! First-run setup, done by `start` before a service is installed.
//!
//! A service must never be left restart-looping on missing config, so
//! whatever a service cannot run without is checked before it starts:
//!
//! - telegram needs a bot token in `config/telegram.toml`. With a terminal,
//!   crabup asks for it and saves it (mode 0600) with the gateway's own
//!   config type, so the file is always one the gateway reads; without a
//!   terminal, `start` fails and says how to provide it.
//! - the daemon starts without any provider, so it is never refused; with
//!   a terminal and no provider key yet, crabup offers to save one in
//!   `$CRABTALK_HOME/env` (mode 0600), which every service loads at start.

use std::io::{BufRead, Write};

use anyhow::{Context as _, bail};
use crabtalk_command::Service;
use crabtalk_home::{EnvFile, Home, write_atomic_private};
use crabtalk_telegram::config::TelegramConfig;

/// A terminal to ask questions on, when there is one.
pub struct Prompt<'a> {
    pub input: &'a mut dyn BufRead,
    pub output: &'a mut dyn Write,
}

impl Prompt<'_> {
    fn ask(&mut self, question: &str) -> anyhow::Result<String> {
        write!(self.output, "{question}")?;
        self.output.flush()?;
        let mut line = String::new();
        self.input.read_line(&mut line)?;
        Ok(line.trim().to_owned())
    }
}

/// Makes sure `service` has what it needs to start.
pub fn ensure_ready(home: &Home, service: &Service, prompt: Option<Prompt>) -> anyhow::Result<()> {
    match service.name() {
        "daemon" => daemon_providers(home, prompt),
        "telegram" => telegram_token(home, prompt),
        _ => Ok(()),
    }
}

/// Whether a provider is configured: a key in the env file, or a
/// `[[providers]]` entry in the daemon's `config.toml`.
pub fn has_provider_config(home: &Home) -> bool {
    let env = EnvFile::read(&home.env_file()).unwrap_or_default();
    if !env.vars.is_empty() {
        return true;
    }
    std::fs::read_to_string(home.config_file())
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|config| config.get("providers")?.as_array().map(|p| !p.is_empty()))
        .unwrap_or(false)
}

fn daemon_providers(home: &Home, prompt: Option<Prompt>) -> anyhow::Result<()> {
    if has_provider_config(home) {
        return Ok(());
    }
    let env = home.env_file();
    let Some(mut prompt) = prompt else {
        eprintln!(
            "note: no LLM provider key yet; the daemon starts without providers. Add one as \
             NAME=value (e.g. OPENAI_API_KEY=sk-…) to {}, then `crabup daemon restart`.",
            env.display()
        );
        return Ok(());
    };
    writeln!(prompt.output, "No LLM provider key is configured yet.")?;
    loop {
        let answer = prompt
            .ask("Paste one as NAME=value (e.g. OPENAI_API_KEY=sk-…), or press Enter to skip: ")?;
        if answer.is_empty() {
            writeln!(
                prompt.output,
                "Skipped; add keys to {} later.",
                env.display()
            )?;
            return Ok(());
        }
        let parsed = EnvFile::parse(&answer).map(|file| file.vars);
        if let Ok([var]) = parsed.as_deref() {
            let mut text = std::fs::read_to_string(&env).unwrap_or_default();
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&answer);
            text.push('\n');
            write_atomic_private(&env, text.as_bytes())
                .with_context(|| format!("saving {}", env.display()))?;
            writeln!(prompt.output, "Saved {} to {}.", var.key, env.display())?;
            return Ok(());
        }
        writeln!(prompt.output, "That is not NAME=value; try again.")?;
    }
}

fn telegram_token(home: &Home, prompt: Option<Prompt>) -> anyhow::Result<()> {
    let mut config = TelegramConfig::load(home)?;
    if config.has_token() {
        return Ok(());
    }
    let path = TelegramConfig::path(home);
    let Some(mut prompt) = prompt else {
        bail!(
            "telegram has no bot token, so it was not started. Run `crabup telegram start` in a \
             terminal to set it up, or write token = \"<token from @BotFather>\" to {}",
            path.display()
        );
    };
    config.token = loop {
        let token = prompt.ask("Telegram bot token (from @BotFather): ")?;
        if TelegramConfig::looks_like_token(&token) {
            break token;
        }
        writeln!(
            prompt.output,
            "A bot token looks like 123456:ABC-…; try again."
        )?;
    };
    config
        .save(home)
        .with_context(|| format!("saving {}", path.display()))?;
    writeln!(prompt.output, "Saved the token to {}.", path.display())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn telegram() -> Service {
        Service::new("telegram", "crabtalk-telegram", "t").unwrap()
    }

    #[test]
    fn telegram_without_a_terminal_fails_and_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let err = ensure_ready(&home, &telegram(), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no bot token") && err.contains("telegram.toml"),
            "{err}"
        );
    }

    #[test]
    fn telegram_asks_for_a_token_and_saves_it_privately() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let mut input = Cursor::new("not a token\n123:abc\n");
        let mut output = Vec::new();
        let prompt = Prompt {
            input: &mut input,
            output: &mut output,
        };
        ensure_ready(&home, &telegram(), Some(prompt)).unwrap();
        let path = home.component_config("telegram").unwrap();
        let saved: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(saved["token"].as_str(), Some("123:abc"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        assert!(String::from_utf8(output).unwrap().contains("try again"));
        // Configured now: no question asked, no terminal needed.
        ensure_ready(&home, &telegram(), None).unwrap();
    }

    #[test]
    fn the_daemon_starts_without_providers_and_can_save_a_key() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        ensure_ready(&home, &Service::daemon(), None).unwrap();
        assert!(!has_provider_config(&home));
        // A config without providers is still no provider.
        std::fs::write(home.config_file(), "[transport]\ntcp = \"off\"\n").unwrap();
        assert!(!has_provider_config(&home));
        let mut input = Cursor::new("OPENAI_API_KEY=sk-test\n");
        let mut output = Vec::new();
        let prompt = Prompt {
            input: &mut input,
            output: &mut output,
        };
        ensure_ready(&home, &Service::daemon(), Some(prompt)).unwrap();
        assert_eq!(
            std::fs::read_to_string(home.env_file()).unwrap(),
            "OPENAI_API_KEY=sk-test\n"
        );
        assert!(has_provider_config(&home));
    }
}
