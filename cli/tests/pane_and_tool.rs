//! `waitfor pane` and `waitfor tool` end to end, on a real tmux server
//! started on a private socket and killed by each test.

mod common;

use common::*;
use std::process::{Command, Output};
use std::time::Instant;

/// A tmux server on its own socket, running `sh` in two windows; killed
/// on drop.
struct Tmux {
    socket: String,
    /// The `TMUX_TMPDIR` of a server on the default socket name, private
    /// to the test; `None`: tmux's own directory.
    tmpdir: Option<tempfile::TempDir>,
}

impl Tmux {
    fn start(name: &str) -> Self {
        Self::launch(Self {
            socket: format!("waitfor-cli-{name}-{}", std::process::id()),
            tmpdir: None,
        })
    }

    /// A server on the default socket (`default`) of a private directory.
    fn start_default() -> Self {
        Self::launch(Self {
            socket: "default".into(),
            tmpdir: Some(tempfile::tempdir().unwrap()),
        })
    }

    fn launch(tmux: Self) -> Self {
        tmux.cmd(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            "80",
            "-y",
            "24",
            "sh",
        ]);
        tmux.cmd(&["new-window", "-d", "-t", "main", "sh"]);
        tmux
    }

    /// `command` (tmux, or waitfor) in this server's `TMUX_TMPDIR`.
    fn within(&self, mut command: Command) -> Command {
        if let Some(dir) = &self.tmpdir {
            command.env("TMUX_TMPDIR", dir.path());
        }
        command
    }

    fn cmd(&self, args: &[&str]) -> String {
        let output = self
            .within(Command::new("tmux"))
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The pane id of window `index`.
    fn pane(&self, index: u32) -> String {
        self.cmd(&[
            "display-message",
            "-p",
            "-t",
            &format!("main:{index}"),
            "#{pane_id}",
        ])
        .trim()
        .to_string()
    }

    /// Whether a client (the wait's control-mode client) is attached: the
    /// wait has taken its entry anchor.
    fn client_attached(&self) -> bool {
        !self.cmd(&["list-clients"]).trim().is_empty()
    }

    /// Types a command and Enter into `pane`.
    fn type_line(&self, pane: &str, line: &str) {
        self.cmd(&["send-keys", "-t", pane, "-l", line]);
        self.cmd(&["send-keys", "-t", pane, "Enter"]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self
            .within(Command::new("tmux"))
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// Waits for the child to exit (failing after the deadline).
fn finish(mut child: std::process::Child) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("waitfor did not exit: {:?}", child.wait_with_output());
        }
        std::thread::yield_now();
    }
    child.wait_with_output().expect("output")
}

#[test]
fn pane_matches_output_written_after_the_start() {
    let tmux = Tmux::start("match");
    let pane = tmux.pane(0);
    // Already on screen before the wait: must not count.
    tmux.type_line(&pane, "printf 'RE%sDY\\n' A");
    let child = spawn(&[
        "pane",
        &pane,
        "--socket-name",
        &tmux.socket,
        "--match",
        "READY",
        "--timeout",
        "20s",
        "--json",
    ]);
    eventually("the wait attaches", || tmux.client_attached());
    // The typed command does not contain READY; only its output does.
    tmux.type_line(&pane, "printf 'RE%sDY\\n' A");
    let output = finish(child);
    expect(&output, 0);
    let result = json(&output);
    assert_eq!(result["outcome"], "matched");
    assert_eq!(result["matched_lines"][0], "READY");
    assert_eq!(result["woken"], true, "control mode answered: {result}");
}

/// `--socket-name ""` is the default socket, as in every door: the wait
/// reaches the server there (and times out on a quiet pane) instead of
/// being refused as a usage error.
#[test]
fn pane_with_an_empty_socket_name_waits_on_the_default_socket() {
    let tmux = Tmux::start_default();
    let pane = tmux.pane(0);
    let output = tmux
        .within(waitfor())
        .args(["pane", &pane, "--socket-name", "", "--match", "NEVER"])
        .args(["--timeout", "1s", "--json"])
        .output()
        .expect("waitfor runs");
    expect(&output, 1);
    assert_eq!(json(&output)["outcome"], "timeout", "{}", stdout(&output));
}

#[test]
fn pane_stale_text_times_out_with_exit_1() {
    let tmux = Tmux::start("stale");
    let pane = tmux.pane(0);
    tmux.type_line(&pane, "printf 'RE%sDY\\n' A");
    eventually("the stale line is on screen", || {
        tmux.cmd(&["capture-pane", "-p", "-t", &pane])
            .contains("READY\n")
    });
    let output = run(&[
        "pane",
        &pane,
        "--socket-name",
        &tmux.socket,
        "--match",
        "READY",
        "--timeout",
        "1s",
        "--no-push",
    ]);
    expect(&output, 1);
}

#[test]
fn pane_that_dies_exits_4() {
    let tmux = Tmux::start("gone");
    let pane = tmux.pane(1);
    let child = spawn(&[
        "pane",
        &pane,
        "--socket-name",
        &tmux.socket,
        "--match",
        "never",
        "--timeout",
        "20s",
    ]);
    eventually("the wait attaches", || tmux.client_attached());
    tmux.cmd(&["kill-pane", "-t", &pane]);
    expect(&finish(child), 4);
}

#[test]
fn pane_flags_are_checked() {
    expect(
        &run(&["pane", "%0", "--socket-name", "x", "--every", "5ms"]),
        2,
    );
    expect(&run(&["pane"]), 2);
}

#[test]
fn tool_runs_a_profile_and_prints_its_exact_output() {
    let output = run(&[
        "tool",
        "aura/wait_for",
        r#"{"probe": {"tool": "run_command", "args": {"argv": ["echo", "web Running"]}}, "until": {"matches": "Running"}, "poll_sec": 1, "max_wait_sec": 10}"#,
    ]);
    expect(&output, 0);
    let out = json(&output);
    assert_eq!(out["reason"], "matched");
    assert_eq!(out["samples"], 1);
    assert_eq!(out["effective_max_wait_sec"], 10);
    let keys: Vec<&str> = out
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 5, "AURA's five fields only: {keys:?}");
}

/// A tool's output quotes what the probed command wrote: DEL, C1
/// controls, separators and bidirectional marks in it are `\u` escapes.
#[test]
fn tool_output_escapes_what_acts_on_a_terminal() {
    let line = format!("ready {ACTING} end");
    let args = serde_json::json!({
        "probe": {"tool": "run_command", "args": {"argv": ["printf", "%s", line]}},
        "until": {"matches": "ready"}, "poll_sec": 1, "max_wait_sec": 10,
    });
    let output = run(&["tool", "aura/wait_for", &args.to_string()]);
    expect(&output, 0);
    assert_nothing_acts(&output.stdout);
    let out = json(&output);
    assert_eq!(out["reason"], "matched");
    assert!(
        out["last_observation"].as_str().unwrap().contains(&line),
        "{out}"
    );
}

#[test]
fn tool_runs_the_python_seed_profile_on_a_pane() {
    let tmux = Tmux::start("tool");
    let pane = tmux.pane(0);
    let args = serde_json::json!({"pane_id": pane, "socket_name": tmux.socket, "patterns": ["DONE"], "timeout": 20});
    let child = spawn(&["tool", "libtmux-mcp/wait_for_text", &args.to_string()]);
    eventually("the wait attaches", || tmux.client_attached());
    tmux.type_line(&pane, "printf 'DO%sE\\n' N");
    let output = finish(child);
    expect(&output, 0);
    let out = json(&output);
    assert_eq!(out["found"], true);
    assert_eq!(out["outcome"], "matched");
    assert_eq!(out["pane_id"], pane);
}

#[test]
fn tool_errors_have_their_codes() {
    let bad = run(&[
        "tool",
        "aura/wait_for",
        r#"{"probe": {"tool": "", "args": {}}, "until": {"matches": "x"}}"#,
    ]);
    expect(&bad, 2);
    assert!(stderr(&bad).contains("probe.tool"), "{}", stderr(&bad));
    expect(&run(&["tool", "nobody/nothing", "{}"]), 2);
    expect(&run(&["tool", "aura/wait_for", "not json"]), 2);
    // serde_json refuses a lone surrogate escape as not JSON: the error
    // names the string it is in.
    let surrogate = run(&[
        "tool",
        "aura/wait_for",
        r#"{"probe": {"tool": "t", "args": {}}, "until": {"matches": "\ud800"}}"#,
    ]);
    expect(&surrogate, 2);
    assert!(
        stderr(&surrogate).starts_with("waitfor tool: the arguments: until.matches: not JSON: "),
        "{}",
        stderr(&surrogate)
    );
    let failed = run(&[
        "tool",
        "aura/wait_for",
        r#"{"probe": {"tool": "run_command", "args": {"argv": ["/nonexistent/x"]}}, "until": {"matches": "x"}, "poll_sec": 1, "max_wait_sec": 5}"#,
    ]);
    expect(&failed, 6);
    assert!(stderr(&failed).contains("/nonexistent/x"));
}

/// A reader that stops early (`waitfor tool --list | head`) closes the
/// pipe: the list ends there, with no panic.
#[test]
fn tool_list_into_a_closed_pipe_ends_quietly() {
    use std::process::Stdio;
    let child = Command::new(env!("CARGO_BIN_EXE_waitfor"))
        .args(["tool", "--list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("waitfor starts");
    // Closing the read end before the list is written makes every write fail.
    let mut child = child;
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("waitfor ends");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn tool_list_prints_every_definition() {
    let output = run(&["tool", "--list"]);
    expect(&output, 0);
    let list = json(&output);
    let profiles: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["profile"].as_str().unwrap())
        .collect();
    for want in [
        "aura/wait_for",
        "libtmux-mcp/wait_for_text",
        "libtmux-cxx/wait_for_text",
    ] {
        assert!(profiles.contains(&want), "{profiles:?}");
    }
    for definition in list.as_array().unwrap() {
        for field in [
            "name",
            "title",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
        ] {
            assert!(
                !definition["tool"][field].is_null(),
                "{field} in {definition}"
            );
        }
    }
}
