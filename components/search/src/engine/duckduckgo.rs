//! DuckDuckGo's keyless HTML endpoint (`html.duckduckgo.com/html/`): one
//! page of results without JavaScript. It answers a rate limit with HTTP
//! 202 and a bot check with an "anomaly" page; both are refusals.

use scraper::Html;

use super::page::{first, is_challenge, selector, text};
use super::{Engine, Failure, Hit, Query, Request, endpoint};
use crate::config::EngineId;

pub struct DuckDuckGo {
    base: String,
}

impl DuckDuckGo {
    pub fn new(base: String) -> Self {
        Self { base }
    }
}

impl Engine for DuckDuckGo {
    fn id(&self) -> EngineId {
        EngineId::DuckDuckGo
    }

    fn request(&self, query: &Query) -> Result<Request, Failure> {
        let mut url = endpoint(&self.base, "/html/")?;
        url.query_pairs_mut().append_pair("q", &query.text);
        // kl is region-language ("us-en", "de-de"); "wt-wt" is no region.
        if let Some(region) = &query.region {
            let lang = query.lang.as_deref().unwrap_or(region);
            url.query_pairs_mut()
                .append_pair("kl", &format!("{region}-{lang}").to_lowercase());
        }
        Ok(Request {
            url,
            headers: Vec::new(),
        })
    }

    fn parse(&self, _query: &Query, body: &str) -> Result<Vec<Hit>, Failure> {
        let document = Html::parse_document(body);
        if is_challenge(&document) {
            return Err(Failure::Blocked("bot check (anomaly/CAPTCHA page)".into()));
        }
        let Some(links) = document.select(&selector("#links")).next() else {
            return Err(Failure::Blocked(
                "no results container (#links) on the page: not a results page".into(),
            ));
        };
        let mut hits = Vec::new();
        for result in links.select(&selector("div.result")) {
            let classes: Vec<&str> = result.value().classes().collect();
            if classes
                .iter()
                .any(|c| *c == "result--ad" || *c == "result--no-result")
            {
                continue;
            }
            let Some(link) = first(result, "a.result__a") else {
                continue;
            };
            let Some(url) = link.value().attr("href").and_then(target) else {
                continue;
            };
            let snippet = first(result, ".result__snippet")
                .map(text)
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

/// The page a result link leads to: DuckDuckGo wraps them in
/// `//duckduckgo.com/l/?uddg=<encoded target>&rut=…`.
fn target(href: &str) -> Option<String> {
    let absolute = url::Url::parse("https://duckduckgo.com/")
        .ok()?
        .join(href)
        .ok()?;
    if absolute.path() == "/l/" {
        let (_, uddg) = absolute.query_pairs().find(|(key, _)| key == "uddg")?;
        // The wrapped target is as untrusted as the page: only a web page.
        let inner = url::Url::parse(&uddg).ok()?;
        return matches!(inner.scheme(), "http" | "https").then(|| uddg.into_owned());
    }
    matches!(absolute.scheme(), "http" | "https").then(|| absolute.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_links_are_unwrapped() {
        assert_eq!(
            target("//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust-lang.org%2Flearn&rut=abc")
                .as_deref(),
            Some("https://www.rust-lang.org/learn")
        );
        assert_eq!(
            target("https://example.org/a").as_deref(),
            Some("https://example.org/a")
        );
        assert_eq!(target("javascript:void(0)"), None);
    }

    /// Found by the `engine_pages` fuzz target (RFC 0090): the wrapped
    /// target was returned unchecked, so a hit could be no URL at all or a
    /// `javascript:` link.
    #[test]
    fn a_wrapped_target_that_is_not_a_web_page_is_no_hit() {
        for href in [
            "//duckduckgo.com/l/?uddg=httpsJ%2F%2Fblog.rust-lang.org%2Fx&rut=abc",
            "//duckduckgo.com/l/?uddg=javascript%3Aalert(1)&rut=abc",
            "//duckduckgo.com/l/?uddg=&rut=abc",
        ] {
            assert_eq!(target(href), None, "{href}");
        }
    }
}
