//! Service logs: the last lines, and following new ones.
//!
//! Every service appends stdout and stderr to `logs/<name>.log`. Reading is
//! done here, in Rust, the same way on every platform (no `tail`):
//! [`last_lines`] reads backwards from the end in blocks, so the cost is the
//! size of the answer, not of the file; [`Follower`] polls the file and
//! copies what was appended, starting over when the file was truncated and
//! switching to the new file when it was rotated (renamed or replaced).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often a follower looks for new bytes.
pub const FOLLOW_INTERVAL: Duration = Duration::from_millis(100);

/// Bytes read per step when reading backwards.
const BLOCK: u64 = 8 * 1024;

/// The last `n` lines of the file at `path`, without their line endings.
/// A final line without a newline counts as a line.
pub fn last_lines(path: &Path, n: usize) -> io::Result<Vec<String>> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    if n == 0 || len == 0 {
        return Ok(Vec::new());
    }
    // Read blocks from the end until the buffer holds n + 1 newlines (the
    // extra one bounds the first line) or the start of the file.
    let mut tail: Vec<u8> = Vec::new();
    let mut start = len;
    loop {
        let newlines = tail.iter().filter(|&&b| b == b'\n').count();
        let trailing = tail.last() == Some(&b'\n');
        if start == 0 || newlines > n + usize::from(trailing) {
            break;
        }
        let step = BLOCK.min(start);
        start -= step;
        file.seek(SeekFrom::Start(start))?;
        let mut block = vec![0; step as usize];
        file.read_exact(&mut block)?;
        block.extend_from_slice(&tail);
        tail = block;
    }
    let text = String::from_utf8_lossy(&tail);
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    if start > 0 {
        // The first piece may be the end of a longer line.
        lines.remove(0);
    }
    let skip = lines.len().saturating_sub(n);
    Ok(lines[skip..]
        .iter()
        .map(|line| line.strip_suffix('\r').unwrap_or(line).to_owned())
        .collect())
}

/// Which file a path named when it was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId(u64, u64);

fn file_id(meta: &std::fs::Metadata) -> FileId {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        FileId(meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let created = meta
            .created()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        FileId(created, 0)
    }
}

fn read_head(file: &mut File) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(HEAD);
    file.seek(SeekFrom::Start(0))?;
    Read::by_ref(file)
        .take(HEAD as u64)
        .read_to_end(&mut head)?;
    Ok(head)
}

/// Copies what is appended to a log, across truncation and rotation.
pub struct Follower {
    path: PathBuf,
    open: Option<(File, FileId)>,
    position: u64,
    /// The first bytes of the file as read so far: if they change, the file
    /// was truncated and rewritten past our position between two polls.
    head: Vec<u8>,
}

/// How many leading bytes identify a file's contents.
const HEAD: usize = 64;

impl Follower {
    /// Follows `path` from its current end (a missing file is waited for
    /// and then read from its start).
    pub fn from_end(path: &Path) -> io::Result<Self> {
        let mut follower = Self {
            path: path.to_owned(),
            open: None,
            position: 0,
            head: Vec::new(),
        };
        if let Some((mut file, id)) = follower.reopen()? {
            follower.position = file.metadata()?.len();
            follower.head = read_head(&mut file)?;
            follower.open = Some((file, id));
        }
        Ok(follower)
    }

    fn reopen(&self) -> io::Result<Option<(File, FileId)>> {
        match File::open(&self.path) {
            Ok(file) => {
                let id = file_id(&file.metadata()?);
                Ok(Some((file, id)))
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Copies everything new to `out` and returns how many bytes that was.
    pub fn poll(&mut self, out: &mut dyn Write) -> io::Result<u64> {
        let mut copied = 0;
        let current = match std::fs::metadata(&self.path) {
            Ok(meta) => Some(file_id(&meta)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => None,
            Err(err) => return Err(err),
        };
        let rotated = match (&self.open, current) {
            (Some((_, id)), Some(now)) => *id != now,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if rotated {
            // Finish the old file first: a writer may have appended to it
            // after the rename.
            copied += self.copy_new(out)?;
            self.open = self.reopen()?;
            self.position = 0;
            self.head.clear();
        }
        copied += self.copy_new(out)?;
        out.flush()?;
        Ok(copied)
    }

    fn copy_new(&mut self, out: &mut dyn Write) -> io::Result<u64> {
        let Some((file, _)) = &mut self.open else {
            return Ok(0);
        };
        let len = file.metadata()?.len();
        let head = read_head(file)?;
        let rewritten = !head.starts_with(&self.head);
        if len < self.position || rewritten {
            // Truncated in place (and maybe written again): start over.
            self.position = 0;
        }
        self.head = head;
        file.seek(SeekFrom::Start(self.position))?;
        let copied = io::copy(&mut Read::by_ref(file).take(len - self.position), out)?;
        self.position += copied;
        Ok(copied)
    }

    /// Polls every [`FOLLOW_INTERVAL`] until `stop` says so (or writing to
    /// `out` fails, e.g. the reader of a pipe went away).
    pub fn follow(&mut self, out: &mut dyn Write, stop: &dyn Fn() -> bool) -> io::Result<()> {
        while !stop() {
            self.poll(out)?;
            std::thread::sleep(FOLLOW_INTERVAL);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::time::Instant;

    fn append(path: &Path, text: &str) {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }

    #[test]
    fn last_lines_counts_from_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        std::fs::write(&path, "").unwrap();
        assert!(last_lines(&path, 5).unwrap().is_empty());
        append(&path, "one\r\ntwo\nthree\n");
        assert_eq!(last_lines(&path, 2).unwrap(), ["two", "three"]);
        assert_eq!(last_lines(&path, 10).unwrap(), ["one", "two", "three"]);
        assert!(last_lines(&path, 0).unwrap().is_empty());
        append(&path, "partial");
        assert_eq!(last_lines(&path, 2).unwrap(), ["three", "partial"]);
        assert!(last_lines(&dir.path().join("missing"), 1).is_err());
    }

    #[test]
    fn last_lines_crosses_block_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.log");
        let text: String = (0..5000)
            .map(|i| format!("line {i} {}\n", "x".repeat(i % 50)))
            .collect();
        std::fs::write(&path, &text).unwrap();
        let all: Vec<&str> = text.lines().collect();
        let want: Vec<String> = all[all.len() - 777..]
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert_eq!(last_lines(&path, 777).unwrap(), want);
        let long = "y".repeat(3 * BLOCK as usize);
        append(&path, &format!("{long}\nend\n"));
        assert_eq!(last_lines(&path, 2).unwrap(), [long, "end".to_owned()]);
    }

    fn poll_until(follower: &mut Follower, out: &mut Vec<u8>, want: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !String::from_utf8_lossy(out).contains(want) {
            assert!(
                Instant::now() < deadline,
                "never saw {want:?} in {:?}",
                String::from_utf8_lossy(out)
            );
            follower.poll(out).unwrap();
        }
    }

    #[test]
    fn follow_sees_appends_truncation_and_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("svc.log");
        append(&path, "old line\n");
        let mut follower = Follower::from_end(&path).unwrap();
        let mut out = Vec::new();
        follower.poll(&mut out).unwrap();
        assert!(out.is_empty(), "history is not followed");

        append(&path, "first\n");
        poll_until(&mut follower, &mut out, "first\n");

        // Truncated in place, then written again.
        std::fs::write(&path, "").unwrap();
        append(&path, "after truncate\n");
        poll_until(&mut follower, &mut out, "after truncate\n");

        // Rotated: renamed away (and written once more), a new file created.
        std::fs::rename(&path, dir.path().join("svc.log.1")).unwrap();
        append(&dir.path().join("svc.log.1"), "late old\n");
        append(&path, "new file\n");
        poll_until(&mut follower, &mut out, "new file\n");
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "first\nafter truncate\nlate old\nnew file\n");
    }

    #[test]
    fn follow_waits_for_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("later.log");
        let mut follower = Follower::from_end(&path).unwrap();
        let mut out = Vec::new();
        assert_eq!(follower.poll(&mut out).unwrap(), 0);
        append(&path, "hello\n");
        poll_until(&mut follower, &mut out, "hello\n");
    }
}
