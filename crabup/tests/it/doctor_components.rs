//! `crabup doctor` on an installed component that is not well: its
//! config refused by the component's own loader (with file, line and
//! column), its service stopped, and warnings and errors at the end of its
//! log shown.

use crate::support::{Sandbox, stdout};

#[test]
fn doctor_shows_a_refused_config_a_stopped_service_and_the_last_errors_of_a_log() {
    let sandbox = Sandbox::new();
    sandbox.fake_binary("crabtalk-telegram", "exit 0\n");
    std::fs::create_dir_all(sandbox.home.join("config")).unwrap();
    std::fs::write(
        sandbox.home.join("config/telegram.toml"),
        "token = \"123:abc\"\nallow = [1]\npoll_timeout_secs = \"soon\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(sandbox.home.join("logs")).unwrap();
    std::fs::write(
        sandbox.home.join("logs/telegram.log"),
        "2026-01-01T00:00:00.000000Z  INFO crabtalk_telegram: polling\n\
         2026-01-01T00:00:01.000000Z  WARN crabtalk_telegram::poll: getUpdates failed: 409 Conflict\n\
         2026-01-01T00:00:02.000000Z ERROR crabtalk_telegram: the daemon did not answer\n\
         2026-01-01T00:00:02.500000Z  WARN crabtalk_telegram: /home/someone/projects/crabtalk/sandbox/files has mode 755: other users can get at it, and it holds what chats sent; fix it with: chmod 700 /home/someone/projects/crabtalk/sandbox/files\n\
         2026-01-01T00:00:03.000000Z  INFO crabtalk_telegram: polling again\n",
    )
    .unwrap();
    let out = sandbox.crabup(&["doctor"]);
    let text = stdout(&out);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("[FAIL] telegram.toml:") && text.contains("telegram.toml:3:"),
        "{text}"
    );
    assert!(
        text.contains("[warn] telegram service: stopped; `crabup telegram start` runs it"),
        "{text}"
    );
    assert!(
        text.contains("[warn] telegram log: 3 warning/error lines in the last 5 lines of"),
        "{text}"
    );
    assert!(
        text.contains("getUpdates failed: 409 Conflict")
            && text.contains("the daemon did not answer"),
        "{text}"
    );
    // A long line is cut in its middle: the fix at its end is whole.
    assert!(
        text.contains("fix it with: chmod 700 /home/someone/projects/crabtalk/sandbox/files\n"),
        "{text}"
    );

    // Fixed: it parses, and says who may talk.
    std::fs::write(
        sandbox.home.join("config/telegram.toml"),
        "token = \"123:abc\"\npairing = true\n",
    )
    .unwrap();
    let text = stdout(&sandbox.crabup(&["doctor"]));
    assert!(
        text.contains("[ok  ] telegram.toml: parses; token set; pairing on, nobody allowed yet"),
        "{text}"
    );
}
