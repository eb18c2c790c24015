//! End-to-end tests of the `waitfor` binary: real processes, real files,
//! real signals. No sleep is used to synchronise: a test waits for an
//! observable fact (a marker file, the process's exit) with a generous
//! overall deadline, and no assertion is about how long something took
//! but a generous bound on an exit at a deadline.

mod common;

use common::*;

// ---- run -------------------------------------------------------------

#[test]
fn run_matches_output() {
    let out = run(&["run", "--match", "hello", "--", "echo", "hello world"]);
    expect(&out, 0);
    let text = stdout(&out);
    assert!(text.starts_with("matched in "), "{text}");
    assert!(text.contains("> hello world"), "{text}");
    // stderr is not a terminal here: no status line, nothing at all.
    assert_eq!(stderr(&out), "");
}

#[test]
fn run_without_condition_waits_for_exit_status_0() {
    expect(&run(&["run", "--", "true"]), 0);
    let out = run(&["run", "--timeout", "1s", "--json", "--", "false"]);
    expect(&out, 1);
    let result = json(&out);
    assert_eq!(result["outcome"], "timeout");
    assert_eq!(result["exit_code"], 1);
}

#[test]
fn run_exit_code_condition() {
    let out = run(&["run", "--exit", "3", "--json", "--", "sh", "-c", "exit 3"]);
    expect(&out, 0);
    assert_eq!(json(&out)["outcome"], "matched");
    assert_eq!(json(&out)["exit_code"], 3);
}

#[test]
fn run_matches_after_several_samples() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("n");
    let script = format!(
        "n=$(cat {0} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {0}; echo count $n",
        counter.display()
    );
    let out = run(&[
        "run", "--match", "count 3", "--every", "20ms", "--json", "--", "sh", "-c", &script,
    ]);
    expect(&out, 0);
    let result = json(&out);
    assert_eq!(result["samples"], 3);
    assert_eq!(result["matched_lines"], serde_json::json!(["count 3"]));
}

#[test]
fn run_json_has_the_result_shape() {
    let out = run(&[
        "run",
        "--json",
        "--pattern",
        "foo",
        "--pattern",
        "bar",
        "--",
        "echo",
        "a bar",
    ]);
    expect(&out, 0);
    let result = json(&out);
    assert_eq!(result["outcome"], "matched");
    assert_eq!(result["matched_index"], 1);
    assert_eq!(result["matched_lines"], serde_json::json!(["a bar"]));
    assert_eq!(result["samples"], 1);
    assert!(result["elapsed_ms"].is_u64());
    assert_eq!(result["effective_max_wait_ms"], 600_000);
    assert_eq!(result["clamped"], false);
    assert!(result["tail"]["lines"].is_array());
}

#[test]
fn run_text_names_the_pattern_index() {
    let out = run(&[
        "run",
        "--pattern",
        "foo",
        "--pattern",
        "bar",
        "--",
        "echo",
        "bar",
    ]);
    expect(&out, 0);
    assert!(
        stdout(&out).contains("--pattern 1: \"bar\""),
        "{}",
        stdout(&out)
    );
}

#[test]
fn run_sees_stderr() {
    let out = run(&["run", "--match", "oops", "--", "sh", "-c", "echo oops >&2"]);
    expect(&out, 0);
}

#[test]
fn case_sensitive_by_default_and_ignore_case_flag() {
    let out = run(&[
        "run",
        "--match",
        "HELLO",
        "--timeout",
        "1s",
        "--",
        "echo",
        "hello",
    ]);
    expect(&out, 1);
    expect(
        &run(&["run", "--match", "HELLO", "-i", "--", "echo", "hello"]),
        0,
    );
    expect(
        &run(&[
            "run",
            "--match",
            "HELLO",
            "--ignore-case",
            "--",
            "echo",
            "hello",
        ]),
        0,
    );
    // --case after -i turns case-sensitivity back on.
    let out = run(&[
        "run",
        "--match",
        "HELLO",
        "-i",
        "--case",
        "--timeout",
        "1s",
        "--",
        "echo",
        "hello",
    ]);
    expect(&out, 1);
}

#[test]
fn regex_patterns() {
    expect(
        &run(&[
            "run", "--regex", "--match", "^h.llo$", "--", "echo", "hello",
        ]),
        0,
    );
    // `^` and `$` are line anchors.
    let out = run(&[
        "run",
        "--regex",
        "--match",
        "^b$",
        "--json",
        "--",
        "printf",
        "a\\nb\\nc\\n",
    ]);
    expect(&out, 0);
    assert_eq!(json(&out)["matched_lines"], serde_json::json!(["b"]));
    // Without --regex the same text is literal.
    let out = run(&[
        "run",
        "--match",
        "h.llo",
        "--timeout",
        "1s",
        "--",
        "echo",
        "hello",
    ]);
    expect(&out, 1);
}

#[test]
fn not_match_and_quiet() {
    expect(
        &run(&["run", "--not-match", "busy", "--", "echo", "idle"]),
        0,
    );
    let out = run(&[
        "run", "--quiet", "200ms", "--every", "50ms", "--json", "--", "echo", "same",
    ]);
    expect(&out, 0);
    assert_eq!(json(&out)["outcome"], "settled");
}

#[test]
fn several_conditions_mean_any_of_them() {
    let out = run(&[
        "run", "--match", "never", "--exit", "0", "--json", "--", "true",
    ]);
    expect(&out, 0);
    assert_eq!(json(&out)["outcome"], "matched");
}

#[test]
fn timeout_exits_1_with_the_tail() {
    let out = run(&[
        "run",
        "--match",
        "never",
        "--every",
        "50ms",
        "--timeout",
        "1s",
        "--",
        "echo",
        "still waiting",
    ]);
    expect(&out, 1);
    let text = stdout(&out);
    assert!(text.starts_with("timeout after "), "{text}");
    assert!(text.contains("| still waiting"), "{text}");
}

#[test]
fn stop_marker_exits_3() {
    let out = run(&[
        "run",
        "--match",
        "ok",
        "--stop",
        "FATAL",
        "--",
        "echo",
        "ok but FATAL",
    ]);
    expect(&out, 3);
    assert!(
        stdout(&out).starts_with("stopped after "),
        "{}",
        stdout(&out)
    );
    let out = run(&[
        "run", "--stop", "x", "--stop", "FATAL", "--json", "--", "echo", "FATAL",
    ]);
    expect(&out, 3);
    assert_eq!(json(&out)["outcome"], "stopped");
    assert_eq!(json(&out)["matched_index"], 1);
}

#[test]
fn missing_program_is_a_probe_error() {
    let out = run(&[
        "run",
        "--json",
        "--",
        "/nonexistent/waitfor-no-such-program",
    ]);
    expect(&out, 5);
    let result = json(&out);
    assert_eq!(result["outcome"], "probe_error");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("no-such-program"),
        "{result}"
    );
}

/// The text result quotes the agent's command in a probe's error, and the
/// observed output's lines behind their markers: a line break, `\r`, an
/// escape sequence or a line separator in them shows escaped, so no line
/// of the result is one the CLI did not write.
#[test]
fn a_text_result_shows_agent_text_escaped() {
    let program = "/nonexistent/waitfor-no-such\nmatched in 1ms\r\x1b[2J\u{2028}\u{200e}";
    let out = run(&["run", "--", program]);
    expect(&out, 5);
    let text = stdout(&out);
    assert!(text.starts_with("probe_error "), "{text}");
    assert!(
        !text.lines().any(|line| line.starts_with("matched")),
        "{text}"
    );
    assert!(
        text.contains(r"waitfor-no-such\nmatched in 1ms\r\u{1b}[2J\u{2028}\u{200e}"),
        "{text}"
    );

    // A stop marker ends the wait at once and shows the output's tail.
    let out = run(&[
        "run",
        "--stop",
        "STOP",
        "--",
        "printf",
        "a\\rb\\033[2J\u{2028}c STOP\\n",
    ]);
    expect(&out, 3);
    let text = stdout(&out);
    assert!(text.contains(r"  | a\rb\u{1b}[2J\u{2028}c STOP"), "{text}");
    assert!(text.contains(r"  > a\rb\u{1b}[2J\u{2028}c STOP"), "{text}");
    for raw in [&b"\r"[..], b"\x1b", "\u{2028}".as_bytes()] {
        assert!(
            !out.stdout.windows(raw.len()).any(|w| w == raw),
            "{raw:?} in {text:?}"
        );
    }
}

#[test]
fn output_over_the_cap_is_an_error() {
    let out = run(&["run", "--json", "--", "sh", "-c", "yes | head -c 300000"]);
    expect(&out, 6);
    let result = json(&out);
    assert_eq!(result["outcome"], "error");
    assert!(
        result["error"].as_str().unwrap().contains("cap"),
        "{result}"
    );
}

#[test]
fn a_command_that_never_stops_writing_is_over_the_cap_long_before_the_deadline() {
    let started = std::time::Instant::now();
    let out = run(&["run", "--timeout", "60s", "--json", "--", "yes"]);
    expect(&out, 6);
    assert!(json(&out)["error"].as_str().unwrap().contains("cap"));
    // Generous: the cap is reached in milliseconds, the deadline is 60 s.
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn a_hung_command_is_killed_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pid");
    let script = format!(
        "echo $$ > {0}.tmp && mv {0}.tmp {0} && exec sleep 60",
        marker.display()
    );
    let out = run(&[
        "run",
        "--timeout",
        "1s",
        "--json",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    // No sample ever completed: a probe error, not a timeout.
    expect(&out, 5);
    assert_eq!(json(&out)["outcome"], "probe_error");
    let pid = read_pid(&marker);
    eventually("the hung command to be killed", || process_gone(pid));
}

#[cfg(unix)]
#[test]
fn sigint_cancels_with_130_and_kills_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pid");
    let script = format!(
        "echo $$ > {0}.tmp && mv {0}.tmp {0} && exec sleep 60",
        marker.display()
    );
    let child = spawn(&[
        "run",
        "--timeout",
        "60s",
        "--json",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    // The probe command is running once it wrote its marker.
    eventually("the probe command to start", || marker.exists());
    let waitfor_pid = i32::try_from(child.id()).unwrap();
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(waitfor_pid, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    expect(&out, 130);
    let result = json(&out);
    assert_eq!(result["outcome"], "cancelled");
    let pid = read_pid(&marker);
    eventually("the cancelled command to be killed", || process_gone(pid));
}

#[cfg(unix)]
#[test]
fn sigint_between_samples_prints_text() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let script = format!("touch {}; echo not yet", marker.display());
    let child = spawn(&[
        "run",
        "--match",
        "never",
        "--every",
        "50ms",
        "--timeout",
        "60s",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    eventually("a first sample", || marker.exists());
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(
        unsafe { libc::kill(i32::try_from(child.id()).unwrap(), libc::SIGINT) },
        0
    );
    let out = child.wait_with_output().unwrap();
    expect(&out, 130);
    assert!(
        stdout(&out).starts_with("cancelled after "),
        "{}",
        stdout(&out)
    );
}

// ---- file ------------------------------------------------------------

/// `waitfor file --match ready --json` on a log with an old line, `line`
/// appended until it exits; its output.
fn file_appended(line: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    std::fs::write(&path, "old line\n").unwrap();
    let child = spawn(&[
        "file",
        path.to_str().unwrap(),
        "--match",
        "ready",
        "--every",
        "20ms",
        "--json",
    ]);
    append_until_exit(child, &path, line)
}

#[test]
fn file_matches_an_appended_line() {
    let out = file_appended("server ready");
    expect(&out, 0);
    let result = json(&out);
    assert_eq!(result["outcome"], "matched");
    assert_eq!(result["matched_lines"][0], "server ready");
}

/// `--json` writes DEL, C1 controls, separators and bidirectional marks
/// in the lines it quotes (a command's output, a file's line) as `\u`
/// escapes: nothing raw reaches a terminal or a line reader, and the
/// parsed JSON has the text exact.
#[test]
fn json_output_escapes_what_acts_on_a_terminal() {
    let line = format!("ready {ACTING} end");
    let out = run(&[
        "run", "--json", "--match", "ready", "--", "printf", "%s\\n", &line,
    ]);
    expect(&out, 0);
    assert_nothing_acts(&out.stdout);
    let result = json(&out);
    assert_eq!(result["matched_lines"][0], *line);
    assert_eq!(result["tail"]["lines"][0], *line);

    let out = file_appended(&line);
    expect(&out, 0);
    assert_nothing_acts(&out.stdout);
    assert_eq!(json(&out)["matched_lines"][0], *line);
}

#[test]
fn file_without_condition_waits_for_any_output() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not-yet.log");
    // The file does not exist when the wait starts.
    let child = spawn(&["file", path.to_str().unwrap(), "--every", "20ms", "--json"]);
    let out = append_until_exit(child, &path, "something");
    expect(&out, 0);
    assert_eq!(json(&out)["outcome"], "any_output");
}

#[test]
fn file_stop_marker_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("build.log");
    std::fs::write(&path, "").unwrap();
    let child = spawn(&[
        "file",
        path.to_str().unwrap(),
        "--match",
        "BUILD OK",
        "--stop",
        "FAILED",
    ]);
    let out = append_until_exit(child, &path, "BUILD FAILED");
    expect(&out, 3);
    assert!(stdout(&out).contains("> BUILD FAILED"), "{}", stdout(&out));
}

#[cfg(unix)]
#[test]
fn a_probe_call_that_cannot_be_ended_does_not_keep_the_process_past_its_deadline() {
    // Opening a FIFO with no writer blocks, and no cancel token ends it.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: plain mkfifo(3) on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let started = std::time::Instant::now();
    let out = run(&["file", fifo.to_str().unwrap(), "--timeout", "1s", "--json"]);
    let took = started.elapsed();
    // It printed how the wait ended, whatever the file probe made of it.
    let outcome = json(&out)["outcome"].clone();
    assert!(outcome.is_string(), "{outcome}");
    // Generous: the deadline, then a short grace for the call to return.
    assert!(
        took < std::time::Duration::from_secs(4),
        "exited after {took:?}"
    );
}

#[test]
fn a_directory_is_refused_at_once_not_waited_on_to_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "file",
        dir.path().to_str().unwrap(),
        "--timeout",
        "60s",
        "--json",
    ]);
    expect(&out, 5);
    let result = json(&out);
    assert!(
        result["error"].as_str().unwrap().contains("is a directory"),
        "{result}"
    );
    assert!(result["elapsed_ms"].as_u64().unwrap() < 30_000, "{result}");
}

#[test]
fn file_ignores_what_was_there_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    std::fs::write(&path, "ready\n").unwrap();
    let out = run(&[
        "file",
        path.to_str().unwrap(),
        "--match",
        "ready",
        "--every",
        "50ms",
        "--timeout",
        "1s",
        "--json",
    ]);
    expect(&out, 1);
    assert_eq!(json(&out)["outcome"], "timeout");
}

// ---- usage -------------------------------------------------------------

/// The CLI's errors repeat text an agent chose: a pattern, a flag's
/// value, an argument clap does not know, a key of a tool's arguments, a
/// summary pattern. Raw, its control characters (`ESC [2J` clears the
/// screen, `\r` writes over the line) would rewrite the terminal showing
/// them; they show escaped.
#[test]
fn errors_show_control_characters_escaped() {
    let hostile = "a\x1b[2J\rb";
    let unknown = format!("--{hostile}");
    let pattern = format!("({hostile}");
    let cases: [&[&str]; 6] = [
        &["run", "--regex", "--match", &pattern, "--", "true"],
        &["run", "--every", hostile, "--", "true"],
        &["run", &unknown, "--", "true"],
        &[&unknown],
        &["tool", "aura/wait_for", r#"{"a\u001b[2J\rb": 1}"#],
        &["events", "/dev/null", "--regex", "--summary", &pattern],
    ];
    for args in cases {
        let out = run(args);
        expect(&out, 2);
        let err = stderr(&out);
        assert!(
            !out.stderr.iter().any(|&b| b == 0x1b || b == b'\r'),
            "{args:?}: {err:?}"
        );
        assert!(err.contains(r"a\u{1b}[2J"), "{args:?}: {err}");
    }
    // clap's own refusals keep the argument whole, its \r too.
    let out = run(&["run", "--every", hostile, "--", "true"]);
    assert!(
        stderr(&out).contains(r"'a\u{1b}[2J\rb' for '--every <D>'"),
        "{}",
        stderr(&out)
    );
}

/// Agent text with a line break (and a forged `error:` line after it), a
/// `\r`, the line and paragraph separators and the bidirectional marks.
const HOSTILE: &str = "a\nerror: forged\r\u{2028}\u{2029}\u{200e}\u{200f}\u{61c}b";

/// Asserts `waitfor args` is refused (exit 2) with [`HOSTILE`] escaped on
/// the line that quotes it: no line of stderr is the forged one.
fn refused_on_one_line(args: &[&str]) {
    let out = run(args);
    expect(&out, 2);
    let err = stderr(&out);
    assert!(
        !err.lines().any(|line| line.starts_with("error: forged")),
        "{args:?}: {err}"
    );
    assert!(
        !err.contains(['\r', '\u{2028}', '\u{2029}', '\u{200e}', '\u{200f}', '\u{61c}']),
        "{args:?}: {err:?}"
    );
    assert!(err.contains(r"a\nerror: forged"), "{args:?}: {err}");
}

/// What an agent chose can hold a line break, a line or paragraph
/// separator or a bidirectional mark. Raw in an error, a line break starts
/// a line the reader takes for the CLI's own (`error: forged`); the others
/// break or reorder lines on a terminal. Each shows escaped, inside the
/// one line that quotes it.
#[test]
fn agent_text_in_an_error_cannot_start_a_line() {
    let unknown = format!("--{HOSTILE}");
    let pattern = format!("({HOSTILE}");
    let key = r#"{"a\nerror: forged\r\u2028\u2029\u200e\u200f\u061cb": 1}"#;
    let raw_key = format!("{{\"{HOSTILE}\": 1}}");
    let cases: [&[&str]; 9] = [
        &["run", "--every", HOSTILE, "--", "true"],
        &["run", &unknown, "--", "true"],
        &[&unknown],
        &[HOSTILE],
        &["run", "--regex", "--match", &pattern, "--", "true"],
        &["tool", "aura/wait_for", key],
        &["tool", "aura/wait_for", &raw_key],
        &["tool", HOSTILE, "{}"],
        &["events", "/dev/null", "--cursor", HOSTILE],
    ];
    for args in cases {
        refused_on_one_line(args);
    }
    // A value clap refuses is quoted whole, escaped, on clap's one line.
    let out = run(&["run", "--every", HOSTILE, "--", "true"]);
    let escaped = r"a\nerror: forged\r\u{2028}\u{2029}\u{200e}\u{200f}\u{61c}b";
    assert!(
        stderr(&out).starts_with(&format!(
            "error: invalid value '{escaped}' for '--every <D>'"
        )),
        "{}",
        stderr(&out)
    );
}

/// A path the engine refuses (its links loop) is quoted by the refusal,
/// escaped on its one line.
#[cfg(unix)]
#[test]
fn a_refused_path_cannot_start_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let looped = dir.path().join(HOSTILE);
    std::os::unix::fs::symlink(dir.path().join("b"), &looped).unwrap();
    std::os::unix::fs::symlink(&looped, dir.path().join("b")).unwrap();
    refused_on_one_line(&["file", looped.to_str().unwrap()]);
}

/// Exit 2 with a message naming `flag`.
fn usage_error(args: &[&str], flag: &str) {
    let out = run(args);
    expect(&out, 2);
    assert!(stderr(&out).contains(flag), "{args:?}: {}", stderr(&out));
    assert_eq!(stdout(&out), "");
}

#[test]
fn bad_durations_name_the_flag() {
    usage_error(&["run", "--timeout", "5x", "--", "true"], "--timeout");
    usage_error(&["run", "--every", "1.5s", "--", "true"], "--every");
    usage_error(&["run", "--quiet", "soon", "--", "true"], "--quiet");
    usage_error(&["file", "x", "--timeout", "0s"], "--timeout");
    usage_error(&["file", "x", "--every", "5ms"], "--every");
    usage_error(
        &["file", "x", "--every", "2s", "--timeout", "1s"],
        "--every",
    );
    usage_error(
        &["file", "x", "--quiet", "2m", "--timeout", "1m"],
        "--quiet",
    );
}

#[test]
fn bad_flags_are_usage_errors() {
    usage_error(&["run", "--bogus", "--", "true"], "--bogus");
    usage_error(&["run", "--exit", "zero", "--", "true"], "--exit");
    usage_error(&["file", "x", "--exit", "0"], "--exit");
    usage_error(&["run", "--regex", "--match", "(", "--", "true"], "--match");
    usage_error(&["run", "--regex", "--stop", "[", "--", "true"], "--stop");
    usage_error(&["run", "--match", "", "--", "true"], "--match");
    // `run` needs a command after `--`.
    usage_error(&["run", "--match", "x"], "CMD");
    usage_error(&["file"], "PATH");
    usage_error(&["nope"], "nope");
}

#[cfg(unix)]
#[test]
fn a_refused_target_names_its_argument() {
    usage_error(&["file", ""], "invalid value for '<PATH>'");
    let dir = std::env::temp_dir().join(format!("waitfor-cli-loop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(dir.join("b"), dir.join("a")).unwrap();
    std::os::unix::fs::symlink(dir.join("a"), dir.join("b")).unwrap();
    let looped = dir.join("a");
    usage_error(
        &["file", looped.to_str().unwrap()],
        "invalid value for '<PATH>'",
    );
    usage_error(&["file", looped.to_str().unwrap()], "cannot be resolved");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn help_documents_examples_and_exit_codes() {
    let out = run(&["--help"]);
    expect(&out, 0);
    let text = stdout(&out);
    for needle in [
        "Exit codes",
        "130",
        "any of them",
        "Examples",
        "waitfor run",
        "waitfor file",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    for sub in ["run", "file"] {
        let out = run(&[sub, "--help"]);
        expect(&out, 0);
        let text = stdout(&out);
        for needle in [
            "Examples",
            "--match",
            "--stop",
            "--ignore-case",
            "--every",
            "--timeout",
            "Exit codes",
        ] {
            assert!(text.contains(needle), "{sub} {needle}: {text}");
        }
    }
}

/// A process that left the command's group (`setsid`) does not outlive
/// `waitfor`: the processes of a wait's mark are ended on a thread of
/// their own, and the program waits for it as it exits.
#[cfg(target_os = "linux")]
#[test]
fn run_leaves_no_process_that_left_the_group_behind() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = format!(
        "setsid sh -c 'echo $$ > {f}; exec sleep 300' >/dev/null & \
         until [ -s {f} ]; do sleep 0.01; done; echo ready",
        f = pid_file.display()
    );
    let out = run(&[
        "run",
        "--match",
        "ready",
        "--timeout",
        "20s",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    expect(&out, 0);
    let pid = read_pid(&pid_file);
    eventually("the setsid child to be gone", || process_gone(pid));
}
