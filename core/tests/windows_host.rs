//! What a Windows host gets, with real processes and files: a command
//! ends with everything it started (a job object), output caps and
//! budgets hold, files are read within the grants, and tmux waits are
//! refused with the reason. Runs on Windows only.
#![cfg(windows)]

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};
use waitfor::grants::Grants;
use waitfor::process::{run_bounded, OverCap, ProcessOutput, RunError, RunOptions};
use waitfor::profiles::{prepare, Host, ToolError};
use waitfor::{CancelToken, Engine, Rule, Spec, WaitOptions};
use windows_sys::Win32::Foundation::{CloseHandle, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::{
    OpenProcess, WaitForSingleObject, PROCESS_SYNCHRONIZE,
};

const LONG: Duration = Duration::from_secs(60);

/// Names what [`helper`] does when this test binary runs as a command.
const HELPER: &str = "WAITFOR_WINDOWS_HOST_HELPER";

/// The commands the tests run are this test binary itself, running only
/// this test with [`HELPER`] set to a mode: `sleep` (ten minutes), `cat`
/// (stdin to stdout), `spawn-then-exit` and `spawn-then-flood` (start a
/// sleeping copy of itself, print `pid=N`, then exit or write without end).
/// Run by the harness without the variable, it does nothing.
#[test]
fn helper() {
    let Ok(mode) = std::env::var(HELPER) else {
        return;
    };
    match mode.as_str() {
        "sleep" => std::thread::sleep(Duration::from_secs(600)),
        "cat" => {
            std::io::copy(&mut std::io::stdin(), &mut std::io::stdout()).unwrap();
        }
        "spawn-then-exit" | "spawn-then-flood" => {
            let argv = helper_argv();
            // Left running on purpose: the runner must end it.
            let grandchild = std::process::Command::new(&argv[0])
                .args(&argv[1..])
                .env(HELPER, "sleep")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            println!("pid={}", grandchild.id());
            std::mem::forget(grandchild);
            std::io::stdout().flush().unwrap();
            if mode == "spawn-then-flood" {
                loop {
                    print!("{}", "x".repeat(1000));
                }
            }
        }
        other => panic!("unknown helper mode {other}"),
    }
}

fn helper_argv() -> Vec<String> {
    let me = std::env::current_exe().unwrap();
    let args = ["--exact", "helper", "--nocapture", "--test-threads=1"];
    std::iter::once(me.to_string_lossy().into_owned())
        .chain(args.map(String::from))
        .collect()
}

/// Runs this binary as the helper in `mode`.
fn run_helper(
    mode: &str,
    mut opts: RunOptions,
    budget: Duration,
) -> Result<ProcessOutput, RunError> {
    opts.env.push((HELPER.into(), mode.into()));
    run_bounded(&helper_argv(), &opts, budget, &CancelToken::new())
}

/// The pid the helper printed as `pid=N`.
fn grandchild_pid(stdout: &[u8]) -> u32 {
    let text = String::from_utf8_lossy(stdout);
    let digits = &text[text
        .find("pid=")
        .expect("the helper printed its grandchild's pid")
        + 4..];
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().unwrap()
}

/// Whether process `pid` ends within `limit` (true if it is already gone).
fn ends_within(pid: u32, limit: Duration) -> bool {
    // SAFETY: plain calls; the handle, when opened, is closed below.
    unsafe {
        let process = OpenProcess(PROCESS_SYNCHRONIZE, 0, pid);
        if process.is_null() {
            return true;
        }
        let ended = WaitForSingleObject(process, limit.as_millis() as u32) == WAIT_OBJECT_0;
        CloseHandle(process);
        ended
    }
}

#[test]
fn what_a_command_left_running_ends_when_it_exits() {
    let out = run_helper("spawn-then-exit", RunOptions::default(), LONG).unwrap();
    assert_eq!(out.status, Some(0));
    assert!(ends_within(
        grandchild_pid(&out.stdout),
        Duration::from_secs(10)
    ));
}

#[test]
fn a_command_over_its_cap_is_ended_with_its_tree_and_exit_code_137() {
    let opts = RunOptions {
        output_cap: 4096,
        over_cap: OverCap::Stop,
        ..RunOptions::default()
    };
    let out = run_helper("spawn-then-flood", opts, LONG).unwrap();
    assert!(out.stdout_truncated);
    assert_eq!((out.status, out.signal), (Some(137), None));
    assert!(ends_within(
        grandchild_pid(&out.stdout),
        Duration::from_secs(10)
    ));
}

#[test]
fn a_command_past_its_budget_is_ended() {
    let began = Instant::now();
    let err = run_helper("sleep", RunOptions::default(), Duration::from_millis(300)).unwrap_err();
    assert!(matches!(err, RunError::TimedOut { .. }), "{err}");
    assert!(began.elapsed() < Duration::from_secs(5));
}

#[test]
fn stdin_reaches_the_command() {
    let opts = RunOptions {
        stdin: Some(b"hello from stdin".to_vec()),
        ..RunOptions::default()
    };
    let out = run_helper("cat", opts, LONG).unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello from stdin"));
}

#[test]
fn files_open_inside_the_roots_and_directories_are_refused() {
    let scratch = tempfile::Builder::new()
        .prefix("waitfor-windows-")
        .tempdir()
        .unwrap();
    let dir = scratch.path().to_path_buf();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("log.txt"), "hi").unwrap();
    let grants = Grants::none().file_root(&dir);
    assert!(grants.open_file(dir.join("log.txt")).is_ok());
    let err = grants.open_file(dir.join("sub")).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("a directory"), "{err}");
    let outside = grants
        .open_file(std::env::current_exe().unwrap())
        .unwrap_err();
    assert_eq!(outside.kind(), std::io::ErrorKind::PermissionDenied);
    // Everything the process can read, on every drive present.
    assert!(Grants::all().open_file(dir.join("log.txt")).is_ok());
}

#[test]
fn tmux_waits_are_refused_with_the_reason() {
    let spec =
        Spec::from_json(r#"{"probe": {"tmux": {"pane_id": "%1"}}, "until": {"matches": "x"}}"#)
            .unwrap();
    let err = Engine::global()
        .run(spec, WaitOptions::default())
        .unwrap_err();
    assert_eq!(
        (err.field.as_str(), err.rule),
        ("probe.tmux", Rule::Unsupported)
    );
    assert_eq!(err.message, waitfor::tmux::NEEDS_UNIX_HOST);

    let args = serde_json::json!({"pane_id": "%1", "patterns": ["x"]});
    match prepare("libtmux-mcp/wait_for_text", &args, &Host::default()) {
        Err(ToolError::Runtime(reason)) => assert_eq!(reason, waitfor::tmux::NEEDS_UNIX_HOST),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a tmux profile ran off Unix"),
    }
}

/// An engine wait on a JSON spec within `grants`, returned once its first
/// sample is taken.
fn wait_after_entry(spec: serde_json::Value, grants: Grants) -> waitfor::WaitHandle {
    let spec = Spec::from_value(&spec).unwrap();
    let (sampled, entered) = std::sync::mpsc::channel();
    let options = WaitOptions::default()
        .policy(waitfor::Policy::default().grants(grants))
        .on_progress(move |_| {
            let _ = sampled.send(());
        });
    let handle = Engine::global().start_with(spec, None, options).unwrap();
    entered.recv_timeout(LONG).expect("the first sample");
    handle
}

#[test]
fn a_command_probe_wait_reads_output_and_exit_code() {
    let grants = Grants::none().commands(waitfor::grants::Commands::Only(vec!["cmd".into()]));
    let spec = Spec::from_value(&serde_json::json!({
        "probe": {"command": {"argv": ["cmd", "/c", "echo ready& exit 3"]}},
        "until": {"all": [{"matches": "ready"}, {"exit_code": 3}]},
        "interval_ms": 50, "max_wait_ms": 60000,
    }))
    .unwrap();
    let options = WaitOptions::default().policy(waitfor::Policy::default().grants(grants));
    let result = Engine::global().run(spec, options).unwrap();
    assert_eq!(result.outcome, waitfor::Outcome::Matched);
    assert_eq!(result.exit_code, Some(3));
}

#[test]
fn a_file_probe_wait_sees_what_is_appended_after_it_began() {
    let scratch = tempfile::Builder::new()
        .prefix("waitfor-windows-wait-")
        .tempdir()
        .unwrap();
    let dir = scratch.path().to_path_buf();
    let log = dir.join("app.log");
    std::fs::write(&log, "ready before the wait\n").unwrap();
    let spec = serde_json::json!({
        "probe": {"file": {"path": log}},
        "until": {"matches": "ready"},
        "interval_ms": 50, "max_wait_ms": 60000, "progress_every_ms": 1,
    });
    let handle = wait_after_entry(spec, Grants::none().file_root(&dir));
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .unwrap()
        .write_all(b"ready now\n")
        .unwrap();
    let result = handle.wait();
    assert_eq!(result.outcome, waitfor::Outcome::Matched);
    assert_eq!(result.matched_lines, ["ready now"]);
}
