//! What `read` and `edit` share: resolving a path against the turn's working
//! directory, the guard that keeps them out of the daemon's own files, and
//! binary detection. (The stamp that tells whether a file changed since it
//! was read is [`FileStamp`](crate::hook::FileStamp): the conversation
//! keeps it.)
//!
//! **The daemon's own files.** The home holds the provider keys
//! (`config.toml`, `env`), the TCP token (`run/`), the agents' definitions
//! — including who may use bash — and every conversation and memory. An
//! agent that could read them could leak them; one that could edit them
//! could lift its own limits. So no call of `read` or `edit`, from any
//! sender, opens anything under the home except `skills/` and `Crab.md`
//! (instructions a user may well ask an agent to write), nor the daemon's
//! own `/proc` entries (its environment holds keys too). What the daemon
//! keeps is changed through its protocol (`UpdateAgent`, `Reload`, …) or
//! by the user's own hand. The decision is taken on the file actually
//! opened: symlinks and `..` are resolved first (on Linux, the path of the
//! open file itself is checked, so a link swapped in between does not
//! help), and a hard link to a secret file is recognised by its inode.

use std::fs::File;
use std::path::{Path, PathBuf};

use crabtalk_home::Home;

/// `path` relative to `cwd` (absolute paths stay as they are), with `.` and
/// `..` resolved lexically so the same file always has the same key.
pub(crate) fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let joined = cwd.join(path);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Why `read` or `edit` cannot open a file; the text is what the model
/// reads.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    #[error("{} does not exist", path.display())]
    Missing { path: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot resolve {}: {source}", path.display())]
    Unresolvable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} is {own}; read and edit never open the daemon's own files (its config, keys, token, agents, conversations and memory): those are changed through the daemon (crabtalkd reload, UpdateAgent) or by its user directly",
        path.display()
    )]
    DaemonsOwn { path: PathBuf, own: OwnFile },
}

/// How a path asked for turned out to be one of the daemon's own files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OwnFile {
    /// Under the home, outside what agents may touch (the real path).
    InHome(PathBuf),
    /// Under this process's `/proc/<pid>`.
    ProcessEntry,
    /// Another name (a hard link) of this secret file.
    LinkTo(PathBuf),
}

impl std::fmt::Display for OwnFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InHome(real) => write!(f, "in the daemon's home ({})", real.display()),
            Self::ProcessEntry => f.write_str("the daemon's own process entry"),
            Self::LinkTo(secret) => write!(f, "a link to {}", secret.display()),
        }
    }
}

/// Keeps `read` and `edit` out of the daemon's own files.
#[derive(Debug, Clone)]
pub(crate) struct HomeGuard {
    /// The home, as given and resolved (they differ when it is reached
    /// through a link).
    roots: Vec<PathBuf>,
    /// What under the home agents may touch.
    open: Vec<PathBuf>,
    /// Files whose hard links elsewhere are refused too.
    secrets: Vec<PathBuf>,
}

impl HomeGuard {
    pub(crate) fn new(home: &Home) -> Self {
        let resolved = |path: PathBuf| {
            let mut both = vec![path.clone()];
            if let Ok(real) = std::fs::canonicalize(&path)
                && real != path
            {
                both.push(real);
            }
            both
        };
        let mut open = resolved(home.skills_dir());
        open.extend(resolved(home.instructions_file()));
        Self {
            roots: resolved(home.root().to_owned()),
            open,
            secrets: vec![home.config_file(), home.env_file(), home.token_file()],
        }
    }

    /// Opens `path` for reading if it is not one of the daemon's files;
    /// returns the file and its real path (links resolved), which is where
    /// an edit must write.
    pub(crate) fn open(&self, path: &Path) -> Result<(File, PathBuf), OpenError> {
        let file = File::open(path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => OpenError::Missing {
                path: path.to_owned(),
            },
            _ => OpenError::Unreadable {
                path: path.to_owned(),
                source,
            },
        })?;
        let real = real_path(&file, path).map_err(|source| OpenError::Unresolvable {
            path: path.to_owned(),
            source,
        })?;
        if let Some(own) = self.own_file(&real, &file) {
            return Err(OpenError::DaemonsOwn {
                path: path.to_owned(),
                own,
            });
        }
        Ok((file, real))
    }

    /// Which of the daemon's own files `file`, opened at `real`, is.
    fn own_file(&self, real: &Path, file: &File) -> Option<OwnFile> {
        let in_home = self.roots.iter().any(|root| real.starts_with(root));
        let open = self.open.iter().any(|open| real.starts_with(open));
        if in_home && !open {
            return Some(OwnFile::InHome(real.to_owned()));
        }
        if is_own_proc_entry(real) {
            return Some(OwnFile::ProcessEntry);
        }
        self.hard_link_of_secret(file)
            .map(|secret| OwnFile::LinkTo(secret.to_owned()))
    }

    /// The secret file `file` is another name of, if any.
    fn hard_link_of_secret(&self, file: &File) -> Option<&Path> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let meta = file.metadata().ok()?;
            self.secrets
                .iter()
                .find(|secret| {
                    std::fs::metadata(secret)
                        .is_ok_and(|s| (s.dev(), s.ino()) == (meta.dev(), meta.ino()))
                })
                .map(PathBuf::as_path)
        }
        #[cfg(not(unix))]
        {
            let _ = file;
            None
        }
    }
}

/// The path of the file actually opened: on Linux what the kernel says the
/// descriptor is; elsewhere `path` with links resolved.
fn real_path(file: &File, path: &Path) -> std::io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let link = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        if let Ok(real) = std::fs::read_link(&link)
            && real.is_absolute()
        {
            return Ok(real);
        }
    }
    let _ = file;
    std::fs::canonicalize(path)
}

/// Whether `real` is under this process's `/proc/<pid>` (its environment,
/// memory, descriptors).
fn is_own_proc_entry(real: &Path) -> bool {
    let own = PathBuf::from(format!("/proc/{}", std::process::id()));
    real.starts_with(&own)
}

/// Whether bytes look like a binary file (a NUL in the first 8 KiB).
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_against_the_working_directory() {
        assert_eq!(
            resolve(Path::new("/w/p"), "src/../a.rs"),
            Path::new("/w/p/a.rs")
        );
        assert_eq!(
            resolve(Path::new("/w/p"), "/etc/hosts"),
            Path::new("/etc/hosts")
        );
        assert_eq!(resolve(Path::new("/w/p"), "./x"), Path::new("/w/p/x"));
    }

    fn guarded_home() -> (tempfile::TempDir, Home, HomeGuard) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().join("home"));
        for sub in [
            home.agents_dir(),
            home.run_dir(),
            home.skills_dir().join("s"),
        ] {
            std::fs::create_dir_all(sub).unwrap();
        }
        std::fs::write(home.config_file(), "api_key = \"sk-secret\"\n").unwrap();
        std::fs::write(home.agents_dir().join("crab.toml"), "").unwrap();
        std::fs::write(home.skills_dir().join("s").join("SKILL.md"), "skill").unwrap();
        std::fs::write(home.instructions_file(), "rules").unwrap();
        let guard = HomeGuard::new(&home);
        (dir, home, guard)
    }

    #[test]
    fn the_daemons_files_are_refused_however_they_are_named() {
        let (dir, home, guard) = guarded_home();
        let outside = dir.path().join("work");
        std::fs::create_dir(&outside).unwrap();
        let refused = |path: &Path| {
            let err = guard.open(path).map(|_| ()).unwrap_err();
            assert!(
                err.to_string()
                    .contains("never open the daemon's own files"),
                "{err}"
            );
            match err {
                OpenError::DaemonsOwn { own, .. } => own,
                other => panic!("{other:?}"),
            }
        };
        refused(&home.config_file());
        refused(&home.agents_dir().join("crab.toml"));
        refused(&resolve(&outside, "../home/run/../config.toml"));
        #[cfg(unix)]
        {
            let link = outside.join("innocent.txt");
            std::os::unix::fs::symlink(home.config_file(), &link).unwrap();
            refused(&link);
            let dir_link = outside.join("h");
            std::os::unix::fs::symlink(home.root(), &dir_link).unwrap();
            refused(&dir_link.join("agents").join("crab.toml"));
            let hard = outside.join("copy.toml");
            std::fs::hard_link(home.config_file(), &hard).unwrap();
            assert_eq!(refused(&hard), OwnFile::LinkTo(home.config_file()));
        }
        #[cfg(target_os = "linux")]
        assert_eq!(
            refused(Path::new("/proc/self/environ")),
            OwnFile::ProcessEntry
        );
        // What agents may touch in the home, and anything outside it.
        guard
            .open(&home.skills_dir().join("s").join("SKILL.md"))
            .unwrap();
        guard.open(&home.instructions_file()).unwrap();
        let mine = outside.join("notes.md");
        std::fs::write(&mine, "mine").unwrap();
        let (_, real) = guard.open(&mine).unwrap();
        assert_eq!(real, std::fs::canonicalize(&mine).unwrap());
    }

    #[test]
    fn nul_bytes_mark_a_binary_file() {
        assert!(looks_binary(b"ab\0c") && !looks_binary("é".as_bytes()));
    }
}
