//! `crabup mcp add <host>` (RFC 0022) in a sandbox with its own `$HOME`:
//! the entry printed, and with `--write` merged into the host's file —
//! read back as valid JSON with every other entry (and Zed's comments)
//! kept; a file crabup cannot edit left alone; a link followed. And
//! `crabup doctor` starting the real bridge.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::support::{Sandbox, stdout};

/// A person's `$HOME` in the sandbox, and crabup run with it.
struct Person {
    sandbox: Sandbox,
    home: PathBuf,
    crabtalkd: PathBuf,
}

impl Person {
    fn new() -> Self {
        let sandbox = Sandbox::new();
        let home = sandbox.dir.path().join("person");
        std::fs::create_dir_all(&home).unwrap();
        let crabtalkd = sandbox.fake_binary("crabtalkd", "exit 0\n");
        Self {
            sandbox,
            home,
            crabtalkd,
        }
    }

    fn crabup_in(&self, dir: &Path, args: &[&str]) -> Output {
        self.sandbox
            .command(args)
            .env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("APPDATA")
            .current_dir(dir)
            .output()
            .unwrap()
    }

    fn crabup(&self, args: &[&str]) -> Output {
        self.crabup_in(&self.home, args)
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.crabup(args);
        assert!(
            out.status.success(),
            "crabup {args:?} failed:\n{}\n{}",
            stdout(&out),
            String::from_utf8_lossy(&out.stderr)
        );
        stdout(&out)
    }

    /// The entry crabup must write.
    fn entry(&self) -> Value {
        json!({
            "command": self.crabtalkd.to_string_lossy(),
            "args": ["mcp"],
            "env": {"CRABTALK_HOME": self.sandbox.home.to_string_lossy()},
        })
    }

    fn claude_desktop_file(&self) -> PathBuf {
        self.home.join(".config/Claude/claude_desktop_config.json")
    }
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}\n{text}", path.display()))
}

#[cfg(target_os = "linux")]
#[test]
fn claude_desktop_write_adds_crabtalk_and_keeps_every_other_entry() {
    let person = Person::new();
    let file = person.claude_desktop_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        r#"{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
    "weather": {"command": "/opt/weather", "env": {"KEY": "k"}}
  }
}
"#,
    )
    .unwrap();

    // Without --write nothing is touched; the snippet and the file say
    // what to do.
    let before = std::fs::read_to_string(&file).unwrap();
    let printed = person.ok(&["mcp", "add", "claude-desktop"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
    assert!(printed.contains(&file.display().to_string()), "{printed}");
    let start = printed.find('{').unwrap();
    let end = printed.rfind('}').unwrap();
    let snippet: Value = serde_json::from_str(&printed[start..=end]).unwrap();
    assert_eq!(snippet["mcpServers"]["crabtalk"], person.entry());

    let said = person.ok(&["mcp", "add", "claude-desktop", "--write"]);
    assert!(
        said.contains("added the crabtalk entry, keeping the others"),
        "{said}"
    );
    assert!(said.contains("reopen Claude Desktop"), "{said}");
    let config = read_json(&file);
    assert_eq!(config["mcpServers"]["crabtalk"], person.entry());
    assert_eq!(config["globalShortcut"], "Ctrl+Space");
    assert_eq!(
        config["mcpServers"]["files"],
        json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]})
    );
    assert_eq!(
        config["mcpServers"]["weather"],
        json!({"command": "/opt/weather", "env": {"KEY": "k"}})
    );
    // The command is the absolute path of crabtalkd; CRABTALK_HOME too.
    assert!(
        Path::new(
            config["mcpServers"]["crabtalk"]["command"]
                .as_str()
                .unwrap()
        )
        .is_absolute()
    );

    // A second time changes nothing.
    let written = std::fs::read_to_string(&file).unwrap();
    let said = person.ok(&["mcp", "add", "claude-desktop", "--write"]);
    assert!(said.contains("already so; nothing changed"), "{said}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), written);
}

#[cfg(target_os = "linux")]
#[test]
fn a_missing_file_is_made_and_a_broken_one_is_left_alone() {
    let person = Person::new();
    let file = person.claude_desktop_file();
    let said = person.ok(&["mcp", "add", "claude-desktop", "--write"]);
    assert!(said.contains("created it"), "{said}");
    assert_eq!(read_json(&file)["mcpServers"]["crabtalk"], person.entry());

    let broken = "{\n  \"mcpServers\": {\n    \"files\": {\"command\": \"npx\"}\n    \"other\": {}\n  }\n}\n";
    std::fs::write(&file, broken).unwrap();
    let out = person.crabup(&["mcp", "add", "claude-desktop", "--write"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:4:5:", file.display())) && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), broken);
}

#[cfg(target_os = "linux")]
#[test]
fn zed_keeps_its_comments_and_a_linked_settings_file_stays_a_link() {
    let person = Person::new();
    let dotfiles = person.home.join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let real = dotfiles.join("zed-settings.json");
    let settings = "// Zed settings\n//\n// For information on how to configure Zed, see the Zed\n// documentation: https://zed.dev/docs/configuring-zed\n{\n  \"theme\": \"One Dark\", // the dark one\n  \"vim_mode\": true,\n}\n";
    std::fs::write(&real, settings).unwrap();
    let zed = person.home.join(".config/zed");
    std::fs::create_dir_all(&zed).unwrap();
    std::os::unix::fs::symlink(&real, zed.join("settings.json")).unwrap();

    person.ok(&["mcp", "add", "zed", "--write"]);
    assert!(
        std::fs::symlink_metadata(zed.join("settings.json"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let text = std::fs::read_to_string(&real).unwrap();
    assert!(
        text.starts_with("// Zed settings\n//\n// For information on how to configure Zed, see the Zed\n// documentation: https://zed.dev/docs/configuring-zed\n{\n  \"theme\": \"One Dark\", // the dark one\n  \"vim_mode\": true,\n"),
        "{text}"
    );
    // Zed's JSON with comments, read as plain JSON once they are gone.
    let plain: Value = serde_json::from_str(&crabup::strip_comments(&text)).unwrap();
    assert_eq!(plain["context_servers"]["crabtalk"], person.entry());
    assert_eq!(plain["vim_mode"], true);
}

#[cfg(target_os = "linux")]
#[test]
fn claude_code_and_cursor_get_their_own_files() {
    let person = Person::new();
    let project = person.home.join("site");
    std::fs::create_dir_all(&project).unwrap();
    let out = person.crabup_in(&project, &["mcp", "add", "claude-code", "--write"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        read_json(&project.join(".mcp.json"))["mcpServers"]["crabtalk"],
        person.entry()
    );
    let printed = stdout(&person.crabup_in(&project, &["mcp", "add", "claude-code"]));
    assert!(
        printed.contains(&format!(
            "claude mcp add --scope user crabtalk --env CRABTALK_HOME={} -- {} mcp",
            person.sandbox.home.display(),
            person.crabtalkd.display()
        )),
        "{printed}"
    );

    person.ok(&["mcp", "add", "cursor", "--write"]);
    assert_eq!(
        read_json(&person.home.join(".cursor/mcp.json"))["mcpServers"]["crabtalk"],
        person.entry()
    );
}

#[test]
fn doctor_starts_the_bridge_and_says_it_answers() {
    let sandbox = Sandbox::new();
    let bin = sandbox.cargo_home.join("bin").join("crabtalkd");
    std::os::unix::fs::symlink(crabtalk_testkit::daemon_binary(), &bin).unwrap();
    let text = stdout(&sandbox.crabup(&["doctor"]));
    let line = text
        .lines()
        .find(|line| line.contains("MCP bridge"))
        .unwrap_or_else(|| panic!("no bridge line:\n{text}"));
    assert!(
        line.starts_with("[ok  ] MCP bridge: `crabtalkd mcp` starts and answers: crabtalk ")
            && line.contains("(MCP 2025-06-18), 6 tools"),
        "{line}"
    );

    // A crabtalkd that does not speak MCP fails the check, with its words.
    std::fs::remove_file(&bin).unwrap();
    sandbox.fake_binary("crabtalkd", "echo 'something broke' >&2\nexit 3\n");
    let text = stdout(&sandbox.crabup(&["doctor"]));
    let line = text
        .lines()
        .find(|line| line.contains("MCP bridge"))
        .unwrap();
    assert!(
        line.starts_with("[FAIL] MCP bridge:") && line.contains("something broke"),
        "{line}"
    );
}
