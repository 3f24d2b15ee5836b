//! [`Health`]: what a component answers at `GET /health`.
//!
//! A port that accepts a TCP connection only proves that something holds
//! it, so every component serves a small JSON report next to `/mcp`:
//!
//! ```json
//! {"service":"search","version":"0.1.0","pid":4242}
//! ```
//!
//! A component that knows of problems worth a look (the scheduler's
//! failing entries) lists them as `"problems": [...]`; `crabup ps` shows
//! the service as degraded with them.
//!
//! The component kit serves it; `crabup ps` asks for it. The shape lives
//! here, below both, so the two cannot drift apart.

/// Where the health report is served.
pub const HEALTH_PATH: &str = "/health";

/// What a component says about itself at [`HEALTH_PATH`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Health {
    /// The service's short name (`search`).
    pub service: String,
    /// The crabtalk release the component was built from.
    pub version: String,
    pub pid: u32,
    /// Problems the component reports about itself, in words (none: all
    /// well).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

impl Health {
    /// This process, serving `service`.
    pub fn of_this_process(service: &str) -> Self {
        Self {
            service: service.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            pid: std::process::id(),
            problems: Vec::new(),
        }
    }
}
