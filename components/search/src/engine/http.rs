//! [`EngineHttp`]: asking an engine over HTTP, the same way for all.
//!
//! One reqwest client, made on first use (building it loads the system's
//! CA certificates; an idle service that was never asked does not pay for
//! that): no proxies from the environment, at most 3 redirects, the
//! configured user agent. A body is read up to [`MAX_ENGINE_BODY`]; a
//! larger one is an error, never an unbounded allocation.

use std::sync::OnceLock;
use std::time::Duration;

use super::{Engine, Failure, Hit, Query};

/// The most bytes of an engine's answer read.
pub(super) const MAX_ENGINE_BODY: usize = 4 * 1024 * 1024;

/// The HTTP side of every engine.
pub(crate) struct EngineHttp {
    user_agent: String,
    client: OnceLock<reqwest::Client>,
}

impl EngineHttp {
    pub(crate) fn new(user_agent: String) -> Self {
        Self {
            user_agent,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, Failure> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        // reqwest is built without a TLS provider of its own (see the kit's `tls`).
        crabtalk_kit::install_ring();
        let client = reqwest::Client::builder()
            .user_agent(&self.user_agent)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::limited(3))
            .connect_timeout(Duration::from_secs(10))
            .pool_idle_timeout(Duration::from_secs(30))
            // A burst of searches opens many connections; keep a few.
            .pool_max_idle_per_host(4)
            .build()
            .map_err(|err| Failure::Error(format!("cannot build the HTTP client: {err}")))?;
        Ok(self.client.get_or_init(|| client))
    }

    /// Asks `engine` for `query`. The caller bounds the time.
    pub(crate) async fn ask(
        &self,
        engine: &dyn Engine,
        query: &Query,
    ) -> Result<Vec<Hit>, Failure> {
        let request = engine.request(query)?;
        let mut builder = self.client()?.get(request.url.clone());
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        let mut response = builder.send().await.map_err(|err| {
            Failure::Error(format!(
                "request failed: {}",
                crate::fetch::error_chain(&err)
            ))
        })?;
        let status = response.status().as_u16();
        if response.url().path().contains("captcha") {
            return Err(Failure::Blocked(format!(
                "redirected to a CAPTCHA page ({})",
                response.url().path()
            )));
        }
        if let Some(failure) = refusal(engine, status) {
            return Err(failure);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|err| Failure::Error(format!("reading the answer failed: {err}")))?
        {
            if body.len() + chunk.len() > MAX_ENGINE_BODY {
                return Err(Failure::Error(format!(
                    "the answer is larger than {MAX_ENGINE_BODY} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        // An empty answer is a broken one (a proxy, a cut connection), not a
        // page telling us to go away.
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err(Failure::Error(format!("HTTP {status} with an empty body")));
        }
        engine.parse(query, &String::from_utf8_lossy(&body))
    }
}

/// What an HTTP status other than a plain success means for any engine.
fn refusal(engine: &dyn Engine, status: u16) -> Option<Failure> {
    let hint = |text: String| match engine.refusal_hint(status) {
        Some(hint) => format!("{text}: {hint}"),
        None => text,
    };
    match status {
        200 | 201 | 203 => None,
        // DuckDuckGo's answer to too many queries is 202 with no results.
        202 => Some(Failure::RateLimited(hint(
            "HTTP 202 (the engine's rate limit)".into(),
        ))),
        429 => Some(Failure::RateLimited(hint(
            "HTTP 429 Too Many Requests".into(),
        ))),
        401 | 403 => Some(Failure::Blocked(hint(format!(
            "HTTP {status}: access refused"
        )))),
        _ => Some(Failure::Error(hint(format!("HTTP {status}")))),
    }
}
