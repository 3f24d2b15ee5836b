//! The engines, behind one trait.
//!
//! An [`Engine`] knows two things about its service: how to ask it
//! ([`Engine::request`]: a GET with its parameters and headers) and how to
//! read what came back ([`Engine::parse`]: the hits, nothing found, or the
//! page that says we are being refused). Everything between — the HTTP
//! client, the timeout, the byte cap, the statuses every engine shares
//! (429 and 202 rate-limited, 401 and 403 blocked) — is [`EngineHttp`]'s,
//! written once.
//!
//! HTML pages are read with `scraper` (html5ever and CSS selectors); JSON
//! with `serde_json`. A page without its results container is never "no
//! results": unless the engine's own "nothing found" marker is there, it
//! is a block (a consent, CAPTCHA or changed page). An answer that is
//! empty, or JSON that does not parse (cut short, an HTML page from a
//! proxy), is an error: nothing says the engine refused us, so it is not
//! suspended.

mod bing;
mod brave;
mod duckduckgo;
mod http;
mod mojeek;
pub(crate) mod page;
mod searxng;
mod wikipedia;

use crate::config::{EngineId, EngineSettings};
use crate::health::Status;

pub use self::bing::Bing;
pub use self::brave::Brave;
pub use self::duckduckgo::DuckDuckGo;
pub(crate) use self::http::EngineHttp;
pub use self::mojeek::Mojeek;
pub use self::searxng::Searxng;
pub use self::wikipedia::Wikipedia;

/// What to search for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub text: String,
    /// How many results the caller wants (engines are asked for about that many).
    pub count: usize,
    /// `en`, `de`.
    pub lang: Option<String>,
    /// `us`, `de`.
    pub region: Option<String>,
}

/// One result as an engine listed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub url: String,
    pub title: String,
    pub snippet: String,
}

/// Why an engine gave no list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    RateLimited(String),
    Blocked(String),
    Timeout(String),
    Error(String),
}

impl Failure {
    pub fn status(&self) -> Status {
        match self {
            Failure::RateLimited(_) => Status::RateLimited,
            Failure::Blocked(_) => Status::Blocked,
            Failure::Timeout(_) => Status::Timeout,
            Failure::Error(_) => Status::Error,
        }
    }

    pub fn detail(&self) -> &str {
        match self {
            Failure::RateLimited(d)
            | Failure::Blocked(d)
            | Failure::Timeout(d)
            | Failure::Error(d) => d,
        }
    }
}

/// A GET to send.
#[derive(Debug, Clone)]
pub struct Request {
    pub url: url::Url,
    pub headers: Vec<(&'static str, String)>,
}

/// One search engine.
pub trait Engine: Send + Sync {
    fn id(&self) -> EngineId;

    /// The request for `query`.
    fn request(&self, query: &Query) -> Result<Request, Failure>;

    /// The hits in a successful (2xx) answer to `query`; `Ok(vec![])`
    /// only when the answer says nothing was found.
    fn parse(&self, query: &Query, body: &str) -> Result<Vec<Hit>, Failure>;

    /// What to add to a refusal with this HTTP status, if the engine has
    /// something to say about it.
    fn refusal_hint(&self, _status: u16) -> Option<&'static str> {
        None
    }
}

/// The engine `settings` describe.
pub(crate) fn build(settings: &EngineSettings) -> Box<dyn Engine> {
    let base = settings.base_url.clone();
    match settings.id {
        EngineId::DuckDuckGo => Box::new(DuckDuckGo::new(base)),
        EngineId::Bing => Box::new(Bing::new(base)),
        EngineId::Mojeek => Box::new(Mojeek::new(base)),
        EngineId::Wikipedia => Box::new(Wikipedia::new(base, settings.language.clone())),
        EngineId::Brave => Box::new(Brave::new(
            base,
            settings.api_key.clone().unwrap_or_default(),
        )),
        EngineId::Searxng => Box::new(Searxng::new(base)),
    }
}

/// Whether a hit may lead to `url`: an absolute `http(s)` URL that parses.
/// A prefix check is not enough: an engine's answer can hold a URL whose
/// host is no valid domain name (an unpaired surrogate, a replacement
/// character), which no fetch could follow.
fn is_web_page(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|url| matches!(url.scheme(), "http" | "https"))
}

/// `base` + `path`, as a URL (the base was checked when the config was read).
fn endpoint(base: &str, path: &str) -> Result<url::Url, Failure> {
    url::Url::parse(&format!("{base}{path}"))
        .map_err(|err| Failure::Error(format!("bad base_url {base:?}: {err}")))
}
