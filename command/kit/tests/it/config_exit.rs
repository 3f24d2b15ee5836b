//! A component's config that is missing or wrong stops it at once with
//! exit 78 (`EX_CONFIG`) and a message naming the file, line and column —
//! before it announces a port.

use std::process::{Command, Output, Stdio};

use crabtalk_home::Home;

use crate::support::{probe_binary, probe_service};

fn run_probe(home: &Home) -> Output {
    Command::new(probe_binary())
        .arg("run")
        .env("CRABTALK_HOME", home.root())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Runs the probe with `config` (or none) and returns its stderr after
/// checking it exited 78 without a port file.
fn refused(config: Option<&str>) -> (tempfile::TempDir, Home, String) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let path = home.component_config("probe").unwrap();
    if let Some(config) = config {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, config).unwrap();
    }
    let out = run_probe(&home);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(78), "{stderr}");
    assert!(!probe_service().port_file(&home).exists(), "{stderr}");
    (dir, home, stderr)
}

#[test]
fn a_missing_required_config_exits_78_naming_the_file() {
    let (_dir, home, stderr) = refused(None);
    let path = home.component_config("probe").unwrap();
    assert!(
        stderr.contains(&format!("{}: missing", path.display())),
        "{stderr}"
    );
}

#[test]
fn invalid_toml_exits_78_with_file_line_and_column() {
    let (_dir, home, stderr) = refused(Some("# probe\ngreeting = = \"hi\"\n"));
    let path = home.component_config("probe").unwrap();
    assert!(
        stderr.contains(&format!("{}:2:", path.display())),
        "{stderr}"
    );
}

#[test]
fn a_wrong_type_exits_78_pointing_at_the_value() {
    let (_dir, home, stderr) = refused(Some("\ngreeting = 42\n"));
    let path = home.component_config("probe").unwrap();
    assert!(
        stderr.contains(&format!("{}:2:12:", path.display())),
        "{stderr}"
    );
    assert!(stderr.contains("string"), "{stderr}");
}

#[test]
fn an_unknown_key_exits_78_pointing_at_the_key() {
    let (_dir, home, stderr) = refused(Some("greeting = \"hi\"\ngreting = \"typo\"\n"));
    let path = home.component_config("probe").unwrap();
    assert!(
        stderr.contains(&format!("{}:2:1: unknown key `greting`", path.display())),
        "{stderr}"
    );
}

/// `kit-probe check` with `config` (or none): its exit code, stdout and
/// stderr. The env file names a variable, as a real home's does.
fn check(config: Option<&str>) -> (tempfile::TempDir, Home, Output) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    std::fs::write(home.env_file(), "PROBE_KEY=1\n").unwrap();
    let path = home.component_config("probe").unwrap();
    if let Some(config) = config {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, config).unwrap();
    }
    let out = Command::new(probe_binary())
        .arg("check")
        .env("CRABTALK_HOME", home.root())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (dir, home, out)
}

#[test]
fn check_reads_the_config_as_run_would_and_says_only_that() {
    let (_dir, home, out) = check(Some("greeting = \"hi\"\ngreting = \"hi\"\n"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(78), "{stderr}");
    let path = home.component_config("probe").unwrap();
    // One line: the problem at its place; no log line before it.
    assert_eq!(
        stderr.trim_end(),
        format!(
            "kit-probe: error: {}:2:1: unknown key `greting`; did you mean `greeting`?",
            path.display()
        )
    );
    assert!(out.stdout.is_empty());
    assert!(!probe_service().port_file(&home).exists());

    let (_dir, home, out) = check(Some("greeting = \"hi\"\n"));
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim_end(),
        format!(
            "{}: the service would take it",
            home.component_config("probe").unwrap().display()
        )
    );

    let (_dir, _home, out) = check(None);
    assert_eq!(out.status.code(), Some(78), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("probe.toml: missing"));
}
