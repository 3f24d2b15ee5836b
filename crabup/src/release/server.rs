//! Where releases are: `$CRABUP_DIST_SERVER/v<version>/<file>`.

/// The variable that points crabup at another release server (a mirror, a
/// local folder served over HTTP, a test's server).
pub(crate) const DIST_SERVER_ENV: &str = "CRABUP_DIST_SERVER";

/// The release server: a base URL under which each release is a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DistServer {
    base: String,
}

impl DistServer {
    /// `CRABUP_DIST_SERVER`, else the GitHub releases of the repository
    /// crabup was built from (its Cargo metadata).
    pub(crate) fn from_env() -> Self {
        match std::env::var(DIST_SERVER_ENV) {
            Ok(base) if !base.trim().is_empty() => Self::new(&base),
            _ => Self::default_for(env!("CARGO_PKG_REPOSITORY")),
        }
    }

    pub(crate) fn new(base: &str) -> Self {
        Self {
            base: base.trim().trim_end_matches('/').to_owned(),
        }
    }

    /// `<repository>/releases/download`: where GitHub serves a release's
    /// assets, `<…>/v<version>/<file>`.
    pub(crate) fn default_for(repository: &str) -> Self {
        let repository = repository.trim_end_matches('/');
        let repository = repository.strip_suffix(".git").unwrap_or(repository);
        Self::new(&format!("{repository}/releases/download"))
    }

    /// The URL of `file` in release `v<version>`.
    pub(crate) fn url(&self, version: &str, file: &str) -> String {
        format!("{}/v{version}/{file}", self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_folders_named_by_tag_under_the_base() {
        let github = DistServer::default_for("https://github.com/crabtalk/crabtalk");
        assert_eq!(
            github.url("0.1.0", "dist-manifest.json"),
            "https://github.com/crabtalk/crabtalk/releases/download/v0.1.0/dist-manifest.json"
        );
        assert_eq!(
            DistServer::default_for("https://github.com/crabtalk/crabtalk.git/"),
            github
        );
        let mirror = DistServer::new(" http://127.0.0.1:8080/dist/ ");
        assert_eq!(
            mirror.url("0.2.0-rc.1", "crabup-x86_64-unknown-linux-gnu.tar.xz"),
            "http://127.0.0.1:8080/dist/v0.2.0-rc.1/crabup-x86_64-unknown-linux-gnu.tar.xz"
        );
    }
}
