//! Finding components: every live `run/<name>.port` other than the daemon's
//! own `crabtalk.port`.
//!
//! The folder is watched, and only what changes the set of components wakes
//! the daemon: a `*.port` file created, written, renamed or removed. Opens
//! and reads — including the daemon's own reads of the files when it scans —
//! are not changes, so a scan never causes the next one. A burst of changes
//! (a component rewriting its file atomically is three events) is read once,
//! after it settles. A slow rescan covers what watching cannot see (a
//! component killed without removing its file) and filesystems where
//! watching does not work, where the rescan is all there is and runs more
//! often.
//!
//! A component killed without removing its file is noticed at once where
//! the system can tell (`exits`: a pidfd per component's pid), else by the
//! rescan.
//!
//! A port file that cannot be used is logged with the reason once, and again
//! only when the file changes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crabtalk_home::{
    DAEMON_RUN_NAME, InvalidPortFile, PortFile, PortFileError, validate_service_name,
};
use notify::Watcher;
use notify::event::{EventKind, ModifyKind};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::McpHub;
use super::exits::ExitWatches;
use crate::config::agent::InvalidServerName;

/// How often `run/` is rescanned while watching works.
const RESCAN: Duration = Duration::from_secs(30);
/// How often it is rescanned where watching does not work.
const POLL: Duration = Duration::from_secs(5);
/// How long a burst of changes is given to settle before `run/` is read.
const SETTLE: Duration = Duration::from_millis(50);

/// A component found in `run/`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Component {
    pub name: String,
    pub port: u16,
    pub port_file: PathBuf,
}

/// What identifies one version of a file: a problem with it is reported
/// once per version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileVersion {
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    inode: u64,
}

impl FileVersion {
    fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            inode: std::os::unix::fs::MetadataExt::ino(&meta),
        })
    }
}

/// The component scanner of one `run/` folder.
pub(crate) struct Discovery {
    run_dir: PathBuf,
    /// Port files whose problem was logged, at the version logged.
    reported: HashMap<PathBuf, Option<FileVersion>>,
    /// The pids the live port files name, as of the last scan.
    pids: Vec<u32>,
}

impl Discovery {
    pub(crate) fn new(run_dir: PathBuf) -> Self {
        Self {
            run_dir,
            reported: HashMap::new(),
            pids: Vec::new(),
        }
    }

    /// Keeps `hub`'s components in step with `run/` until `stop`.
    pub(crate) async fn watch(mut self, hub: Arc<McpHub>, stop: CancellationToken) {
        let (changed, mut changes) = mpsc::channel::<()>(1);
        let mut exits = ExitWatches::new(changed.clone());
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if event.as_ref().map_or(true, changes_components) {
                let _ = changed.try_send(());
            }
        })
        .and_then(|mut watcher| {
            watcher.watch(&self.run_dir, notify::RecursiveMode::NonRecursive)?;
            Ok(watcher)
        });
        let rescan = match &watcher {
            Ok(_) => RESCAN,
            Err(err) => {
                tracing::warn!(
                    "cannot watch {} ({err}); rescanning it every {} s instead",
                    self.run_dir.display(),
                    POLL.as_secs()
                );
                POLL
            }
        };
        loop {
            let found = self.scan();
            if stop.is_cancelled() {
                return;
            }
            hub.set_components(found);
            exits.follow(&self.pids);
            tokio::select! {
                () = stop.cancelled() => return,
                _ = changes.recv() => {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(SETTLE) => {}
                    }
                    // What arrived while settling is covered by this scan.
                    while changes.try_recv().is_ok() {}
                }
                () = tokio::time::sleep(rescan) => {}
            }
        }
    }

    /// The live components in `run/`, sorted by name. Files that cannot be
    /// used are logged (once per version of the file).
    pub(crate) fn scan(&mut self) -> Vec<Component> {
        let Ok(entries) = std::fs::read_dir(&self.run_dir) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        let mut problems = HashMap::new();
        self.pids.clear();
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(name) = port_file_name(&path) else {
                continue;
            };
            if name == DAEMON_RUN_NAME {
                continue;
            }
            match inspect(name, &path) {
                Ok((component, pid)) => {
                    found.push(component);
                    self.pids.extend(pid);
                }
                Err(reason) => {
                    problems.insert(path, reason);
                }
            }
        }
        self.reported.retain(|path, _| problems.contains_key(path));
        for (path, reason) in problems {
            let version = FileVersion::of(&path);
            if self.reported.get(&path) != Some(&version) {
                tracing::warn!("ignoring {}: {reason}", path.display());
                self.reported.insert(path, version);
            }
        }
        found.sort();
        found
    }
}

/// `name` for `run/name.port`; `None` for other files (sockets, locks, pid
/// files, the temp files of atomic writes).
fn port_file_name(path: &Path) -> Option<&str> {
    let file_name = path.file_name()?.to_str()?;
    if file_name.starts_with('.') {
        return None;
    }
    file_name.strip_suffix(".port")
}

/// Why a file in `run/` announces no component; the text follows the
/// file's path in the log.
#[derive(Debug, thiserror::Error)]
enum NoComponent {
    #[error(
        "{name:?} is not a component name (1-64 characters of a-z, 0-9, _ and -, \
         starting with a letter or digit)"
    )]
    BadName { name: String },
    #[error("its tools could not be named after it: {0}")]
    Unnamable(InvalidServerName),
    #[error("not a port file ({0})")]
    NotAPortFile(InvalidPortFile),
    #[error("cannot read it ({0})")]
    Unreadable(std::io::Error),
    #[error("its process {pid} is not running (a component that stopped without removing it)")]
    Gone { pid: u32 },
}

/// The component a port file announces (and the pid it names), or why it
/// announces none.
fn inspect(name: &str, path: &Path) -> Result<(Component, Option<u32>), NoComponent> {
    if validate_service_name(name).is_err() {
        return Err(NoComponent::BadName {
            name: name.to_owned(),
        });
    }
    super::names::validate_server_name(name).map_err(NoComponent::Unnamable)?;
    let file = PortFile::read(path).map_err(|err| match err {
        PortFileError::Invalid { reason, .. } => NoComponent::NotAPortFile(reason),
        PortFileError::Io { source, .. } => NoComponent::Unreadable(source),
    })?;
    if let Some(pid) = file.pid
        && !process_exists(pid)
    {
        return Err(NoComponent::Gone { pid });
    }
    Ok((
        Component {
            name: name.to_owned(),
            port: file.port,
            port_file: path.to_owned(),
        },
        file.pid,
    ))
}

/// Whether a watch event can change the set of components: a `*.port` file
/// created, written, renamed or removed. Opens, reads and attribute changes
/// cannot.
fn changes_components(event: &notify::Event) -> bool {
    let relevant_kind = match event.kind {
        EventKind::Access(_) => false,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(_) => true,
        // Unknown kinds, and the queue overflowing: look again to be safe.
        EventKind::Any | EventKind::Other => true,
    };
    relevant_kind
        && (event.paths.is_empty()
            || event
                .paths
                .iter()
                .any(|path| port_file_name(path).is_some()))
}

/// Whether a process with this pid runs. A zombie does not: it has exited
/// and only waits for its parent to collect it (a component killed while
/// its parent is slow to reap stays one for a while).
fn process_exists(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(raw) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let rc = unsafe { libc::kill(raw, 0) };
        let exists = rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        exists && !is_zombie(pid)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Whether `pid` has exited and waits to be reaped (Linux: its state in
/// `/proc/<pid>/stat` is `Z`); elsewhere never said.
fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

#[cfg(test)]
mod tests {
    use notify::event::{AccessKind, AccessMode, CreateKind, MetadataKind, RenameMode};

    use super::*;

    #[test]
    fn live_component_port_files_are_found_and_the_rest_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path();
        PortFile::for_this_process(4001)
            .write(&run.join("search.port"))
            .unwrap();
        PortFile {
            port: 4002,
            pid: None,
            started_at: None,
        }
        .write(&run.join("cron.port"))
        .unwrap();
        PortFile::for_this_process(6688)
            .write(&run.join("crabtalk.port"))
            .unwrap();
        PortFile {
            port: 4003,
            pid: Some(u32::MAX - 7),
            started_at: None,
        }
        .write(&run.join("dead.port"))
        .unwrap();
        std::fs::write(run.join("junk.port"), "not a port").unwrap();
        std::fs::write(run.join("Bad Name.port"), "4004").unwrap();
        std::fs::write(run.join(".search.port.1.0.tmp"), "4005").unwrap();
        // A fine service name, but too long to prefix tool names.
        PortFile::for_this_process(4006)
            .write(&run.join("a-component-with-a-long-name.port"))
            .unwrap();
        let mut discovery = Discovery::new(run.to_owned());
        let found: Vec<(String, u16)> = discovery
            .scan()
            .into_iter()
            .map(|component| (component.name, component.port))
            .collect();
        assert_eq!(
            found,
            [("cron".to_owned(), 4002), ("search".to_owned(), 4001)]
        );
        let mut reported: Vec<String> = discovery
            .reported
            .keys()
            .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        reported.sort();
        assert_eq!(
            reported,
            [
                "Bad Name.port",
                "a-component-with-a-long-name.port",
                "dead.port",
                "junk.port"
            ]
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_component_that_exited_but_is_not_reaped_yet_is_not_live() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        PortFile {
            port: 4001,
            pid: Some(child.id()),
            started_at: None,
        }
        .write(&run.join("search.port"))
        .unwrap();
        let mut discovery = Discovery::new(run.to_owned());
        assert_eq!(discovery.scan().len(), 1);
        child.kill().unwrap();
        // Not waited for: a zombie until `wait` below.
        let mut zombie = false;
        for _ in 0..500 {
            if is_zombie(child.id()) {
                zombie = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(zombie);
        assert!(discovery.scan().is_empty());
        let _ = child.wait();
    }

    #[test]
    fn each_problem_is_reported_once_per_version_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.port");
        std::fs::write(&junk, "not a port").unwrap();
        let mut discovery = Discovery::new(dir.path().to_owned());
        discovery.scan();
        let first = discovery.reported[&junk];
        discovery.scan();
        assert_eq!(discovery.reported[&junk], first, "unchanged: not again");
        std::fs::write(&junk, "still not a port, longer").unwrap();
        discovery.scan();
        assert_ne!(discovery.reported[&junk], first, "changed: reported again");
        PortFile::for_this_process(4001).write(&junk).unwrap();
        assert_eq!(discovery.scan().len(), 1);
        assert!(discovery.reported.is_empty(), "a fixed file is forgotten");
    }

    fn event(kind: EventKind, path: &str) -> notify::Event {
        notify::Event::new(kind).add_path(PathBuf::from(path))
    }

    #[test]
    fn only_changes_to_port_files_wake_discovery() {
        let open = EventKind::Access(AccessKind::Open(AccessMode::Any));
        let close = EventKind::Access(AccessKind::Close(AccessMode::Read));
        let chmod = EventKind::Modify(ModifyKind::Metadata(MetadataKind::Permissions));
        let rename = EventKind::Modify(ModifyKind::Name(RenameMode::To));
        let create = EventKind::Create(CreateKind::File);
        for quiet in [
            event(open, "/h/run/search.port"),
            event(close, "/h/run/search.port"),
            event(open, "/h/run"),
            event(chmod, "/h/run/search.port"),
            event(create, "/h/run/.search.port.7.0.tmp"),
            event(create, "/h/run/crabtalk.sock"),
        ] {
            assert!(!changes_components(&quiet), "{quiet:?}");
        }
        for loud in [
            event(rename, "/h/run/search.port"),
            event(create, "/h/run/search.port"),
            event(
                EventKind::Remove(notify::event::RemoveKind::File),
                "/h/run/x.port",
            ),
            notify::Event::new(EventKind::Other),
        ] {
            assert!(changes_components(&loud), "{loud:?}");
        }
    }
}
