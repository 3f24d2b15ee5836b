//! launchd agents: `~/Library/LaunchAgents/ai.crabtalk.<name>.plist`.
//!
//! launchd cannot read an env file, so provider keys reach a launchd
//! service only through the binary reading `$CRABTALK_HOME/env` itself,
//! which every crabtalk binary does at start (`Home::load_env_file`).

use askama::Template;

use super::escape::{self, Escaped};
use super::{
    HEADER, LAUNCHD_THROTTLE_SECS, RenderError, UnitFormat, UnitSpec, field, path_text, rendered,
};

const FORMAT: UnitFormat = UnitFormat::Launchd;

#[derive(Template)]
#[template(path = "launchd.plist", escape = "none")]
struct LaunchdPlist {
    header: Escaped,
    label: Escaped,
    program_arguments: Vec<Escaped>,
    working_dir: Escaped,
    home: Escaped,
    path_env: Escaped,
    log_file: Escaped,
    restart_delay_secs: Escaped,
}

pub(super) fn render(spec: &UnitSpec) -> Result<String, RenderError> {
    let home = path_text(FORMAT, "home", &spec.home)?;
    let program_arguments = spec
        .command_line()
        .iter()
        .map(|arg| field(FORMAT, "program argument", arg, escape::xml))
        .collect::<Result<Vec<_>, _>>()?;
    let plist = LaunchdPlist {
        // An XML comment cannot hold "--"; the header has none.
        header: field(FORMAT, "header", HEADER, escape::xml)?,
        label: field(FORMAT, "label", &spec.service.label(), escape::xml)?,
        program_arguments,
        working_dir: field(FORMAT, "working directory", home, escape::xml)?,
        home: field(FORMAT, "CRABTALK_HOME", home, escape::xml)?,
        path_env: field(FORMAT, "PATH", &spec.path_env, escape::xml)?,
        log_file: field(
            FORMAT,
            "log file",
            path_text(FORMAT, "log file", &spec.log_file)?,
            escape::xml,
        )?,
        restart_delay_secs: Escaped::literal(LAUNCHD_THROTTLE_SECS),
    };
    Ok(rendered(plist.render()))
}
