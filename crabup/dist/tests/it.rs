//! The packer's output read back: by the archive reader crabup uses, by
//! the system's own `tar` and `sha256sum` where the machine has them, and
//! the manifest by cargo-dist's own `cargo-dist-schema`; and archives a
//! hostile server could send, each refused with its own error.

use std::path::{Path, PathBuf};
use std::process::Command;

use crabtalk_dist::Sha256;
use crabtalk_dist::layout::{archive_name, checksum_name, parse_checksum_file};
use crabtalk_dist::manifest::Manifest;
use crabtalk_dist::pack::Packer;
use crabtalk_dist::unpack::{Limits, UnpackError, extract_binary};

const TARGET: &str = "x86_64-unknown-linux-gnu";

/// A fake "binary" and a README in `dir`.
fn inputs(dir: &Path) -> (PathBuf, PathBuf) {
    let binary = dir.join("built/crabtalkd");
    std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
    std::fs::write(&binary, b"#!/bin/sh\necho crabtalkd 0.1.0\n").unwrap();
    let readme = dir.join("README.md");
    std::fs::write(&readme, b"# crabtalk\n").unwrap();
    (binary, readme)
}

fn packed(dir: &Path) -> (Manifest, PathBuf) {
    let (binary, readme) = inputs(dir);
    let out = dir.join("distrib");
    let mut packer = Packer::new(TARGET, &out);
    packer.preset = 0;
    packer.extras = vec![(readme, "readme".into())];
    let mut manifest = Manifest::new(env!("CARGO_PKG_VERSION"));
    packer.pack("crabtalkd", &binary, &mut manifest).unwrap();
    std::fs::write(out.join("dist-manifest.json"), manifest.to_json()).unwrap();
    (manifest, out)
}

fn has(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn an_archive_holds_one_folder_named_like_it_with_the_binary_and_readme() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = packed(dir.path());
    let archive = out.join(archive_name("crabtalkd", TARGET));
    assert_eq!(
        archive.file_name().unwrap(),
        "crabtalkd-x86_64-unknown-linux-gnu.tar.xz"
    );
    // The entries, in order, with their modes.
    let file = std::fs::File::open(&archive).unwrap();
    let mut tar = tar::Archive::new(lzma_rust2::XzReader::new(file, false));
    let entries: Vec<(String, u32, bool)> = tar
        .entries()
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (
                entry.path().unwrap().display().to_string(),
                entry.header().mode().unwrap(),
                entry.header().entry_type().is_dir(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            (
                "crabtalkd-x86_64-unknown-linux-gnu/".to_owned(),
                0o755,
                true
            ),
            (
                "crabtalkd-x86_64-unknown-linux-gnu/crabtalkd".to_owned(),
                0o755,
                false
            ),
            (
                "crabtalkd-x86_64-unknown-linux-gnu/README.md".to_owned(),
                0o644,
                false
            ),
        ]
    );
    // The checksum file: cargo-dist's line, and right.
    let checksum = std::fs::read_to_string(out.join(checksum_name(
        archive.file_name().unwrap().to_str().unwrap(),
    )))
    .unwrap();
    let sha = Sha256::of_file(&archive).unwrap();
    assert_eq!(
        checksum,
        format!("{sha} *crabtalkd-x86_64-unknown-linux-gnu.tar.xz\n\n")
    );
    assert_eq!(
        parse_checksum_file(&checksum, "crabtalkd-x86_64-unknown-linux-gnu.tar.xz").unwrap(),
        sha
    );
    // What people and installers do with them.
    if has("sha256sum") {
        let check = Command::new("sha256sum")
            .args(["-c", "crabtalkd-x86_64-unknown-linux-gnu.tar.xz.sha256"])
            .current_dir(&out)
            .output()
            .unwrap();
        assert!(check.status.success(), "{check:?}");
    }
    if has("tar") && has("xz") {
        let unpacked = dir.path().join("unpacked");
        std::fs::create_dir_all(&unpacked).unwrap();
        let untar = Command::new("tar")
            .arg("-xJf")
            .arg(&archive)
            .current_dir(&unpacked)
            .output()
            .unwrap();
        assert!(untar.status.success(), "{untar:?}");
        let binary = unpacked.join("crabtalkd-x86_64-unknown-linux-gnu/crabtalkd");
        let ran = Command::new(&binary).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&ran.stdout), "crabtalkd 0.1.0\n");
    }
}

#[test]
fn the_manifest_parses_with_cargo_dist_s_own_schema_crate() {
    let dir = tempfile::tempdir().unwrap();
    let (ours, out) = packed(dir.path());
    let json = std::fs::read_to_string(out.join("dist-manifest.json")).unwrap();
    let theirs: cargo_dist_schema::DistManifest = serde_json::from_str(&json).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        theirs.announcement_tag.as_deref(),
        Some(&*format!("v{version}"))
    );
    let release = theirs.release_by_name("crabtalkd").unwrap();
    assert_eq!(release.app_version, version);
    let archive = archive_name("crabtalkd", TARGET);
    let (_, artifact) = theirs
        .artifacts_for_release(release)
        .find(|(id, _)| id.as_str() == archive)
        .unwrap();
    assert!(matches!(
        artifact.kind,
        cargo_dist_schema::ArtifactKind::ExecutableZip
    ));
    assert_eq!(artifact.target_triples[0].as_str(), TARGET);
    let sha = ours
        .archive_for("crabtalkd", TARGET)
        .unwrap()
        .sha256
        .unwrap();
    let (_, their_sha) = artifact.checksums.iter().next().unwrap();
    assert_eq!(their_sha.as_str(), sha);
    assert_eq!(
        artifact.checksum.as_ref().unwrap().as_str(),
        checksum_name(&archive)
    );
    assert!(artifact.assets.iter().any(|asset| matches!(
        asset.kind,
        cargo_dist_schema::AssetKind::Executable(_)
    ) && asset.path.as_deref() == Some("crabtalkd")));
    let checksum_artifact = &theirs.artifacts[checksum_name(&archive).as_str()];
    assert!(matches!(
        checksum_artifact.kind,
        cargo_dist_schema::ArtifactKind::Checksum
    ));
    let hosting = release.hosting.github.as_ref().unwrap();
    assert_eq!(
        (hosting.owner.as_str(), hosting.repo.as_str()),
        ("crabtalk", "crabtalk")
    );
}

#[test]
fn the_binary_comes_back_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = packed(dir.path());
    let archive = std::fs::File::open(out.join(archive_name("crabtalkd", TARGET))).unwrap();
    let mut binary = Vec::new();
    let copied = extract_binary(
        archive,
        "crabtalkd-x86_64-unknown-linux-gnu/crabtalkd",
        &Limits::default(),
        &mut binary,
    )
    .unwrap();
    assert_eq!(copied as usize, binary.len());
    assert_eq!(
        binary,
        std::fs::read(dir.path().join("built/crabtalkd")).unwrap()
    );
}

/// A `.tar.xz` of raw entries: (name bytes as written, kind, data), so a
/// test can write what a well-behaved tar writer never would.
fn hostile(entries: &[(&[u8], tar::EntryType, &[u8])], preset: u32) -> Vec<u8> {
    let xz =
        lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(preset)).unwrap();
    let mut tar = tar::Builder::new(xz);
    for (name, kind, data) in entries {
        let mut header = tar::Header::new_old();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_entry_type(*kind);
        header.set_mode(0o755);
        header.set_size(data.len() as u64);
        if kind.is_symlink() {
            header.set_link_name("/etc/passwd").unwrap();
        }
        header.set_cksum();
        tar.append(&header, *data).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

const WANTED: &str = "crabtalkd-x86_64-unknown-linux-gnu/crabtalkd";

fn extract(archive: &[u8], limits: &Limits) -> (Result<u64, UnpackError>, Vec<u8>) {
    let mut out = Vec::new();
    let result = extract_binary(archive, WANTED, limits, &mut out);
    (result, out)
}

#[test]
fn a_hostile_archive_writes_nothing_but_the_named_plain_file() {
    let limits = Limits::default();
    // Paths that climb out, or are absolute, are never the wanted one.
    let archive = hostile(
        &[
            (b"../../.bashrc", tar::EntryType::Regular, b"evil"),
            (b"/usr/bin/crabtalkd", tar::EntryType::Regular, b"evil"),
            (
                b"crabtalkd-x86_64-unknown-linux-gnu/../crabtalkd",
                tar::EntryType::Regular,
                b"evil",
            ),
        ],
        0,
    );
    let (result, out) = extract(&archive, &limits);
    assert!(
        matches!(result, Err(UnpackError::Missing(ref p)) if p == WANTED),
        "{result:?}"
    );
    assert!(out.is_empty());
    // The wanted name as a link or a folder.
    for (kind, said) in [
        (tar::EntryType::Symlink, "symbolic link"),
        (tar::EntryType::Directory, "directory"),
    ] {
        let archive = hostile(&[(WANTED.as_bytes(), kind, b"")], 0);
        let (result, out) = extract(&archive, &limits);
        let err = result.unwrap_err();
        assert!(matches!(err, UnpackError::NotAFile { .. }), "{err:?}");
        assert!(err.to_string().contains(said), "{err}");
        assert!(out.is_empty());
    }
    // `./` in front is the same entry (some tar writers add it).
    let archive = hostile(
        &[(
            b"./crabtalkd-x86_64-unknown-linux-gnu/crabtalkd",
            tar::EntryType::Regular,
            b"ok",
        )],
        0,
    );
    let (result, out) = extract(&archive, &limits);
    assert_eq!(result.unwrap(), 2);
    assert_eq!(out, b"ok");
}

#[test]
fn an_archive_that_would_fill_the_disk_or_the_memory_is_refused() {
    // Zeros compress to almost nothing and unpack to much.
    let zeros = vec![0u8; 4 * 1024 * 1024];
    let small = Limits {
        max_unpacked_bytes: 1024 * 1024,
        ..Limits::default()
    };
    let bomb = hostile(
        &[
            (b"padding", tar::EntryType::Regular, &zeros),
            (WANTED.as_bytes(), tar::EntryType::Regular, b"late"),
        ],
        0,
    );
    assert!(bomb.len() < 64 * 1024, "{}", bomb.len());
    let (result, out) = extract(&bomb, &small);
    assert!(matches!(result, Err(UnpackError::TooMuch(_))), "{result:?}");
    assert!(out.is_empty());
    // The binary itself too large.
    let big = hostile(&[(WANTED.as_bytes(), tar::EntryType::Regular, &zeros)], 0);
    let tight = Limits {
        max_binary_bytes: 1024,
        ..Limits::default()
    };
    let (result, out) = extract(&big, &tight);
    assert!(
        matches!(result, Err(UnpackError::TooLarge { .. })),
        "{result:?}"
    );
    assert!(out.is_empty());
    // Endless entries.
    let names: Vec<String> = (0..10).map(|n| format!("f{n}")).collect();
    let many: Vec<(&[u8], tar::EntryType, &[u8])> = names
        .iter()
        .map(|n| (n.as_bytes(), tar::EntryType::Regular, &b"x"[..]))
        .collect();
    let few = Limits {
        max_entries: 3,
        ..Limits::default()
    };
    let (result, _) = extract(&hostile(&many, 0), &few);
    assert!(
        matches!(result, Err(UnpackError::TooManyEntries(3))),
        "{result:?}"
    );
    // A dictionary larger than the decoder may allocate (xz -9 asks 64 MiB).
    let archive = hostile(&[(WANTED.as_bytes(), tar::EntryType::Regular, b"x")], 9);
    let stingy = Limits {
        max_decoder_kib: 1024,
        ..Limits::default()
    };
    let (result, out) = extract(&archive, &stingy);
    assert!(matches!(result, Err(UnpackError::Corrupt(_))), "{result:?}");
    assert!(out.is_empty());
}

#[test]
fn a_damaged_or_truncated_archive_is_not_read_as_a_binary() {
    let data = vec![7u8; 100_000];
    let archive = hostile(&[(WANTED.as_bytes(), tar::EntryType::Regular, &data)], 0);
    let limits = Limits::default();
    let mut cut = archive.clone();
    cut.truncate(archive.len() / 2);
    let (result, _) = extract(&cut, &limits);
    assert!(result.is_err(), "{result:?}");
    let mut flipped = archive.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0xff;
    let (result, _) = extract(&flipped, &limits);
    assert!(result.is_err(), "{result:?}");
    let (result, _) = extract(b"<html>404</html>", &limits);
    assert!(matches!(result, Err(UnpackError::Corrupt(_))), "{result:?}");
}

#[test]
fn the_size_check_prints_the_table_and_fails_on_a_binary_over_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let target = crabtalk_dist::HOST_TARGET;
    for &(program, limit) in &crabtalk_dist::sizes::LIMITS {
        let binary = dir
            .path()
            .join(crabtalk_dist::layout::binary_name(program, target));
        let file = std::fs::File::create(&binary).unwrap();
        file.set_len(limit - 1).unwrap();
    }
    let check = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_crabtalk-dist"))
            .args(["sizes", "--bin-dir"])
            .arg(dir.path())
            .output()
            .unwrap()
    };
    let within = check();
    let table = String::from_utf8_lossy(&within.stdout);
    assert!(within.status.success(), "{table}");
    assert_eq!(table.matches("| ok, 0.00 MB under |").count(), 6, "{table}");

    let crabup = dir
        .path()
        .join(crabtalk_dist::layout::binary_name("crabup", target));
    std::fs::File::options()
        .write(true)
        .open(&crabup)
        .unwrap()
        .set_len(6_400_000)
        .unwrap();
    let over = check();
    let table = String::from_utf8_lossy(&over.stdout);
    let error = String::from_utf8_lossy(&over.stderr);
    assert!(!over.status.success(), "{table}");
    assert!(
        table.contains("| `crabup` | 6.40 MB | 6.00 MB | **over by 0.40 MB** |"),
        "{table}"
    );
    assert!(error.contains(": crabup (build with"), "{error}");
}
