//! Files people send — photos (the largest size), documents, videos,
//! audio files, voice notes, video notes and animations, up to the 20 MB
//! a bot may download — are saved under
//! `$CRABTALK_HOME/files/telegram/<chat>/` and referenced in the message
//! to the agent by their path, so its tools (`read`, an MCP server) can
//! open them. Captions are kept as the message's text. Voice notes are
//! saved, not transcribed.
//!
//! Downloads run beside the poll loop ([`inbox`](super::inbox)), at most
//! [`MAX_DOWNLOADS`] at once, each bounded in size and time
//! ([`MAX_DOWNLOAD`], [`DOWNLOAD_TIMEOUT`](crate::api::DOWNLOAD_TIMEOUT)).
//!
//! File names from Telegram are untrusted: only letters, digits, `.`, `-`
//! and `_` of them are kept, so a name can never leave its folder.

use std::path::{Path, PathBuf};

use super::Gateway;
use super::content::{Attachment, attachment};
use crate::api::update::Message;
use crate::api::{ApiFailure, MAX_DOWNLOAD, RemoteFile};

/// Downloads at once, for the whole gateway.
pub(crate) const MAX_DOWNLOADS: usize = 4;

/// A file name that cannot leave its folder.
pub(crate) fn safe_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        .take(80)
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    if cleaned.is_empty() {
        "file".into()
    } else {
        cleaned.to_owned()
    }
}

/// `$CRABTALK_HOME/files/telegram/<chat>/`.
pub(crate) fn folder(home: &crabtalk_home::Home, chat: i64) -> PathBuf {
    home.root()
        .join("files")
        .join("telegram")
        .join(chat.to_string())
}

/// Saves the message's attachment; the line that tells the agent about
/// it (also when it could not be saved), or `None` without one.
pub(crate) async fn save(gateway: &Gateway, message: &Message) -> Option<String> {
    let attachment = attachment(message)?;
    let chat = message.chat.id;
    if let Some(size) = attachment.size.filter(|size| *size > MAX_DOWNLOAD) {
        return Some(format!(
            "[a {} \"{}\" of {} MB was sent; it was not downloaded: bots may download at most 20 MB]",
            attachment.kind,
            attachment.name,
            size / 1024 / 1024
        ));
    }
    let result = {
        let _slot = gateway.inbox.download_slot().await;
        download(gateway, chat, message.message_id, &attachment).await
    };
    match result {
        Ok(path) => Some(format!("[{} saved at {}]", attachment.kind, path.display())),
        Err(err) => {
            tracing::warn!(chat, "a {} could not be saved: {err}", attachment.kind);
            Some(format!(
                "[a {} was sent but could not be saved: {err}]",
                attachment.kind
            ))
        }
    }
}

/// Why a file was not saved.
#[derive(Debug, thiserror::Error)]
enum DownloadError {
    /// `getFile` or the download failed.
    #[error(transparent)]
    Api(#[from] ApiFailure),
    /// Telegram's answer says the file is over what a bot may download.
    #[error("it has {} MB; bots may download at most 20 MB", .size / 1024 / 1024)]
    TooLarge { size: u64 },
    #[error("cannot create {}: {source}", .dir.display())]
    Folder {
        dir: PathBuf,
        source: std::io::Error,
    },
}

async fn download(
    gateway: &Gateway,
    chat: i64,
    message_id: i32,
    attachment: &Attachment,
) -> Result<PathBuf, DownloadError> {
    let file: RemoteFile = gateway.api.get_file(&attachment.file_id).await?;
    if file.size > MAX_DOWNLOAD {
        return Err(DownloadError::TooLarge { size: file.size });
    }
    let dir = folder(&gateway.home, chat);
    create_dirs(&dir).map_err(|source| DownloadError::Folder {
        dir: dir.clone(),
        source,
    })?;
    let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
    let path = dir.join(format!(
        "{stamp}-{message_id}-{}",
        safe_name(&attachment.name)
    ));
    gateway.api.download(&file, &path).await?;
    Ok(path)
}

fn create_dirs(dir: &Path) -> std::io::Result<()> {
    crabtalk_home::create_private_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_leave_the_folder() {
        assert_eq!(safe_name("../../etc/passwd"), "etcpasswd");
        assert_eq!(safe_name("report 2024.pdf"), "report2024.pdf");
        assert_eq!(safe_name("..."), "file");
        assert_eq!(safe_name("фото.jpg"), "jpg");
        assert_eq!(safe_name(&"a".repeat(200)).len(), 80);
    }
}
