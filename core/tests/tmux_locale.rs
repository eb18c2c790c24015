//! Pane waits from a process whose environment has no locale, as MCP
//! clients start servers (`env -i PATH=/usr/bin:/bin`): tmux then prints no
//! UTF-8 unless told to, and every field it prints must still be read.

use std::process::Command;
use waitfor::{Engine, Outcome, Spec, WaitOptions};

/// Set in the re-run of this test binary that does the wait.
const SOCKET_VAR: &str = "WAITFOR_TEST_LOCALE_SOCKET";
const TEST: &str = "a_pane_wait_works_without_a_locale";

fn bare(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear().env("PATH", "/usr/bin:/bin");
    cmd
}

#[test]
fn a_pane_wait_works_without_a_locale() {
    if let Ok(socket) = std::env::var(SOCKET_VAR) {
        return wait_in_pane(&socket);
    }
    let socket = format!("waitfor-locale-{}", std::process::id());
    let tmux = |args: &[&str]| {
        bare("tmux")
            .args(["-L", &socket, "-f", "/dev/null"])
            .args(args)
            .status()
            .unwrap()
    };
    assert!(tmux(&["new-session", "-d", "-s", "main", "sh"]).success());
    let child = bare(std::env::current_exe().unwrap())
        .env(SOCKET_VAR, &socket)
        .args(["--exact", TEST, "--nocapture"])
        .output()
        .unwrap();
    tmux(&["kill-server"]);
    assert!(
        child.status.success(),
        "{}{}",
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr)
    );
}

/// A wait that resolves the pane by session name and samples it until it
/// has been quiet a moment: every tmux answer is parsed.
fn wait_in_pane(socket: &str) {
    assert!(std::env::var_os("LANG").is_none());
    let spec = serde_json::json!({
        "probe": {"tmux": {"session_name": "main", "socket_name": socket}},
        "until": {"quiet_for_ms": 300},
        "interval_ms": 50,
        "max_wait_ms": 10000
    });
    let result = Engine::global()
        .run(
            Spec::from_json(&spec.to_string()).unwrap(),
            WaitOptions::default(),
        )
        .unwrap();
    assert_eq!(result.outcome, Outcome::Settled, "{result:?}");
}
