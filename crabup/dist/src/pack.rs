//! The packer: built binaries into the release's archives, checksum files
//! and manifest — what the release workflow, a local run and the tests
//! all use, so what is tested is what ships.
//!
//! Each archive is a tar of one folder named like the archive, holding the
//! binary (mode 0755) and the extra files given (the README, 0644), with
//! fixed owners and times so the same binary packs to the same tar; then
//! xz-compressed at the preset asked for (6, xz's own default, unless
//! told: tests pack at 0, which is fast).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::Sha256;
use crate::layout::{archive_name, binary_name, checksum_file, checksum_name, root_folder};
use crate::manifest::Manifest;

/// The time every entry carries (what the `tar` crate's deterministic
/// mode uses too): archives of the same bytes are the same.
const ENTRY_TIME: u64 = 1_153_704_088;

/// How to pack: for which target, at which version, into which folder.
#[derive(Debug, Clone)]
pub struct Packer {
    pub target: String,
    pub version: String,
    /// The repository URL, for the manifest's hosting (`https://github.com/<owner>/<repo>`).
    pub repository: Option<String>,
    /// The xz preset, 0 (fast) to 9 (small).
    pub preset: u32,
    /// Files put beside every binary, with their asset kind (`readme`, `license`).
    pub extras: Vec<(PathBuf, String)>,
    pub out_dir: PathBuf,
}

/// One packed archive.
#[derive(Debug, Clone)]
pub struct Packed {
    pub program: String,
    pub archive: PathBuf,
    pub checksum_file: PathBuf,
    pub sha256: String,
}

impl Packer {
    /// A packer of this workspace's version and repository for `target`,
    /// writing into `out_dir`.
    pub fn new(target: &str, out_dir: impl Into<PathBuf>) -> Self {
        Self {
            target: target.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            repository: Some(env!("CARGO_PKG_REPOSITORY").to_owned()).filter(|r| !r.is_empty()),
            preset: 6,
            extras: Vec::new(),
            out_dir: out_dir.into(),
        }
    }

    /// Packs `binary` (the built file) as `program`'s archive, writes its
    /// checksum file beside it, and adds both to `manifest`.
    pub fn pack(
        &self,
        program: &str,
        binary: &Path,
        manifest: &mut Manifest,
    ) -> io::Result<Packed> {
        std::fs::create_dir_all(&self.out_dir)?;
        let archive = archive_name(program, &self.target);
        let archive_path = self.out_dir.join(&archive);
        let partial = self.out_dir.join(format!(".{archive}.partial"));
        let written = self.write_archive(program, binary, &partial);
        if let Err(err) = written {
            let _ = std::fs::remove_file(&partial);
            return Err(err);
        }
        std::fs::rename(&partial, &archive_path)?;
        let sha256 = Sha256::of_file(&archive_path)?;
        let checksum_path = self.out_dir.join(checksum_name(&archive));
        std::fs::write(&checksum_path, checksum_file(&sha256, &archive))?;
        let mut assets: Vec<(String, &str)> =
            vec![(binary_name(program, &self.target), "executable")];
        for (extra, kind) in &self.extras {
            assets.push((file_name(extra)?, kind.as_str()));
        }
        manifest.add_archive(
            program,
            &self.version,
            self.repository.as_deref(),
            &self.target,
            &sha256,
            &assets,
        );
        Ok(Packed {
            program: program.to_owned(),
            archive: archive_path,
            checksum_file: checksum_path,
            sha256,
        })
    }

    fn write_archive(&self, program: &str, binary: &Path, to: &Path) -> io::Result<()> {
        let file = BufWriter::new(File::create(to)?);
        let xz = lzma_rust2::XzWriter::new(file, lzma_rust2::XzOptions::with_preset(self.preset))?;
        let mut tar = tar::Builder::new(xz);
        let root = root_folder(program, &self.target);
        let mut folder = header(tar::EntryType::Directory, 0o755, 0);
        tar.append_data(&mut folder, format!("{root}/"), io::empty())?;
        let entries =
            std::iter::once((binary.to_owned(), binary_name(program, &self.target), 0o755)).chain(
                self.extras
                    .iter()
                    .map(|(path, _)| Ok((path.clone(), file_name(path)?, 0o644)))
                    .collect::<io::Result<Vec<_>>>()?,
            );
        for (source, name, mode) in entries {
            let file = File::open(&source).map_err(|err| {
                io::Error::new(err.kind(), format!("{}: {err}", source.display()))
            })?;
            let size = file.metadata()?.len();
            let mut entry = header(tar::EntryType::Regular, mode, size);
            tar.append_data(&mut entry, format!("{root}/{name}"), file)?;
        }
        let xz = tar.into_inner()?;
        let mut file = xz.finish()?;
        file.flush()?;
        file.into_inner()
            .map_err(|err| err.into_error())?
            .sync_all()
    }
}

fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_mtime(ENTRY_TIME);
    header.set_uid(0);
    header.set_gid(0);
    header
}

fn file_name(path: &Path) -> io::Result<String> {
    path.file_name()
        .and_then(|name| name.to_str())
        .map(str::to_owned)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} has no file name", path.display()),
            )
        })
}
