//! Keys a configuration does not know, and what to tell a person about
//! each: where it is, and the known key it most likely meant.
//!
//! Every program of the family refuses an unknown key rather than ignoring
//! it (a typo would leave its setting at the default while the person
//! believes it set), and says it the same way:
//!
//! ```text
//! unknown key `tpc` in [transport]; did you mean `tcp`?
//! unknown key `colour` in [bash]; the keys here are disabled, deny, …
//! ```

use serde::de::{DeserializeOwned, Deserializer};

use super::fields;
use super::location::KeyPath;
use crate::suggest::closest;

/// A key nobody reads, and the keys its table does know (when they can be
/// known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    pub path: KeyPath,
    pub known: Option<&'static [&'static str]>,
}

impl UnknownKey {
    /// The key at `path`, in a table whose keys are `known`.
    pub fn new(path: KeyPath, known: &'static [&'static str]) -> Self {
        Self {
            path,
            known: Some(known),
        }
    }

    /// The key at `path` of a `T`: the known keys are the fields of the
    /// struct the key is in, read from `T` itself.
    pub fn of<T: DeserializeOwned>(path: KeyPath) -> Self {
        let known = fields::known_at::<T>(&path.parent());
        Self { path, known }
    }

    /// What to tell a person: the key, the table it is in, and the likely
    /// fix.
    pub fn message(&self) -> String {
        let key = self.path.last_key().unwrap_or_default();
        let place = self
            .path
            .table()
            .map(|table| format!(" in {table}"))
            .unwrap_or_default();
        let known = self.known.unwrap_or_default();
        if let Some(likely) = closest(key, known) {
            return format!("unknown key `{key}`{place}; did you mean `{likely}`?");
        }
        if known.is_empty() {
            return format!(
                "unknown key `{key}`{place}; check its spelling (a key this version does not \
                 know is refused rather than ignored)"
            );
        }
        format!(
            "unknown key `{key}`{place}; the keys here are {}",
            known.join(", ")
        )
    }
}

/// Reads a `T` from `deserializer` (TOML, JSON, …) and every key in it that
/// `T` does not know, in the order they were met.
pub fn deserialize_noting_unknown<'de, T, D>(
    deserializer: D,
) -> Result<(T, Vec<UnknownKey>), D::Error>
where
    T: DeserializeOwned,
    D: Deserializer<'de>,
{
    let mut paths = Vec::new();
    let value: T = serde_ignored::deserialize(deserializer, |path| {
        paths.push(KeyPath::from_ignored(&path));
    })?;
    let unknown = paths.into_iter().map(UnknownKey::of::<T>).collect();
    Ok((value, unknown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Agent {
        #[serde(default)]
        tools: Vec<String>,
        #[serde(default)]
        model: Option<String>,
        #[serde(default)]
        bash: Bash,
    }

    #[derive(Debug, Default, serde::Deserialize)]
    #[allow(dead_code)]
    struct Bash {
        #[serde(default)]
        disabled: bool,
        #[serde(default)]
        deny: Vec<String>,
    }

    #[test]
    fn unknown_keys_say_where_they_are_and_what_was_meant() {
        let json = r#"{"tols": ["read"], "bash": {"colour": "red", "disabeld": true}}"#;
        let mut deserializer = serde_json::Deserializer::from_str(json);
        let (_agent, unknown): (Agent, _) = deserialize_noting_unknown(&mut deserializer).unwrap();
        let messages: Vec<String> = unknown.iter().map(UnknownKey::message).collect();
        assert_eq!(
            messages,
            [
                "unknown key `tols`; did you mean `tools`?",
                "unknown key `colour` in [bash]; the keys here are disabled, deny",
                "unknown key `disabeld` in [bash]; did you mean `disabled`?",
            ]
        );
        let unlisted = UnknownKey {
            path: KeyPath::keys(&["other"]),
            known: None,
        };
        assert!(
            unlisted
                .message()
                .starts_with("unknown key `other`; check its spelling"),
            "{}",
            unlisted.message()
        );
        let cron = UnknownKey::new(
            KeyPath::keys(&["cron"]).index(1).key("evry"),
            &["id", "every"],
        );
        assert_eq!(
            cron.message(),
            "unknown key `evry` in [[cron]]; did you mean `every`?"
        );
    }
}
