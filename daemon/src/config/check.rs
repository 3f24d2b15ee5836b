//! Checking a home's configuration without a daemon: what `crabtalkd check`
//! prints, and what `crabup` asks before it restarts a running daemon.
//!
//! The checks are the ones the daemon applies when it starts or reloads
//! (the same loaders), so a clean check means the daemon would take every
//! file as it is.

use std::fmt::Write;

use crabtalk_home::Home;

use super::agent::{AgentStore, LoadedAgents};
use super::{DaemonConfig, Problem, Refusal};

/// What checking a home found.
#[derive(Debug)]
pub struct HomeCheck {
    pub config: Result<DaemonConfig, Refusal>,
    pub agents: LoadedAgents,
}

impl HomeCheck {
    /// Reads `config.toml` and every agent file of `home`.
    pub fn run(home: &Home) -> Self {
        let config = DaemonConfig::load(&home.config_file());
        // A config.toml with problems may still say what the providers
        // serve; the agents are checked against that.
        let served = match &config {
            Ok(config) => config.served_models(),
            Err(_) => std::fs::read_to_string(home.config_file())
                .ok()
                .and_then(|text| toml::from_str::<DaemonConfig>(&text).ok())
                .and_then(|config| config.served_models()),
        };
        let agents = AgentStore::new(home.agents_dir()).load_all(served.as_ref());
        Self { config, agents }
    }

    /// Every problem, `config.toml` first, then agents by name.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if let Err(err) = &self.config {
            problems.extend(err.problems.iter().cloned());
        }
        for refused in &self.agents.refused {
            problems.extend(refused.error.problems.iter().cloned());
        }
        problems
    }

    /// Whether the daemon would take every file as it is.
    pub fn is_clean(&self) -> bool {
        self.config.is_ok() && self.agents.refused.is_empty()
    }

    /// The report for a person: every problem on its own line, then one
    /// line that sums up.
    pub fn report(&self, home: &Home) -> String {
        let mut out = String::new();
        for problem in self.problems() {
            let _ = writeln!(out, "{problem}");
        }
        let files = self.agents.refused.len() + usize::from(self.config.is_err());
        if files == 0 {
            let mut names: Vec<&str> = self
                .agents
                .agents
                .iter()
                .map(|agent| agent.name.as_str())
                .collect();
            names.sort_unstable();
            let agents = match names.len() {
                0 => "no agent files yet".to_owned(),
                _ => format!("agents {}", names.join(", ")),
            };
            let _ = write!(
                out,
                "the configuration in {} is fine: config.toml and {agents}",
                home.root().display()
            );
        } else {
            let count = self.problems().len();
            let _ = write!(
                out,
                "{count} problem{} in {files} file{}: the daemon would refuse {}",
                plural(count),
                plural(files),
                if files == 1 { "it" } else { "them" }
            );
        }
        out
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_home_is_fine_and_a_broken_one_lists_every_problem() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let check = HomeCheck::run(&home);
        assert!(check.is_clean());
        assert!(
            check.report(&home).contains("is fine"),
            "{}",
            check.report(&home)
        );

        std::fs::create_dir_all(home.agents_dir()).unwrap();
        std::fs::write(home.config_file(), "[llm]\nmax_retrys = 3\n").unwrap();
        std::fs::write(home.agents_dir().join("scout.toml"), "tols = []\n").unwrap();
        std::fs::write(home.agents_dir().join("crab.toml"), "").unwrap();
        let check = HomeCheck::run(&home);
        assert!(!check.is_clean());
        let report = check.report(&home);
        let lines: Vec<&str> = report.lines().collect();
        assert!(
            lines[0].ends_with(
                "config.toml:2:1: unknown key `max_retrys` in [llm]; did you mean `max_retries`?"
            ),
            "{report}"
        );
        assert!(
            lines[1].ends_with("scout.toml:1:1: unknown key `tols`; did you mean `tools`?"),
            "{report}"
        );
        assert_eq!(
            lines[2],
            "2 problems in 2 files: the daemon would refuse them"
        );
    }
}
