//! What a crash leaves in the home, cleared at start.
//!
//! Every file the daemon rewrites goes through `write_atomic`, which writes
//! a temp file first; a crash before the rename leaves that temp file —
//! a whole copy of a memory file, say — and nothing else would ever remove
//! it. At start, holding the home's lock, the daemon removes the temp files
//! of writers that are gone from every folder it writes to.

use std::path::PathBuf;

use crabtalk_home::{Home, remove_stale_temp_files};

/// The folders the daemon rewrites files in: the home itself (the
/// subscription table), `agents/`, `memory/`, `run/`, and every agent's
/// folder under `sessions/` (the metadata sidecars).
fn written_folders(home: &Home) -> Vec<PathBuf> {
    let mut folders = vec![
        home.root().to_owned(),
        home.agents_dir(),
        home.memory_dir(),
        home.run_dir(),
    ];
    if let Ok(entries) = std::fs::read_dir(home.sessions_dir()) {
        folders.extend(
            entries
                .flatten()
                .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
                .map(|entry| entry.path()),
        );
    }
    folders
}

/// Removes the temp files interrupted writes left; logs what it removed.
pub(crate) fn remove_interrupted_writes(home: &Home) {
    let mut removed = 0;
    for folder in written_folders(home) {
        match remove_stale_temp_files(&folder) {
            Ok(files) => {
                for file in &files {
                    tracing::debug!("removed {}, left by an interrupted write", file.display());
                }
                removed += files.len();
            }
            Err(err) => tracing::warn!(
                "cannot clear the temp files of interrupted writes in {}: {err}",
                folder.display()
            ),
        }
    }
    if removed > 0 {
        tracing::info!("removed {removed} temp files left by interrupted writes");
    }
}
