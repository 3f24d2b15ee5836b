//! systemd user units: `~/.config/systemd/user/ai.crabtalk.<name>.service`.

use askama::Template;

use super::escape::{self, Escaped};
use super::{
    HEADER, RESTART_DELAY_SECS, RenderError, UnitFormat, UnitSpec, field, path_text, rendered,
};

const FORMAT: UnitFormat = UnitFormat::Systemd;

#[derive(Template)]
#[template(path = "systemd.service", escape = "none")]
struct SystemdUnit {
    header: Escaped,
    description: Escaped,
    exec_start: Escaped,
    working_dir: Escaped,
    env_home: Escaped,
    env_path: Escaped,
    env_file: Escaped,
    log_file: Escaped,
    restart_delay_secs: Escaped,
    config_exit_code: Escaped,
    unavailable_exit_code: Escaped,
}

pub(super) fn render(spec: &UnitSpec) -> Result<String, RenderError> {
    let program = path_text(FORMAT, "program", &spec.program)?;
    let mut exec_start =
        field(FORMAT, "program", program, escape::systemd_exec_program)?.to_string();
    for arg in spec.service.args() {
        exec_start.push(' ');
        exec_start.push_str(escape::systemd_exec_word(arg).as_str());
    }
    let home = path_text(FORMAT, "home", &spec.home)?;
    let unit = SystemdUnit {
        header: field(FORMAT, "header", HEADER, escape::systemd_text)?,
        description: field(
            FORMAT,
            "description",
            spec.service.description(),
            escape::systemd_text,
        )?,
        exec_start: Escaped::literal(exec_start),
        working_dir: field(FORMAT, "working directory", home, escape::systemd_path)?,
        env_home: field(FORMAT, "CRABTALK_HOME", home, |v| {
            escape::systemd_environment("CRABTALK_HOME", v)
        })?,
        env_path: field(FORMAT, "PATH", &spec.path_env, |v| {
            escape::systemd_environment("PATH", v)
        })?,
        env_file: field(
            FORMAT,
            "env file",
            path_text(FORMAT, "env file", &spec.env_file)?,
            escape::systemd_path,
        )?,
        log_file: field(
            FORMAT,
            "log file",
            path_text(FORMAT, "log file", &spec.log_file)?,
            escape::systemd_path,
        )?,
        restart_delay_secs: Escaped::literal(RESTART_DELAY_SECS),
        // systemd does not restart a unit that exits with either: a service
        // without its config, or unable to run here, fails once instead of looping.
        config_exit_code: Escaped::literal(crabtalk_home::exit::EX_CONFIG),
        unavailable_exit_code: Escaped::literal(crabtalk_home::exit::EX_UNAVAILABLE),
    };
    Ok(rendered(unit.render()))
}
