//! Helpers shared by the end-to-end tests of the `waitfor` binary.
#![allow(dead_code)] // each test binary uses part of it

use serde_json::Value;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The longest any test waits for anything.
pub const DEADLINE: Duration = Duration::from_secs(30);

pub fn waitfor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_waitfor"))
}

/// Runs waitfor to its end (killed and failed after [`DEADLINE`], so a
/// wrong wait never hangs the suite on its own 10-minute default).
pub fn run(args: &[&str]) -> Output {
    let mut child = spawn(args);
    let start = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!(
                "waitfor {args:?} did not exit: {:?}",
                child.wait_with_output()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

pub fn code(output: &Output) -> i32 {
    output
        .status
        .code()
        .expect("waitfor exits with a code, not a signal")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(output)))
}

/// Asserts the exit code, showing everything on failure.
pub fn expect(output: &Output, want: i32) {
    assert_eq!(
        code(output),
        want,
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
}

/// Polls `fact` until it holds; panics after [`DEADLINE`].
pub fn eventually(what: &str, mut fact: impl FnMut() -> bool) {
    let start = Instant::now();
    while !fact() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The process id written to `path`.
pub fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Whether the process is gone (absent, or a zombie nobody reaped yet).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
    }
}

/// Appends `line` to `path` (creating it) again and again until `child`
/// exits: the wait sees the lines appended after it started, whenever
/// that is. Returns the child's output.
pub fn append_until_exit(mut child: Child, path: &Path, line: &str) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("waitfor did not exit: {:?}", child.wait_with_output());
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("open for append");
        writeln!(file, "{line}").expect("append");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn spawn(args: &[&str]) -> Child {
    waitfor()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn waitfor")
}

/// Characters JSON may hold raw in a string that act on a terminal or on
/// a line reader: DEL, C1 controls (U+009B is CSI), the line and
/// paragraph separators, bidirectional marks, embeddings, overrides and
/// isolates, tag characters. Agent text in the tests carries them.
pub const ACTING: &str = "\u{7f}\u{80}\u{9b}[2J\u{9f}\u{2028}\u{2029}\u{200e}\u{200f}\u{61c}\u{202a}\u{202e}\u{2066}\u{2069}\u{e0041}";

/// Asserts `bytes` (the CLI's JSON) hold none of the kind of characters
/// [`ACTING`] has, raw: the CLI writes them as `\u` escapes.
pub fn assert_nothing_acts(bytes: &[u8]) {
    let text = std::str::from_utf8(bytes).expect("the CLI writes UTF-8");
    let acts = |c: char| {
        matches!(
            c,
            '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}'
        ) || matches!(
            c,
            '\u{61c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{e0000}'..='\u{e007f}'
        )
    };
    assert!(!text.contains(acts), "a raw control in {text:?}");
    assert!(text.contains(r"\u009b[2J"), "no escaped CSI in {text:?}");
}
