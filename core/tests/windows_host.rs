//! What a Windows host gets, with real processes and files: a command
//! ends with everything it started (a job object), output caps and
//! budgets hold, files are read within the grants, and tmux waits are
//! refused with the reason. Runs on Windows only.
#![cfg(windows)]

use std::time::{Duration, Instant};
use waitfor::grants::Grants;
use waitfor::process::{run_bounded, OverCap, RunError, RunOptions};
use waitfor::profiles::{prepare, Host, ToolError};
use waitfor::{CancelToken, Engine, Rule, Spec, WaitOptions};
use windows_sys::Win32::Foundation::{CloseHandle, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::{
    OpenProcess, WaitForSingleObject, PROCESS_SYNCHRONIZE,
};

const LONG: Duration = Duration::from_secs(60);

/// A PowerShell script that starts `ping` for ten minutes, detached from
/// its own pipes, and prints its pid first.
fn start_grandchild_then(rest: &str) -> Vec<String> {
    let script = format!(
        "$p = Start-Process -PassThru -WindowStyle Hidden -FilePath ping \
         -ArgumentList '-n','600','127.0.0.1'; Write-Output $p.Id; {rest}"
    );
    [
        "powershell",
        "-NoProfile",
        "-NonInteractive",
        "-Command",
        &script,
    ]
    .map(String::from)
    .to_vec()
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

fn first_pid(stdout: &[u8]) -> u32 {
    let text = String::from_utf8_lossy(stdout);
    text.lines().next().unwrap().trim().parse().unwrap()
}

#[test]
fn what_a_command_left_running_ends_when_it_exits() {
    let out = run_bounded(
        &start_grandchild_then("exit 0"),
        &RunOptions::default(),
        LONG,
        &CancelToken::new(),
    )
    .unwrap();
    assert_eq!(out.status, Some(0));
    assert!(ends_within(first_pid(&out.stdout), Duration::from_secs(10)));
}

#[test]
fn a_command_over_its_cap_is_ended_with_its_tree_and_exit_code_137() {
    let opts = RunOptions {
        output_cap: 4096,
        over_cap: OverCap::Stop,
        ..RunOptions::default()
    };
    let endless = "while ($true) { Write-Output ('x' * 1000) }";
    let out = run_bounded(
        &start_grandchild_then(endless),
        &opts,
        LONG,
        &CancelToken::new(),
    )
    .unwrap();
    assert!(out.stdout_truncated);
    assert_eq!((out.status, out.signal), (Some(137), None));
    assert!(ends_within(first_pid(&out.stdout), Duration::from_secs(10)));
}

#[test]
fn a_command_past_its_budget_is_ended() {
    let began = Instant::now();
    let argv = ["ping", "-n", "600", "127.0.0.1"]
        .map(String::from)
        .to_vec();
    let err = run_bounded(
        &argv,
        &RunOptions::default(),
        Duration::from_millis(300),
        &CancelToken::new(),
    )
    .unwrap_err();
    assert!(matches!(err, RunError::TimedOut { .. }), "{err}");
    assert!(began.elapsed() < Duration::from_secs(5));
}

#[test]
fn stdin_reaches_the_command() {
    let opts = RunOptions {
        stdin: Some(b"hello from stdin\r\n".to_vec()),
        ..RunOptions::default()
    };
    let argv = ["findstr", "hello"].map(String::from).to_vec();
    let out = run_bounded(&argv, &opts, LONG, &CancelToken::new()).unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello from stdin"));
}

#[test]
fn files_open_inside_the_roots_and_directories_are_refused() {
    let dir = std::env::temp_dir().join(format!("waitfor-windows-{}", std::process::id()));
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
    std::fs::remove_dir_all(&dir).unwrap();
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
