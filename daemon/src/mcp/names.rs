//! Names: of MCP servers, and of their tools as a model sees them.
//!
//! A tool is offered as `server__tool`. Every provider accepts tool names of
//! at most 64 characters of `[A-Za-z0-9_-]`, so the server's part is used as
//! it is and must already be such a name — one rule, checked wherever a name
//! comes in (agent files, `UpsertMcp`, `CreateAgent`/`UpdateAgent`, port
//! files): 1 to [`MAX_SERVER_NAME`] letters, digits, `-` and `_`, beginning
//! and ending with a letter or digit, without `__`. So `server__` always
//! begins exactly one server's tools, and two servers never share a tool
//! name.
//!
//! A server's own tool names are not ours to choose: characters outside the
//! set become `_`, and a name that is too long, or that collides with
//! another tool of the same server after that, is cut and ends in a short
//! hash of the tool's real name (with a warning), so it stays unique and
//! stays the same across restarts.

/// The longest tool name every provider accepts.
pub(crate) const MAX_TOOL_NAME: usize = 64;

/// Between the server's name and the tool's.
pub(crate) const SEPARATOR: &str = "__";

pub(crate) use crate::config::agent::validate_server_name;

/// The names a server's tools are offered under, in the order given.
/// Collisions are resolved (and logged) as the module says.
pub(crate) fn qualify_all(server: &str, tools: &[String]) -> Vec<String> {
    let mut taken = std::collections::BTreeSet::new();
    tools
        .iter()
        .map(|tool| {
            let plain = qualify(server, tool);
            if taken.insert(plain.clone()) {
                return plain;
            }
            let hashed = qualify_hashed(server, tool);
            tracing::warn!(
                "MCP server {server}: tool {tool:?} would be offered as {plain}, which another of \
                 its tools already is; it is offered as {hashed}"
            );
            taken.insert(hashed.clone());
            hashed
        })
        .collect()
}

/// `server__tool`, made safe: characters outside `[A-Za-z0-9_-]` become `_`;
/// a result over [`MAX_TOOL_NAME`] is cut and ends in a hash of the tool.
fn qualify(server: &str, tool: &str) -> String {
    let name = format!("{server}{SEPARATOR}{}", sanitize(tool));
    if name.len() <= MAX_TOOL_NAME {
        name
    } else {
        qualify_hashed(server, tool)
    }
}

/// `server__<cut tool>_<hash>`, at most [`MAX_TOOL_NAME`] bytes.
fn qualify_hashed(server: &str, tool: &str) -> String {
    let suffix = format!("_{:08x}", fnv1a(tool.as_bytes()));
    let mut name = format!("{server}{SEPARATOR}{}", sanitize(tool));
    name.truncate(MAX_TOOL_NAME - suffix.len());
    name.push_str(&suffix);
    name
}

fn sanitize(tool: &str) -> String {
    tool.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// 32-bit FNV-1a: small, and the same in every build (std's hasher is not
/// promised to be), so a tool keeps its name across restarts and upgrades.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash, &byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_safe_for_every_provider() {
        let tools = ["look up".to_owned(), "add".to_owned()];
        assert_eq!(
            qualify_all("my-server", &tools),
            ["my-server__look_up", "my-server__add"]
        );
        let long = "t".repeat(100);
        let name = &qualify_all("calc", std::slice::from_ref(&long))[0];
        assert_eq!(name.len(), MAX_TOOL_NAME);
        assert!(name.starts_with("calc__ttt"), "{name}");
        assert_eq!(name, &qualify_all("calc", &[long])[0], "stable");
    }

    #[test]
    fn tools_that_collide_after_cleaning_or_cutting_stay_apart() {
        let long = "x".repeat(70);
        let tools = [
            "look up".to_owned(),
            "look_up".to_owned(),
            format!("{long}a"),
            format!("{long}b"),
        ];
        let names = qualify_all("calc", &tools);
        assert_eq!(names[0], "calc__look_up");
        assert!(names[1].starts_with("calc__look_up_") && names[1] != names[0]);
        assert_ne!(names[2], names[3]);
        assert!(names.iter().all(|name| name.len() <= MAX_TOOL_NAME));
        let unique: std::collections::BTreeSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
    }
}
