//! The one way crabtalk rewrites a file: write a temp file in the same folder,
//! fsync it, rename it over the target, fsync the folder. A reader sees the
//! old contents or the new ones, never a mix, and a crash at any point leaves
//! one of the two on disk.
//!
//! A crash between creating the temp file and renaming it leaves the temp
//! file behind (`.<name>.<pid>.<n>.tmp`). [`remove_stale_temp_files`] removes
//! those whose writer is no longer running; a program calls it at start on
//! the folders it writes.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Replaces `path` with `contents` atomically, with the mode a new file
/// gets from the process's umask (0644 under the usual 022; the daemon,
/// whose umask is 077, gets 0600).
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    write_with_mode(path, contents, None)
}

/// Like [`write_atomic`], for files that hold secrets: mode 0600 on Unix from
/// the moment the temp file is created.
pub fn write_atomic_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    write_with_mode(path, contents, Some(0o600))
}

/// Like [`write_atomic`], with the given permission bits (Unix; ignored
/// elsewhere): for rewriting a file in place without changing its mode.
pub fn write_atomic_mode(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    write_with_mode(path, contents, Some(mode))
}

/// Creates `path` with `contents`, mode 0600 on Unix, only if nothing is
/// there yet: `Ok(true)` when this call created it, `Ok(false)` when a file
/// already stood there (left as it was). A reader never sees it half
/// written, and of two processes racing to create it exactly one wins.
pub fn create_atomic_private(path: &Path, contents: &[u8]) -> io::Result<bool> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let temp = temp_path(dir, path)?;
    let linked = write_temp(&temp, contents, Some(0o600)).and_then(|()| fs::hard_link(&temp, path));
    let _ = fs::remove_file(&temp);
    match linked {
        Ok(()) => sync_dir(dir).map(|()| true),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(err) => Err(io::Error::new(
            err.kind(),
            format!("creating {}: {err}", path.display()),
        )),
    }
}

/// A file written in the background of its final name: the bytes go to a
/// temp file beside `path` (the same `.<name>.<pid>.<n>.tmp` name the
/// other writes use, so [`remove_stale_temp_files`] knows it), which
/// [`Staged::commit`] fsyncs and renames over `path`, then fsyncs the
/// folder. Until then `path` is untouched; dropped uncommitted, the temp
/// file is removed. For what is too large to hold in memory (a program's
/// binary), and for what must be looked at before it replaces anything:
/// after [`Staged::finish_writing`] the temp file is closed and complete,
/// so it can be read or run at [`Staged::temp_path`].
pub struct Staged {
    path: PathBuf,
    temp: PathBuf,
    file: Option<File>,
    committed: bool,
}

impl Staged {
    /// Starts writing `path` anew, its temp file created with exactly
    /// `mode` (Unix; ignored elsewhere).
    pub fn create(path: &Path, mode: u32) -> io::Result<Self> {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        fs::create_dir_all(dir)?;
        let temp = temp_path(dir, path)?;
        let file = open_temp(&temp, Some(mode))?;
        Ok(Self {
            path: path.to_owned(),
            temp,
            file: Some(file),
            committed: false,
        })
    }

    /// The file being written (`None` after [`Staged::finish_writing`]).
    pub fn file(&mut self) -> Option<&mut File> {
        self.file.as_mut()
    }

    /// Where the bytes are until [`Staged::commit`].
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// Flushes the bytes to disk and closes the temp file (a program
    /// cannot be run while a writer holds it open).
    pub fn finish_writing(&mut self) -> io::Result<()> {
        if let Some(file) = self.file.take() {
            file.sync_all()?;
        }
        Ok(())
    }

    /// Puts the temp file in place of `path`: a reader sees the old file or
    /// the new one, never a mix. A process that has the old file open (or
    /// runs it) keeps the old one.
    pub fn commit(mut self) -> io::Result<()> {
        self.finish_writing()?;
        fs::rename(&self.temp, &self.path).map_err(|err| {
            io::Error::new(
                err.kind(),
                format!("putting {} in place: {err}", self.path.display()),
            )
        })?;
        self.committed = true;
        let dir = match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        sync_dir(dir)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            self.file = None;
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// `mode`: exactly these permission bits; `None`: what the umask gives.
fn write_with_mode(path: &Path, contents: &[u8], mode: Option<u32>) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let temp = temp_path(dir, path)?;
    let written = write_temp(&temp, contents, mode).and_then(|()| fs::rename(&temp, path));
    if let Err(err) = written {
        let _ = fs::remove_file(&temp);
        return Err(io::Error::new(
            err.kind(),
            format!("writing {}: {err}", path.display()),
        ));
    }
    sync_dir(dir)
}

fn temp_path(dir: &Path, path: &Path) -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} has no file name", path.display()),
        )
    })?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut temp = std::ffi::OsString::from(".");
    temp.push(name);
    temp.push(format!(".{}.{n}.tmp", std::process::id()));
    Ok(dir.join(temp))
}

/// The pid of the process that wrote the temp file named `file_name`, if it
/// is one of ours (`.<name>.<pid>.<n>.tmp`).
fn temp_file_writer(file_name: &str) -> Option<u32> {
    let inner = file_name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let mut parts = inner.rsplitn(3, '.');
    let counter = parts.next()?;
    let pid = parts.next()?;
    let target = parts.next()?;
    if target.is_empty() || counter.parse::<u64>().is_err() {
        return None;
    }
    pid.parse().ok()
}

/// Removes the temp files in `dir` (not below it) that writes interrupted
/// by a crash left behind: those whose writing process is gone. Returns the
/// files removed.
pub fn remove_stale_temp_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_file_writer) else {
            continue;
        };
        if pid == std::process::id() || process_runs(pid) {
            continue;
        }
        if entry.file_type().is_ok_and(|kind| kind.is_file()) {
            let path = entry.path();
            fs::remove_file(&path)?;
            removed.push(path);
        }
    }
    Ok(removed)
}

/// Whether a process with this pid runs (where that cannot be known, it is
/// taken to run, so nothing is removed).
fn process_runs(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

fn write_temp(temp: &Path, contents: &[u8], mode: Option<u32>) -> io::Result<()> {
    let mut file = open_temp(temp, mode)?;
    file.write_all(contents)?;
    file.sync_all()
}

/// Creates the temp file `temp`, never there before, with `mode`.
fn open_temp(temp: &Path, mode: Option<u32>) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    // Created with no more than `mode` allows (never readable by others
    // for a moment), then set to exactly `mode`, whatever the umask.
    #[cfg(unix)]
    if let Some(mode) = mode {
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode & 0o700);
    }
    let file = options.open(temp)?;
    #[cfg(unix)]
    if let Some(mode) = mode {
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    Ok(file)
}

/// Makes a rename in `dir` durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = (dir, File::open);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creating_keeps_what_is_there_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run").join("token");
        assert!(create_atomic_private(&path, b"first").unwrap());
        assert!(!create_atomic_private(&path, b"second").unwrap());
        assert_eq!(fs::read(&path).unwrap(), b"first");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("token")]);
    }

    #[test]
    fn a_staged_file_replaces_its_target_only_when_committed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bin").join("tool");
        write_atomic(&path, b"old").unwrap();
        let mut staged = Staged::create(&path, 0o755).unwrap();
        staged.file().unwrap().write_all(b"new").unwrap();
        staged.finish_writing().unwrap();
        assert!(staged.file().is_none());
        assert_eq!(fs::read(staged.temp_path()).unwrap(), b"new");
        assert_eq!(fs::read(&path).unwrap(), b"old", "untouched until commit");
        staged.commit().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o755);
        }
        // Dropped without a commit: the target stays, the temp file goes.
        let mut dropped = Staged::create(&path, 0o755).unwrap();
        dropped.file().unwrap().write_all(b"half").unwrap();
        drop(dropped);
        assert_eq!(fs::read(&path).unwrap(), b"new");
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("tool")]);
    }

    #[test]
    fn replaces_contents_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("file.toml");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("file.toml")]);
    }

    #[cfg(unix)]
    #[test]
    fn a_plain_write_follows_the_umask_and_a_mode_is_exact() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        // The umask of this test process, read without changing it for good.
        // SAFETY: umask only swaps a process-wide value; it is put back.
        let umask = unsafe {
            let umask = libc::umask(0o022);
            libc::umask(umask);
            umask
        } as u32;
        let plain = dir.path().join("plain");
        write_atomic(&plain, b"x").unwrap();
        assert_eq!(mode(&plain), 0o666 & !umask);
        let exact = dir.path().join("exact");
        write_atomic_mode(&exact, b"x", 0o755).unwrap();
        assert_eq!(mode(&exact), 0o755);
    }

    #[cfg(unix)]
    #[test]
    fn private_files_are_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        write_atomic_private(&path, b"token").unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn temp_files_of_writers_that_are_gone_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let dead = u32::MAX - 9;
        let leftovers = [
            format!(".memory.crmem.{dead}.0.tmp"),
            format!(".user.meta.json.{dead}.17.tmp"),
        ];
        let kept = [
            // A writer that still runs (this process) may be mid-write.
            format!(".memory.crmem.{}.3.tmp", std::process::id()),
            // Not our shape.
            ".notes.tmp".to_owned(),
            "plain.tmp".to_owned(),
            format!(".x.{dead}.tmp"),
            "memory.crmem".to_owned(),
        ];
        for name in leftovers.iter().chain(&kept) {
            fs::write(dir.path().join(name), b"x").unwrap();
        }
        let mut removed: Vec<String> = remove_stale_temp_files(dir.path())
            .unwrap()
            .iter()
            .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        removed.sort();
        let mut expected = leftovers.to_vec();
        expected.sort();
        assert_eq!(removed, expected);
        for name in &kept {
            assert!(dir.path().join(name).exists(), "{name}");
        }
        assert!(
            remove_stale_temp_files(&dir.path().join("missing"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_failed_write_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file");
        write_atomic(&path, b"old").unwrap();
        // The target's name is taken by a directory on the second try: the
        // rename fails and the old contents must survive.
        let blocked = dir.path().join("blocked");
        fs::create_dir(&blocked).unwrap();
        fs::write(blocked.join("x"), b"").unwrap();
        assert!(write_atomic(&blocked, b"new").is_err());
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert!(blocked.is_dir());
    }
}
