//! One module per `crabup` command.

mod doctor;
mod list;
mod mcp;
mod ps;
mod pull;
mod rm;
mod self_update;
mod service;
mod up;
mod update;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, OtherService};
use crate::context::Context;

pub(crate) use ps::{HealthStatus, PsRow, ps_rows};

/// Runs one parsed command line.
pub(crate) fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Command::Supervise(args) = cli.command {
        return Ok(supervise(args.args));
    }
    let ctx = Context::from_env()?;
    match cli.command {
        Command::Pull(args) => pull::run(&ctx, &args).map(ok),
        Command::Rm(args) => rm::run(&ctx, &args).map(ok),
        Command::Update => update::run(&ctx).map(ok),
        Command::List => list::run(&ctx).map(ok),
        Command::SelfCmd(args) => self_update::run(&ctx, &args.action).map(ok),
        Command::Ps(args) => ps::run(&ctx, &args),
        Command::Up(args) => up::run(&ctx, &args).map(ok),
        Command::Doctor => doctor::run(&ctx),
        Command::Mcp(args) => mcp::run(&ctx, &args).map(ok),
        Command::Daemon(args) => service::run(&ctx, "daemon", &args.action),
        Command::Telegram(args) => service::run(&ctx, "telegram", &args.action),
        Command::Search(args) => service::run(&ctx, "search", &args.action),
        Command::Cron(args) => service::run(&ctx, "cron", &args.action),
        Command::Supervise(_) => unreachable!("handled above"),
        Command::Other(words) => {
            let name = words[0].clone();
            let other = match OtherService::try_parse_from(&words) {
                Ok(other) => other,
                Err(err) => err.exit(),
            };
            crate::names::check_name(
                &name,
                crate::names::ThirdParty::from_flag(other.third_party),
            )?;
            service::run(&ctx, &name, &other.action)
        }
    }
}

/// `crabup supervise`: the process backend's supervisor of one service.
fn supervise(args: Vec<std::ffi::OsString>) -> ExitCode {
    #[cfg(unix)]
    {
        crabtalk_command::manager::process::supervisor::main(args)
    }
    #[cfg(not(unix))]
    {
        let _ = args;
        eprintln!("crabup: supervise: the process backend supervises services on Unix only");
        ExitCode::FAILURE
    }
}

fn ok(_: ()) -> ExitCode {
    ExitCode::SUCCESS
}
