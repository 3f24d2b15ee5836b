//! One rule for every service (finding 1 of issue 27): `crabup <name>
//! restart`, and `start` of a running service, first ask the service's
//! own `check` (the kit gives every component one); a file it would refuse
//! is named at file:line:column, first, and the running service keeps
//! running untouched. A running cron whose file turns bad keeps its last
//! good schedule and says so in `ps`.
//!
//! With the real binaries of this build: search, cron and telegram (the
//! daemon's side is `config_check.rs`), in a home whose env file names a
//! key, so a log line leaking into the error would show first.

use crabtalk_fake_bot_api::{FakeBotApi, TOKEN};

use crate::support::{Sandbox, TIMEOUT, stderr, stdout, wait_for};

/// One component: its binary, its file, a good and a broken text, and
/// where the broken one goes wrong.
struct Case {
    name: &'static str,
    binary: &'static str,
    file: &'static str,
    good: String,
    broken: String,
    /// `line:column: message start` of the broken file's problem.
    problem: &'static str,
}

fn cases(api: &FakeBotApi) -> Vec<Case> {
    let engines = "[engines.duckduckgo]\nbase_url = \"http://127.0.0.1:9\"\n\n[engines.mojeek]\nenabled = false\n\n[engines.wikipedia]\nenabled = false\n";
    let telegram = format!(
        "token = \"{TOKEN}\"\napi_base_url = \"{}\"\nallow = [111]\npoll_timeout_secs = 5\n",
        api.url()
    );
    vec![
        Case {
            name: "search",
            binary: "crabtalk-search",
            file: "search.toml",
            good: format!("{engines}\n[engines.bing]\nenabled = false\n"),
            broken: format!("{engines}\n[engines.bing]\nenabled = false\nwieght = 2.0\n"),
            problem: "12:1: unknown key `wieght` in [engines.bing]; did you mean `weight`?",
        },
        Case {
            name: "cron",
            binary: "crabtalk-cron",
            file: "crons.toml",
            good: "[[cron]]\nid = \"tick\"\nevery = \"1h\"\nmessage = \"m\"\n".into(),
            broken: "[[cron]]\nid = \"tick\"\nevry = \"5m\"\nmessage = \"m\"\n".into(),
            problem: "3:1: unknown key `evry`",
        },
        Case {
            name: "telegram",
            binary: "crabtalk-telegram",
            file: "telegram.toml",
            good: telegram.clone(),
            broken: telegram.replace("allow = [111]", "alow = [111]"),
            problem: "3:1: unknown key `alow`",
        },
    ]
}

fn pid_of(sandbox: &Sandbox, name: &str) -> u32 {
    let row = sandbox.ps_row(name);
    assert_eq!(row["state"], "running", "{row}");
    row["pid"].as_u64().unwrap() as u32
}

#[test]
fn a_broken_file_never_takes_a_running_component_down() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let api = runtime.block_on(FakeBotApi::start());
    for case in cases(&api) {
        let sandbox = Sandbox::new();
        sandbox.install_built(case.binary);
        std::fs::create_dir_all(&sandbox.home).unwrap();
        std::fs::write(sandbox.home.join("env"), "SOME_API_KEY=x\n").unwrap();
        let path = sandbox.config(case.file, &case.good);
        let name = case.name;
        sandbox.ok(&[name, "start"]);
        wait_for(&format!("{name} healthy"), TIMEOUT, || {
            (sandbox.ps_row(name)["health"]["status"] == "ok").then_some(())
        });
        let pid = pid_of(&sandbox, name);

        sandbox.config(case.file, &case.broken);
        let problem = format!("{}:{}", path.display(), case.problem);
        for action in ["restart", "start"] {
            let out = sandbox.crabup(&[name, action]);
            let err = stderr(&out);
            assert!(!out.status.success(), "{name} {action}: {}", stdout(&out));
            assert!(
                err.lines()
                    .next()
                    .unwrap_or_default()
                    .starts_with(&format!("crabup: error: {problem}")),
                "{name} {action}: the problem is not first:\n{err}"
            );
            assert!(
                err.contains(&format!("it keeps running as it is (pid {pid})")),
                "{name} {action}: {err}"
            );
            assert_eq!(pid_of(&sandbox, name), pid, "{name} {action} touched it");
        }
        if name == "cron" {
            // The running scheduler noticed the file and keeps its last
            // good schedule, saying so where ps shows it.
            let row = wait_for("cron degraded in ps", TIMEOUT, || {
                let row = sandbox.ps_row("cron");
                (row["health"]["status"] == "degraded").then_some(row)
            });
            let problems = row["health"]["problems"].to_string();
            assert!(
                problems.contains(case.problem)
                    && problems.contains("the last good schedule keeps running (1 entry)"),
                "{row}"
            );
        } else {
            assert_eq!(sandbox.ps_row(name)["health"]["status"], "ok");
        }

        // Fixed, the restart goes through.
        sandbox.config(case.file, &case.good);
        let restarted = sandbox.ok(&[name, "restart"]);
        assert!(restarted.contains(&format!("was pid {pid}")), "{restarted}");
        assert_ne!(pid_of(&sandbox, name), pid);

        // Stopped, with a broken file: not started, and said why.
        sandbox.ok(&[name, "stop"]);
        sandbox.config(case.file, &case.broken);
        let out = sandbox.crabup(&[name, "start"]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{name}: {}", stdout(&out));
        assert!(
            err.starts_with(&format!("crabup: error: {problem}")),
            "{name}: {err}"
        );
        assert!(
            err.contains(&format!("{name} was not started")) && err.contains("it is not running"),
            "{name}: {err}"
        );
        assert_eq!(sandbox.ps_row(name)["state"], "stopped");
    }
}
