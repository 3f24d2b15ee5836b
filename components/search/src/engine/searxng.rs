//! A SearXNG instance's JSON API (`/search?format=json`). Instances refuse
//! JSON (HTTP 403) unless `search.formats` in their `settings.yml` lists it.

use serde::Deserialize;

use super::page::fragment_text;
use super::{Engine, Failure, Hit, Query, Request, endpoint};
use crate::config::EngineId;

pub struct Searxng {
    base: String,
}

impl Searxng {
    pub fn new(base: String) -> Self {
        Self { base }
    }
}

#[derive(Deserialize)]
struct Answer {
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
}

impl Engine for Searxng {
    fn id(&self) -> EngineId {
        EngineId::Searxng
    }

    fn request(&self, query: &Query) -> Result<Request, Failure> {
        let mut url = endpoint(&self.base, "/search")?;
        url.query_pairs_mut()
            .append_pair("q", &query.text)
            .append_pair("format", "json")
            .append_pair("pageno", "1");
        if let Some(lang) = &query.lang {
            url.query_pairs_mut().append_pair("language", lang);
        }
        Ok(Request {
            url,
            headers: vec![("accept", "application/json".into())],
        })
    }

    fn parse(&self, _query: &Query, body: &str) -> Result<Vec<Hit>, Failure> {
        let answer: Answer = serde_json::from_str(body)
            .map_err(|err| Failure::Error(format!("not a SearXNG JSON answer ({err})")))?;
        Ok(answer
            .results
            .into_iter()
            .filter(|item| super::is_web_page(&item.url))
            .map(|item| Hit {
                url: item.url,
                title: fragment_text(&item.title),
                snippet: fragment_text(&item.content),
            })
            .collect())
    }

    fn refusal_hint(&self, status: u16) -> Option<&'static str> {
        (status == 403).then_some(
            "the instance refuses JSON: its settings.yml must list json in search.formats",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `engine_pages` fuzz target: a result whose host is no
    /// valid domain name (a replacement character in it) passed the old
    /// `http://`/`https://` prefix check and reached the model as a hit.
    #[test]
    fn a_result_whose_url_does_not_parse_is_no_hit() {
        let engine = Searxng::new("https://searx.example".into());
        let query = Query {
            text: "ownership".into(),
            count: 5,
            lang: None,
            region: None,
        };
        let body = r#"{"results": [
            {"url": "https://doc.rust-la\ufffdg.org/book/ch04-01-what-is-ownership.html", "title": "Broken", "content": ""},
            {"url": "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html", "title": "What is ownership?", "content": "Ownership is"},
            {"url": "javascript:alert(1)", "title": "Script", "content": ""}
        ]}"#;
        let hits = engine.parse(&query, body).unwrap();
        let urls: Vec<&str> = hits.iter().map(|hit| hit.url.as_str()).collect();
        assert_eq!(
            urls,
            ["https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html"]
        );
    }
}
