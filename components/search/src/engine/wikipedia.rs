//! Wikipedia through the MediaWiki Action API
//! (`/w/api.php?action=query&list=search`, JSON, `formatversion=2`). The
//! language is the `{lang}` in the base URL: `[engines.wikipedia]
//! language`, or the call's `lang`.

use serde::Deserialize;

use super::page::fragment_text;
use super::{Engine, Failure, Hit, Query, Request, endpoint};
use crate::config::EngineId;

pub struct Wikipedia {
    base: String,
    language: String,
}

impl Wikipedia {
    pub fn new(base: String, language: String) -> Self {
        Self { base, language }
    }

    /// The base URL for `query`'s language.
    fn base_for(&self, query: &Query) -> String {
        let lang = query
            .lang
            .as_deref()
            .filter(|lang| {
                lang.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') && !lang.is_empty()
            })
            .unwrap_or(&self.language);
        self.base.replace("{lang}", lang)
    }
}

#[derive(Deserialize)]
struct Answer {
    query: Option<QueryPart>,
    error: Option<ApiError>,
}

#[derive(Deserialize)]
struct QueryPart {
    search: Vec<Page>,
}

#[derive(Deserialize)]
struct Page {
    title: String,
    #[serde(default)]
    snippet: String,
}

#[derive(Deserialize)]
struct ApiError {
    code: String,
    #[serde(default)]
    info: String,
}

impl Engine for Wikipedia {
    fn id(&self) -> EngineId {
        EngineId::Wikipedia
    }

    fn request(&self, query: &Query) -> Result<Request, Failure> {
        let mut url = endpoint(&self.base_for(query), "/w/api.php")?;
        url.query_pairs_mut()
            .append_pair("action", "query")
            .append_pair("list", "search")
            .append_pair("srsearch", &query.text)
            .append_pair("srlimit", &query.count.clamp(1, 50).to_string())
            .append_pair("srprop", "snippet")
            .append_pair("format", "json")
            .append_pair("formatversion", "2")
            .append_pair("utf8", "1");
        Ok(Request {
            url,
            headers: vec![("accept", "application/json".into())],
        })
    }

    fn parse(&self, query: &Query, body: &str) -> Result<Vec<Hit>, Failure> {
        let answer: Answer = serde_json::from_str(body)
            .map_err(|err| Failure::Error(format!("not a MediaWiki API answer ({err})")))?;
        if let Some(error) = answer.error {
            let detail = format!("API error {}: {}", error.code, error.info);
            return Err(match error.code.as_str() {
                "ratelimited" | "maxlag" => Failure::RateLimited(detail),
                _ => Failure::Error(detail),
            });
        }
        let Some(found) = answer.query else {
            return Err(Failure::Error("the answer has no query.search list".into()));
        };
        // Result pages live next to the API, in the same language.
        let base = self.base_for(query);
        Ok(found
            .search
            .into_iter()
            .filter_map(|page| {
                let mut url = url::Url::parse(&base).ok()?;
                url.path_segments_mut()
                    .ok()?
                    .pop_if_empty()
                    .push("wiki")
                    .push(&page.title.replace(' ', "_"));
                Some(Hit {
                    url: url.to_string(),
                    title: page.title,
                    snippet: fragment_text(&page.snippet),
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_picks_the_wikipedia_for_the_api_and_the_links() {
        let engine = Wikipedia::new("https://{lang}.wikipedia.org".into(), "en".into());
        let mut query = Query {
            text: "Krabbe".into(),
            count: 3,
            lang: None,
            region: None,
        };
        assert!(
            engine
                .request(&query)
                .unwrap()
                .url
                .as_str()
                .starts_with("https://en.wikipedia.org/w/api.php?")
        );
        query.lang = Some("de".into());
        assert!(
            engine
                .request(&query)
                .unwrap()
                .url
                .as_str()
                .starts_with("https://de.wikipedia.org/w/api.php?")
        );
        let hits = engine
            .parse(&query, r#"{"query":{"search":[{"title":"Echte Krabben","snippet":"<b>Krabben</b> sind"}]}}"#)
            .unwrap();
        assert_eq!(hits[0].url, "https://de.wikipedia.org/wiki/Echte_Krabben");
        assert_eq!(hits[0].snippet, "Krabben sind");
    }
}
