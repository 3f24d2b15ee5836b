//! `crabup mcp add <host> [--write]`: the entry that adds crabtalk to an
//! MCP host, printed, or merged into the host's configuration file.

use crabtalk_command::Service;

use crate::cli::{McpAction, McpArgs, McpHostArg};
use crate::context::Context;
use crate::mcp::{self, Dirs, Host, Launch, Os, Written};

impl From<McpHostArg> for Host {
    fn from(arg: McpHostArg) -> Self {
        match arg {
            McpHostArg::ClaudeDesktop => Host::ClaudeDesktop,
            McpHostArg::ClaudeCode => Host::ClaudeCode,
            McpHostArg::Cursor => Host::Cursor,
            McpHostArg::Zed => Host::Zed,
        }
    }
}

pub(super) fn run(ctx: &Context, args: &McpArgs) -> anyhow::Result<()> {
    match &args.action {
        McpAction::Add { host, write } => add(ctx, Host::from(*host), *write),
    }
}

/// How the bridge of this home starts: the installed `crabtalkd` (else
/// where `crabup pull daemon` puts it, with a note) and the home, both
/// absolute.
pub(crate) fn launch(ctx: &Context) -> (Launch, Option<String>) {
    let service = Service::daemon();
    let installed = ctx.binary(&service);
    let note = installed.is_none().then(|| {
        "crabtalkd is not installed yet: `crabup pull daemon` installs it where the entry points"
            .to_owned()
    });
    let spec = ctx.spec(&service);
    let home = std::path::absolute(ctx.home.root()).unwrap_or_else(|_| ctx.home.root().to_owned());
    (
        Launch {
            binary: spec.program,
            home,
        },
        note,
    )
}

fn add(ctx: &Context, host: Host, write: bool) -> anyhow::Result<()> {
    let dirs = Dirs::from_env()
        .ok_or_else(|| anyhow::anyhow!("cannot tell the home folder or the current folder"))?;
    let file = host.config_file(&dirs, Os::current());
    let (launch, note) = launch(ctx);
    if let Some(note) = &note {
        eprintln!("crabup: note: {note}");
    }
    if !write {
        println!(
            "{} reads its MCP servers from {}. Add this to it (`crabup mcp add {} --write` merges it in, keeping what is there):\n",
            host.title(),
            file.display(),
            host.name()
        );
        println!("{}\n", launch.snippet(host));
        if host == Host::ClaudeCode {
            println!(
                "That is for this project. For every project, run:\n\n  {}\n",
                launch.claude_code_command()
            );
        }
        println!(
            "The daemon must be running for the tools to answer (`crabup daemon start`). Everything \
             the host does through crabtalk is done as you."
        );
        return Ok(());
    }
    let written = mcp::write_entry(&file, host, &launch)?;
    let what = match written {
        Written::Created => "created it with the crabtalk entry",
        Written::Added => "added the crabtalk entry, keeping the others",
        Written::Replaced => "replaced its crabtalk entry, keeping the others",
        Written::Unchanged => "its crabtalk entry was already so; nothing changed",
    };
    println!("{}: {what}.", file.display());
    println!("{}", host.after_writing());
    Ok(())
}
