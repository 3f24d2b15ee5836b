//! [`Fetcher`]: `web_fetch` — one page, safely, within limits.
//!
//! - Only `http` and `https`.
//! - A host written as an IP address, in any spelling the URL parser
//!   accepts (`2130706433`, `0x7f.1`, `127.1`, `[::ffff:7f00:1]` are all
//!   parsed into the address), is checked against the [`AddressPolicy`]
//!   before anything is sent. A host name is resolved by the
//!   [`SafeResolver`] reqwest connects through, so the address checked is
//!   the address connected to.
//! - Redirects are followed here, not by reqwest, at most
//!   [`MAX_REDIRECTS`], each hop checked the same way as the first URL.
//! - No proxy from the environment is used (a proxy would connect on our
//!   behalf to addresses we never checked).
//! - The body is streamed: at most `max_bytes` are read (the rest is left
//!   unread and the page marked cut), and the whole fetch, redirects
//!   included, ends after `timeout`.
//! - HTML becomes readable Markdown or text ([`readable`]), off the async
//!   thread; other accepted types are returned as their text.

pub mod body;
pub mod readable;
pub mod resolver;

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use reqwest::header::{CONTENT_TYPE, LOCATION};

use crate::address::AddressPolicy;
use crate::config::FetchSettings;

pub use self::body::Kind;
pub use self::readable::Format;
pub use self::resolver::{Lookup, ResolveRefused, SafeResolver, SystemLookup};

/// The most redirects followed.
pub const MAX_REDIRECTS: usize = 5;

/// A fetched page, before `max_chars` is applied (what the cache keeps).
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub url: String,
    pub final_url: String,
    pub status: u16,
    pub content_type: String,
    pub title: Option<String>,
    pub format: Format,
    pub content: String,
    /// Whether the body was longer than `max_bytes`.
    pub body_cut: bool,
    pub bytes_read: usize,
}

/// Why a fetch gave nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("{0:?} is not a URL: {1}")]
    BadUrl(String, String),
    #[error("{url}: only http and https URLs are fetched, not {scheme}")]
    Scheme { url: String, scheme: String },
    #[error(
        "{url}: refused: {why}; web_fetch only reaches public addresses ([fetch] allow_private in search.toml opens chosen ranges)"
    )]
    Refused { url: String, why: String },
    #[error("{url}: {why}; nothing was sent")]
    Unresolved { url: String, why: String },
    #[error("{url}: more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects { url: String },
    #[error("{url}: redirect (HTTP {status}) without a usable Location")]
    BadRedirect { url: String, status: u16 },
    #[error("{url}: HTTP {status}{}", reason.as_deref().map(|r| format!(" {r}")).unwrap_or_default())]
    Status {
        url: String,
        status: u16,
        reason: Option<String>,
    },
    #[error(
        "{url}: the content type is {content_type}; web_fetch reads HTML, XHTML, plain text, JSON, XML and Markdown"
    )]
    ContentType { url: String, content_type: String },
    #[error("{url}: gave up after {ms} ms ({bytes} bytes of the body had arrived)")]
    Timeout { url: String, ms: u128, bytes: usize },
    #[error("{url}: {message}")]
    Network { url: String, message: String },
}

/// The `web_fetch` machinery.
pub struct Fetcher {
    settings: FetchSettings,
    resolver: SafeResolver,
    client: OnceLock<reqwest::Client>,
}

impl Fetcher {
    /// A fetcher resolving names with the system resolver.
    pub fn new(settings: FetchSettings) -> Self {
        let resolver = SafeResolver::system(settings.policy.clone());
        Self::with_resolver(settings, resolver)
    }

    /// A fetcher resolving names through `resolver` (tests).
    pub fn with_resolver(settings: FetchSettings, resolver: SafeResolver) -> Self {
        Self {
            settings,
            resolver,
            client: OnceLock::new(),
        }
    }

    pub fn settings(&self) -> &FetchSettings {
        &self.settings
    }

    fn policy(&self) -> &AddressPolicy {
        self.resolver.policy()
    }

    fn client(&self, url: &str) -> Result<&reqwest::Client, FetchError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        // reqwest is built without a TLS provider of its own (see the kit's `tls`).
        crabtalk_kit::tls::install_ring();
        let client = reqwest::Client::builder()
            .user_agent(&self.settings.user_agent)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(self.resolver.clone()))
            .connect_timeout(self.settings.timeout)
            .pool_idle_timeout(std::time::Duration::from_secs(30))
            .pool_max_idle_per_host(2)
            .build()
            .map_err(|err| FetchError::Network {
                url: url.to_owned(),
                message: format!("cannot build the HTTP client: {err}"),
            })?;
        Ok(self.client.get_or_init(|| client))
    }

    /// Fetches `url` as `format`. The time limit covers the network —
    /// every hop and the whole body; making the page readable comes after,
    /// bounded by the byte cap.
    pub async fn fetch(&self, url: &str, format: Format) -> Result<Page, FetchError> {
        let deadline = Instant::now() + self.settings.timeout;
        let mut current = self.check_url(url)?;
        let mut bytes_so_far = 0;
        let mut redirects = 0;
        let fetched = tokio::time::timeout_at(deadline.into(), async {
            loop {
                let response = self.send(&current).await?;
                let status = response.status().as_u16();
                if matches!(status, 301 | 302 | 303 | 307 | 308) {
                    let next = response
                        .headers()
                        .get(LOCATION)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|location| current.join(location).ok())
                        .ok_or_else(|| FetchError::BadRedirect {
                            url: current.to_string(),
                            status,
                        })?;
                    if redirects == MAX_REDIRECTS {
                        return Err(FetchError::TooManyRedirects {
                            url: url.to_owned(),
                        });
                    }
                    redirects += 1;
                    current = self.check_url(next.as_str())?;
                    continue;
                }
                return self.read(&current, response, &mut bytes_so_far).await;
            }
        })
        .await;
        let body = match fetched {
            Ok(body) => body?,
            Err(_) => {
                return Err(FetchError::Timeout {
                    url: current.to_string(),
                    ms: self.settings.timeout.as_millis(),
                    bytes: bytes_so_far,
                });
            }
        };
        body.into_page(url, format).await
    }

    /// `url` parsed, http(s), and — if its host is an IP address — allowed.
    pub fn check_url(&self, url: &str) -> Result<url::Url, FetchError> {
        let parsed = url::Url::parse(url.trim())
            .map_err(|err| FetchError::BadUrl(url.to_owned(), err.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(FetchError::Scheme {
                url: url.to_owned(),
                scheme: parsed.scheme().to_owned(),
            });
        }
        let ip = match parsed.host() {
            Some(url::Host::Ipv4(ip)) => std::net::IpAddr::V4(ip),
            Some(url::Host::Ipv6(ip)) => std::net::IpAddr::V6(ip),
            Some(url::Host::Domain(_)) => return Ok(parsed),
            None => return Err(FetchError::BadUrl(url.to_owned(), "no host".into())),
        };
        self.policy()
            .check(ip)
            .map_err(|refusal| FetchError::Refused {
                url: url.to_owned(),
                why: refusal.to_string(),
            })?;
        Ok(parsed)
    }

    async fn send(&self, url: &url::Url) -> Result<reqwest::Response, FetchError> {
        let client = self.client(url.as_str())?;
        client
            .get(url.clone())
            .header(
                reqwest::header::ACCEPT,
                "text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,application/json;q=0.8,application/xml;q=0.8,*/*;q=0.1",
            )
            .send()
            .await
            .map_err(|err| match refused_in(&err) {
                Some(refused @ ResolveRefused::NonPublic { .. }) => FetchError::Refused {
                    url: url.to_string(),
                    why: refused.to_string(),
                },
                Some(unresolved @ ResolveRefused::Unresolved { .. }) => FetchError::Unresolved {
                    url: url.to_string(),
                    why: unresolved.to_string(),
                },
                None => FetchError::Network {
                    url: url.to_string(),
                    message: error_chain(&err),
                },
            })
    }

    /// The body of a final (non-redirect) response, up to the byte cap.
    async fn read(
        &self,
        url: &url::Url,
        mut response: reqwest::Response,
        bytes: &mut usize,
    ) -> Result<Body, FetchError> {
        let status = response.status();
        if !status.is_success() {
            return Err(FetchError::Status {
                url: url.to_string(),
                status: status.as_u16(),
                reason: status.canonical_reason().map(str::to_owned),
            });
        }
        let header = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (media, charset) = header.as_deref().map(body::media_type).unwrap_or_default();
        let declared = match header {
            Some(_) => Some(
                body::kind_of(&media).ok_or_else(|| FetchError::ContentType {
                    url: url.to_string(),
                    content_type: media.clone(),
                })?,
            ),
            None => None,
        };
        let max = self.settings.max_bytes;
        let mut buffer: Vec<u8> = Vec::new();
        let mut cut = false;
        while let Some(chunk) = response.chunk().await.map_err(|err| FetchError::Network {
            url: url.to_string(),
            message: format!("reading the body failed: {}", error_chain(&err)),
        })? {
            let room = max - buffer.len();
            if chunk.len() > room {
                buffer.extend_from_slice(&chunk[..room]);
                cut = true;
                break;
            }
            buffer.extend_from_slice(&chunk);
            *bytes = buffer.len();
        }
        *bytes = buffer.len();
        // Dropping the response closes a connection with unread bytes.
        drop(response);
        let kind = match declared {
            Some(kind) => kind,
            None => body::sniff(&buffer).ok_or_else(|| FetchError::ContentType {
                url: url.to_string(),
                content_type: "not given, and the body is not text".into(),
            })?,
        };
        Ok(Body {
            final_url: url.to_string(),
            status: status.as_u16(),
            content_type: if media.is_empty() {
                "unknown (sniffed)".to_owned()
            } else {
                media
            },
            charset,
            kind,
            bytes: buffer,
            cut,
        })
    }
}

/// A body as read, before it is made readable.
struct Body {
    final_url: String,
    status: u16,
    content_type: String,
    charset: Option<String>,
    kind: Kind,
    bytes: Vec<u8>,
    cut: bool,
}

impl Body {
    /// Decoded and, for HTML, made readable (off the async thread).
    async fn into_page(self, asked: &str, format: Format) -> Result<Page, FetchError> {
        let Body {
            final_url,
            status,
            content_type,
            charset,
            kind,
            bytes,
            cut,
        } = self;
        let bytes_read = bytes.len();
        let page_url = final_url.clone();
        let (title, content) = tokio::task::spawn_blocking(move || {
            let text = body::decode(&bytes, charset.as_deref(), kind);
            drop(bytes);
            match kind {
                Kind::Html => readable::readable(&text, &page_url, format),
                _ => (None, text),
            }
        })
        .await
        .map_err(|err| FetchError::Network {
            url: final_url.clone(),
            message: format!("reading the page failed: {err}"),
        })?;
        Ok(Page {
            url: asked.to_owned(),
            final_url,
            status,
            content_type,
            title,
            format,
            content,
            body_cut: cut,
            bytes_read,
        })
    }
}

/// The resolver's refusal somewhere in `err`'s sources.
fn refused_in(err: &(dyn std::error::Error + 'static)) -> Option<ResolveRefused> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<ResolveRefused>() {
            return Some(refused.clone());
        }
        source = current.source();
    }
    None
}

/// `err` and its sources, `: `-separated (reqwest's own message alone
/// says only "error sending request").
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(current) = source {
        let text = current.to_string();
        if !parts.last().is_some_and(|last| last.contains(&text)) {
            parts.push(text);
        }
        source = current.source();
    }
    parts.join(": ")
}
