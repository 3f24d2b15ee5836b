//! Port files: how a service tells others where it listens.
//!
//! ```text
//! 6688
//! pid=4242
//! started_at=2026-11-22T10:00:00Z
//! ```
//!
//! The first line is the port in decimal (what older readers expect); then
//! optional `key=value` lines. Readers accept a bare number, ignore keys they
//! do not know, and refuse anything else with an error that names the file.
//! Files are written atomically, so a reader never sees half of one.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Port files are tiny; anything larger is not one.
const MAX_PORT_FILE: u64 = 4096;

/// The contents of a `run/<name>.port` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortFile {
    pub port: u16,
    pub pid: Option<u32>,
    /// RFC 3339.
    pub started_at: Option<String>,
}

/// Why a port file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PortFileError {
    #[error("cannot read port file {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("invalid port file {path}: {reason}")]
    Invalid {
        path: PathBuf,
        reason: InvalidPortFile,
    },
}

/// What in a port file's text is not a port file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidPortFile {
    #[error("the file is empty")]
    Empty,
    /// The first line, which is no port.
    #[error("the first line must be a port (1-65535), found {0:?}")]
    NotAPort(String),
    /// A later line without `=`.
    #[error("expected key=value, found {0:?}")]
    NotKeyValue(String),
    /// The value of `pid=`, as written.
    #[error("pid must be a number, found {0:?}")]
    NotAPid(String),
}

impl PortFileError {
    /// Whether the file simply does not exist.
    pub fn is_missing(&self) -> bool {
        matches!(self, Self::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

impl PortFile {
    /// A port file for the current process, started now.
    pub fn for_this_process(port: u16) -> Self {
        Self {
            port,
            pid: Some(std::process::id()),
            started_at: Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        }
    }

    /// Parses the text of a port file.
    pub fn parse(text: &str) -> Result<Self, InvalidPortFile> {
        let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
        let first = lines.next().ok_or(InvalidPortFile::Empty)?;
        let port = match first.parse::<u16>() {
            Ok(0) | Err(_) => return Err(InvalidPortFile::NotAPort(first.to_owned())),
            Ok(port) => port,
        };
        let mut file = Self {
            port,
            pid: None,
            started_at: None,
        };
        for line in lines {
            let Some((key, value)) = line.split_once('=') else {
                return Err(InvalidPortFile::NotKeyValue(line.to_owned()));
            };
            match key.trim() {
                "pid" => {
                    let pid = value
                        .trim()
                        .parse()
                        .map_err(|_| InvalidPortFile::NotAPid(value.to_owned()))?;
                    file.pid = Some(pid);
                }
                "started_at" => file.started_at = Some(value.trim().to_owned()),
                _ => {} // written by a newer version
            }
        }
        Ok(file)
    }

    /// The text of this port file.
    pub fn render(&self) -> String {
        let mut text = format!("{}\n", self.port);
        if let Some(pid) = self.pid {
            text.push_str(&format!("pid={pid}\n"));
        }
        if let Some(started_at) = &self.started_at {
            text.push_str(&format!("started_at={started_at}\n"));
        }
        text
    }

    /// Reads and parses the port file at `path`.
    pub fn read(path: &Path) -> Result<Self, PortFileError> {
        let io_error = |source| PortFileError::Io {
            path: path.to_owned(),
            source,
        };
        let mut text = String::new();
        std::fs::File::open(path)
            .map_err(io_error)?
            .take(MAX_PORT_FILE)
            .read_to_string(&mut text)
            .map_err(io_error)?;
        Self::parse(&text).map_err(|reason| PortFileError::Invalid {
            path: path.to_owned(),
            reason,
        })
    }

    /// Writes this port file to `path` atomically.
    pub fn write(&self, path: &Path) -> io::Result<()> {
        crate::write_atomic(path, self.render().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_bare_number_is_a_port_file() {
        assert_eq!(
            PortFile::parse("6688\n").unwrap(),
            PortFile {
                port: 6688,
                pid: None,
                started_at: None
            }
        );
    }

    #[test]
    fn full_files_round_trip_and_unknown_keys_are_ignored() {
        let file = PortFile {
            port: 1234,
            pid: Some(77),
            started_at: Some("2026-11-22T10:00:00Z".into()),
        };
        assert_eq!(PortFile::parse(&file.render()).unwrap(), file);
        let newer = format!("{}future=thing\n", file.render());
        assert_eq!(PortFile::parse(&newer).unwrap(), file);
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        for (bad, reason) in [
            ("", InvalidPortFile::Empty),
            ("0", InvalidPortFile::NotAPort("0".into())),
            ("70000", InvalidPortFile::NotAPort("70000".into())),
            ("port", InvalidPortFile::NotAPort("port".into())),
            ("80\npid=abc", InvalidPortFile::NotAPid("abc".into())),
            ("80\njunk", InvalidPortFile::NotKeyValue("junk".into())),
        ] {
            assert_eq!(PortFile::parse(bad), Err(reason), "{bad:?}");
        }
        assert_eq!(
            InvalidPortFile::NotAPort("port".into()).to_string(),
            "the first line must be a port (1-65535), found \"port\""
        );
    }

    #[test]
    fn read_and_write_through_the_filesystem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run").join("search.port");
        let missing = PortFile::read(&path).unwrap_err();
        assert!(missing.is_missing());
        let file = PortFile::for_this_process(4321);
        file.write(&path).unwrap();
        assert_eq!(PortFile::read(&path).unwrap(), file);
        std::fs::write(&path, "nope").unwrap();
        let err = PortFile::read(&path).unwrap_err();
        assert!(err.to_string().contains("search.port"), "{err}");
    }

    proptest! {
        #[test]
        fn parsing_never_panics(text in "\\PC{0,200}") {
            let _ = PortFile::parse(&text);
        }

        #[test]
        fn render_parse_round_trips(port in 1u16.., pid in prop::option::of(any::<u32>()), started in prop::option::of("[0-9TZ:-]{1,30}")) {
            let file = PortFile { port, pid, started_at: started };
            prop_assert_eq!(PortFile::parse(&file.render()).unwrap(), file);
        }
    }
}
