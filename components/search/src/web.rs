//! [`Web`]: search and fetch as the tools and the CLI both use them — the
//! searcher, the fetcher and the cache they share, built from the
//! settings of one home.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crabtalk_home::Home;

use crate::answer::{FetchAnswer, SearchAnswer};
use crate::cache::{Cache, Cached};
use crate::config::Settings;
use crate::fetch::{FetchError, Fetcher, Format, Page, SafeResolver};
use crate::health::state::HealthFile;
use crate::search::{EngineView, SearchRequest, Searcher};

/// The largest `max_chars` a call may ask for.
pub(crate) const MAX_CHARS_LIMIT: usize = 1_000_000;

/// Search and fetch for one home.
pub struct Web {
    settings: Arc<Settings>,
    searcher: Searcher,
    fetcher: Fetcher,
    cache: Arc<Cache<Cached>>,
}

impl Web {
    /// Built from `settings`, keeping engine health in `home`.
    pub fn new(home: &Home, settings: Settings) -> Self {
        let fetcher = Fetcher::new(settings.fetch.clone());
        Self::with_fetcher(home, settings, fetcher)
    }

    /// With a fetcher of the caller's (tests inject a resolver).
    pub fn with_resolver(home: &Home, settings: Settings, resolver: SafeResolver) -> Self {
        let fetcher = Fetcher::with_resolver(settings.fetch.clone(), resolver);
        Self::with_fetcher(home, settings, fetcher)
    }

    fn with_fetcher(home: &Home, settings: Settings, fetcher: Fetcher) -> Self {
        let settings = Arc::new(settings);
        let cache = Arc::new(Cache::new(
            Duration::from_secs(settings.cache.ttl_secs),
            settings.cache.max_entries,
            settings.cache.max_bytes,
        ));
        let searcher = Searcher::new(settings.clone(), HealthFile::of(home), cache.clone());
        Self {
            settings,
            searcher,
            fetcher,
            cache,
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn cache(&self) -> &Cache<Cached> {
        &self.cache
    }

    pub async fn search(&self, request: &SearchRequest) -> SearchAnswer {
        self.searcher.search(request).await
    }

    pub fn engines(&self) -> Vec<EngineView> {
        self.searcher.engine_views()
    }

    /// Fetches `url` (or takes it from the cache) and cuts it to
    /// `max_chars` (default `[fetch] max_chars`).
    pub async fn fetch(
        &self,
        url: &str,
        format: Format,
        max_chars: Option<usize>,
    ) -> Result<FetchAnswer, FetchError> {
        let key = format!("fetch\n{}\n{}", url.trim(), format.name());
        let (page, cached) = match self.cache.get(&key, Instant::now()) {
            Some((Cached::Page(page), _)) => (page, true),
            _ => {
                let page = Arc::new(self.fetcher.fetch(url, format).await?);
                let size = page.content.len() + page.final_url.len() + 256;
                self.cache
                    .insert(key, Cached::Page(page.clone()), size, Instant::now());
                (page, false)
            }
        };
        let max_chars = max_chars.unwrap_or(self.settings.fetch.max_chars);
        Ok(answer(
            &page,
            max_chars,
            self.settings.fetch.max_bytes,
            cached,
        ))
    }
}

/// `page` as an answer of at most `max_chars` characters, saying what was cut.
pub(crate) fn answer(page: &Page, max_chars: usize, max_bytes: usize, cached: bool) -> FetchAnswer {
    let total_chars = page.content.chars().count();
    let truncated = total_chars > max_chars;
    let content = if truncated {
        let end = page
            .content
            .char_indices()
            .nth(max_chars)
            .map_or(page.content.len(), |(at, _)| at);
        page.content[..end].to_owned()
    } else {
        page.content.clone()
    };
    let mut notes: Vec<String> = page.note.iter().cloned().collect();
    if truncated {
        notes.push(format!(
            "cut at {max_chars} of {total_chars} characters; call web_fetch again with a larger max_chars (up to {MAX_CHARS_LIMIT}) for more"
        ));
    }
    if page.body_cut {
        notes.push(format!(
            "the page is larger than {max_bytes} bytes; only its first {} bytes were read",
            page.bytes_read
        ));
    }
    FetchAnswer {
        url: page.url.clone(),
        final_url: page.final_url.clone(),
        status: page.status,
        content_type: page.content_type.clone(),
        title: page.title.clone(),
        format: page.format.name().to_owned(),
        content,
        total_chars,
        truncated,
        body_cut: page.body_cut,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
        cached,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(content: &str) -> Page {
        Page {
            url: "https://e.example/".into(),
            final_url: "https://e.example/".into(),
            status: 200,
            content_type: "text/plain".into(),
            title: None,
            format: Format::Text,
            content: content.into(),
            body_cut: false,
            bytes_read: content.len(),
            note: None,
        }
    }

    #[test]
    fn max_chars_cuts_on_characters_and_says_so() {
        let cut = answer(&page("héllo wörld"), 5, 1024, false);
        assert_eq!(cut.content, "héllo");
        assert!(cut.truncated);
        assert_eq!(cut.total_chars, 11);
        assert!(cut.note.unwrap().contains("cut at 5 of 11 characters"));
        let whole = answer(&page("short"), 5, 1024, false);
        assert!(!whole.truncated && whole.note.is_none());
        let mut big = page("abc");
        big.body_cut = true;
        assert!(
            answer(&big, 10, 3, false)
                .note
                .unwrap()
                .contains("larger than 3 bytes")
        );
    }
}
