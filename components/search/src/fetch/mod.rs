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
//! - A body compressed with gzip or deflate is decoded up to the same
//!   cap; another encoding, or a body that is binary whatever its label,
//!   is refused naming what it is ([`body`]).
//! - HTML becomes readable Markdown or text ([`readable`]) on a blocking
//!   thread, under a [`Budget`] of its own (`[fetch] process_ms`) that
//!   also stops it when the caller goes away; at most [`processing_slots`]
//!   pages are made readable at once. Other accepted types are returned as
//!   their text.
//! - At most `[fetch] max_concurrent` fetches run at once; more wait for
//!   a free one, up to the fetch's timeout, and are then refused.

pub(crate) mod body;
pub(crate) mod budget;
pub(crate) mod links;
pub(crate) mod readable;
pub(crate) mod resolver;
pub(crate) mod shape;

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use reqwest::header::{CONTENT_ENCODING, CONTENT_TYPE, LOCATION};
use tokio::sync::Semaphore;

use crate::address::AddressPolicy;
use crate::config::FetchSettings;

pub use self::body::Kind;
pub use self::budget::Budget;
pub(crate) use self::budget::Stopped;
pub use self::readable::Format;
pub(crate) use self::resolver::ResolveRefused;
pub use self::resolver::{Lookup, SafeResolver};

/// The most redirects followed.
pub(crate) const MAX_REDIRECTS: usize = 5;

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
    /// How the content was made, when the reader should know (a page
    /// given as plain text because of its shape).
    pub note: Option<String>,
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
    #[error(
        "{url}: making the page readable took longer than {ms} ms and was stopped ([fetch] process_ms in search.toml)"
    )]
    TooSlow { url: String, ms: u128 },
    #[error(
        "{url}: no fetch slot came free within {ms} ms ({limit} at once, [fetch] max_concurrent in search.toml); try again shortly"
    )]
    Busy { url: String, limit: usize, ms: u128 },
    #[error(
        "{url}: the body is {what}, although it is labelled {content_type}; web_fetch reads text"
    )]
    Binary {
        url: String,
        content_type: String,
        what: String,
    },
    #[error(
        "{url}: the body is encoded as {encoding}, which web_fetch does not read (gzip and deflate are read)"
    )]
    Encoding { url: String, encoding: String },
    #[error("{url}: Content-Encoding {encoding}: {why}")]
    BadEncoding {
        url: String,
        encoding: String,
        why: String,
    },
    #[error("{url}: {message}")]
    Network { url: String, message: String },
}

/// The `web_fetch` machinery.
pub struct Fetcher {
    settings: FetchSettings,
    resolver: SafeResolver,
    client: OnceLock<reqwest::Client>,
    /// Fetches at once (`max_concurrent`).
    slots: Arc<Semaphore>,
    /// Pages being made readable at once.
    processing: Arc<Semaphore>,
}

/// How many pages are made readable at once: the machine's cores, at
/// least one and at most four (each heavy page holds tens of MiB while it
/// is processed).
pub fn processing_slots() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4)
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
            slots: Arc::new(Semaphore::new(settings.max_concurrent)),
            processing: Arc::new(Semaphore::new(processing_slots())),
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
        crabtalk_kit::install_ring();
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
    /// under its own limit.
    pub async fn fetch(&self, url: &str, format: Format) -> Result<Page, FetchError> {
        let mut current = self.check_url(url)?;
        let _slot = tokio::time::timeout(self.settings.timeout, self.slots.acquire())
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or_else(|| FetchError::Busy {
                url: url.to_owned(),
                limit: self.settings.max_concurrent,
                ms: self.settings.timeout.as_millis(),
            })?;
        let deadline = Instant::now() + self.settings.timeout;
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
        let permit =
            self.processing
                .clone()
                .acquire_owned()
                .await
                .map_err(|_| FetchError::Network {
                    url: url.to_owned(),
                    message: "the service is stopping".into(),
                })?;
        body.into_page(url, format, self.settings.process_time, permit)
            .await
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
        let encoding = response
            .headers()
            .get(CONTENT_ENCODING)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let compression = body::Compression::of(encoding.as_deref()).map_err(
            |body::UnknownEncoding(encoding)| FetchError::Encoding {
                url: url.to_string(),
                encoding,
            },
        )?;
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
        Ok(Body {
            final_url: url.to_string(),
            status: status.as_u16(),
            content_type: media,
            charset,
            declared,
            compression,
            max_bytes: max,
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
    /// The kind the `Content-Type` names, if there was one.
    declared: Option<Kind>,
    compression: Option<body::Compression>,
    max_bytes: usize,
    bytes: Vec<u8>,
    cut: bool,
}

impl Body {
    /// Decoded and, for HTML, made readable: on a blocking thread holding
    /// `permit`, within `allowed`, stopped if this call is dropped.
    async fn into_page(
        self,
        asked: &str,
        format: Format,
        allowed: std::time::Duration,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) -> Result<Page, FetchError> {
        let final_url = self.final_url.clone();
        let budget = Budget::new(allowed);
        // Dropped when this call ends, finished or given up: the work
        // stops at its next look at the budget.
        let _stop = budget.cancel_on_drop();
        let work = {
            let budget = budget.clone();
            tokio::task::spawn_blocking(move || {
                let _permit = permit;
                let url = self.final_url.clone();
                tracing::debug!(%url, bytes = self.bytes.len(), "making the page readable");
                let processed = self.process(format, &budget);
                if let Err(ProcessError::Stopped(why)) = &processed {
                    let spent = budget.spent().as_millis();
                    match why {
                        Stopped::Cancelled => tracing::info!(
                            %url, spent_ms = spent,
                            "stopped making the page readable: nobody waits for it any more (the call was cancelled or its client left)"
                        ),
                        Stopped::Deadline => tracing::info!(
                            %url, spent_ms = spent,
                            "stopped making the page readable: past [fetch] process_ms"
                        ),
                    }
                }
                processed
            })
        };
        let outcome = tokio::time::timeout(allowed, work).await;
        let too_slow = || FetchError::TooSlow {
            url: final_url.clone(),
            ms: allowed.as_millis(),
        };
        let page = match outcome {
            Err(_) => return Err(too_slow()),
            Ok(Err(err)) => {
                return Err(FetchError::Network {
                    url: final_url.clone(),
                    message: format!("reading the page failed: {err}"),
                });
            }
            Ok(Ok(Err(ProcessError::Stopped(_)))) => return Err(too_slow()),
            Ok(Ok(Err(ProcessError::Refused(err)))) => return Err(err),
            Ok(Ok(Ok(page))) => page,
        };
        Ok(Page {
            url: asked.to_owned(),
            ..page
        })
    }

    /// Decompressed, checked for binary data, decoded and made readable.
    fn process(self, format: Format, budget: &Budget) -> Result<Page, ProcessError> {
        let Body {
            final_url,
            status,
            content_type,
            charset,
            declared,
            compression,
            max_bytes,
            bytes,
            mut cut,
        } = self;
        let bytes_read = bytes.len();
        let bytes = match compression {
            None => bytes,
            Some(compression) => {
                let (decoded, more) = compression.decode(&bytes, max_bytes).map_err(|why| {
                    FetchError::BadEncoding {
                        url: final_url.clone(),
                        encoding: compression.name().to_owned(),
                        why: why.to_string(),
                    }
                })?;
                cut |= more;
                decoded
            }
        };
        budget.check()?;
        if let Some(what) = body::binary(&bytes, charset.as_deref()) {
            return Err(FetchError::Binary {
                url: final_url,
                content_type: if content_type.is_empty() {
                    "nothing".into()
                } else {
                    content_type
                },
                what: what.to_owned(),
            }
            .into());
        }
        let kind = match declared {
            Some(kind) => kind,
            None => body::sniff(&bytes).ok_or_else(|| FetchError::ContentType {
                url: final_url.clone(),
                content_type: "not given, and the body is not text".into(),
            })?,
        };
        let text = body::decode(&bytes, charset.as_deref(), kind);
        drop(bytes);
        let (title, content, note) = match kind {
            Kind::Html => {
                let page = readable::readable(&text, &final_url, format, budget)?;
                (page.title, page.content, page.note)
            }
            _ => (None, text, None),
        };
        Ok(Page {
            url: String::new(),
            final_url,
            status,
            content_type: if content_type.is_empty() {
                "unknown (sniffed)".to_owned()
            } else {
                content_type
            },
            title,
            format,
            content,
            body_cut: cut,
            bytes_read,
            note,
        })
    }
}

/// Why processing a body gave no page.
enum ProcessError {
    /// Out of time, or nobody waits.
    Stopped(Stopped),
    Refused(FetchError),
}

impl From<Stopped> for ProcessError {
    fn from(why: Stopped) -> Self {
        Self::Stopped(why)
    }
}

impl From<FetchError> for ProcessError {
    fn from(err: FetchError) -> Self {
        Self::Refused(err)
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
pub(crate) fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
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
