//! [`Searcher`]: one search, from the request to the answer — the code
//! behind `web_search` and `crabtalk-search search` alike.
//!
//! 1. A fresh cached answer for the same normalised request is returned as
//!    it is (marked `cached`).
//! 2. Every engine is accounted for: not requested, disabled (and why),
//!    suspended (until when), or asked.
//! 3. The engines asked run concurrently, each until its own timeout or the
//!    search's deadline, whichever is first.
//! 4. Their health is recorded ([`crate::health`]), their lists fused
//!    ([`fusion`]) and cut to `count`.
//! 5. The answer is cached if at least one engine answered; a search where
//!    none did is never cached.

pub(crate) mod fusion;
pub(crate) mod normalize;

use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::answer::{EngineReport, FoundBy, ResultItem, SearchAnswer};
use crate::cache::Cache;
use crate::config::{EngineId, Settings};
use crate::engine::{self, Engine, EngineHttp, Failure, Query};
use crate::health::state::HealthFile;
use crate::health::{HealthTable, Status};

use self::fusion::{EngineList, fuse};

/// What a caller asks for (checked already, by the `web_search` tool's
/// arguments or the command line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    pub query: String,
    pub count: usize,
    pub lang: Option<String>,
    pub region: Option<String>,
    /// Only these engines (all enabled ones when `None`).
    pub engines: Option<Vec<EngineId>>,
}

impl SearchRequest {
    /// The cache key: the query with case and spacing normalised, and
    /// every parameter that changes the answer.
    pub fn cache_key(&self) -> String {
        let query = self
            .query
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        let engines = match &self.engines {
            None => "*".to_owned(),
            Some(list) => {
                let mut names: Vec<&str> = list.iter().map(|e| e.name()).collect();
                names.sort_unstable();
                names.dedup();
                names.join(",")
            }
        };
        format!(
            "search\n{query}\n{}\n{}\n{}\n{engines}",
            self.count,
            self.lang.as_deref().unwrap_or("").to_lowercase(),
            self.region.as_deref().unwrap_or("").to_lowercase()
        )
    }
}

/// What one engine did.
struct Reply {
    engine: EngineId,
    hits: Result<Vec<crate::engine::Hit>, Failure>,
    took: std::time::Duration,
}

/// One engine's row in `crabtalk-search engines`.
#[derive(Debug, Clone, Serialize)]
pub struct EngineView {
    pub engine: String,
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_because: Option<String>,
    pub base_url: String,
    pub weight: f64,
    pub timeout_ms: u64,
    /// The last status seen (`unknown` when never asked).
    pub health: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspended_until: Option<DateTime<Utc>>,
}

/// The health table, the file it is kept in, and when that was last read
/// or written by this process.
struct HealthBook {
    table: HealthTable,
    file: HealthFile,
    seen: Option<SystemTime>,
}

impl HealthBook {
    /// Picks up what another process (a CLI search, the service) wrote.
    fn refresh(&mut self) {
        let modified = self.file.modified();
        if modified.is_some() && modified != self.seen {
            self.table = self.file.load();
            self.seen = modified;
        }
    }

    fn save(&mut self) {
        if let Err(err) = self.file.save(&self.table) {
            tracing::warn!("cannot write {}: {err}", self.file.path().display());
        }
        self.seen = self.file.modified();
    }
}

/// The search side of the service.
pub(crate) struct Searcher {
    settings: Arc<Settings>,
    engines: Vec<Box<dyn Engine>>,
    http: EngineHttp,
    health: Mutex<HealthBook>,
    cache: Arc<Cache<crate::cache::Cached>>,
}

impl Searcher {
    pub(crate) fn new(
        settings: Arc<Settings>,
        health_file: HealthFile,
        cache: Arc<Cache<crate::cache::Cached>>,
    ) -> Self {
        let engines = settings.engines.iter().map(engine::build).collect();
        let table = health_file.load();
        let seen = health_file.modified();
        Self {
            http: EngineHttp::new(settings.user_agent.clone()),
            settings,
            engines,
            health: Mutex::new(HealthBook {
                table,
                file: health_file,
                seen,
            }),
            cache,
        }
    }

    fn health(&self) -> std::sync::MutexGuard<'_, HealthBook> {
        self.health.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Searches.
    pub(crate) async fn search(&self, request: &SearchRequest) -> SearchAnswer {
        let key = request.cache_key();
        if let Some((crate::cache::Cached::Search(answer), age)) =
            self.cache.get(&key, Instant::now())
        {
            let mut answer = (*answer).clone();
            answer.cached = true;
            answer.cached_secs = Some(age.as_secs());
            return answer;
        }
        let query = Query {
            text: request.query.clone(),
            count: request.count,
            lang: request.lang.clone(),
            region: request.region.clone(),
        };
        let (mut reports, asked) = self.plan(request);
        let replies = self.ask(&asked, &query).await;
        let lists = self.record(replies, &mut reports);
        let results: Vec<ResultItem> = fuse(&lists)
            .into_iter()
            .take(request.count)
            .map(|fused| ResultItem {
                title: fused.title,
                url: fused.url,
                snippet: fused.snippet,
                score: (fused.score * 1e6).round() / 1e6,
                engines: fused
                    .places
                    .iter()
                    .map(|p| FoundBy {
                        engine: p.engine.name().to_owned(),
                        rank: p.rank,
                    })
                    .collect(),
            })
            .collect();
        let answer = SearchAnswer {
            query: request.query.clone(),
            results,
            note: note(&reports),
            engines: reports,
            cached: false,
            cached_secs: None,
        };
        if !answer.nobody_answered() {
            let size = estimate_size(&answer);
            self.cache.insert(
                key,
                crate::cache::Cached::Search(Arc::new(answer.clone())),
                size,
                Instant::now(),
            );
        }
        answer
    }

    /// A report for every engine, and the engines to ask: the others are
    /// not requested, disabled (and why) or suspended (until when).
    fn plan(&self, request: &SearchRequest) -> (Vec<EngineReport>, Vec<&dyn Engine>) {
        let now = Utc::now();
        let mut reports = Vec::new();
        let mut asked: Vec<&dyn Engine> = Vec::new();
        let mut health = self.health();
        health.refresh();
        for engine in &self.engines {
            let id = engine.id();
            let settings = self.settings.engine(id);
            let report = |status: Status, detail: Option<String>, until| EngineReport {
                engine: id.name().to_owned(),
                status,
                results: None,
                ms: None,
                detail,
                suspended_until: until,
            };
            let requested = request
                .engines
                .as_ref()
                .is_none_or(|wanted| wanted.contains(&id));
            if !requested {
                reports.push(report(Status::NotRequested, None, None));
            } else if !settings.enabled {
                reports.push(report(Status::Disabled, settings.off_because.clone(), None));
            } else if let Some(until) = health.table.suspended_until(id, now) {
                let last = health.table.get(id).map(|h| {
                    let detail = h.detail.as_deref().map(|d| format!(", {d}"));
                    format!("last: {}{}", h.status.name(), detail.unwrap_or_default())
                });
                reports.push(report(Status::Suspended, last, Some(until)));
            } else {
                reports.push(report(Status::Ok, None, None));
                asked.push(engine.as_ref());
            }
        }
        (reports, asked)
    }

    /// Every engine in `asked` at once, each until its own timeout or the
    /// search's deadline, whichever comes first.
    async fn ask(&self, asked: &[&dyn Engine], query: &Query) -> Vec<Reply> {
        let started = Instant::now();
        let deadline = started + self.settings.deadline;
        futures::future::join_all(asked.iter().map(|&engine| {
            let timeout = self.settings.engine(engine.id()).timeout;
            let (until, why) = if started + timeout <= deadline {
                (
                    started + timeout,
                    format!("no answer within its timeout of {} ms", timeout.as_millis()),
                )
            } else {
                (
                    deadline,
                    format!(
                        "no answer before the search's deadline of {} ms",
                        self.settings.deadline.as_millis()
                    ),
                )
            };
            async move {
                let asked_at = Instant::now();
                let hits = tokio::time::timeout_at(until.into(), self.http.ask(engine, query))
                    .await
                    .unwrap_or(Err(Failure::Timeout(why)));
                Reply {
                    engine: engine.id(),
                    hits,
                    took: asked_at.elapsed(),
                }
            }
        }))
        .await
    }

    /// Each reply into its engine's report and health; the lists to fuse.
    fn record(&self, replies: Vec<Reply>, reports: &mut [EngineReport]) -> Vec<EngineList> {
        let mut lists = Vec::new();
        let mut health = self.health();
        let mut changed = false;
        let now = Utc::now();
        for Reply { engine, hits, took } in replies {
            let Some(report) = reports.iter_mut().find(|r| r.engine == engine.name()) else {
                continue;
            };
            report.ms = Some(took.as_millis() as u64);
            let (status, detail) = match &hits {
                Ok(hits) if hits.is_empty() => (Status::NoResults, None),
                Ok(_) => (Status::Ok, None),
                Err(failure) => (failure.status(), Some(failure.detail().to_owned())),
            };
            if let Some(detail) = &detail {
                tracing::info!(engine = engine.name(), status = status.name(), "{detail}");
            }
            changed |=
                health
                    .table
                    .record(engine, status, detail.clone(), now, &self.settings.health);
            report.status = status;
            report.detail = detail;
            report.suspended_until = health.table.suspended_until(engine, now);
            if let Ok(hits) = hits {
                report.results = Some(hits.len());
                lists.push(EngineList {
                    engine,
                    weight: self.settings.engine(engine).weight,
                    hits,
                });
            }
        }
        if changed {
            health.save();
        }
        lists
    }

    /// Every engine with its settings and last health.
    pub(crate) fn engine_views(&self) -> Vec<EngineView> {
        let mut health = self.health();
        health.refresh();
        let now = Utc::now();
        views(&self.settings, &health.table, now)
    }
}

/// `crabtalk-search engines`' rows, from settings and a health table.
pub(crate) fn views(
    settings: &Settings,
    table: &HealthTable,
    now: DateTime<Utc>,
) -> Vec<EngineView> {
    settings
        .engines
        .iter()
        .map(|engine| {
            let health = table.get(engine.id);
            EngineView {
                engine: engine.id.name().to_owned(),
                enabled: engine.enabled,
                off_because: engine.off_because.clone(),
                base_url: engine.base_url.clone(),
                weight: engine.weight,
                timeout_ms: engine.timeout.as_millis() as u64,
                health: health.map_or("unknown", |h| h.status.name()).to_owned(),
                detail: health.and_then(|h| h.detail.clone()),
                checked_at: health.map(|h| h.checked_at),
                suspended_until: table.suspended_until(engine.id, now),
            }
        })
        .collect()
}

/// What to tell the model when engines did not answer.
fn note(reports: &[EngineReport]) -> Option<String> {
    let considered: Vec<&EngineReport> = reports
        .iter()
        .filter(|r| !matches!(r.status, Status::Disabled | Status::NotRequested))
        .collect();
    let failed: Vec<String> = considered
        .iter()
        .filter(|r| !r.status.answered())
        .map(|r| format!("{} {}", r.engine, r.status.name()))
        .collect();
    if considered.is_empty() {
        return Some("no engine is enabled for this search; see `crabtalk-search engines`".into());
    }
    if failed.is_empty() {
        return None;
    }
    if failed.len() == considered.len() {
        return Some(format!(
            "no engine answered ({}): the web is not answering right now; these are not empty results",
            failed.join(", ")
        ));
    }
    Some(format!(
        "{} of {} engines did not answer ({}); the results come from the others",
        failed.len(),
        considered.len(),
        failed.join(", ")
    ))
}

/// About how many bytes an answer holds (its strings), for the cache's budget.
fn estimate_size(answer: &SearchAnswer) -> usize {
    let results: usize = answer
        .results
        .iter()
        .map(|r| r.title.len() + r.url.len() + r.snippet.len() + 64 + r.engines.len() * 32)
        .sum();
    results + answer.engines.len() * 96 + answer.query.len() + 128
}
