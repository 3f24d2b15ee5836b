//! The doctor's check of the MCP bridge: `crabtalkd mcp` started as a host
//! starts it, asked `initialize` and `tools/list` over its stdio.

use crabtalk_command::Service;

use super::{Report, Verdict};
use crate::context::Context;
use crate::mcp::probe;

pub(super) fn check(ctx: &Context, report: &mut Report) {
    let Some(binary) = ctx.binary(&Service::daemon()) else {
        report.line(
            Verdict::Warn,
            "MCP bridge",
            "not checked: crabtalkd is not installed (`crabup pull daemon`)",
        );
        return;
    };
    let home = std::path::absolute(ctx.home.root()).unwrap_or_else(|_| ctx.home.root().to_owned());
    match probe::probe(&binary, &home) {
        Ok(answered) => report.line(
            Verdict::Ok,
            "MCP bridge",
            format!(
                "`crabtalkd mcp` starts and answers: {} {} (MCP {}), {} tools; \
                 `crabup mcp add <host>` adds it to Claude Desktop, Claude Code, Cursor or Zed",
                answered.server,
                answered.version,
                answered.protocol,
                answered.tools.len()
            ),
        ),
        Err(why) if why.is_no_mcp_command() => report.line(
            Verdict::Warn,
            "MCP bridge",
            format!(
                "{} has no `mcp` command (an older crabtalkd; `crabup pull daemon` updates it)",
                binary.display()
            ),
        ),
        Err(why) => report.line(Verdict::Fail, "MCP bridge", why.to_string()),
    }
}
