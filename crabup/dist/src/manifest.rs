//! `dist-manifest.json`: what a release holds, in the shape cargo-dist
//! writes and its `cargo-dist-schema` crate reads (a test parses ours with
//! it). Only the parts crabtalk uses are modelled; unknown fields are
//! ignored when reading, so a manifest cargo-dist itself wrote reads too.
//!
//! Each build job of a release packs the programs of one target and writes
//! a manifest of those; [`Manifest::merge`] joins them into the release's
//! one. crabup reads it to find the archive of a program for its target
//! and the archive's SHA-256 ([`Manifest::archive_for`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The artifact kind of an archive of binaries (cargo-dist's name).
pub const KIND_ARCHIVE: &str = "executable-zip";
/// The artifact kind of a `.sha256` file.
pub const KIND_CHECKSUM: &str = "checksum";

/// The most of a manifest anyone reads: a release of six programs on five
/// targets is about 30 KiB.
pub const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;

/// A release's manifest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The tag of the release, `v<version>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub announcement_tag: Option<String>,
    #[serde(default)]
    pub announcement_tag_is_implicit: bool,
    #[serde(default)]
    pub announcement_is_prerelease: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub announcement_title: Option<String>,
    /// One per program.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub releases: Vec<Release>,
    /// Every file of the release but the manifest, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub artifacts: BTreeMap<String, Artifact>,
    #[serde(default)]
    pub publish_prereleases: bool,
    #[serde(default)]
    pub force_latest: bool,
    /// Dynamic linkage reports (cargo-dist always writes the field).
    #[serde(default)]
    pub linkage: Vec<serde_json::Value>,
    /// The files a release job uploads (cargo-dist always writes it).
    #[serde(default)]
    pub upload_files: Vec<String>,
}

/// One program of the release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Release {
    pub app_name: String,
    pub app_version: String,
    /// The names of its artifacts (keys of [`Manifest::artifacts`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    #[serde(default, skip_serializing_if = "Hosting::is_empty")]
    pub hosting: Hosting,
}

/// Where the artifacts are served.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hosting {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github: Option<GithubHosting>,
}

impl Hosting {
    fn is_empty(&self) -> bool {
        self.github.is_none()
    }
}

/// GitHub release assets: `<base><path><file>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GithubHosting {
    /// `https://github.com`.
    pub artifact_base_url: String,
    /// `/<owner>/<repo>/releases/download/v<version>/`.
    pub artifact_download_path: String,
    pub owner: String,
    pub repo: String,
}

/// One file of the release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// [`KIND_ARCHIVE`], [`KIND_CHECKSUM`], or a kind crabtalk does not use.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_triples: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assets: Vec<Asset>,
    /// The name of the artifact holding this one's checksum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    /// Digests by algorithm (`sha256` → lowercase hex).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub checksums: BTreeMap<String, String>,
}

/// A file inside an archive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Asset {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Relative to the archive's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `executable`, `readme`, `license`, …
    pub kind: String,
}

/// The archive of one program for one target, as the manifest gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveRef {
    /// The archive's file name in the release.
    pub name: String,
    /// Its SHA-256 in the manifest, if given.
    pub sha256: Option<String>,
    /// The name of its checksum file, if it has one.
    pub checksum_file: Option<String>,
    /// The binary's path inside the archive's folder.
    pub binary_path: Option<String>,
}

/// Why two manifests cannot be one release.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("the manifests are of different releases ({0} and {1})")]
    OtherRelease(String, String),
    #[error("{name} is in both manifests with different contents")]
    Conflict { name: String },
}

impl Manifest {
    /// An empty manifest of release `v<version>` of the repository at
    /// `repository` (its GitHub hosting, when it is on GitHub).
    pub fn new(version: &str) -> Self {
        let tag = format!("v{version}");
        Self {
            announcement_title: Some(tag.clone()),
            announcement_tag: Some(tag),
            announcement_is_prerelease: version.contains('-'),
            ..Self::default()
        }
    }

    /// Parses a manifest (at most [`MAX_MANIFEST_BYTES`]).
    pub fn parse(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        if bytes.len() > MAX_MANIFEST_BYTES {
            return Err(serde::de::Error::custom(format!(
                "it is {} bytes, more than a manifest's {MAX_MANIFEST_BYTES}",
                bytes.len()
            )));
        }
        serde_json::from_slice(bytes)
    }

    /// The manifest as pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut json = serde_json::to_string_pretty(self).expect("a manifest serializes");
        json.push('\n');
        json
    }

    /// Adds the archive of `program` for `target` and its checksum file:
    /// `assets` are the files in its folder (`(path, kind)`, the binary's
    /// kind `executable`). `repository` is the program's repository URL.
    pub fn add_archive(
        &mut self,
        program: &str,
        version: &str,
        repository: Option<&str>,
        target: &str,
        sha256: &str,
        assets: &[(String, &str)],
    ) {
        let archive = crate::layout::archive_name(program, target);
        let checksum = crate::layout::checksum_name(&archive);
        self.artifacts.insert(
            archive.clone(),
            Artifact {
                name: Some(archive.clone()),
                kind: KIND_ARCHIVE.to_owned(),
                target_triples: vec![target.to_owned()],
                assets: assets
                    .iter()
                    .map(|(path, kind)| Asset {
                        name: Some(path.clone()),
                        path: Some(path.clone()),
                        kind: (*kind).to_owned(),
                    })
                    .collect(),
                checksum: Some(checksum.clone()),
                checksums: BTreeMap::from([("sha256".to_owned(), sha256.to_owned())]),
            },
        );
        self.artifacts.insert(
            checksum.clone(),
            Artifact {
                name: Some(checksum.clone()),
                kind: KIND_CHECKSUM.to_owned(),
                target_triples: vec![target.to_owned()],
                assets: Vec::new(),
                checksum: None,
                checksums: BTreeMap::new(),
            },
        );
        let hosting = Hosting {
            github: repository.and_then(|url| github_hosting(url, version)),
        };
        let release = match self.releases.iter_mut().position(|r| r.app_name == program) {
            Some(at) => &mut self.releases[at],
            None => {
                self.releases.push(Release {
                    app_name: program.to_owned(),
                    app_version: version.to_owned(),
                    artifacts: Vec::new(),
                    hosting,
                });
                self.releases.last_mut().expect("just pushed")
            }
        };
        for name in [&archive, &checksum] {
            if !release.artifacts.contains(name) {
                release.artifacts.push(name.clone());
            }
            if !self.upload_files.contains(name) {
                self.upload_files.push(name.clone());
            }
        }
    }

    /// Adds everything `other` (another job's manifest of the same
    /// release) has.
    pub fn merge(&mut self, other: Manifest) -> Result<(), MergeError> {
        if self.announcement_tag.is_none() {
            self.announcement_tag = other.announcement_tag.clone();
            self.announcement_title = other.announcement_title.clone();
            self.announcement_is_prerelease = other.announcement_is_prerelease;
        } else if other.announcement_tag.is_some()
            && other.announcement_tag != self.announcement_tag
        {
            return Err(MergeError::OtherRelease(
                self.announcement_tag.clone().unwrap_or_default(),
                other.announcement_tag.unwrap_or_default(),
            ));
        }
        for (name, artifact) in other.artifacts {
            match self.artifacts.get(&name) {
                Some(mine) if *mine != artifact => return Err(MergeError::Conflict { name }),
                Some(_) => {}
                None => {
                    self.artifacts.insert(name, artifact);
                }
            }
        }
        for release in other.releases {
            match self
                .releases
                .iter_mut()
                .find(|r| r.app_name == release.app_name)
            {
                Some(mine) if mine.app_version != release.app_version => {
                    return Err(MergeError::OtherRelease(
                        format!("{} {}", mine.app_name, mine.app_version),
                        format!("{} {}", release.app_name, release.app_version),
                    ));
                }
                Some(mine) => {
                    for name in release.artifacts {
                        if !mine.artifacts.contains(&name) {
                            mine.artifacts.push(name);
                        }
                    }
                }
                None => self.releases.push(release),
            }
        }
        for name in other.upload_files {
            if !self.upload_files.contains(&name) {
                self.upload_files.push(name);
            }
        }
        self.releases.sort_by(|a, b| a.app_name.cmp(&b.app_name));
        for release in &mut self.releases {
            release.artifacts.sort();
        }
        self.upload_files.sort();
        Ok(())
    }

    /// The version the manifest gives `program`.
    pub fn version_of(&self, program: &str) -> Option<&str> {
        self.releases
            .iter()
            .find(|r| r.app_name == program)
            .map(|r| r.app_version.as_str())
    }

    /// The archive of `program` for `target`, if the release has one.
    pub fn archive_for(&self, program: &str, target: &str) -> Option<ArchiveRef> {
        let release = self.releases.iter().find(|r| r.app_name == program)?;
        let binary = crate::layout::binary_name(program, target);
        release.artifacts.iter().find_map(|name| {
            let artifact = self.artifacts.get(name)?;
            if artifact.kind != KIND_ARCHIVE || !artifact.target_triples.iter().any(|t| t == target)
            {
                return None;
            }
            let binary_path = artifact
                .assets
                .iter()
                .filter(|asset| asset.kind == "executable")
                .filter_map(|asset| asset.path.clone())
                .find(|path| path.rsplit(['/', '\\']).next() == Some(binary.as_str()));
            Some(ArchiveRef {
                name: artifact.name.clone().unwrap_or_else(|| name.clone()),
                sha256: artifact.checksums.get("sha256").cloned(),
                checksum_file: artifact.checksum.clone(),
                binary_path,
            })
        })
    }

    /// The targets the release has an archive of `program` for.
    pub fn targets_of(&self, program: &str) -> Vec<String> {
        let Some(release) = self.releases.iter().find(|r| r.app_name == program) else {
            return Vec::new();
        };
        let mut targets: Vec<String> = release
            .artifacts
            .iter()
            .filter_map(|name| self.artifacts.get(name))
            .filter(|artifact| artifact.kind == KIND_ARCHIVE)
            .flat_map(|artifact| artifact.target_triples.iter().cloned())
            .collect();
        targets.sort();
        targets.dedup();
        targets
    }
}

/// GitHub's hosting of release `v<version>` of the repository at `url`
/// (`https://github.com/<owner>/<repo>`), if it is on GitHub.
fn github_hosting(url: &str, version: &str) -> Option<GithubHosting> {
    let rest = url
        .trim_end_matches('/')
        .strip_prefix("https://github.com/")?;
    let rest = rest.strip_suffix(".git").unwrap_or(rest);
    let (owner, repo) = rest.split_once('/')?;
    if owner.is_empty() || repo.is_empty() || repo.contains('/') {
        return None;
    }
    Some(GithubHosting {
        artifact_base_url: "https://github.com".to_owned(),
        artifact_download_path: format!("/{owner}/{repo}/releases/download/v{version}/"),
        owner: owner.to_owned(),
        repo: repo.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    const REPO: Option<&str> = Some("https://github.com/crabtalk/crabtalk");

    fn one(target: &str) -> Manifest {
        let mut manifest = Manifest::new("0.1.0");
        manifest.add_archive(
            "crabtalkd",
            "0.1.0",
            REPO,
            target,
            HEX,
            &[
                ("crabtalkd".to_owned(), "executable"),
                ("README.md".to_owned(), "readme"),
            ],
        );
        manifest
    }

    #[test]
    fn an_archive_is_found_by_program_and_target() {
        let manifest = one("x86_64-unknown-linux-gnu");
        let found = manifest
            .archive_for("crabtalkd", "x86_64-unknown-linux-gnu")
            .unwrap();
        assert_eq!(found.name, "crabtalkd-x86_64-unknown-linux-gnu.tar.xz");
        assert_eq!(found.sha256.as_deref(), Some(HEX));
        assert_eq!(
            found.checksum_file.as_deref(),
            Some("crabtalkd-x86_64-unknown-linux-gnu.tar.xz.sha256")
        );
        assert_eq!(found.binary_path.as_deref(), Some("crabtalkd"));
        assert_eq!(
            manifest.archive_for("crabtalkd", "aarch64-apple-darwin"),
            None
        );
        assert_eq!(
            manifest.archive_for("crabup", "x86_64-unknown-linux-gnu"),
            None
        );
        assert_eq!(manifest.version_of("crabtalkd"), Some("0.1.0"));
        let hosting = manifest.releases[0].hosting.github.as_ref().unwrap();
        assert_eq!(
            hosting.artifact_download_path,
            "/crabtalk/crabtalk/releases/download/v0.1.0/"
        );
    }

    #[test]
    fn the_manifests_of_each_job_merge_into_the_release() {
        let mut release = one("x86_64-unknown-linux-gnu");
        release.merge(one("aarch64-apple-darwin")).unwrap();
        assert_eq!(
            release.targets_of("crabtalkd"),
            ["aarch64-apple-darwin", "x86_64-unknown-linux-gnu"]
        );
        assert_eq!(release.releases.len(), 1);
        assert_eq!(release.releases[0].artifacts.len(), 4);
        assert_eq!(release.upload_files.len(), 4);
        // Merging the same job twice changes nothing.
        let again = release.clone();
        release.merge(one("aarch64-apple-darwin")).unwrap();
        assert_eq!(release, again);
        // Another release, or the same file with other contents, is refused.
        let other = Manifest::new("0.2.0");
        assert!(matches!(
            release.clone().merge(other),
            Err(MergeError::OtherRelease(..))
        ));
        let mut changed = one("aarch64-apple-darwin");
        changed
            .artifacts
            .get_mut("crabtalkd-aarch64-apple-darwin.tar.xz")
            .unwrap()
            .checksums
            .insert("sha256".into(), "0".repeat(64));
        assert!(matches!(
            release.merge(changed),
            Err(MergeError::Conflict { .. })
        ));
    }

    #[test]
    fn json_round_trips_and_unknown_fields_are_ignored() {
        let manifest = one("x86_64-unknown-linux-gnu");
        let json = manifest.to_json();
        assert_eq!(Manifest::parse(json.as_bytes()).unwrap(), manifest);
        let mut value: serde_json::Value = serde_json::from_str(&json).unwrap();
        value["dist_version"] = "0.34.0".into();
        value["systems"] = serde_json::json!({"x": {"id": "x"}});
        let read = Manifest::parse(value.to_string().as_bytes()).unwrap();
        assert_eq!(read, manifest);
        let huge = vec![b' '; MAX_MANIFEST_BYTES + 1];
        assert!(
            Manifest::parse(&huge)
                .unwrap_err()
                .to_string()
                .contains("more than")
        );
    }
}
