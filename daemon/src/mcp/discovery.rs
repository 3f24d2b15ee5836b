//! Finding components: every live `run/<name>.port` other than the daemon's
//! own `crabtalk.port`. The folder is watched, so a component that starts
//! or stops is noticed at once; a rescan every few seconds covers
//! filesystems where watching does not work.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crabtalk_home::{DAEMON_RUN_NAME, PortFile, validate_service_name};
use notify::Watcher;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::McpHub;

/// How often `run/` is rescanned without being told to.
const RESCAN: Duration = Duration::from_secs(5);

/// Keeps `hub`'s components in step with `run_dir` until `stop`.
pub async fn watch(hub: Arc<McpHub>, run_dir: PathBuf, stop: CancellationToken) {
    let (changed, mut changes) = mpsc::channel::<()>(1);
    let watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
        let _ = changed.try_send(());
    })
    .and_then(|mut watcher| {
        watcher.watch(&run_dir, notify::RecursiveMode::NonRecursive)?;
        Ok(watcher)
    });
    if let Err(err) = &watcher {
        tracing::warn!(
            "cannot watch {} ({err}); rescanning it every {RESCAN:?}",
            run_dir.display()
        );
    }
    loop {
        hub.set_components(scan(&run_dir));
        tokio::select! {
            () = stop.cancelled() => return,
            _ = changes.recv() => {}
            () = tokio::time::sleep(RESCAN) => {}
        }
    }
}

/// The live components in `run_dir`: `(name, port, port file)`.
pub fn scan(run_dir: &Path) -> Vec<(String, u16, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, u16, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".port")?
                .to_owned();
            if name == DAEMON_RUN_NAME || validate_service_name(&name).is_err() {
                return None;
            }
            let file = PortFile::read(&path).ok()?;
            if file.pid.is_some_and(|pid| !process_exists(pid)) {
                return None;
            }
            Some((name, file.port, path))
        })
        .collect();
    found.sort();
    found
}

/// Whether a process with this pid exists.
fn process_exists(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
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
        let found: Vec<(String, u16)> = scan(run)
            .into_iter()
            .map(|(name, port, _)| (name, port))
            .collect();
        assert_eq!(
            found,
            [("cron".to_owned(), 4002), ("search".to_owned(), 4001)]
        );
    }
}
