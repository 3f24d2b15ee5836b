//! The Brave Search API (`/res/v1/web/search`, JSON), with the key in
//! `X-Subscription-Token`. On only when the key's variable is set.

use serde::Deserialize;

use super::page::fragment_text;
use super::{Engine, Failure, Hit, Query, Request, endpoint};
use crate::config::EngineId;

pub struct Brave {
    base: String,
    key: String,
}

impl Brave {
    pub fn new(base: String, key: String) -> Self {
        Self { base, key }
    }
}

#[derive(Deserialize)]
struct Answer {
    #[serde(rename = "type")]
    kind: Option<String>,
    web: Option<Web>,
}

#[derive(Deserialize)]
struct Web {
    #[serde(default)]
    results: Vec<WebResult>,
}

#[derive(Deserialize)]
struct WebResult {
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
}

impl Engine for Brave {
    fn id(&self) -> EngineId {
        EngineId::Brave
    }

    fn request(&self, query: &Query) -> Result<Request, Failure> {
        let mut url = endpoint(&self.base, "/res/v1/web/search")?;
        url.query_pairs_mut()
            .append_pair("q", &query.text)
            .append_pair("count", &query.count.clamp(1, 20).to_string());
        if let Some(lang) = &query.lang {
            url.query_pairs_mut().append_pair("search_lang", lang);
        }
        if let Some(region) = &query.region {
            url.query_pairs_mut().append_pair("country", region);
        }
        Ok(Request {
            url,
            headers: vec![
                ("accept", "application/json".into()),
                ("x-subscription-token", self.key.clone()),
            ],
        })
    }

    fn parse(&self, _query: &Query, body: &str) -> Result<Vec<Hit>, Failure> {
        let answer: Answer = serde_json::from_str(body)
            .map_err(|err| Failure::Error(format!("not a Brave Search answer ({err})")))?;
        match (answer.kind.as_deref(), answer.web) {
            (_, Some(web)) => Ok(web
                .results
                .into_iter()
                .filter(|result| super::is_web_page(&result.url))
                .map(|result| Hit {
                    url: result.url,
                    title: fragment_text(&result.title),
                    snippet: fragment_text(&result.description),
                })
                .collect()),
            // A search answer without a `web` part found nothing.
            (Some("search"), None) => Ok(Vec::new()),
            _ => Err(Failure::Error(
                "the answer is not a web search answer".into(),
            )),
        }
    }

    fn refusal_hint(&self, status: u16) -> Option<&'static str> {
        matches!(status, 401 | 403)
            .then_some("the API key was refused: check BRAVE_API_KEY (or api_key_env)")
    }
}
