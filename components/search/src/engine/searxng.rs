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
            .filter(|item| item.url.starts_with("http://") || item.url.starts_with("https://"))
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
