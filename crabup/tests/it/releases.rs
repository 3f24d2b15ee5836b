//! `crabup pull`, `self update` and `update` from a release served over
//! real HTTP on 127.0.0.1 (RFC 0016).
//!
//! The release is made the way the release workflow makes it: this
//! build's binaries packed by `crabtalk_dist::pack` (xz preset 0, which is
//! fast) into `<program>-<target>.tar.xz`, `.sha256` and
//! `dist-manifest.json`, then served as `/v<version>/<file>`. Each failure
//! the server can cause — a tampered archive, a wrong `.sha256`, a 404, a
//! download cut short, a server that never answers — ends with its own
//! message and leaves the previous install as it was.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crabtalk_dist::manifest::Manifest;
use crabtalk_dist::pack::Packer;
use crabtalk_dist::{HOST_TARGET, Sha256};

use crabtalk_testkit::{Reply, ScriptedLlm, TestDaemon};

use crate::support::{Sandbox, built, stderr, stdout};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// How the server answers for one file.
#[derive(Clone)]
enum Answer {
    /// 200 with these bytes.
    Bytes(Vec<u8>),
    /// 404.
    Missing,
    /// The length of these bytes announced, half of them sent, then the
    /// connection closed.
    CutShort(Vec<u8>),
    /// The request read, and nothing ever sent.
    Silent,
}

/// A release server: `/v<VERSION>/<file>` answered from `answers`,
/// anything else 404.
struct ReleaseServer {
    url: String,
    answers: Arc<Mutex<HashMap<String, Answer>>>,
}

impl ReleaseServer {
    /// Serves every file of `dir` as release `v<VERSION>`.
    fn of(dir: &Path) -> Self {
        let mut answers = HashMap::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            answers.insert(name, Answer::Bytes(std::fs::read(&path).unwrap()));
        }
        let answers = Arc::new(Mutex::new(answers));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = answers.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let answers = shared.clone();
                std::thread::spawn(move || serve(stream, &answers));
            }
        });
        Self { url, answers }
    }

    fn set(&self, file: &str, answer: Answer) {
        self.answers.lock().unwrap().insert(file.to_owned(), answer);
    }

    fn bytes(&self, file: &str) -> Vec<u8> {
        match self.answers.lock().unwrap().get(file) {
            Some(Answer::Bytes(bytes)) => bytes.clone(),
            _ => panic!("{file} is not served as bytes"),
        }
    }
}

fn serve(mut stream: TcpStream, answers: &Mutex<HashMap<String, Answer>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or_default();
    let answer = path
        .strip_prefix(&format!("/v{VERSION}/"))
        .and_then(|file| answers.lock().unwrap().get(file).cloned())
        .unwrap_or(Answer::Missing);
    let head = |len: usize| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n"
        )
    };
    match answer {
        Answer::Bytes(bytes) => {
            let _ = stream.write_all(head(bytes.len()).as_bytes());
            let _ = stream.write_all(&bytes);
        }
        Answer::Missing => {
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nNot Found",
            );
        }
        Answer::CutShort(bytes) => {
            let _ = stream.write_all(head(bytes.len()).as_bytes());
            let _ = stream.write_all(&bytes[..bytes.len() / 2]);
        }
        Answer::Silent => {
            // Until the client gives up and closes.
            let _ = reader.read_to_end(&mut Vec::new());
        }
    }
    let _ = stream.flush();
}

/// The release of this build's `crabtalkd`, `crabup` and `crabtalk-tui`,
/// packed once per test run as the release workflow packs them.
fn release() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let ours = format!("release-v{VERSION}-{}", std::process::id());
        // Releases of earlier runs whose process is gone are removed.
        for entry in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix("release-v")
                .and_then(|rest| rest.rsplit_once('-'))
                .map(|(_, pid)| pid.to_owned());
            if pid.is_some_and(|pid| !Path::new("/proc").join(pid).exists()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = tmp.join(ours);
        let _ = std::fs::remove_dir_all(&dir);
        let mut packer = Packer::new(HOST_TARGET, &dir);
        packer.preset = 0;
        let mut manifest = Manifest::new(VERSION);
        for (program, binary) in [
            ("crabtalkd", crabtalk_testkit::daemon_binary()),
            ("crabup", PathBuf::from(env!("CARGO_BIN_EXE_crabup"))),
            ("crabtalk-tui", built("crabtalk-tui")),
        ] {
            packer.pack(program, &binary, &mut manifest).unwrap();
        }
        std::fs::write(dir.join("dist-manifest.json"), manifest.to_json()).unwrap();
        dir
    })
}

fn archive(program: &str) -> String {
    crabtalk_dist::layout::archive_name(program, HOST_TARGET)
}

/// A sandbox whose release server is `server`, with a cargo shim that
/// records any build from source.
fn sandbox_of(server: &ReleaseServer) -> Sandbox {
    let mut sandbox = Sandbox::new().with_cargo_shim();
    sandbox.dist_server = Some(server.url.clone());
    sandbox
}

/// What is installed: the binary's SHA-256 and crabup's records.
fn installed_state(sandbox: &Sandbox) -> (Option<String>, Option<String>, Vec<String>) {
    let binary = sandbox.cargo_home.join("bin/crabtalkd");
    let sha = Sha256::of_file(&binary).ok();
    let records = std::fs::read_to_string(sandbox.cargo_home.join(".crabup-installs.json")).ok();
    let mut files: Vec<String> = std::fs::read_dir(sandbox.cargo_home.join("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    (sha, records, files)
}

#[test]
fn pull_installs_the_verified_release_binary_and_the_daemon_runs_it() {
    let server = ReleaseServer::of(release());
    let sandbox = sandbox_of(&server);
    let out = sandbox.ok(&["pull", "daemon"]);
    assert!(out.contains("verified"), "{out}");
    assert!(sandbox.cargo_calls().is_empty(), "cargo was not asked");

    // The installed binary is the one packed, from the archive the
    // manifest names with the SHA-256 it gives.
    let installed = sandbox.cargo_home.join("bin/crabtalkd");
    assert_eq!(
        Sha256::of_file(&installed).unwrap(),
        Sha256::of_file(&crabtalk_testkit::daemon_binary()).unwrap()
    );
    let manifest = Manifest::parse(&server.bytes("dist-manifest.json")).unwrap();
    let listed = manifest.archive_for("crabtalkd", HOST_TARGET).unwrap();
    let archive_sha = Sha256::of_reader(&server.bytes(&archive("crabtalkd"))[..]).unwrap();
    assert_eq!(listed.sha256.as_deref(), Some(archive_sha.as_str()));
    let records: serde_json::Value = serde_json::from_slice(
        &std::fs::read(sandbox.cargo_home.join(".crabup-installs.json")).unwrap(),
    )
    .unwrap();
    let record = &records["binaries"]["crabtalkd"];
    assert_eq!(record["version"], VERSION);
    assert_eq!(record["archive_sha256"], archive_sha.as_str());
    assert_eq!(
        record["source"],
        format!("{}/v{VERSION}/{}", server.url, archive("crabtalkd"))
    );

    // `list` says where it came from.
    let list = sandbox.ok(&["list"]);
    let row = list
        .lines()
        .find(|line| line.starts_with("daemon"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(row.contains(VERSION) && row.contains("release"), "{list}");

    // The service units run the installed file.
    let unit = sandbox.ok(&["daemon", "unit", "--manager", "systemd"]);
    assert!(
        unit.contains(&format!("ExecStart=\"{}\" \"run\"", installed.display())),
        "{unit}"
    );

    // The service runs it, and the client pulled the same way talks to it.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let llm = runtime.block_on(ScriptedLlm::start());
    llm.set_default(Reply::text("Hello from the scripted model."));
    std::fs::create_dir_all(&sandbox.home).unwrap();
    std::fs::write(
        sandbox.home.join("config.toml"),
        TestDaemon::config_for(&llm.base_url()),
    )
    .unwrap();
    sandbox.ok(&["daemon", "start"]);
    let row = sandbox.ps_row("daemon");
    assert_eq!(row["state"], "running", "{row}");
    let pid = row["pid"].as_u64().unwrap();
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/exe")).unwrap(),
        installed.canonicalize().unwrap()
    );
    let pulled = sandbox.ok(&["pull", "tui"]);
    let tui = sandbox.cargo_home.join("bin/crabtalk-tui");
    assert!(tui.is_file(), "{pulled}");
    let reply = std::process::Command::new(&tui)
        .args(["-p", "hello"])
        .env("CRABTALK_HOME", &sandbox.home)
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        stdout(&reply).contains("Hello from the scripted model."),
        "{}{}",
        stdout(&reply),
        stderr(&reply)
    );
    sandbox.ok(&["daemon", "stop"]);
}

#[test]
fn every_bad_release_fails_with_its_own_message_and_changes_nothing() {
    let server = ReleaseServer::of(release());
    let mut sandbox = sandbox_of(&server);
    sandbox.ok(&["pull", "daemon"]);
    let before = installed_state(&sandbox);
    assert!(before.0.is_some());

    let name = archive("crabtalkd");
    let good = server.bytes(&name);
    let good_sum = server.bytes(&format!("{name}.sha256"));
    let mut tampered = good.clone();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 0x55;
    let other = Sha256::of_reader(&b"another archive"[..]).unwrap();

    // Each case: what the server answers for which file, and the message.
    let sum_name = format!("{name}.sha256");
    let cases = [
        (
            "tampered archive",
            (name.clone(), Answer::Bytes(tampered)),
            format!("checksum mismatch: {name} as downloaded has SHA-256"),
        ),
        (
            "wrong .sha256",
            (
                sum_name.clone(),
                Answer::Bytes(format!("{other} *{name}\n").into_bytes()),
            ),
            format!("the release contradicts itself: {name}.sha256 says {other}"),
        ),
        (
            "404",
            (name.clone(), Answer::Missing),
            format!(
                "{name} is not on the release server (404 Not Found): dist-manifest.json lists it"
            ),
        ),
        (
            "cut short",
            (name.clone(), Answer::CutShort(good.clone())),
            format!(
                "the download of {}/v{VERSION}/{name} ended early: {} of {} bytes",
                server.url,
                good.len() / 2,
                good.len()
            ),
        ),
    ];
    for (what, (file, answer), message) in cases {
        server.set(&file, answer);
        let out = sandbox.crabup(&["pull", "daemon"]);
        assert!(!out.status.success(), "{what}: {}", stdout(&out));
        assert!(
            stderr(&out).contains(message.as_str()),
            "{what}: {}",
            stderr(&out)
        );
        assert_eq!(
            installed_state(&sandbox),
            before,
            "{what} changed the install"
        );
        assert!(sandbox.cargo_calls().is_empty(), "{what}: cargo was asked");
        server.set(&name, Answer::Bytes(good.clone()));
        server.set(&sum_name, Answer::Bytes(good_sum.clone()));
    }

    // A server that accepts the connection and never answers.
    server.set(&name, Answer::Silent);
    let out = sandbox
        .command(&["pull", "daemon"])
        .env("CRABUP_HTTP_TIMEOUT_SECS", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("the release server stopped answering: nothing came from")
            && stderr(&out).contains(&name),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        installed_state(&sandbox),
        before,
        "the silent server changed the install"
    );

    // A server nobody listens on.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    sandbox.dist_server = Some(url);
    let out = sandbox.crabup(&["pull", "daemon"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot reach the release server"),
        "{}",
        stderr(&out)
    );
    assert_eq!(installed_state(&sandbox), before);
}

#[test]
fn without_an_archive_for_this_platform_pull_says_so_and_builds_from_source() {
    let server = ReleaseServer::of(release());
    let mut manifest = Manifest::parse(&server.bytes("dist-manifest.json")).unwrap();
    manifest
        .artifacts
        .retain(|name, _| !name.starts_with("crabtalkd-"));
    for release in &mut manifest.releases {
        release
            .artifacts
            .retain(|name| !name.starts_with("crabtalkd-"));
    }
    server.set(
        "dist-manifest.json",
        Answer::Bytes(manifest.to_json().into_bytes()),
    );
    let sandbox = sandbox_of(&server);
    let out = sandbox.crabup(&["pull", "daemon"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "release v{VERSION} has no crabtalkd for this platform ({HOST_TARGET})"
        )) && stderr(&out).contains("building it from source with cargo instead"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        sandbox.cargo_calls(),
        vec![
            ["install", "crabtalkd", "--version", &format!("={VERSION}")]
                .map(String::from)
                .to_vec()
        ]
    );

    // --from-source never asks the release server.
    let sandbox = sandbox_of(&ReleaseServer::of(release()));
    sandbox.ok(&["pull", "--from-source", "daemon"]);
    assert_eq!(sandbox.cargo_calls().len(), 1);
    assert!(!sandbox.cargo_home.join(".crabup-installs.json").exists());
}

#[test]
fn self_update_replaces_crabup_with_the_verified_release() {
    let server = ReleaseServer::of(release());
    let sandbox = sandbox_of(&server);
    // A crabup in $CARGO_HOME/bin that differs from the release's (the
    // same program with bytes after it, which still runs).
    let installed = sandbox.cargo_home.join("bin/crabup");
    // Written by a child process: a file this process had open for writing
    // could be held by another test's fork and not run ("text file busy").
    let copied = std::process::Command::new("sh")
        .arg("-c")
        .arg("cp \"$1\" \"$2\" && printf 'an older build' >> \"$2\" && chmod 755 \"$2\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_crabup"))
        .arg(&installed)
        .status()
        .unwrap();
    assert!(copied.success());
    let bytes = std::fs::read(&installed).unwrap();

    // A tampered archive first: nothing is replaced.
    let name = archive("crabup");
    let good = server.bytes(&name);
    let mut tampered = good.clone();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 0x55;
    server.set(&name, Answer::Bytes(tampered));
    let out = sandbox
        .command_of(&installed, &["self", "update"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("checksum mismatch"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&installed).unwrap(), bytes);

    server.set(&name, Answer::Bytes(good));
    let out = sandbox
        .command_of(&installed, &["self", "update"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("verified"), "{}", stdout(&out));
    assert_eq!(
        Sha256::of_file(&installed).unwrap(),
        Sha256::of_file(Path::new(env!("CARGO_BIN_EXE_crabup"))).unwrap()
    );
    let list = sandbox.ok(&["list"]);
    assert!(
        list.lines()
            .any(|line| line.starts_with("crabup") && line.contains("release")),
        "{list}"
    );
}

#[test]
fn update_moves_a_release_install_of_another_version_to_crabup_s() {
    let server = ReleaseServer::of(release());
    let sandbox = sandbox_of(&server);
    sandbox.ok(&["pull", "daemon"]);
    // As if an older release had been installed: its record says so.
    let records = sandbox.cargo_home.join(".crabup-installs.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&records).unwrap()).unwrap();
    json["binaries"]["crabtalkd"]["version"] = "0.0.9".into();
    std::fs::write(&records, json.to_string()).unwrap();
    let list = sandbox.ok(&["list"]);
    assert!(list.contains("0.0.9"), "{list}");

    let out = sandbox.ok(&["update"]);
    assert!(
        out.contains(&format!(
            "crabtalkd 0.0.9 differs from crabup's version {VERSION}; installing {VERSION} from the release"
        )),
        "{out}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&records).unwrap()).unwrap();
    assert_eq!(json["binaries"]["crabtalkd"]["version"], VERSION);
    assert!(sandbox.cargo_calls().is_empty(), "cargo was not asked");
    // At crabup's version now: nothing to do.
    let out = sandbox.ok(&["update"]);
    assert!(out.contains("is crabup's version already"), "{out}");
}

#[test]
fn the_installer_script_installs_a_verified_crabup_without_rust() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/crabup-installer.sh");
    let server = ReleaseServer::of(release());
    let sandbox = sandbox_of(&server);
    let run = || {
        std::process::Command::new("sh")
            .arg(&script)
            .env("CRABUP_DIST_SERVER", &server.url)
            .env("CRABUP_VERSION", VERSION)
            .env("CARGO_HOME", &sandbox.cargo_home)
            .env("PATH", sandbox.path())
            .output()
            .unwrap()
    };
    let installed = sandbox.cargo_home.join("bin/crabup");

    // A tampered archive: refused, nothing put in place.
    let name = archive("crabup");
    let good = server.bytes(&name);
    let mut tampered = good.clone();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 0x55;
    server.set(&name, Answer::Bytes(tampered));
    let out = run();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("checksum mismatch"),
        "{}",
        stderr(&out)
    );
    assert!(!installed.exists());

    server.set(&name, Answer::Bytes(good));
    let out = run();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        Sha256::of_file(&installed).unwrap(),
        Sha256::of_file(Path::new(env!("CARGO_BIN_EXE_crabup"))).unwrap()
    );
    assert!(
        stderr(&out).contains(&format!("installed crabup {VERSION}")),
        "{}",
        stderr(&out)
    );
}
