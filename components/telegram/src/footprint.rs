//! Giving back the pages start-up needed once.
//!
//! Most of an idle gateway's resident memory is not its data (under a
//! megabyte) but pages of its own executable that start-up touched —
//! parsing the command line and the config, TLS and HTTP set-up, the
//! first requests — and that the idle loop never runs again. They are
//! clean file pages: the kernel can drop them at any time, but until it
//! needs the memory they count as the process's. Once the gateway is up,
//! [`release_startup_pages`] asks the kernel to drop them now
//! (`MADV_PAGEOUT`, Linux 5.4+); whatever runs later is read back from the
//! page cache on first use. Elsewhere it does nothing.

/// Drops the process's resident pages of its own executable.
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
