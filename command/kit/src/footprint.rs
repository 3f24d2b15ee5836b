//! Giving back the pages start-up needed once.
//!
//! Most of an idle service's resident memory is not its data (a megabyte
//! or two) but pages of its own executable that start-up touched —
//! parsing the command line and the config, TLS and HTTP set-up, the
//! first requests — and that the idle loop never runs again. They are
//! clean file pages: the kernel can drop them at any time, but until it
//! needs the memory they count as the process's. Once the service has
//! settled, [`release_startup_pages`] asks the kernel to drop them now
//! (`MADV_PAGEOUT`, Linux 5.4+); whatever runs later is read back from the
//! page cache on first use (for the daemon's first turn after the release,
//! 3–4 ms of page faults in all; nothing after). Elsewhere it does nothing.
//!
//! The kit's `main` does this [`SETTLE`] after a component starts; the
//! daemon does it once it has settled *and* gone quiet, never between two
//! turns of a busy client (RFC 0042): the code dropped is code a turn runs,
//! and faulting it back in cost that turn about 10 ms.

use std::time::Duration;

/// How long after start a service is taken to have settled: its first
/// polls, connections and config reads done.
pub const SETTLE: Duration = Duration::from_secs(3);

/// Hands the allocator's free heap pages back to the system (glibc's
/// `malloc_trim`), so that a service idle after a burst of work is not
/// left at its high-water mark; elsewhere it does nothing. The family's
/// one wrapper of it: the daemon calls it after a burst of turns, cron
/// after a tick's work, search after a burst of calls.
pub fn return_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists, under
    // its own locks; any thread may call it at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Waits until the service has settled (3 s: its first polls,
/// connections and config reads done), then gives back the start-up pages
/// (once).
pub async fn release_after_settling() {
    tokio::time::sleep(SETTLE).await;
    release_startup_pages();
}

/// Drops the process's resident pages of its own executable. Blocking (it
/// reads `/proc`, and the kernel drops the pages before it returns): call
/// it off the runtime's workers.
pub fn release_startup_pages() {
    #[cfg(target_os = "linux")]
    {
        let Ok(exe) = std::fs::read_link("/proc/self/exe") else {
            return;
        };
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return;
        };
        let exe = exe.to_string_lossy();
        let mut released = 0usize;
        for line in maps.lines() {
            let mut fields = line.split_whitespace();
            let (Some(range), Some(_perms)) = (fields.next(), fields.next()) else {
                continue;
            };
            if fields.nth(3) != Some(exe.as_ref()) {
                continue;
            }
            let Some((start, end)) = range.split_once('-') else {
                continue;
            };
            let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) else {
                continue;
            };
            // SAFETY: advice on a mapping of this process's own executable;
            // MADV_PAGEOUT only drops clean pages, which are read again on
            // their next use. No memory is unmapped or changed.
            let rc = unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT)
            };
            if rc == 0 {
                released += end - start;
            }
        }
        tracing::debug!("asked the kernel to drop start-up pages of {released} bytes of mappings");
    }
}
