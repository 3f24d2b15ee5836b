//! Mojeek's results page (`/search`), from its own index. It answers bots
//! with HTTP 403 ("automated queries"), a refusal.

use scraper::Html;

use super::page::{first, is_challenge, selector, text};
use super::{Engine, Failure, Hit, Query, Request, endpoint};
use crate::config::EngineId;

pub struct Mojeek {
    base: String,
}

impl Mojeek {
    pub fn new(base: String) -> Self {
        Self { base }
    }
}

impl Engine for Mojeek {
    fn id(&self) -> EngineId {
        EngineId::Mojeek
    }

    fn request(&self, query: &Query) -> Result<Request, Failure> {
        let mut url = endpoint(&self.base, "/search")?;
        url.query_pairs_mut().append_pair("q", &query.text);
        if let Some(lang) = &query.lang {
            url.query_pairs_mut().append_pair("lb", lang);
        }
        if let Some(region) = &query.region {
            url.query_pairs_mut().append_pair("arc", region);
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
        let Some(list) = document.select(&selector("ul.results-standard")).next() else {
            // Its "nothing found" page has the results area without a list.
            let nothing = document
                .select(&selector(".results .no-results, .results p"))
                .any(|p| text(p).contains("No pages found"));
            if nothing {
                return Ok(Vec::new());
            }
            return Err(Failure::Blocked(
                "no results list (ul.results-standard) on the page: not a results page".into(),
            ));
        };
        let mut hits = Vec::new();
        for item in list.select(&selector("li")) {
            let Some(link) = first(item, "h2 a, a.title") else {
                continue;
            };
            let Some(url) = link
                .value()
                .attr("href")
                .filter(|href| super::is_web_page(href))
            else {
                continue;
            };
            hits.push(Hit {
                url: url.to_owned(),
                title: text(link),
                snippet: first(item, "p.s").map(text).unwrap_or_default(),
            });
        }
        Ok(hits)
    }
}
