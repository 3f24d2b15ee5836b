//! Bing's results page (`/search`). Result links often go through Bing's
//! click tracker (`/ck/a?…&u=a1<base64url of the target>`), unwrapped here.

use base64::Engine as _;
use scraper::Html;

use super::page::{first, is_challenge, selector, text, text_skipping};
use super::{Engine, Failure, Hit, Query, Request, endpoint};
use crate::config::EngineId;

pub struct Bing {
    base: String,
}

impl Bing {
    pub fn new(base: String) -> Self {
        Self { base }
    }
}

impl Engine for Bing {
    fn id(&self) -> EngineId {
        EngineId::Bing
    }

    fn request(&self, query: &Query) -> Result<Request, Failure> {
        let mut url = endpoint(&self.base, "/search")?;
        url.query_pairs_mut()
            .append_pair("q", &query.text)
            .append_pair("count", &query.count.clamp(10, 50).to_string());
        if let Some(lang) = &query.lang {
            url.query_pairs_mut().append_pair("setlang", lang);
        }
        if let Some(region) = &query.region {
            url.query_pairs_mut().append_pair("cc", region);
        }
        Ok(Request {
            url,
            headers: Vec::new(),
        })
    }

    fn parse(&self, _query: &Query, body: &str) -> Result<Vec<Hit>, Failure> {
        let document = Html::parse_document(body);
        if is_challenge(&document) {
            return Err(Failure::Blocked("bot check (CAPTCHA page)".into()));
        }
        let Some(results) = document.select(&selector("#b_results")).next() else {
            return Err(Failure::Blocked(
                "no results container (#b_results) on the page: not a results page".into(),
            ));
        };
        let mut hits = Vec::new();
        for item in results.select(&selector("li.b_algo")) {
            let Some(link) = first(item, "h2 a") else {
                continue;
            };
            let Some(url) = link.value().attr("href").and_then(target) else {
                continue;
            };
            let snippet = first(item, ".b_caption p")
                .or_else(|| first(item, "p"))
                .map(|p| text_skipping(p, "algoSlug_icon"))
                .unwrap_or_default();
            hits.push(Hit {
                url,
                title: text(link),
                snippet,
            });
        }
        Ok(hits)
    }
}

/// The page a result link leads to.
fn target(href: &str) -> Option<String> {
    let absolute = url::Url::parse("https://www.bing.com/")
        .ok()?
        .join(href)
        .ok()?;
    if absolute.path() == "/ck/a" {
        let (_, u) = absolute.query_pairs().find(|(key, _)| key == "u")?;
        let encoded = u.strip_prefix("a1")?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(encoded.trim_end_matches('='))
            .ok()?;
        let decoded = String::from_utf8(bytes).ok()?;
        return super::is_web_page(&decoded).then_some(decoded);
    }
    matches!(absolute.scheme(), "http" | "https").then(|| absolute.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn click_tracker_links_are_unwrapped() {
        // base64url("https://doc.rust-lang.org/book/") without padding.
        assert_eq!(
            target("https://www.bing.com/ck/a?!&&p=1f2e&u=a1aHR0cHM6Ly9kb2MucnVzdC1sYW5nLm9yZy9ib29rLw&ntb=1").as_deref(),
            Some("https://doc.rust-lang.org/book/")
        );
        assert_eq!(
            target("https://example.org/x").as_deref(),
            Some("https://example.org/x")
        );
        assert_eq!(target("/ck/a?u=zz"), None);
    }
}
