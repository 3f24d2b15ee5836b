//! What each CLI command does, through [`Web`] — the code the MCP tools
//! use — so `crabtalk-search search` answers as `web_search` would.

use anyhow::bail;
use crabtalk_kit::Component;
use serde_json::{Map, Value, json};

use crate::cli::Command;
use crate::fetch::Format;
use crate::search::EngineView;
use crate::tools::args;
use crate::web::Web;

/// Runs one command other than the service.
pub async fn run(component: &Component, command: Command) -> anyhow::Result<()> {
    let settings = crate::service::settings(component)?;
    let web = Web::new(component.home(), settings);
    match command {
        Command::Run => unreachable!("the service is started by main"),
        Command::Search {
            query,
            count,
            engines,
            lang,
            region,
            json,
        } => {
            // The tool's own argument checks, so both refuse alike.
            let mut arguments = Map::new();
            arguments.insert("query".into(), Value::String(query.join(" ")));
            if let Some(count) = count {
                arguments.insert("count".into(), json!(count));
            }
            if let Some(engines) = engines {
                arguments.insert("engines".into(), json!(engines));
            }
            if let Some(lang) = lang {
                arguments.insert("lang".into(), json!(lang));
            }
            if let Some(region) = region {
                arguments.insert("region".into(), json!(region));
            }
            let request =
                args::search_request(&arguments, web.settings().count).map_err(|err| {
                    anyhow::anyhow!(
                        err.to_string()
                            .replace('`', "")
                            .replace("count", "-n/--count")
                    )
                })?;
            let answer = web.search(&request).await;
            if json {
                println!("{}", serde_json::to_string_pretty(&answer)?);
            } else {
                print!("{}", answer.to_text());
            }
            if answer.nobody_answered() {
                bail!("no engine answered; see the engine lines above");
            }
        }
        Command::Fetch {
            url,
            text,
            max_chars,
            json,
        } => {
            let format = if text { Format::Text } else { Format::Markdown };
            if let Some(n) = max_chars
                && !(1..=crate::web::MAX_CHARS_LIMIT).contains(&n)
            {
                bail!(
                    "--max-chars must be from 1 to {}",
                    crate::web::MAX_CHARS_LIMIT
                );
            }
            let answer = web.fetch(&url, format, max_chars).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&answer)?);
            } else {
                print!("{}", answer.to_text());
            }
        }
        Command::Engines { json } => {
            let views = web.engines();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&json!({ "engines": views }))?
                );
            } else {
                print_engines(&views);
            }
        }
    }
    Ok(())
}

fn print_engines(views: &[EngineView]) {
    for view in views {
        let state = if view.enabled { "on " } else { "off" };
        let mut line = format!("{:<10} {state} {:<12}", view.engine, view.health);
        if let Some(detail) = &view.detail {
            line.push_str(&format!(" {detail}"));
        }
        if let Some(until) = view.suspended_until {
            line.push_str(&format!(
                " · suspended until {}",
                until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ));
        }
        if let Some(why) = &view.off_because {
            line.push_str(&format!(" · {why}"));
        }
        println!("{line}");
    }
}
