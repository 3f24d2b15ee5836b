//! `crabup <name> logs -f` end to end: it keeps printing across a rotation
//! (the log renamed away and a new one created) and a truncation.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;

use crate::support::{Sandbox, TIMEOUT};

fn append(path: &std::path::Path, line: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(file, "{line}").unwrap();
}

#[test]
fn follow_survives_rotation_and_truncation() {
    let sandbox = Sandbox::new();
    let logs = sandbox.home.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let log = logs.join("search.log");
    append(&log, "old line");
    append(&log, "last line before following");

    let mut follower = sandbox
        .command(&["search", "logs", "-f", "-n", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines_tx, lines) = mpsc::channel();
    let reader = BufReader::new(follower.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in reader.lines() {
            if lines_tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let next = || lines.recv_timeout(TIMEOUT).unwrap();
    assert_eq!(next(), "last line before following");

    append(&log, "appended");
    assert_eq!(next(), "appended");

    // Rotation: the old file moves away and still gets a last line (a
    // writer holding it open); a new file takes its name. The old file is
    // finished first.
    std::fs::rename(&log, logs.join("search.log.1")).unwrap();
    append(&logs.join("search.log.1"), "late line in the rotated file");
    append(&log, "first line after rotation");
    assert_eq!(next(), "late line in the rotated file");
    assert_eq!(next(), "first line after rotation");

    // Truncation in place (copytruncate).
    std::fs::write(&log, "").unwrap();
    append(&log, "after truncation");
    assert_eq!(next(), "after truncation");

    follower.kill().unwrap();
    follower.wait().unwrap();
}
