//! The systemd and launchd backends drive their tools with the right
//! commands, in order, and stay idempotent. The tools are stand-ins that
//! record each call and keep a little state, so the backends' decisions
//! (is it running? is it loaded?) come from what the "manager" says.

use std::path::{Path, PathBuf};

use crabtalk_command::manager::launchd::Launchd;
use crabtalk_command::manager::systemd::Systemd;
use crabtalk_command::manager::{Restarted, Started, Stopped, Uninstalled};
use crabtalk_command::{Service, ServiceManager, ServiceState, UnitSpec};
use crabtalk_home::Home;

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

struct Fake {
    dir: tempfile::TempDir,
    tool: PathBuf,
    spec: UnitSpec,
}

impl Fake {
    fn new(tool_name: &str, body: impl Fn(&Path, &Path) -> String) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join(tool_name);
        let calls = dir.path().join("calls");
        let state = dir.path().join("state");
        script(&tool, &body(&calls, &state));
        let program = dir.path().join("crabtalk-search");
        script(&program, "exit 0\n");
        let spec = UnitSpec::new(
            Service::new("search", "crabtalk-search", "search").unwrap(),
            &Home::new(dir.path().join("home")),
            program,
            "/usr/bin:/bin".into(),
        );
        Self { dir, tool, spec }
    }

    /// The calls since the last look, one line each (without `--user`).
    fn take_calls(&self) -> Vec<String> {
        let path = self.dir.path().join("calls");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        text.lines()
            .map(|l| l.trim_start_matches("--user ").to_owned())
            .collect()
    }
}

#[test]
fn systemd_backend_uses_systemctl_user_and_is_idempotent() {
    let fake = Fake::new("systemctl", |calls, state| {
        format!(
            r#"echo "$*" >> '{calls}'
[ "$1" = --user ] && shift
unit() {{ printf 'LoadState=%s\nActiveState=%s\nSubState=x\nMainPID=%s\nResult=success\n' "$1" "$2" "$3" > '{state}'; }}
case "$1" in
  show) [ -f '{state}' ] && cat '{state}' || printf 'LoadState=not-found\nActiveState=inactive\nMainPID=0\n' ;;
  enable) [ "$2" = --now ] && unit loaded active 4242 ;;
  disable) unit loaded inactive 0 ;;
  restart) unit loaded active 4343 ;;
esac
exit 0
"#,
            calls = calls.display(),
            state = state.display()
        )
    });
    let units = fake.dir.path().join("units");
    let systemd = Systemd::new(&fake.tool, &units);
    let spec = &fake.spec;
    let unit = "ai.crabtalk.search.service";

    assert_eq!(
        systemd.status(spec).unwrap().state,
        ServiceState::NotInstalled
    );
    assert_eq!(systemd.stop(spec).unwrap(), Stopped::NotRunning);
    fake.take_calls();

    assert_eq!(
        systemd.start(spec).unwrap(),
        Started::Started { pid: Some(4242) }
    );
    let written = std::fs::read_to_string(units.join(unit)).unwrap();
    assert_eq!(
        written,
        spec.render(crabtalk_command::UnitFormat::Systemd).unwrap()
    );
    let show = format!(
        "show --property=LoadState,ActiveState,SubState,MainPID,Result,NRestarts,ExecMainCode,ExecMainStatus {unit}"
    );
    assert_eq!(
        fake.take_calls(),
        [
            show.clone(),
            "daemon-reload".into(),
            format!("enable --now {unit}"),
            show.clone()
        ]
    );

    assert_eq!(
        systemd.start(spec).unwrap(),
        Started::AlreadyRunning { pid: Some(4242) }
    );
    assert_eq!(fake.take_calls(), std::slice::from_ref(&show));

    let Restarted { old_pid, new_pid } = systemd.restart(spec).unwrap();
    assert_eq!((old_pid, new_pid), (Some(4242), Some(4343)));
    // The unit on disk is unchanged: no daemon-reload.
    assert_eq!(
        fake.take_calls(),
        [
            show.clone(),
            format!("enable {unit}"),
            format!("restart {unit}"),
            show.clone()
        ]
    );

    assert_eq!(
        systemd.stop(spec).unwrap(),
        Stopped::Stopped { pid: Some(4343) }
    );
    assert_eq!(
        fake.take_calls(),
        [show.clone(), format!("disable --now {unit}")]
    );
    assert_eq!(systemd.status(spec).unwrap().state, ServiceState::Stopped);

    assert_eq!(
        systemd.uninstall(spec).unwrap(),
        Uninstalled::Removed(units.join(unit))
    );
    assert!(!units.join(unit).exists());
    assert_eq!(systemd.uninstall(spec).unwrap(), Uninstalled::NotInstalled);
}

#[test]
fn launchd_backend_bootstraps_kickstarts_and_boots_out_in_the_gui_domain() {
    let fake = Fake::new("launchctl", |calls, state| {
        format!(
            r#"echo "$*" >> '{calls}'
case "$1" in
  print) [ -f '{state}' ] || exit 113; cat '{state}' ;;
  bootstrap) printf 'state = running\npid = 777\n' > '{state}' ;;
  bootout) rm -f '{state}' ;;
  kickstart) printf 'state = running\npid = 778\n' > '{state}' ;;
esac
exit 0
"#,
            calls = calls.display(),
            state = state.display()
        )
    });
    let agents = fake.dir.path().join("LaunchAgents");
    let launchd = Launchd::new(&fake.tool, &agents, 501);
    let spec = &fake.spec;
    let target = "gui/501/ai.crabtalk.search";
    let plist = agents.join("ai.crabtalk.search.plist");

    assert_eq!(
        launchd.status(spec).unwrap().state,
        ServiceState::NotInstalled
    );
    assert_eq!(launchd.stop(spec).unwrap(), Stopped::NotRunning);
    fake.take_calls();

    assert_eq!(
        launchd.start(spec).unwrap(),
        Started::Started { pid: Some(777) }
    );
    assert!(plist.is_file());
    let print = format!("print {target}");
    assert_eq!(
        fake.take_calls(),
        [
            print.clone(),
            format!("enable {target}"),
            print.clone(),
            format!("bootstrap gui/501 {}", plist.display()),
            print.clone(),
        ]
    );
    assert_eq!(
        launchd.start(spec).unwrap(),
        Started::AlreadyRunning { pid: Some(777) }
    );
    fake.take_calls();

    let Restarted { old_pid, new_pid } = launchd.restart(spec).unwrap();
    assert_eq!((old_pid, new_pid), (Some(777), Some(778)));
    assert!(
        fake.take_calls()
            .contains(&format!("kickstart -k {target}"))
    );

    assert_eq!(
        launchd.stop(spec).unwrap(),
        Stopped::Stopped { pid: Some(778) }
    );
    assert_eq!(
        fake.take_calls(),
        [
            print.clone(),
            format!("bootout {target}"),
            format!("disable {target}")
        ]
    );
    let stopped = launchd.status(spec).unwrap();
    assert_eq!(stopped.state, ServiceState::Stopped, "{stopped:?}");

    assert_eq!(
        launchd.uninstall(spec).unwrap(),
        Uninstalled::Removed(plist.clone())
    );
    assert!(!plist.exists());
    assert_eq!(
        launchd.status(spec).unwrap().state,
        ServiceState::NotInstalled
    );
}
