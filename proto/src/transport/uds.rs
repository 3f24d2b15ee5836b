//! The Unix domain socket listener.

use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio_util::sync::CancellationToken;

use super::BindError;
use super::admission::Admission;
use super::connection::{Acceptor, Placement, accept_loop};
use crate::Server;

/// How long to wait for an existing socket to answer before calling it stale.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A Unix socket listener, mode 0600. The socket file is removed when the
/// listener is dropped (if it is still the one this listener created).
pub struct UdsListener {
    listener: tokio::net::UnixListener,
    path: PathBuf,
    identity: (u64, u64),
}

impl UdsListener {
    /// Binds `path`, creating its folder if needed.
    ///
    /// The folder is made private (mode 0700), and an existing one is
    /// tightened to 0700 too: the socket only gets its own 0600 mode just
    /// after it is bound, and in between it has whatever the umask allows,
    /// so only the folder keeps other users out during that moment. A folder
    /// that is shared by design (sticky, like `/tmp`) or owned by another
    /// user is left alone, with a warning.
    ///
    /// An existing socket is probed first: if a server answers on it, binding
    /// fails with [`BindError::AlreadyRunning`]; otherwise it is stale and is
    /// removed. A path that exists and is not a socket is never removed.
    pub async fn bind(path: impl Into<PathBuf>) -> Result<Self, BindError> {
        let path = path.into();
        let io_error = |source| BindError::Io {
            target: path.display().to_string(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io_error)?;
            make_private(dir).map_err(io_error)?;
        }
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if !meta.file_type().is_socket() => {
                return Err(BindError::NotASocket { path });
            }
            Ok(_) => {
                if someone_answers(&path).await {
                    return Err(BindError::AlreadyRunning { path });
                }
                match std::fs::remove_file(&path) {
                    Ok(()) => tracing::info!("removed stale socket {}", path.display()),
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                    Err(err) => return Err(io_error(err)),
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(io_error(err)),
        }
        let listener = tokio::net::UnixListener::bind(&path).map_err(io_error)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(io_error)?;
        let meta = std::fs::metadata(&path).map_err(io_error)?;
        Ok(Self {
            listener,
            identity: (meta.dev(), meta.ino()),
            path,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Serves connections until `shutdown` fires and every connection has
    /// closed; then removes the socket file.
    pub async fn serve<S: Server>(self, server: Arc<S>, shutdown: CancellationToken) {
        accept_loop(&self, server, Admission::Open, shutdown, None).await;
    }

    /// [`serve`](Self::serve), each connection on the runtime `placement`
    /// names.
    pub async fn serve_placed<S: Server>(
        self,
        server: Arc<S>,
        shutdown: CancellationToken,
        placement: Arc<dyn Placement>,
    ) {
        accept_loop(&self, server, Admission::Open, shutdown, Some(placement)).await;
    }
}

impl Acceptor for UdsListener {
    type Stream = tokio::net::UnixStream;
    type Read = OwnedReadHalf;
    type Write = OwnedWriteHalf;

    async fn accept(&self) -> std::io::Result<(tokio::net::UnixStream, Option<IpAddr>)> {
        let (stream, _) = self.listener.accept().await?;
        Ok((stream, None))
    }

    fn move_here(stream: tokio::net::UnixStream) -> std::io::Result<tokio::net::UnixStream> {
        tokio::net::UnixStream::from_std(stream.into_std()?)
    }

    fn split(stream: tokio::net::UnixStream) -> (OwnedReadHalf, OwnedWriteHalf) {
        stream.into_split()
    }
}

impl Drop for UdsListener {
    fn drop(&mut self) {
        // Only remove the file if it is still the socket we created.
        if let Ok(meta) = std::fs::symlink_metadata(&self.path)
            && (meta.dev(), meta.ino()) == self.identity
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Sets `dir` to mode 0700 if it is ours and not a shared (sticky) folder.
fn make_private(dir: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(dir)?;
    let mode = meta.mode() & 0o7777;
    if mode == 0o700 {
        return Ok(());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me || mode & 0o1000 != 0 {
        tracing::warn!(
            "{} is not a private folder (mode {mode:o}); other users may reach the socket in it until it is chmod 0600",
            dir.display()
        );
        return Ok(());
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Whether a server accepts connections and answers a ping on `path`.
async fn someone_answers(path: &Path) -> bool {
    let probe = async {
        let client = crate::Client::connect_uds(path).await.ok()?;
        // Any reply, even an error, means something is serving there.
        match client.ping().await {
            Ok(_) | Err(crate::client::ClientError::Server(_)) => Some(()),
            Err(_) => None,
        }
    };
    match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
        Ok(answered) => answered.is_some(),
        // Connected but silent: something holds the socket; do not steal it.
        Err(_) => tokio::net::UnixStream::connect(path).await.is_ok(),
    }
}
