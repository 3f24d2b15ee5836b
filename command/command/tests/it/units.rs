//! Rendered units: snapshots, real parsers, real tools, hostile values.
//!
//! Every unit format is rendered for the daemon and each component and
//! checked four ways: against a reviewed snapshot; by parsing it the way
//! its consumer does (XML for plists and task XML; systemd's quoting rules,
//! and `systemd-analyze verify` itself, for systemd units); by parsing the
//! command line it runs with the component's own clap definition; and with
//! hostile values (spaces, quotes, `&`, `<`, newlines, `%`, `$`), which
//! must either survive exactly or be refused with an error naming them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crabtalk_command::{Service, UnitFormat, UnitSpec};
use crabtalk_home::Home;
use crabtalk_kit::cli::run_command;

fn search() -> Service {
    Service::new("search", "crabtalk-search", "crabtalk meta-search service").unwrap()
}

fn spec(service: Service, home: &str, program: &str) -> UnitSpec {
    UnitSpec::new(
        service,
        &Home::new(home),
        PathBuf::from(program),
        "/home/crab/.cargo/bin:/usr/local/bin:/usr/bin:/bin".into(),
    )
}

fn daemon_spec() -> UnitSpec {
    spec(
        Service::daemon(),
        "/home/crab/.crabtalk",
        "/home/crab/.cargo/bin/crabtalkd",
    )
}

fn search_spec() -> UnitSpec {
    spec(
        search(),
        "/home/crab/.crabtalk",
        "/home/crab/.cargo/bin/crabtalk-search",
    )
}

fn component_spec(name: &str, description: &str) -> UnitSpec {
    let binary = format!("crabtalk-{name}");
    spec(
        Service::new(name, &binary, description).unwrap(),
        "/home/crab/.crabtalk",
        &format!("/home/crab/.cargo/bin/{binary}"),
    )
}

#[test]
fn snapshots_of_every_unit() {
    for (who, spec) in [
        ("daemon", daemon_spec()),
        ("search", search_spec()),
        (
            "telegram",
            component_spec("telegram", "crabtalk Telegram gateway"),
        ),
        ("cron", component_spec("cron", "crabtalk scheduler")),
    ] {
        for format in UnitFormat::ALL {
            let text = spec.render(format).unwrap();
            insta::assert_snapshot!(format!("{who}_{format}"), text);
        }
    }
}

// ---- systemd -------------------------------------------------------------

/// Splits a systemd command line or assignment into words, undoing quoting,
/// C escapes, `%%` and (for command lines) `$$`, the way systemd reads them.
fn systemd_words(line: &str, command_line: bool) -> Vec<String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    // The program is not subject to `$` expansion, only its arguments.
    let mut expands_dollars = false;
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let Some(first) = chars.next() else { break };
        assert_eq!(first, '"', "every word is quoted in {line:?}");
        let mut word = String::new();
        loop {
            match chars.next().expect("unterminated quote") {
                '"' => break,
                '\\' => match chars.next().unwrap() {
                    'n' => word.push('\n'),
                    't' => word.push('\t'),
                    'r' => word.push('\r'),
                    '\\' => word.push('\\'),
                    '"' => word.push('"'),
                    'x' => {
                        let hex: String = [chars.next().unwrap(), chars.next().unwrap()]
                            .iter()
                            .collect();
                        word.push(u8::from_str_radix(&hex, 16).unwrap() as char);
                    }
                    other => panic!("unexpected escape \\{other}"),
                },
                '%' => {
                    assert_eq!(chars.next(), Some('%'), "a lone % is a specifier");
                    word.push('%');
                }
                '$' if expands_dollars => {
                    assert_eq!(chars.next(), Some('$'), "a lone $ is a variable");
                    word.push('$');
                }
                c => word.push(c),
            }
        }
        words.push(word);
        expands_dollars = command_line;
    }
    words
}

fn systemd_values<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines()
        .filter_map(|line| line.strip_prefix(key)?.strip_prefix('='))
        .collect()
}

fn systemd_path_value(raw: &str) -> String {
    raw.replace("%%", "%")
}

/// Runs `systemd-analyze verify` on `unit` and returns everything it said;
/// `None` when the tool is not installed.
fn systemd_analyze(unit: &str, name: &str) -> Option<(bool, String)> {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("systemd-analyze is not installed; skipping the systemd check");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, unit).unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--user"])
        .arg(&path)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("SYSTEMD_LOG_COLOR", "0")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status.success(), said))
}

/// An executable at `dir/<name>` (systemd-analyze checks ExecStart's).
fn fake_binary(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

#[test]
fn systemd_units_pass_systemd_analyze_verify_without_warnings() {
    let dir = tempfile::tempdir().unwrap();
    for (service, binary) in [
        (Service::daemon(), "crabtalkd"),
        (search(), "crabtalk-search"),
    ] {
        let program = fake_binary(dir.path(), binary);
        let home = dir.path().join("home");
        let spec = spec(service, home.to_str().unwrap(), program.to_str().unwrap());
        let unit = spec.render(UnitFormat::Systemd).unwrap();
        let name = format!("{}.service", spec.service.label());
        let Some((ok, said)) = systemd_analyze(&unit, &name) else {
            return;
        };
        assert!(
            ok && said.trim().is_empty(),
            "systemd-analyze on {name}:\n{said}\n{unit}"
        );
    }
}

#[test]
fn systemd_analyze_catches_a_broken_unit() {
    // The check above must have teeth: a unit whose binary is missing and
    // which has an unknown key is reported.
    let unit = "[Service]\nExecStart=/definitely/missing run\nBogus=1\n";
    let Some((ok, said)) = systemd_analyze(unit, "ai.crabtalk.broken.service") else {
        return;
    };
    assert!(
        !ok || !said.trim().is_empty(),
        "nothing reported for a broken unit"
    );
}

#[test]
fn systemd_units_run_the_binary_with_home_path_and_logs() {
    let spec = search_spec();
    let unit = spec.render(UnitFormat::Systemd).unwrap();
    let exec = systemd_values(&unit, "ExecStart");
    assert_eq!(exec.len(), 1);
    assert_eq!(systemd_words(exec[0], true), spec.command_line());
    let env: Vec<Vec<String>> = systemd_values(&unit, "Environment")
        .iter()
        .map(|v| systemd_words(v, false))
        .collect();
    assert_eq!(
        env,
        [
            vec!["CRABTALK_HOME=/home/crab/.crabtalk".to_owned()],
            vec![format!("PATH={}", spec.path_env)],
        ]
    );
    assert_eq!(
        systemd_values(&unit, "WorkingDirectory"),
        ["/home/crab/.crabtalk"]
    );
    assert_eq!(
        systemd_values(&unit, "EnvironmentFile"),
        ["-/home/crab/.crabtalk/env"]
    );
    let log = "append:/home/crab/.crabtalk/logs/search.log";
    assert_eq!(systemd_values(&unit, "StandardOutput"), [log]);
    assert_eq!(systemd_values(&unit, "StandardError"), [log]);
    assert_eq!(systemd_values(&unit, "Restart"), ["on-failure"]);
    assert_eq!(systemd_values(&unit, "RestartSec"), ["5"]);
    // A config error (78) or a component a program that cannot run here (69) will not be
    // mended by starting again.
    assert_eq!(systemd_values(&unit, "RestartPreventExitStatus"), ["78 69"]);
}

// ---- XML -----------------------------------------------------------------

/// The value following `<key>name</key>` in a plist dict.
fn plist_value<'a, 'i>(dict: roxmltree::Node<'a, 'i>, name: &str) -> roxmltree::Node<'a, 'i> {
    let mut children = dict.children().filter(|n| n.is_element());
    while let Some(node) = children.next() {
        if node.has_tag_name("key") && node.text() == Some(name) {
            return children
                .next()
                .unwrap_or_else(|| panic!("{name} has no value"));
        }
    }
    panic!("no key {name}")
}

fn text(node: roxmltree::Node) -> String {
    node.text().unwrap_or("").to_owned()
}

/// Checks a plist's structure and returns its decoded values.
fn parse_plist(xml: &str) -> (Vec<String>, String, String, String, String) {
    let doc = roxmltree::Document::parse_with_options(
        xml,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("invalid plist XML: {e}\n{xml}"));
    let plist = doc.root_element();
    assert!(plist.has_tag_name("plist"));
    let dict = plist.children().find(|n| n.is_element()).unwrap();
    assert!(dict.has_tag_name("dict"));
    let args: Vec<String> = plist_value(dict, "ProgramArguments")
        .children()
        .filter(|n| n.is_element())
        .map(|n| {
            assert!(n.has_tag_name("string"));
            text(n)
        })
        .collect();
    let env = plist_value(dict, "EnvironmentVariables");
    assert!(env.has_tag_name("dict"));
    let out = text(plist_value(dict, "StandardOutPath"));
    assert_eq!(out, text(plist_value(dict, "StandardErrorPath")));
    assert!(plist_value(dict, "RunAtLoad").has_tag_name("true"));
    let keep_alive = plist_value(dict, "KeepAlive");
    assert!(plist_value(keep_alive, "SuccessfulExit").has_tag_name("false"));
    assert_eq!(text(plist_value(dict, "ThrottleInterval")), "10");
    (
        args,
        text(plist_value(dict, "WorkingDirectory")),
        text(plist_value(env, "CRABTALK_HOME")),
        text(plist_value(env, "PATH")),
        out,
    )
}

#[test]
fn plists_parse_as_xml_with_the_expected_structure() {
    let spec = daemon_spec();
    let xml = spec.render(UnitFormat::Launchd).unwrap();
    let (args, cwd, home, path, log) = parse_plist(&xml);
    assert_eq!(args, spec.command_line());
    assert_eq!(cwd, "/home/crab/.crabtalk");
    assert_eq!(home, "/home/crab/.crabtalk");
    assert_eq!(path, spec.path_env);
    assert_eq!(log, "/home/crab/.crabtalk/logs/daemon.log");
    let doc = roxmltree::Document::parse_with_options(
        &xml,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .unwrap();
    let dict = doc
        .root_element()
        .children()
        .find(|n| n.is_element())
        .unwrap();
    assert_eq!(text(plist_value(dict, "Label")), "ai.crabtalk.daemon");
}

/// The task XML's action: command, arguments, working directory.
fn parse_task(xml: &str) -> (String, String, String) {
    // Parsed as printed: the declaration says what the text is.
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"),
        "{xml}"
    );
    let doc =
        roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("invalid task XML: {e}\n{xml}"));
    let task = doc.root_element();
    assert!(task.has_tag_name("Task"));
    let find = |path: &[&str]| {
        let mut node = task;
        for name in path {
            node = node
                .children()
                .find(|n| n.has_tag_name(*name))
                .unwrap_or_else(|| panic!("no {name} in {path:?}"));
        }
        node
    };
    assert!(find(&["Triggers", "LogonTrigger"]).is_element());
    assert_eq!(
        text(find(&["Settings", "RestartOnFailure", "Interval"])),
        "PT1M"
    );
    assert_eq!(text(find(&["Settings", "ExecutionTimeLimit"])), "PT0S");
    assert_eq!(
        text(find(&["Principals", "Principal", "LogonType"])),
        "InteractiveToken"
    );
    (
        text(find(&["Actions", "Exec", "Command"])),
        text(find(&["Actions", "Exec", "Arguments"])),
        text(find(&["Actions", "Exec", "WorkingDirectory"])),
    )
}

/// Undoes the cmd.exe line the task runs: `set` values, the program words
/// and the log it appends to.
fn parse_cmd_line(arguments: &str) -> (Vec<(String, String)>, Vec<String>, String) {
    let inner = arguments
        .strip_prefix("/d /v:off /s /c \"")
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or_else(|| panic!("unexpected arguments {arguments:?}"));
    let (commands, log) = inner.rsplit_once(" >>").unwrap();
    let log = log.strip_suffix(" 2>&1").unwrap();
    let unquote = |word: &str| -> String {
        word.strip_prefix('"')
            .and_then(|w| w.strip_suffix('"'))
            .unwrap()
            .to_owned()
    };
    let mut parts: Vec<&str> = commands.split(" && ").collect();
    let program = parts.pop().unwrap();
    let sets = parts
        .iter()
        .map(|part| {
            let assignment = unquote(part.strip_prefix("set ").unwrap());
            let (k, v) = assignment.split_once('=').unwrap();
            (k.to_owned(), v.to_owned())
        })
        .collect();
    // Words are quoted and cannot hold quotes: split on `" "`.
    let words = program
        .strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .unwrap()
        .split("\" \"")
        .map(str::to_owned)
        .collect();
    (sets, words, unquote(log))
}

#[test]
fn task_xml_parses_with_the_expected_structure() {
    let spec = search_spec();
    let xml = spec.render(UnitFormat::Schtasks).unwrap();
    let (command, arguments, cwd) = parse_task(&xml);
    assert_eq!(command, "cmd.exe");
    assert_eq!(cwd, "/home/crab/.crabtalk");
    let (sets, words, log) = parse_cmd_line(&arguments);
    assert_eq!(
        sets,
        [
            (
                "CRABTALK_HOME".to_owned(),
                "/home/crab/.crabtalk".to_owned()
            ),
            ("PATH".to_owned(), spec.path_env.clone()),
        ]
    );
    assert_eq!(words, spec.command_line());
    assert_eq!(log, "/home/crab/.crabtalk/logs/search.log");
}

// ---- command lines against the binary's own CLI --------------------------

/// The argv each format's unit runs.
fn rendered_argv(spec: &UnitSpec, format: UnitFormat) -> Vec<String> {
    let text = spec.render(format).unwrap();
    match format {
        UnitFormat::Systemd => systemd_words(systemd_values(&text, "ExecStart")[0], true),
        UnitFormat::Launchd => parse_plist(&text).0,
        UnitFormat::Schtasks => parse_cmd_line(&parse_task(&text).1).1,
    }
}

#[test]
fn every_unit_runs_a_command_line_its_binary_accepts() {
    let cli = run_command("crabtalk-search", "search");
    for format in UnitFormat::ALL {
        let argv = rendered_argv(&search_spec(), format);
        assert_eq!(argv[0], "/home/crab/.cargo/bin/crabtalk-search");
        if let Err(err) = cli.clone().try_get_matches_from(&argv) {
            panic!("{format} unit runs {argv:?}, which the binary rejects: {err}");
        }
    }
}

#[test]
fn a_unit_with_a_command_the_binary_rejects_fails_the_check() {
    let cli = run_command("crabtalk-search", "search");
    let wrong = spec(
        search().with_args(&["start"]),
        "/home/crab/.crabtalk",
        "/home/crab/.cargo/bin/crabtalk-search",
    );
    for format in UnitFormat::ALL {
        let argv = rendered_argv(&wrong, format);
        assert!(
            cli.clone().try_get_matches_from(&argv).is_err(),
            "{format}: {argv:?} accepted"
        );
    }
}

// ---- hostile values ------------------------------------------------------

const HOSTILE_DIR: &str = "we ird \"q\" & <b> 'a' 50%h $HOME ;x\\y";

/// What systemd still allows in the path of the program it runs.
const HOSTILE_PROGRAM_DIR: &str = "we ird & <b> 50%h $HOME ;x";

#[test]
fn hostile_values_survive_exactly_in_systemd_units() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(HOSTILE_DIR);
    let program = fake_binary(&dir.path().join(HOSTILE_PROGRAM_DIR), "bin/crabtalk-search");
    let home = root.join("home");
    let mut spec = spec(search(), home.to_str().unwrap(), program.to_str().unwrap());
    spec.path_env = format!("{}:/usr/bin:$PATH\n%u", root.display());
    let unit = spec.render(UnitFormat::Systemd).unwrap();
    assert_eq!(
        systemd_words(systemd_values(&unit, "ExecStart")[0], true),
        spec.command_line()
    );
    let env: Vec<String> = systemd_values(&unit, "Environment")
        .iter()
        .flat_map(|v| systemd_words(v, false))
        .collect();
    assert_eq!(env[0], format!("CRABTALK_HOME={}", home.display()));
    assert_eq!(env[1], format!("PATH={}", spec.path_env));
    assert_eq!(
        systemd_path_value(systemd_values(&unit, "WorkingDirectory")[0]),
        home.to_str().unwrap()
    );
    assert_eq!(
        systemd_path_value(systemd_values(&unit, "StandardOutput")[0]),
        format!("append:{}", home.join("logs/search.log").display())
    );
    // No line break got in: every line is a comment, a section or key=value.
    for line in unit.lines().filter(|l| !l.is_empty()) {
        assert!(
            line.starts_with('#') || line.starts_with('[') || line.contains('='),
            "stray line {line:?}"
        );
    }
    if let Some((ok, said)) = systemd_analyze(&unit, "ai.crabtalk.search.service") {
        assert!(
            ok && said.trim().is_empty(),
            "systemd-analyze:\n{said}\n{unit}"
        );
    }
}

#[test]
fn values_systemd_cannot_hold_are_refused_with_their_name() {
    let mut spec = search_spec();
    spec.home = PathBuf::from("/home/line\nbreak");
    let err = spec.render(UnitFormat::Systemd).unwrap_err();
    assert!(
        err.to_string().contains("CRABTALK_HOME") || err.to_string().contains("working directory"),
        "{err}"
    );
    assert!(err.to_string().contains("line\\nbreak"), "{err}");
    let mut relative = search_spec();
    relative.program = PathBuf::from("bin/crabtalk-search");
    assert!(relative.render(UnitFormat::Systemd).is_err());
    let mut quoted = search_spec();
    quoted.program = PathBuf::from("/opt/\"x\"/crabtalk-search");
    let err = quoted.render(UnitFormat::Systemd).unwrap_err();
    assert!(err.to_string().contains("program"), "{err}");
}

#[test]
fn hostile_values_survive_exactly_in_plists() {
    let home = format!("/tmp/{HOSTILE_DIR}\nline2\t]]>");
    let mut spec = spec(search(), &home, &format!("{home}/bin/crabtalk-search"));
    spec.path_env = "/a&b:<c>:\"d\":$PATH:%p".into();
    let (args, cwd, env_home, path, log) = parse_plist(&spec.render(UnitFormat::Launchd).unwrap());
    assert_eq!(args, spec.command_line());
    assert_eq!(cwd, home);
    assert_eq!(env_home, home);
    assert_eq!(path, spec.path_env);
    assert_eq!(log, format!("{home}/logs/search.log"));
    spec.path_env = "bell\u{7}".into();
    let err = spec.render(UnitFormat::Launchd).unwrap_err();
    assert!(err.to_string().contains("PATH"), "{err}");
}

#[test]
fn hostile_values_survive_in_task_xml_or_are_refused() {
    let home = r"C:\Users\a & b <c> 'd' (x)^!";
    let mut spec = spec(
        search(),
        home,
        r"C:\Users\a & b <c> 'd' (x)^!\bin\crabtalk-search.exe",
    );
    spec.path_env = r"C:\Windows;C:\a&b".into();
    let (_, arguments, cwd) = parse_task(&spec.render(UnitFormat::Schtasks).unwrap());
    assert_eq!(cwd, home);
    let (sets, words, _) = parse_cmd_line(&arguments);
    assert_eq!(sets[0].1, home);
    assert_eq!(sets[1].1, spec.path_env);
    assert_eq!(words, spec.command_line());
    for bad in [r"C:\50%", "C:\\q\"uote", "C:\\new\nline"] {
        let mut hostile = spec.clone();
        hostile.path_env = bad.into();
        let err = hostile.render(UnitFormat::Schtasks).unwrap_err();
        assert!(err.to_string().contains("PATH"), "{bad:?}: {err}");
    }
}
