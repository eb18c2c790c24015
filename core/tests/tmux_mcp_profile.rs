//! Conformance of the libtmux-mcp `wait_for_text` profile with the
//! original tool (libtmux-mcp's `tools/pane_tools/wait.py` and its tests),
//! against a real tmux server on a private socket per test. Each test
//! names the original behaviour it checks.
#![cfg(unix)] // tmux runs on Unix.

mod support;

use serde_json::{json, Value};
use std::time::Duration;
use support::{assert_valid, keys, output_schema, start, Running, Server};
use waitfor::profiles::{refusal_notices, Host, LogLevel, Notice, ToolError, ToolProgress};
use waitfor::Rule;

const PY: &str = "libtmux-mcp/wait_for_text";

fn call_with(server: &Server, extra: Value, host: &Host) -> Running {
    let mut args = json!({"socket_name": server.name});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    let running = start(PY, args, host);
    running.entered();
    running
}

fn call(server: &Server, extra: Value) -> Running {
    let mut extra = extra;
    if extra.get("pane_id").is_none() {
        extra["pane_id"] = json!(server.pane);
    }
    call_with(server, extra, &Host::default())
}

fn done(running: Running) -> Value {
    let out = running.finish().0.expect("a result, not an error");
    assert_valid(&output_schema(PY), &out);
    out
}

fn error_text(running: Running) -> String {
    let err = running.finish().0.expect_err("an error");
    assert_eq!(err.code(), "runtime", "{err}");
    err.to_string()
}

/// libtmux-mcp reads every capture with trailing empty rows stripped, so
/// `tail` (the rows from the entry cursor row down at the last poll) ends
/// at the last row with content, and keeps the prompt's trailing space as
/// `capture-pane -J` prints it.
#[test]
fn tail_strips_trailing_blank_rows_before_taking_the_last_20() {
    let s = Server::start(60, 30);
    s.wait_prompt();
    let out = done(call(&s, json!({"patterns": ["never"], "timeout": 0.3})));
    assert_eq!(out["outcome"], "timeout");
    assert_eq!(out["tail"], json!(["$ "]));

    let running = call(&s, json!({"patterns": ["never"], "timeout": 3}));
    s.type_line("printf 'one\\n\\ntwo\\n'");
    s.wait_screen(|t| t.contains("\ntwo\n"));
    let out = done(running);
    assert_eq!(
        out["tail"],
        json!(["$ printf 'one\\n\\ntwo\\n'", "one", "", "two", "$ "]),
        "blank rows between rows are kept, the ones below are not"
    );
}

/// libtmux-mcp runs `re.search` on each new row: a pattern never matches
/// across two rows, `^` and `$` are the row's ends, and every row the
/// winning pattern finds is returned.
#[test]
fn patterns_are_searched_row_by_row() {
    let s = Server::start(60, 12);
    s.wait_prompt();
    let running = call(
        &s,
        json!({"patterns": ["foo\\s+bar", "fo[^x]bar", "\\Abar$"], "regex": true, "timeout": 10}),
    );
    s.type_line("printf '%s\\n%s\\n' fo''o b''ar");
    let out = done(running);
    assert_eq!(out["outcome"], "matched", "{out}");
    assert_eq!(out["matched_index"], 2, "{out}");
    assert_eq!(out["matched_lines"], json!(["bar"]));

    s.wait_prompt();
    let running = call(
        &s,
        json!({"patterns": ["foo\\s+bar"], "regex": true, "timeout": 1.5}),
    );
    s.type_line("printf '%s\\n%s\\n' fo''o b''ar");
    let out = done(running);
    assert_eq!(out["outcome"], "timeout", "{out}");
    assert_eq!(out["found"], false);
    assert_eq!(out["saw_new_output"], true);
    assert_eq!(out["matched_lines"], json!([]));

    // The same pattern on one row, found on both rows holding it.
    s.wait_prompt();
    let running = call(
        &s,
        json!({"patterns": ["FOO\\s+bar"], "regex": true, "timeout": 10}),
    );
    s.type_line("printf '%s  %s\\n%s %s\\n' fo''o b''ar fo''o b''ar");
    let out = done(running);
    assert_eq!(out["matched_lines"], json!(["foo  bar", "foo bar"]));
}

/// libtmux-mcp needs a new row before any pattern can match: a pattern
/// that matches empty text (`x*`) does not match a quiet pane, and
/// matches the first new row, an empty one included.
#[test]
fn a_pattern_matching_empty_text_waits_for_a_new_row() {
    let s = Server::start(60, 12);
    s.wait_prompt();
    let out = done(call(
        &s,
        json!({"patterns": ["x*"], "regex": true, "timeout": 0.5}),
    ));
    assert_eq!(out["outcome"], "timeout", "{out}");
    let running = call(
        &s,
        json!({"patterns": ["^$"], "regex": true, "timeout": 10}),
    );
    s.type_line("printf 'a\\n\\nb\\n'");
    let out = done(running);
    assert_eq!(out["outcome"], "matched", "{out}");
    assert_eq!(out["matched_lines"], json!([""]));
}

/// libtmux-mcp resolves `window_id`, `session_id`, `session_name` and no
/// target to the first pane of the first window, deliberately not the
/// active pane.
#[test]
fn window_and_session_targets_take_the_first_pane_of_the_first_window() {
    let s = Server::start(60, 12);
    s.cmd(&["new-window", "-t", "main", "env PS1='$ ' sh"]);
    let window = s
        .cmd(&["display-message", "-p", "-t", "main", "#{window_id}"])
        .trim()
        .to_string();
    let first_of_window = s
        .cmd(&["list-panes", "-t", &window, "-F", "#{pane_id}"])
        .lines()
        .next()
        .unwrap()
        .to_string();
    s.cmd(&["split-window", "-t", &window, "env PS1='$ ' sh"]);
    let active = s
        .cmd(&["display-message", "-p", "-t", "main", "#{pane_id}"])
        .trim()
        .to_string();
    assert_ne!(active, first_of_window, "the split pane is active");
    let session_id = s
        .cmd(&["display-message", "-p", "-t", "main", "#{session_id}"])
        .trim()
        .to_string();
    let cases = [
        (json!({"window_id": window}), first_of_window.clone()),
        (json!({"session_id": session_id}), s.pane.clone()),
        (json!({"session_name": "main"}), s.pane.clone()),
        (json!({}), s.pane.clone()),
    ];
    for (target, want) in cases {
        let mut args = target.clone();
        // Room to resolve the pane on a loaded machine (0.2 s was not).
        args["timeout"] = json!(1.0);
        let out = done(call_with(&s, args, &Host::default()));
        assert_eq!(out["pane_id"], json!(want), "{target}");
    }
}

/// libtmux-mcp (`test_wait_resolver_raises_like_the_canonical_resolver`):
/// a target that names nothing is refused in libtmux's words, naming the
/// value, with the hint libtmux-mcp appends for the agent; the argument
/// that decides is the first of pane, window, session id, session name.
#[test]
fn a_target_that_names_nothing_reads_as_libtmux_mcp_words_it() {
    let s = Server::start(60, 12);
    let listing = "Call list_sessions / list_windows / list_panes to discover valid ids.";
    let cases = [
        (
            json!({"pane_id": "%999999", "session_name": "no_such_session"}),
            "Pane not found: Pane not found: %999999\nCall list_panes to discover valid pane ids."
                .to_string(),
        ),
        (
            json!({"window_id": "@999999", "session_id": "$999999"}),
            format!(
                "Object not found: Could not find window_id=@999999 for list-windows ('-a',)\n{listing}"
            ),
        ),
        (
            json!({"session_id": "$999999", "session_name": "main"}),
            format!(
                "Object not found: Could not find session_id=$999999 for list-sessions ()\n{listing}"
            ),
        ),
        (
            json!({"session_name": "no_such_session"}),
            format!(
                "Object not found: Could not find session_name=no_such_session for list-sessions ()\n{listing}"
            ),
        ),
    ];
    for (target, want) in cases {
        let mut args = target.clone();
        args["timeout"] = json!(5.0);
        assert_eq!(
            error_text(call_with(&s, args, &Host::default())),
            want,
            "{target}"
        );
    }
}

/// libtmux-mcp: with no tmux server on the socket, the tmux command that
/// resolves the deciding argument fails, and the error is that command and
/// tmux's own words.
#[test]
fn no_server_on_the_socket_reads_as_the_failed_tmux_command() {
    let socket = format!("waitfor-no-server-{}", std::process::id());
    let said = std::process::Command::new("tmux")
        .args(["-L", &socket, "list-sessions"])
        .output()
        .unwrap();
    assert!(!said.status.success(), "no server runs on {socket}");
    let stderr = String::from_utf8_lossy(&said.stderr).trim().to_string();
    let cases = [
        (json!({"pane_id": "%1", "window_id": "@1"}), "list-panes"),
        (
            json!({"window_id": "@1", "session_name": "main"}),
            "list-windows",
        ),
        (json!({"session_id": "$1"}), "list-sessions"),
        (json!({}), "list-sessions"),
    ];
    for (target, command) in cases {
        let mut args = target.clone();
        args["socket_name"] = json!(socket);
        args["timeout"] = json!(5.0);
        let running = start(PY, args, &Host::default());
        assert_eq!(
            error_text(running),
            format!("tmux {command} failed: {stderr}"),
            "{target}"
        );
    }
}

/// libtmux-mcp: a tmux server that goes away during the wait ends it with
/// the failed tmux command and tmux's own words: that no server runs on
/// the socket, or, for a call the exit cut short, that it exited.
#[test]
fn a_server_that_goes_away_reads_as_the_failed_tmux_command() {
    let s = Server::start(60, 10);
    let socket = s.name.clone().unwrap();
    let pid = s
        .cmd(&["display-message", "-p", "#{pid}"])
        .trim()
        .to_string();
    let running = call(&s, json!({"patterns": ["never"], "timeout": 20}));
    // At once, without the server's own shutdown (which tmux answers
    // with half-empty replies while it runs).
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let text = error_text(running);
    let said = std::process::Command::new("tmux")
        .args(["-L", &socket, "display-message", "-p", "x"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&said.stderr).trim().to_string();
    let words = [stderr.as_str(), "server exited unexpectedly"];
    assert!(
        words
            .map(|w| format!("tmux display-message failed: {w}"))
            .contains(&text),
        "{text}"
    );
}

/// libtmux-mcp returns each matched row whole, as tmux prints it: the
/// typed command's row, prompt and all (`"$ echo READY"`).
#[test]
fn matched_rows_are_whole_rows_prompt_included() {
    let s = Server::start(60, 12);
    s.wait_prompt();
    let running = call(&s, json!({"patterns": ["READY"], "timeout": 10}));
    s.type_line("echo READY");
    let out = done(running);
    assert_eq!(out["outcome"], "matched");
    assert_eq!(out["matched_lines"][0], "$ echo READY", "{out}");
}

/// The visible rows as tmux holds them, trailing spaces kept.
fn screen_rows(s: &Server) -> Vec<String> {
    let rows = s.cmd(&["capture-pane", "-p", "-N", "-t", &s.pane]);
    rows.lines().map(str::to_string).collect()
}

/// The shared vectors run this profile on scripted panes
/// (`vectors::run`): the screens of a real wait, scripted, give the
/// output the real pane gave, its elapsed time aside.
#[test]
fn a_scripted_pane_gives_the_output_the_real_pane_gives() {
    let s = Server::start(60, 12);
    s.wait_prompt();
    let entry = screen_rows(&s);
    let args = json!({"pane_id": s.pane, "patterns": ["never"], "timeout": 3});
    let running = call(&s, args.clone());
    s.type_line("echo hello; echo world");
    let mut real = done(running);
    let after = screen_rows(&s);
    let vector = json!({
        "profile": PY,
        "arguments": args,
        "script": {"steps": [
            {"pane_id": s.pane, "screen": entry},
            {"pane_id": s.pane, "screen": after},
        ]},
    });
    let answer = waitfor::vectors::run(&vector).unwrap();
    let mut simulated = answer["output"].clone();
    for out in [&mut real, &mut simulated] {
        out["elapsed_seconds"] = Value::Null;
    }
    assert_eq!(real["tail"][1], "hello", "{real}");
    assert_eq!(simulated, real);
}

/// libtmux-mcp clamps the host's ceiling to 1..=120 s, as it clamps
/// `LIBTMUX_MCP_WAIT_MAX_SECONDS`.
#[test]
fn the_host_ceiling_is_clamped_to_1_to_120_seconds() {
    let s = Server::start(60, 12);
    s.wait_prompt();
    let huge = Host {
        max_wait_ceiling: Some(Duration::from_secs(10_000)),
        ..Host::default()
    };
    let args = json!({"pane_id": s.pane, "patterns": ["CEIL-OK"], "timeout": 500});
    let running = call_with(&s, args, &huge);
    s.type_line("printf '%s-%s\\n' CEIL OK");
    let out = done(running);
    assert_eq!(out["outcome"], "matched");
    assert_eq!(out["effective_timeout"], 120.0);

    let zero = Host {
        max_wait_ceiling: Some(Duration::ZERO),
        ..Host::default()
    };
    let args = json!({"pane_id": s.pane, "patterns": ["never"], "timeout": 5});
    let out = done(call_with(&s, args, &zero));
    assert_eq!(out["outcome"], "timeout");
    assert_eq!(out["effective_timeout"], 1.0);
}

/// libtmux-mcp's error texts for a wait that cannot go on: history below
/// the entry baseline (`clear-history`), a respawned pane, a dead pane.
#[test]
fn a_lost_anchor_reads_as_libtmux_mcp_words_it() {
    let s = Server::start(60, 10);
    s.type_line("seq 1 40");
    s.wait_screen(|t| t.contains("\n40\n"));
    s.wait_prompt();
    let running = call(&s, json!({"patterns": ["never"], "timeout": 20}));
    s.cmd(&["clear-history", "-t", &s.pane]);
    let text = error_text(running);
    assert!(
        text.starts_with(&format!(
            "pane {} history shrank below entry baseline (history_size ",
            s.pane
        )),
        "{text}"
    );
    assert!(
        text.ends_with("baseline anchor lost \u{2014} re-arm wait_for_text or use wait_for_channel for deterministic synchronization"),
        "{text}"
    );

    let running = call(&s, json!({"patterns": ["never"], "timeout": 20}));
    s.cmd(&["respawn-pane", "-k", "-t", &s.pane, "env PS1='$ ' sh"]);
    let text = error_text(running);
    assert!(
        text.starts_with(&format!("pane {} was respawned (pid ", s.pane)),
        "{text}"
    );
    assert!(
        text.ends_with("); cursor/baseline anchor is no longer valid"),
        "{text}"
    );

    s.cmd(&["set-option", "-t", "main", "remain-on-exit", "on"]);
    s.wait_prompt();
    let running = call(&s, json!({"patterns": ["never"], "timeout": 20}));
    s.type_line("exit");
    let died = format!(
        "pane {} died; cursor/baseline anchor is no longer valid",
        s.pane
    );
    assert_eq!(error_text(running), died);

    // libtmux-mcp `test_wait_for_text_raises_on_pane_death`: a pane already
    // dead when the wait begins reads the same.
    let running = call(&s, json!({"patterns": ["never"], "timeout": 5}));
    assert_eq!(error_text(running), died);
}

/// libtmux-mcp: a tmux call that does not return within its budget is
/// "the tmux server is unresponsive", not a timeout.
#[test]
fn a_wedged_tmux_server_reads_as_unresponsive() {
    let s = Server::start(60, 10);
    let args =
        json!({"socket_name": s.name, "pane_id": s.pane, "patterns": ["never"], "timeout": 1});
    let out = s.frozen(|| start(PY, args, &Host::default()).finish().0);
    let text = out.expect_err("an error").to_string();
    assert!(
        text.starts_with("tmux list-panes did not return within "),
        "{text}"
    );
    assert!(
        text.ends_with("s; the tmux server is unresponsive"),
        "{text}"
    );
}

/// libtmux-mcp gives each tmux call at least 0.25 s, so a deadline that
/// passes during a call is a plain timeout, never an error.
#[test]
fn a_deadline_inside_a_tmux_call_is_a_timeout() {
    let s = Server::start(60, 10);
    for timeout in [0.001, 0.002, 0.005] {
        let args = json!({"socket_name": s.name, "pane_id": s.pane, "patterns": ["never"], "timeout": timeout});
        let out = start(PY, args, &Host::default()).finish().0;
        let out = out.unwrap_or_else(|e| panic!("timeout {timeout}: {e}"));
        assert_eq!(out["outcome"], "timeout", "{out}");
        assert_eq!(out["effective_timeout"], timeout);
    }
}

/// libtmux-mcp compiles patterns with Python's `re`, which takes
/// lookaround and backreferences.
#[test]
fn python_lookaround_and_backreferences_are_accepted() {
    let s = Server::start(60, 10);
    s.wait_prompt();
    let running = call(
        &s,
        json!({"patterns": ["(?<=BUILD )OK", "(\\w+)=\\1"], "regex": true, "timeout": 10}),
    );
    s.type_line("printf '%s%sOK\\n' BUILD ' '");
    let out = done(running);
    assert_eq!(out["outcome"], "matched", "{out}");
    assert_eq!(out["matched_index"], 0);
    assert_eq!(out["matched_lines"], json!(["BUILD OK"]));

    s.wait_prompt();
    let running = call(
        &s,
        json!({"patterns": ["(?<=BUILD )OK", "\\b(\\w+)=\\1\\b"], "regex": true, "timeout": 10}),
    );
    s.type_line("printf '%s=%s\\n' same same");
    let out = done(running);
    assert_eq!(out["matched_index"], 1, "{out}");
    assert_eq!(out["matched_lines"], json!(["same=same"]));
}

fn logs(notices: &[Notice]) -> Vec<String> {
    notices
        .iter()
        .filter_map(|n| match n {
            Notice::Log(log) => {
                assert_eq!(log.level, LogLevel::Warning, "{log:?}");
                Some(log.message.clone())
            }
            Notice::Progress(_) => None,
        })
        .collect()
}

/// libtmux-mcp reports progress at every poll (`ctx.report_progress`):
/// seconds elapsed, the effective timeout as the total, and the message
/// "Waiting on pane %N: X.Xs elapsed, Y.Ys left"; a wait that ends
/// without a match logs the warning "No match in pane %N before Ts
/// timeout", the timeout written as Python writes a float.
#[test]
fn progress_and_the_no_match_warning_read_as_libtmux_mcp_sends_them() {
    let s = Server::start(60, 10);
    s.wait_prompt();
    let (out, notices) =
        call(&s, json!({"patterns": ["never"], "timeout": 1})).finish_with_notices();
    assert_eq!(out.unwrap()["outcome"], "timeout");
    let shape = regex::Regex::new(&format!(
        r"^Waiting on pane {}: (\d+\.\d)s elapsed, (\d+\.\d)s left$",
        regex::escape(&s.pane)
    ))
    .unwrap();
    let progress: Vec<&ToolProgress> = notices
        .iter()
        .filter_map(|n| match n {
            Notice::Progress(p) => Some(p),
            Notice::Log(_) => None,
        })
        .collect();
    // One a poll (every 50 ms), not one a second.
    assert!(progress.len() >= 3, "{progress:?}");
    for p in &progress {
        assert_eq!(p.total, Some(1.0));
        let message = p.message.as_deref().unwrap();
        let numbers = shape.captures(message).expect(message);
        assert_eq!(numbers[1], format!("{:.1}", p.progress));
        assert_eq!(numbers[2], format!("{:.1}", (1.0 - p.progress).max(0.0)));
    }
    assert_eq!(
        logs(&notices),
        [format!("No match in pane {} before 1.0s timeout", s.pane)]
    );
}

/// The seconds of each progress notice, in order.
fn progress_secs(notices: &[Notice]) -> Vec<f64> {
    notices
        .iter()
        .filter_map(|n| match n {
            Notice::Progress(p) => Some(p.progress),
            Notice::Log(_) => None,
        })
        .collect()
}

/// libtmux-mcp reports progress at the top of its poll loop, before every
/// poll, the one that finds the text included: one notice a sample, the
/// last at the moment the wait ended.
#[test]
fn progress_comes_before_every_poll_the_deciding_one_included() {
    let s = Server::start(60, 10);
    s.wait_prompt();
    let running = call(&s, json!({"patterns": ["READY"], "timeout": 10}));
    s.type_line("echo READY");
    let (out, result, notices) = running.finish_all();
    let out = out.unwrap();
    assert_eq!(out["outcome"], "matched");
    let secs = progress_secs(&notices);
    assert_eq!(secs.len() as u64, result.samples, "{notices:?}");
    assert_eq!(json!(secs.last().unwrap()), out["elapsed_seconds"]);
}

/// A wait that times out: libtmux-mcp polls once more when its last sleep
/// reaches the deadline, after one more progress notice (at the timeout).
#[test]
fn a_timeout_sends_the_progress_of_its_last_poll_at_the_deadline() {
    let s = Server::start(60, 10);
    s.wait_prompt();
    let running = call(&s, json!({"patterns": ["never"], "timeout": 0.5}));
    let (out, result, notices) = running.finish_all();
    assert_eq!(out.unwrap()["outcome"], "timeout");
    let secs = progress_secs(&notices);
    assert_eq!(secs.len() as u64, result.samples + 1, "{notices:?}");
    let end = result.elapsed_ms as f64 / 1000.0;
    assert!(end >= 0.5 && secs.last() == Some(&end), "{notices:?}");
}

/// libtmux-mcp logs "No match" whenever the result is not found (a stop
/// marker included), and nothing for a match.
#[test]
fn the_no_match_warning_follows_found() {
    let s = Server::start(60, 10);
    s.wait_prompt();
    let running = call(
        &s,
        json!({"patterns": ["READY"], "stop": ["FAILED"], "timeout": 5}),
    );
    s.type_line("echo FAILED");
    let (out, notices) = running.finish_with_notices();
    assert_eq!(out.unwrap()["outcome"], "stopped");
    assert_eq!(
        logs(&notices),
        [format!("No match in pane {} before 5.0s timeout", s.pane)]
    );
    let running = call(&s, json!({"patterns": ["READY"], "timeout": 5}));
    s.type_line("echo READY");
    let (out, notices) = running.finish_with_notices();
    assert_eq!(out.unwrap()["outcome"], "matched");
    assert!(logs(&notices).is_empty(), "{notices:?}");
}

/// libtmux-mcp logs "Invalid regex pattern: ..." as a warning before it
/// refuses the call with the same text.
#[test]
fn an_invalid_regex_is_logged_as_it_is_refused() {
    let args = json!({"pane_id": "%0", "patterns": ["("], "regex": true});
    let err = waitfor::profiles::prepare(PY, &args, &Host::default())
        .err()
        .expect("refused");
    assert!(err.to_string().contains("Invalid regex pattern: "), "{err}");
    let notices = refusal_notices(PY, &err);
    let ToolError::InvalidArguments(spec_error) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(logs(&notices), std::slice::from_ref(&spec_error.message));
    let timeout = json!({"pane_id": "%0", "timeout": 0});
    let err = waitfor::profiles::prepare(PY, &timeout, &Host::default())
        .err()
        .expect("refused");
    assert!(refusal_notices(PY, &err).is_empty());
}

/// libtmux-mcp warns once when a poll finds the pane's history in the
/// last tenth of its `history-limit`, where tmux trims it: "pane %N is
/// polling in the history-limit trim-risk band (history_size S /
/// history_limit L); ...".
#[test]
fn a_history_near_its_limit_is_warned_about_once() {
    let s = Server::start(60, 10);
    s.cmd(&["set-option", "-g", "history-limit", "50"]);
    let pane = s
        .cmd(&["new-window", "-P", "-F", "#{pane_id}", "env PS1='$ ' sh"])
        .trim()
        .to_string();
    s.cmd(&["send-keys", "-t", &pane, "-l", "seq 1 200"]);
    s.cmd(&["send-keys", "-t", &pane, "Enter"]);
    s.until("the history is full", || {
        s.cmd(&["display-message", "-p", "-t", &pane, "#{history_size}"])
            .trim()
            .parse::<u64>()
            .is_ok_and(|size| size >= 45)
    });
    let running = call(
        &s,
        json!({"pane_id": pane, "patterns": ["never"], "timeout": 0.5}),
    );
    let (out, notices) = running.finish_with_notices();
    assert_eq!(out.unwrap()["outcome"], "timeout");
    let logs = logs(&notices);
    assert_eq!(logs.len(), 2, "{logs:?}");
    let band = regex::Regex::new(&format!(
        r"^pane {} is polling in the history-limit trim-risk band \(history_size 4[5-9] / history_limit 50\); wait_for_text correctness is best-effort here\. For deterministic synchronization use wait_for_channel\.$",
        regex::escape(&pane)
    ))
    .unwrap();
    assert!(band.is_match(&logs[0]), "{}", logs[0]);
    assert_eq!(
        logs[1],
        format!("No match in pane {pane} before 0.5s timeout")
    );
}

/// Python's `re` takes a hundred `\w{250}` patterns, each megabytes of
/// automata here: the call is checked at once (nothing compiled on the
/// caller's thread), and the wait ends at its deadline or earlier saying
/// the patterns are too big, instead of compiling 16 MiB a pattern first.
#[test]
fn costly_patterns_are_compiled_in_the_waits_own_time_within_a_bound() {
    let server = Server::start(80, 24);
    let heavy: Vec<String> = (0..100).map(|i| format!(r"\w{{250}}N{i}")).collect();
    let args = json!({"socket_name": server.name, "pane_id": server.pane,
                      "patterns": heavy, "regex": true, "timeout": 2});
    let began = std::time::Instant::now();
    let prepared = waitfor::profiles::prepare(PY, &args, &Host::default());
    assert!(prepared.is_ok(), "refused: {:?}", prepared.err());
    // Generous: parsing takes milliseconds; compiling them all took seconds.
    assert!(
        began.elapsed() < Duration::from_secs(1),
        "{:?}",
        began.elapsed()
    );
    let err = waitfor::profiles::call(PY, &args, &Host::default()).unwrap_err();
    assert!(err.to_string().contains("MiB"), "{err}");
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
}

/// A call lists at most `MAX_PATTERNS` patterns, refused before any is
/// checked (checking 200,000 held the host's thread half a second); the
/// syntax of regexes is checked at the call up to one pattern's worth of
/// text, and past it as the wait compiles them, with the same words.
#[test]
fn long_pattern_lists_are_bounded_at_the_call_and_checked_in_the_waits_time() {
    let server = Server::start(80, 24);
    let call_args = |patterns: Vec<String>, regex: bool| {
        json!({"socket_name": server.name, "pane_id": server.pane,
               "patterns": patterns, "regex": regex, "timeout": 2})
    };
    let many: Vec<String> = (0..=waitfor::limits::MAX_PATTERNS)
        .map(|i| format!("p{i}"))
        .collect();
    let err = waitfor::profiles::prepare(PY, &call_args(many, false), &Host::default())
        .err()
        .expect("refused");
    let ToolError::InvalidArguments(spec_error) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        (spec_error.field.as_str(), spec_error.rule),
        ("patterns", Rule::OutOfRange)
    );

    let mut late: Vec<String> = (0..2)
        .map(|i| format!("{}{i}", "a".repeat(40_000)))
        .collect();
    late.push("(".into());
    let err = waitfor::profiles::call(PY, &call_args(late, true), &Host::default()).unwrap_err();
    assert!(err.to_string().contains("Invalid regex pattern: "), "{err}");
}

/// The outcome each of `n` calls with `args` ended in: the original's
/// `outcome`, or the error's first words; and how many had no sample.
fn outcomes_of_many(n: usize, args: Value) -> (std::collections::BTreeMap<String, usize>, usize) {
    let running: Vec<Running> = (0..n)
        .map(|_| start(PY, args.clone(), &Host::default()))
        .collect();
    let mut outcomes = std::collections::BTreeMap::new();
    let mut unsampled = 0;
    for r in running {
        let (out, result) = r.finish();
        unsampled += usize::from(result.samples == 0);
        let key = match out {
            Ok(v) => v["outcome"].as_str().unwrap().to_string(),
            Err(e) => e.to_string().split(" did not ").next().unwrap().to_string(),
        };
        *outcomes.entry(key).or_default() += 1;
    }
    (outcomes, unsampled)
}

/// libtmux-mcp runs every wait's tmux calls at once; this process runs
/// [`waitfor::tmux::CALLS_PER_SERVER`] at a time per server. With many
/// waits on one healthy server, a call that spent the whole wait waiting
/// for its turn meets the deadline: a timeout, as the original's wait
/// that saw nothing in time, not "the tmux server is unresponsive".
#[test]
fn a_busy_server_is_not_unresponsive() {
    let s = Server::start(60, 10);
    let n = 300;
    let args =
        json!({"socket_name": s.name, "pane_id": s.pane, "patterns": ["never"], "timeout": 0.3});
    let (outcomes, unsampled) = outcomes_of_many(n, args);
    // The case in question happened: some waits got no sample at all.
    assert!(unsampled > 0, "every wait had a sample: {outcomes:?}");
    assert_eq!(outcomes.get("timeout"), Some(&n), "{outcomes:?}");
}

/// ... while waits queued behind calls a stopped server never answers
/// all read as the unresponsive server it is, not only the calls that ran.
#[test]
fn every_wait_on_a_stopped_server_reads_as_unresponsive() {
    let s = Server::start(60, 10);
    let n = 3 * waitfor::tmux::CALLS_PER_SERVER;
    let args =
        json!({"socket_name": s.name, "pane_id": s.pane, "patterns": ["never"], "timeout": 1});
    let (outcomes, _) = s.frozen(|| outcomes_of_many(n, args));
    assert_eq!(outcomes.get("tmux list-panes"), Some(&n), "{outcomes:?}");
}

/// libtmux-mcp registers `wait_for_text` with the title "Wait For Text"
/// (`tools/pane_tools/__init__.py`), and FastMCP sends as its description
/// the docstring's text before its Parameters section as written, markup
/// and line breaks kept; its schemas list the fields in the order of the
/// function's parameters and of `WaitForTextResult`'s fields, the float
/// default written `8.0`.
#[test]
fn the_definition_is_the_one_fastmcp_sends() {
    let def = waitfor::profiles::definitions()
        .into_iter()
        .find(|d| d.profile == PY)
        .expect("the profile")
        .tool;
    assert_eq!(def["name"], "wait_for_text");
    assert_eq!(def["title"], "Wait For Text");
    // `ANNOTATIONS_RO`, as registered: the tool only reads the pane.
    assert_eq!(
        def["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    let description = def["description"].as_str().unwrap();
    assert!(
        description.starts_with(
            "Wait for NEW output in a tmux pane, then return.\n\n\
             Polls until one of ``patterns`` appears on a line written *after*\n\
             this call starts,"
        ),
        "{description}"
    );
    assert!(description
        .contains("\n\n**Last resort: reserve for output you did not author.** Commands\n"));
    assert!(description.ends_with("reports ``effective_timeout``."));
    assert_eq!(
        keys(&def["inputSchema"]["properties"]),
        [
            "patterns",
            "stop",
            "regex",
            "pane_id",
            "session_name",
            "session_id",
            "window_id",
            "timeout",
            "interval",
            "match_case",
            "socket_name"
        ]
    );
    let timeout = &def["inputSchema"]["properties"]["timeout"]["default"];
    assert_eq!(serde_json::to_string(timeout).unwrap(), "8.0");
    assert_eq!(keys(&def["outputSchema"]["properties"]), RESULT_FIELDS);
}

/// `WaitForTextResult`'s fields, in the order the original writes them.
const RESULT_FIELDS: [&str; 11] = [
    "found",
    "outcome",
    "matched_index",
    "matched_lines",
    "tail",
    "saw_new_output",
    "matched_at_entry",
    "alternate_screen",
    "pane_id",
    "elapsed_seconds",
    "effective_timeout",
];

/// The result is `WaitForTextResult` dumped: its fields in its order.
#[test]
fn the_result_lists_its_fields_in_the_originals_order() {
    let s = Server::start(60, 12);
    s.wait_prompt();
    let out = done(call(&s, json!({"patterns": ["never"], "timeout": 0.2})));
    assert_eq!(keys(&out), RESULT_FIELDS);
}

/// FastMCP validates `timeout` and `interval` as floats before the tool
/// sees them, so the original's refusals show them as Python's `str` of a
/// float: `0` is `0.0`, `-2` is `-2.0`, `0.00001` is `1e-05`.
#[test]
fn refused_numbers_read_as_python_floats() {
    let refused = |args: Value| match waitfor::profiles::prepare(PY, &args, &Host::default()) {
        Err(ToolError::InvalidArguments(e)) => e.message,
        Err(e) => panic!("{args}: {e}"),
        Ok(_) => panic!("{args} was accepted"),
    };
    let pane = json!("%0");
    assert_eq!(
        refused(json!({"pane_id": pane, "timeout": 0})),
        "timeout must be positive (received 0.0)"
    );
    assert_eq!(
        refused(json!({"pane_id": pane, "timeout": -2})),
        "timeout must be positive (received -2.0)"
    );
    assert_eq!(
        refused(json!({"pane_id": pane, "interval": 0})),
        "interval must be at least 0.01 s (received 0.0)"
    );
    assert_eq!(
        refused(json!({"pane_id": pane, "interval": 0.00001})),
        "interval must be at least 0.01 s (received 1e-05)"
    );
}

/// libtmux-mcp compiles `regex` patterns with Python's `re`, where `[`
/// inside a class is a plain character (`[[:digit:]]x` is one of `[:digt`
/// then `]x`, not a digit then `x`) and `\Z` is the end of the row.
#[test]
fn regexes_read_as_pythons_re_reads_them() {
    let s = Server::start(60, 12);
    s.wait_prompt();
    let running = call(
        &s,
        json!({"patterns": ["[[:digit:]]x", "done\\Z"], "regex": true, "timeout": 10}),
    );
    s.type_line("echo 5x; echo done");
    let out = done(running);
    assert_eq!(out["outcome"], "matched", "{out}");
    assert_eq!(out["matched_index"], 1, "{out}");
    // The typed row counts as output too (it may be the only one yet).
    assert_eq!(out["matched_lines"][0], "$ echo 5x; echo done", "{out}");

    s.wait_prompt();
    let running = call(
        &s,
        json!({"patterns": ["[[:digit:]]x"], "regex": true, "timeout": 10}),
    );
    s.type_line("echo 't]x'");
    let out = done(running);
    assert_eq!(out["matched_index"], 0, "{out}");
    assert_eq!(out["matched_lines"][0], "$ echo 't]x'", "{out}");
}
