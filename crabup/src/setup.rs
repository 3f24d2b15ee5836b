//! First-run setup, done by `start` before a service is installed.
//!
//! A service must never be left restart-looping on missing config, so
//! whatever a service cannot run without is checked before it starts:
//!
//! - telegram needs a bot token in `config/telegram.toml`. With a terminal,
//!   crabup asks for it, checks it with the Bot API's `getMe` (at the
//!   file's `api_base_url`, when set), and saves it (mode 0600) with the
//!   gateway's own config type, so the file is always one the gateway
//!   reads; an empty `allow` gets `pairing = true`. Only those keys are
//!   written: the rest of the file stays as it was, and nothing the user
//!   did not set is filled in. Enter instead of a token, or "no" to saving
//!   a token that could not be checked, stops without starting. Without a
//!   terminal, `start` fails and says how to provide it.
//! - the daemon starts without any provider, so it is never refused; when
//!   it would find no model (looked for as the daemon looks, see
//!   [`crate::providers`]), crabup says so, and with a terminal offers to
//!   save a key in `$CRABTALK_HOME/env` (mode 0600), which every service
//!   loads at start.

use std::io::{BufRead, Write};

use anyhow::{Context as _, bail};
use crabtalk_command::{ManagerKind, Service};
use crabtalk_home::{EnvFile, Home, write_atomic_private};
use crabtalk_telegram::TelegramConfig;
use crabtalk_telegram::get_me_blocking;

use crate::providers;

/// A terminal to ask questions on, when there is one.
pub(crate) struct Prompt<'a> {
    pub input: &'a mut dyn BufRead,
    pub output: &'a mut dyn Write,
    /// Whether `input` is the terminal on standard input, whose echo is
    /// turned off while a secret is typed.
    pub input_is_terminal: bool,
}

impl Prompt<'_> {
    fn ask(&mut self, question: &str) -> anyhow::Result<String> {
        write!(self.output, "{question}")?;
        self.output.flush()?;
        let mut line = String::new();
        self.input.read_line(&mut line)?;
        Ok(line.trim().to_owned())
    }

    /// Like [`Prompt::ask`], for a secret: what is typed is not shown.
    fn ask_secret(&mut self, question: &str) -> anyhow::Result<String> {
        if !self.input_is_terminal {
            return self.ask(question);
        }
        let hidden = crate::terminal::HiddenTyping::start();
        let answer = self.ask(question);
        drop(hidden);
        answer
    }
}

/// Makes sure `service` has what it needs to start under `manager`.
pub(crate) fn ensure_ready(
    home: &Home,
    manager: ManagerKind,
    service: &Service,
    prompt: Option<Prompt>,
) -> anyhow::Result<()> {
    match service.name() {
        "daemon" => daemon_providers(home, manager, prompt),
        "telegram" => telegram_token(home, prompt),
        _ => Ok(()),
    }
}

fn daemon_providers(
    home: &Home,
    manager: ManagerKind,
    prompt: Option<Prompt>,
) -> anyhow::Result<()> {
    let finding = providers::find(home, manager);
    if finding.found() {
        return Ok(());
    }
    let env = home.env_file();
    let Some(mut prompt) = prompt else {
        eprintln!(
            "note: {}; the daemon starts without one.",
            finding.describe(home, manager)
        );
        return Ok(());
    };
    writeln!(prompt.output, "{}.", finding.describe(home, manager))?;
    loop {
        let answer = prompt.ask_secret(
            "Paste one as NAME=value (e.g. OPENAI_API_KEY=sk-…; not shown as you type), or press Enter to skip: ",
        )?;
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
    let config = TelegramConfig::load(home)?;
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
    let api = config
        .api_url()
        .map_err(|err| anyhow::anyhow!("{}: api_base_url: {err}", path.display()))?;
    let not_started = || {
        format!(
            "telegram was not started: it has no bot token. Run `crabup telegram start` again, or \
             write token = \"<token from @BotFather>\" to {}",
            path.display()
        )
    };
    let token = loop {
        let token =
            prompt.ask_secret("Telegram bot token (from @BotFather; not shown as you type): ")?;
        // Enter (or the input ending) is the way out.
        if token.is_empty() {
            bail!("no token given; {}", not_started());
        }
        if !TelegramConfig::looks_like_token(&token) {
            writeln!(
                prompt.output,
                "A bot token looks like 123456:ABC-…; try again."
            )?;
            continue;
        }
        match get_me_blocking(&api, &token) {
            Ok(bot) => {
                writeln!(
                    prompt.output,
                    "Telegram knows this token: it is @{}.",
                    bot.username
                )?;
                break token;
            }
            Err(err) if err.is_transient() => {
                writeln!(prompt.output, "Could not check the token: {err}.")?;
                let answer = prompt.ask("Save it without checking? [y/N] ")?;
                if answer.eq_ignore_ascii_case("y") || answer.eq_ignore_ascii_case("yes") {
                    break token;
                }
                // Offline, every token fails the same way: asking again
                // would go round forever.
                bail!(
                    "the token was not saved (it could not be checked); {} — when the Bot API \
                     answers, it is checked then",
                    not_started()
                );
            }
            Err(err) => writeln!(prompt.output, "{err}. Try again (Enter to stop).")?,
        }
    };
    // Nobody may talk to a bot with an empty allow-list: let people ask
    // with a pairing code, approved on this machine.
    let pairing = config.allow.is_empty() && !config.pairing;
    // Only what was set here is written: the rest of the file stays as the
    // user wrote it, and what they never set keeps following the defaults.
    TelegramConfig::save_token(home, &token, pairing)
        .with_context(|| format!("saving {}", path.display()))?;
    writeln!(prompt.output, "Saved the token to {}.", path.display())?;
    if pairing {
        writeln!(
            prompt.output,
            "Nobody may talk to the bot yet. Pairing is on: whoever writes to it gets a code; \
             approve yours with `crabtalk-telegram pair approve <code>` (or list user ids in \
             `allow` in that file)."
        )?;
    }
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
        let err = ensure_ready(&home, ManagerKind::Process, &telegram(), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no bot token") && err.contains("telegram.toml"),
            "{err}"
        );
    }

    /// A fake Bot API in its own thread (the setup blocks on its own
    /// runtime).
    fn fake_bot_api() -> (
        String,
        std::thread::JoinHandle<()>,
        tokio::sync::oneshot::Sender<()>,
    ) {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let api = crabtalk_fake_bot_api::FakeBotApi::start().await;
                url_tx.send(api.url()).unwrap();
                let _ = stop_rx.await;
            });
        });
        (url_rx.recv().unwrap(), thread, stop_tx)
    }

    #[test]
    fn telegram_asks_for_a_token_checks_it_with_get_me_and_saves_it_privately() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let (url, thread, stop) = fake_bot_api();
        TelegramConfig {
            api_base_url: Some(url),
            ..Default::default()
        }
        .save(&home)
        .unwrap();
        let good = crabtalk_fake_bot_api::TOKEN;
        let mut input = Cursor::new(format!("not a token\n123:refused\n{good}\n"));
        let mut output = Vec::new();
        let prompt = Prompt {
            input: &mut input,
            output: &mut output,
            input_is_terminal: false,
        };
        ensure_ready(&home, ManagerKind::Process, &telegram(), Some(prompt)).unwrap();
        let path = home.component_config("telegram").unwrap();
        let saved: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(saved["token"].as_str(), Some(good));
        assert_eq!(saved["pairing"].as_bool(), Some(true));
        let said = String::from_utf8(output.clone()).unwrap();
        assert!(said.contains("Telegram refused the bot token"), "{said}");
        assert!(said.contains("it is @crab_test_bot"), "{said}");
        stop.send(()).unwrap();
        thread.join().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        assert!(String::from_utf8(output).unwrap().contains("try again"));
    }

    #[test]
    fn an_unreachable_bot_api_asks_before_saving_unchecked() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        TelegramConfig {
            api_base_url: Some(url),
            ..Default::default()
        }
        .save(&home)
        .unwrap();
        let mut input = Cursor::new("123:abc\ny\n");
        let mut output = Vec::new();
        let prompt = Prompt {
            input: &mut input,
            output: &mut output,
            input_is_terminal: false,
        };
        ensure_ready(&home, ManagerKind::Process, &telegram(), Some(prompt)).unwrap();
        let said = String::from_utf8(output).unwrap();
        assert!(said.contains("Could not check the token"), "{said}");
        assert_eq!(TelegramConfig::load(&home).unwrap().token, "123:abc");
        // Configured now: no question asked, no terminal needed.
        ensure_ready(&home, ManagerKind::Process, &telegram(), None).unwrap();
    }

    /// Runs the telegram setup with `input` in a thread of its own, so a
    /// setup that asks forever fails the test instead of hanging it.
    fn telegram_setup(home: &Home, input: &str) -> (anyhow::Result<()>, String) {
        let (done, result) = std::sync::mpsc::channel();
        let home = home.clone();
        let input = input.to_owned();
        std::thread::spawn(move || {
            let mut input = Cursor::new(input);
            // A setup asking in circles fails once it has said 1 MiB.
            let mut buffer = vec![0u8; 1 << 20];
            let mut output = Cursor::new(&mut buffer[..]);
            let prompt = Prompt {
                input: &mut input,
                output: &mut output,
                input_is_terminal: false,
            };
            let outcome = ensure_ready(&home, ManagerKind::Process, &telegram(), Some(prompt));
            let len = output.position() as usize;
            let said = String::from_utf8_lossy(&buffer[..len]).into_owned();
            let _ = done.send((outcome, said));
        });
        result
            .recv_timeout(crabtalk_testkit::PATIENCE)
            .expect("the setup kept asking")
    }

    #[test]
    fn no_to_saving_an_unchecked_token_and_enter_are_ways_out() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        let path = home.component_config("telegram").unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("api_base_url = \"{url}\"\n")).unwrap();
        let (outcome, said) = telegram_setup(&home, "123:abc\nn\n");
        let err = outcome.unwrap_err().to_string();
        assert!(said.contains("Could not check the token"), "{said}");
        assert!(
            err.contains("the token was not saved") && err.contains("crabup telegram start"),
            "{err}"
        );
        assert!(!TelegramConfig::load(&home).unwrap().has_token());
        // Enter instead of a token (or the input ending) stops too.
        let (outcome, _) = telegram_setup(&home, "\n");
        let err = outcome.unwrap_err().to_string();
        assert!(err.contains("no token given"), "{err}");
        let (outcome, _) = telegram_setup(&home, "not a token\n");
        assert!(outcome.is_err());
    }

    #[test]
    fn setup_writes_only_what_it_set() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let (url, thread, stop) = fake_bot_api();
        let path = home.component_config("telegram").unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mine = format!("# the bot of the house\napi_base_url = \"{url}\"\n");
        std::fs::write(&path, &mine).unwrap();
        let good = crabtalk_fake_bot_api::TOKEN;
        let (outcome, said) = telegram_setup(&home, &format!("{good}\n"));
        outcome.unwrap();
        stop.send(()).unwrap();
        thread.join().unwrap();
        assert!(said.contains("Saved the token"), "{said}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{mine}token = \"{good}\"\npairing = true\n")
        );
    }

    #[test]
    fn the_daemon_starts_without_providers_and_can_save_a_key() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        ensure_ready(&home, ManagerKind::Systemd, &Service::daemon(), None).unwrap();
        assert!(!providers::find(&home, ManagerKind::Systemd).found());
        // A config without providers is still no provider.
        std::fs::write(home.config_file(), "[transport]\ntcp = \"off\"\n").unwrap();
        assert!(!providers::find(&home, ManagerKind::Systemd).found());
        let mut input = Cursor::new("OPENAI_API_KEY=sk-test\n");
        let mut output = Vec::new();
        let prompt = Prompt {
            input: &mut input,
            output: &mut output,
            input_is_terminal: false,
        };
        ensure_ready(
            &home,
            ManagerKind::Systemd,
            &Service::daemon(),
            Some(prompt),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(home.env_file()).unwrap(),
            "OPENAI_API_KEY=sk-test\n"
        );
        assert!(providers::find(&home, ManagerKind::Systemd).found());
    }
}
