//! `getUpdates` returning each update as raw JSON, so that one update
//! the library cannot read does not hide the others: each is parsed on
//! its own, and one that fails is logged and skipped by its `update_id`.

use std::time::Duration;

use serde::Serialize;
use teloxide_core::requests::Payload;

/// The payload of a long poll.
#[derive(Debug, Clone, Serialize)]
pub struct RawGetUpdates {
    pub offset: i64,
    pub timeout: u64,
    pub limit: u8,
    pub allowed_updates: Vec<&'static str>,
}

impl Payload for RawGetUpdates {
    type Output = Vec<serde_json::Value>;
    const NAME: &'static str = "getUpdates";

    fn timeout_hint(&self) -> Option<Duration> {
        Some(Duration::from_secs(self.timeout))
    }
}

/// What the gateway asks to be told about.
pub const ALLOWED_UPDATES: [&str; 2] = ["message", "callback_query"];
