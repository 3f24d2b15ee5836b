//! Finding and ending everything a `bash` call started.
//!
//! A call's command runs under a supervisor process of its own (see
//! [`super::supervisor`]) that leads a process group. Killing the group
//! ends what stayed in it; but a command can leave the group (`setsid`,
//! `set -m`, a daemon that double-forks), and then neither the group nor
//! the parent links reach it. On Linux the supervisor is therefore a
//! *child subreaper* (`PR_SET_CHILD_SUBREAPER`): whatever its descendants
//! start stays its descendant, whoever in between exits, because orphans
//! are handed to it instead of to init. So, as long as the supervisor
//! lives, "everything the call started" is exactly its tree of descendants
//! in `/proc`, and [`end_tree`] kills that tree (repeatedly, until it is
//! empty, so a process forking while it is being killed loses) before it
//! kills the supervisor itself.
//!
//! Every live supervisor is in a registry, so that the daemon can end them
//! all when it stops ([`end_all`]), whatever became of the calls.
//! Elsewhere than Linux only the process group is killed.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// Live supervisors (their pids, which are also their group ids).
static RUNNING: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// Remembers a live supervisor.
pub(super) fn register(supervisor: u32) {
    running().insert(supervisor);
}

/// Kills everything the supervisor `pid` leads or started, and the
/// supervisor, then forgets it. Safe to call twice.
pub(super) fn end_tree(supervisor: u32) {
    // On Linux the supervisor must outlive the sweep: while it lives, what
    // its descendants leave behind is handed to it, so the sweep sees it.
    // Killing its group first would kill it too, and send those orphans to
    // init, out of reach.
    // The killed are left to the supervisor to reap (a moment), so that
    // no zombie is handed on to an init that may never reap it.
    #[cfg(target_os = "linux")]
    for _ in 0..200 {
        let left = descendants(supervisor);
        if left.is_empty() {
            break;
        }
        for &(pid, zombie) in &left {
            if !zombie {
                // SAFETY: signalling a process found under our supervisor.
                unsafe {
                    libc::kill(pid as libc::pid_t, libc::SIGKILL);
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    #[cfg(unix)]
    {
        // The group (all there is to reach elsewhere), and the supervisor,
        // which leads it; it is our own child, not yet reaped, so its pid
        // is still its own.
        kill_group(supervisor);
        // SAFETY: as above.
        unsafe {
            libc::kill(supervisor as libc::pid_t, libc::SIGKILL);
        }
    }
    running().remove(&supervisor);
}

/// Ends every call still running (the daemon is stopping).
pub(crate) fn end_all() {
    let supervisors: Vec<u32> = running().iter().copied().collect();
    for supervisor in supervisors {
        end_tree(supervisor);
    }
}

fn running() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    RUNNING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(unix)]
fn kill_group(pgid: u32) {
    // SAFETY: signalling a process group this tool created.
    unsafe {
        libc::killpg(pgid as libc::pid_t, libc::SIGKILL);
    }
}

/// The descendants of `root` from `/proc`, each with whether it is a
/// zombie (dead, not yet reaped).
#[cfg(target_os = "linux")]
pub(super) fn descendants(root: u32) -> Vec<(u32, bool)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: std::collections::HashMap<u32, Vec<(u32, bool)>> =
        std::collections::HashMap::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some((parent, zombie)) = parent_of(pid) {
            children.entry(parent).or_default().push((pid, zombie));
        }
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        for &(child, zombie) in children.get(&pid).map(Vec::as_slice).unwrap_or_default() {
            queue.push(child);
            found.push((child, zombie));
        }
    }
    found
}

/// The parent of `pid`, and whether `pid` is a zombie.
#[cfg(target_os = "linux")]
fn parent_of(pid: u32) -> Option<(u32, bool)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may hold anything, so read after
    // the last ')'.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((parent, state == "Z"))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_tree_of_a_process_is_found_through_proc() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut found = Vec::new();
        for _ in 0..500 {
            found = descendants(pid).into_iter().map(|(pid, _)| pid).collect();
            if found.len() == 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(found.len(), 2, "{found:?}");
        for grandchild in &found {
            assert_eq!(parent_of(*grandchild).map(|(parent, _)| parent), Some(pid));
        }
        // The sleeps first, so that `sh` reaps them and ends by itself.
        for grandchild in found {
            // SAFETY: cleaning up the test's own sleeps.
            unsafe {
                libc::kill(grandchild as libc::pid_t, libc::SIGKILL);
            }
        }
        let _ = child.wait();
    }
}
