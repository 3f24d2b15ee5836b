//! Downloads from the release server: bounded in size, and in time by how
//! long the server may stay silent (a hung server fails; a slow download
//! that keeps moving does not).
//!
//! A `file://` server is a local folder, read with the same size bound.
//!
//! reqwest, the workspace's HTTP client (already in crabup through the
//! Telegram setup), with rustls on the `ring` provider installed first, as
//! every crabtalk process that speaks HTTPS does; redirects are followed
//! (GitHub serves release assets from another host).

use std::time::Duration;

use super::PullError;
use super::progress::Progress;

/// How long the server may send nothing (no answer, no bytes) before the
/// download fails, unless `CRABUP_HTTP_TIMEOUT_SECS` says otherwise.
const STALL: Duration = Duration::from_secs(30);
/// The variable that sets how long the server may stay silent, in
/// seconds (default 30).
pub(crate) const STALL_ENV: &str = "CRABUP_HTTP_TIMEOUT_SECS";
/// How long connecting may take.
const CONNECT: Duration = Duration::from_secs(15);

/// An HTTP client for one command.
pub(crate) struct Fetcher {
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    stall: Duration,
}

impl Fetcher {
    pub(crate) fn new() -> anyhow::Result<Self> {
        // reqwest is built without a TLS provider of its own.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let stall = std::env::var(STALL_ENV)
            .ok()
            .and_then(|secs| secs.trim().parse::<f64>().ok())
            .filter(|secs| secs.is_finite() && *secs > 0.0)
            .map_or(STALL, Duration::from_secs_f64);
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT.min(stall.max(Duration::from_secs(1))))
            .user_agent(concat!("crabup/", env!("CARGO_PKG_VERSION")))
            .build()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Self {
            http,
            runtime,
            stall,
        })
    }

    /// A small file (the manifest, a checksum file), at most `limit` bytes.
    pub(crate) fn get_small(&self, url: &str, limit: u64) -> Result<Vec<u8>, PullError> {
        self.runtime.block_on(self.get(url, limit, None))
    }

    /// An archive, at most `limit` bytes, with a progress bar labelled
    /// `label` when stderr is a terminal.
    pub(crate) fn get_archive(
        &self,
        url: &str,
        limit: u64,
        label: &str,
    ) -> Result<Vec<u8>, PullError> {
        self.runtime
            .block_on(self.get(url, limit, Some(Progress::new(label))))
    }

    async fn get(
        &self,
        url: &str,
        limit: u64,
        mut progress: Option<Progress>,
    ) -> Result<Vec<u8>, PullError> {
        if let Some(path) = url.strip_prefix("file://") {
            return read_local(url, std::path::Path::new(path), limit);
        }
        let timed_out = || PullError::TimedOut {
            url: url.to_owned(),
            secs: self.stall.as_secs().max(1),
        };
        let mut response = tokio::time::timeout(self.stall, self.http.get(url).send())
            .await
            .map_err(|_| timed_out())?
            .map_err(|err| self.failure(url, &err))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Err(PullError::NotFound {
                url: url.to_owned(),
                hint: String::new(),
            });
        }
        if !status.is_success() {
            return Err(PullError::Status {
                url: url.to_owned(),
                status: status.to_string(),
            });
        }
        let expected = response.content_length();
        if expected.is_some_and(|len| len > limit) {
            return Err(PullError::TooLarge {
                url: url.to_owned(),
                limit,
            });
        }
        if let Some(progress) = progress.as_mut() {
            progress.start(expected);
        }
        let mut body = Vec::with_capacity(expected.unwrap_or(0).min(limit) as usize);
        loop {
            let chunk = tokio::time::timeout(self.stall, response.chunk())
                .await
                .map_err(|_| timed_out())?;
            match chunk {
                Ok(Some(bytes)) => {
                    if body.len() as u64 + bytes.len() as u64 > limit {
                        return Err(PullError::TooLarge {
                            url: url.to_owned(),
                            limit,
                        });
                    }
                    body.extend_from_slice(&bytes);
                    if let Some(progress) = progress.as_mut() {
                        progress.advance(body.len() as u64);
                    }
                }
                Ok(None) => break,
                Err(err) => {
                    if let Some(expected) = expected.filter(|len| (body.len() as u64) < *len) {
                        return Err(PullError::Truncated {
                            url: url.to_owned(),
                            got: body.len() as u64,
                            expected,
                        });
                    }
                    return Err(self.failure(url, &err));
                }
            }
        }
        if let Some(progress) = progress.as_mut() {
            progress.finish();
        }
        if let Some(expected) = expected.filter(|len| body.len() as u64 != *len) {
            return Err(PullError::Truncated {
                url: url.to_owned(),
                got: body.len() as u64,
                expected,
            });
        }
        Ok(body)
    }

    fn failure(&self, url: &str, err: &reqwest::Error) -> PullError {
        if err.is_timeout() {
            return PullError::TimedOut {
                url: url.to_owned(),
                secs: self.stall.as_secs().max(1),
            };
        }
        PullError::Unreachable {
            url: url.to_owned(),
            detail: root_cause(err),
        }
    }
}

/// A release in a local folder (`CRABUP_DIST_SERVER=file:///…`, e.g. what
/// `crabtalk-dist pack` wrote), read with the same bound as a download.
fn read_local(url: &str, path: &std::path::Path, limit: u64) -> Result<Vec<u8>, PullError> {
    use std::io::Read as _;
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(PullError::NotFound {
                url: url.to_owned(),
                hint: String::new(),
            });
        }
        Err(err) => {
            return Err(PullError::Unreachable {
                url: url.to_owned(),
                detail: err.to_string(),
            });
        }
    };
    let mut body = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut body)
        .map_err(|err| PullError::Unreachable {
            url: url.to_owned(),
            detail: err.to_string(),
        })?;
    if body.len() as u64 > limit {
        return Err(PullError::TooLarge {
            url: url.to_owned(),
            limit,
        });
    }
    Ok(body)
}

/// The innermost cause of an error, which says what really happened
/// ("Connection refused (os error 111)", "dns error: …").
fn root_cause(err: &dyn std::error::Error) -> String {
    let mut cause = err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}
