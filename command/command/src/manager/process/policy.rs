//! When a supervisor starts a service again: systemd's
//! `Restart=on-failure`, with a backoff and a start limit.
//!
//! - A clean end is not restarted: exit status 0, or the signals systemd
//!   counts as clean (SIGTERM, SIGINT, SIGHUP, SIGPIPE) — whoever sent
//!   them meant the service to stop. (`crabup <name> stop` goes through
//!   the supervisor, which then stops too.)
//! - Exit status 78 (`EX_CONFIG`) and 69 (`EX_UNAVAILABLE`) are not
//!   restarted: a restart cannot fix a file or build a binary (the units'
//!   `RestartPreventExitStatus`).
//! - A first start that ends inside its watch window is not restarted: the
//!   person who typed `start` is told at once, with the log.
//! - Anything else is a failure, restarted after a delay that starts at
//!   [`RestartPolicy::first_delay`] and doubles up to
//!   [`RestartPolicy::max_delay`]; a run that lasted
//!   [`RestartPolicy::settled_after`] starts the doubling over.
//! - More than [`RestartPolicy::burst`] restarts within
//!   [`RestartPolicy::interval`] and the supervisor gives up: a service
//!   that cannot stay up is left failed, with its last exit, rather than
//!   restarted forever.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The restart rules (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    pub first_delay: Duration,
    pub max_delay: Duration,
    pub settled_after: Duration,
    pub burst: usize,
    pub interval: Duration,
}

impl Default for RestartPolicy {
    /// 1 s, doubling to 1 min; at most 5 restarts in 10 min.
    fn default() -> Self {
        Self {
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            settled_after: Duration::from_secs(60),
            burst: 5,
            interval: Duration::from_secs(600),
        }
    }
}

/// How a service's process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    #[cfg(unix)]
    pub fn of(status: std::process::ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Code(code),
            (None, Some(signal)) => Self::Signal(signal),
            (None, None) => Self::Code(-1),
        }
    }

    /// Whether it is an end systemd's `on-failure` does not restart.
    pub fn is_clean(self) -> bool {
        match self {
            Self::Code(code) => code == 0,
            Self::Signal(signal) => CLEAN_SIGNALS.contains(&signal),
        }
    }

    /// Whether no restart can help (`EX_CONFIG`, `EX_UNAVAILABLE`).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Code(CONFIG | UNAVAILABLE))
    }

    /// In words: `exited with status 1`, `killed by signal 9 (SIGKILL)`.
    pub fn describe(self) -> String {
        match self {
            Self::Code(CONFIG) => {
                format!("exited with status {CONFIG} (its configuration is refused)")
            }
            Self::Code(UNAVAILABLE) => {
                format!("exited with status {UNAVAILABLE} (unavailable)")
            }
            Self::Code(code) => format!("exited with status {code}"),
            Self::Signal(signal) => match signal_name(signal) {
                Some(name) => format!("killed by signal {signal} ({name})"),
                None => format!("killed by signal {signal}"),
            },
        }
    }
}

/// `EX_CONFIG` and `EX_UNAVAILABLE` as exit statuses.
const CONFIG: i32 = crabtalk_home::exit::EX_CONFIG as i32;
const UNAVAILABLE: i32 = crabtalk_home::exit::EX_UNAVAILABLE as i32;

/// SIGHUP, SIGINT, SIGPIPE, SIGTERM: what systemd counts as a clean end.
const CLEAN_SIGNALS: [i32; 4] = [1, 2, 13, 15];

fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// What the supervisor does after an exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Start it again after `delay`; it will be restart number `restart`.
    Restart { delay: Duration, restart: u32 },
    /// A clean end: not restarted, not a failure.
    Exited,
    /// Not restarted: `why`.
    Failed { why: String },
    /// The start limit: `why`.
    GaveUp { why: String },
}

/// The restarts of one supervisor, judged by its policy.
#[derive(Debug, Clone)]
pub struct Restarts {
    policy: RestartPolicy,
    /// When each restart within the interval happened.
    recent: VecDeque<Instant>,
    /// Failures in a row without a settled run (for the backoff).
    in_a_row: u32,
    total: u32,
}

impl Restarts {
    pub fn new(policy: RestartPolicy) -> Self {
        Self {
            policy,
            recent: VecDeque::new(),
            in_a_row: 0,
            total: 0,
        }
    }

    /// How many restarts so far.
    pub fn total(&self) -> u32 {
        self.total
    }

    /// What to do after `exit` of a process that ran for `ran`; `first`
    /// when it was the first start and ended inside its watch window.
    pub fn after(&mut self, exit: Exit, ran: Duration, first: bool, now: Instant) -> Decision {
        if exit.is_clean() {
            return Decision::Exited;
        }
        if exit.is_final() {
            return Decision::Failed {
                why: format!(
                    "{}: a restart cannot help, so it was not restarted",
                    exit.describe()
                ),
            };
        }
        if first {
            return Decision::Failed {
                why: format!("{} right after it started", exit.describe()),
            };
        }
        if ran >= self.policy.settled_after {
            self.in_a_row = 0;
        }
        while self
            .recent
            .front()
            .is_some_and(|at| now.duration_since(*at) > self.policy.interval)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= self.policy.burst {
            return Decision::GaveUp {
                why: format!(
                    "{}; it was restarted {} times within {} and is not restarted again",
                    exit.describe(),
                    self.recent.len(),
                    human(self.policy.interval)
                ),
            };
        }
        let doublings = self.in_a_row.min(16);
        let delay = self
            .policy
            .first_delay
            .saturating_mul(1 << doublings)
            .min(self.policy.max_delay);
        self.in_a_row += 1;
        self.total += 1;
        self.recent.push_back(now);
        Decision::Restart {
            delay,
            restart: self.total,
        }
    }
}

/// `10 min`, `1 min`, `30 s`.
pub fn human(duration: Duration) -> String {
    let secs = duration.as_secs();
    if secs >= 60 && secs.is_multiple_of(60) {
        format!("{} min", secs / 60)
    } else {
        format!("{} s", duration.as_secs_f64().ceil() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KILLED: Exit = Exit::Signal(9);
    const BRIEF: Duration = Duration::from_secs(2);

    #[test]
    fn clean_ends_and_final_codes_are_not_restarted() {
        let mut restarts = Restarts::new(RestartPolicy::default());
        let now = Instant::now();
        for clean in [
            Exit::Code(0),
            Exit::Signal(15),
            Exit::Signal(2),
            Exit::Signal(1),
        ] {
            assert_eq!(restarts.after(clean, BRIEF, false, now), Decision::Exited);
        }
        for code in [78, 69] {
            assert!(matches!(
                restarts.after(Exit::Code(code), BRIEF, false, now),
                Decision::Failed { why } if why.contains("cannot help")
            ));
        }
        assert!(matches!(
            restarts.after(Exit::Code(1), BRIEF, true, now),
            Decision::Failed { why } if why == "exited with status 1 right after it started"
        ));
        assert_eq!(restarts.total(), 0);
    }

    #[test]
    fn failures_back_off_doubling_and_a_settled_run_starts_over() {
        let mut restarts = Restarts::new(RestartPolicy {
            burst: 100,
            ..RestartPolicy::default()
        });
        let start = Instant::now();
        let delays: Vec<u64> = (0..8)
            .map(
                |n| match restarts.after(KILLED, BRIEF, false, start + Duration::from_secs(n)) {
                    Decision::Restart { delay, .. } => delay.as_secs(),
                    other => panic!("{other:?}"),
                },
            )
            .collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60]);
        let settled = restarts.after(KILLED, Duration::from_secs(61), false, start);
        assert_eq!(
            settled,
            Decision::Restart {
                delay: Duration::from_secs(1),
                restart: 9
            }
        );
    }

    #[test]
    fn the_start_limit_gives_up_and_forgets_old_restarts() {
        let mut restarts = Restarts::new(RestartPolicy::default());
        let start = Instant::now();
        for n in 0..5 {
            let at = start + Duration::from_secs(n * 10);
            assert!(matches!(
                restarts.after(KILLED, BRIEF, false, at),
                Decision::Restart { .. }
            ));
        }
        let sixth = restarts.after(KILLED, BRIEF, false, start + Duration::from_secs(60));
        assert!(
            matches!(&sixth, Decision::GaveUp { why } if why.contains("killed by signal 9 (SIGKILL); it was restarted 5 times within 10 min")),
            "{sixth:?}"
        );
        // Ten minutes after the first ones, there is room again.
        let later = start + Duration::from_secs(700);
        assert!(matches!(
            restarts.after(KILLED, BRIEF, false, later),
            Decision::Restart { .. }
        ));
    }

    #[test]
    fn exits_read_as_words() {
        assert_eq!(KILLED.describe(), "killed by signal 9 (SIGKILL)");
        assert_eq!(Exit::Code(3).describe(), "exited with status 3");
        assert_eq!(Exit::Signal(64).describe(), "killed by signal 64");
        assert!(Exit::Code(78).describe().contains("configuration"));
    }
}
