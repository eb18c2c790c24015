//! Pane waits against a real tmux server on a private socket per test:
//! the fresh view, echo discounting, push and fallback, the endings, and
//! the libtmux-mcp `wait_for_text` profile end to end.
#![cfg(unix)] // tmux runs on Unix.

mod support;

use serde_json::{json, Value};
use std::time::Duration;
use support::{assert_valid, output_schema, start, tmux_processes, Running, Server};
use waitfor::profiles::{prepare, Host};
use waitfor::tmux::{PaneProbe, PaneTarget, PushPath, VERIFY_EVERY};
use waitfor::{Condition, Engine, Outcome, Pattern, Spec, WaitOptions};

const PY: &str = "libtmux-mcp/wait_for_text";

fn args(server: &Server, extra: Value) -> Value {
    let mut a = json!({"pane_id": server.pane, "socket_name": server.name});
    for (k, v) in extra.as_object().unwrap() {
        a[k] = v.clone();
    }
    a
}

fn py(server: &Server, extra: Value) -> Running {
    let running = start(PY, args(server, extra), &Host::default());
    running.entered();
    running
}

/// Finishes a call, checks the output against the seed's schema.
fn done(running: Running) -> Value {
    let (out, _) = running.finish();
    let out = out.expect("a result, not an error");
    assert_valid(&output_schema(PY), &out);
    out
}

#[test]
fn stale_scrollback_is_never_matched_and_is_reported() {
    let s = Server::start(60, 10);
    for n in 1..=3 {
        s.type_line("echo MARKER-OLD");
        s.wait_screen(|t| t.matches("\nMARKER-OLD").count() >= n);
        s.wait_prompt();
    }
    let out = done(py(&s, json!({"patterns": ["marker-old"], "timeout": 0.6})));
    assert_eq!(out["outcome"], "timeout");
    assert_eq!(out["found"], false);
    assert_eq!(out["matched_at_entry"], true);
    assert_eq!(out["saw_new_output"], false);
    assert_eq!(out["matched_lines"], json!([]));
}

/// libtmux-mcp matches rows written after the call began. (It matches the
/// typed command's row too, so the commands here print their marker
/// without spelling it.)
#[test]
fn output_after_the_call_is_matched() {
    let s = Server::start(60, 10);
    let call = py(&s, json!({"patterns": ["ready-after"], "timeout": 10}));
    s.send_recorded("sleep 0.3; printf '%s-%s\\n' ready after", true);
    let out = done(call);
    assert_eq!(out["outcome"], "matched");
    assert_eq!(out["found"], true);
    assert_eq!(out["matched_index"], 0);
    assert_eq!(out["matched_lines"], json!(["ready-after"]));
    assert_eq!(out["saw_new_output"], true);
    assert_eq!(out["pane_id"], s.pane);
    assert!(out["tail"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l == "ready-after"));
}

/// libtmux-mcp: the prompt row as it was at entry does not count; once
/// something is written on it, the whole row is new and is returned as
/// tmux prints it, prompt included.
#[test]
fn the_prompt_does_not_match_itself_but_its_row_is_matchable() {
    let s = Server::start(60, 10);
    s.wait_prompt();
    let out = done(py(&s, json!({"patterns": ["$"], "timeout": 0.5})));
    assert_eq!(out["outcome"], "timeout");
    // Output written on the cursor row, right after the prompt.
    s.type_line("(sleep 0.5; printf bg-on-row) &");
    s.wait_prompt();
    let out = done(py(&s, json!({"patterns": ["bg-on-row"], "timeout": 10})));
    assert_eq!(out["outcome"], "matched");
    assert_eq!(out["matched_lines"], json!(["$ bg-on-row"]));
}

#[test]
fn rerunning_a_command_whose_marker_is_on_screen_matches_the_fresh_one() {
    let s = Server::start(60, 10);
    s.type_line("echo RERUN-MARK");
    s.wait_screen(|t| t.contains("\nRERUN-MARK"));
    s.wait_prompt();
    let call = py(&s, json!({"patterns": ["RERUN-MARK"], "timeout": 10}));
    s.send_recorded("printf '%s-%s\\n' RERUN MARK", true);
    let out = done(call);
    assert_eq!(out["outcome"], "matched");
    assert_eq!(out["matched_lines"], json!(["RERUN-MARK"]));
    assert_eq!(out["matched_at_entry"], false);
}

#[test]
fn a_single_ready_line_below_the_prompt_is_matched() {
    let s = Server::start(60, 10);
    s.type_line("(sleep 0.5; echo; echo ready) &");
    s.wait_prompt();
    let out = done(py(&s, json!({"patterns": ["ready"], "timeout": 10})));
    assert_eq!(out["outcome"], "matched");
    assert_eq!(out["matched_lines"], json!(["ready"]));
}

#[test]
fn stop_returns_early_with_its_index_and_wins_a_tie() {
    let s = Server::start(60, 10);
    let call = py(
        &s,
        json!({"patterns": ["never"], "stop": ["nope", "boom"], "timeout": 20}),
    );
    s.send_recorded("printf '%s%s\\n' bo om", true);
    let out = done(call);
    assert_eq!(out["outcome"], "stopped");
    assert_eq!(out["found"], false);
    assert_eq!(out["matched_index"], 1);
    assert_eq!(out["matched_lines"], json!(["boom"]));
    assert!(out["elapsed_seconds"].as_f64().unwrap() < 20.0);

    s.wait_prompt();
    let call = py(
        &s,
        json!({"patterns": ["done"], "stop": ["FAIL"], "timeout": 20}),
    );
    s.send_recorded("printf 'do%s\\nFA%s\\n' ne IL", true);
    let out = done(call);
    assert_eq!(out["outcome"], "stopped");
    assert_eq!(out["matched_lines"], json!(["FAIL"]));
}

#[test]
fn null_patterns_wait_for_any_output_and_time_out_quietly() {
    let s = Server::start(60, 10);
    s.wait_prompt();
    let out = done(py(&s, json!({"patterns": null, "timeout": 0.5})));
    assert_eq!(out["outcome"], "timeout");
    assert_eq!(out["found"], false);
    assert_eq!(out["saw_new_output"], false);
    assert_eq!(out["matched_index"], Value::Null);

    let call = py(&s, json!({"timeout": 10}));
    s.send_recorded("echo something", true);
    let out = done(call);
    assert_eq!(out["outcome"], "any_output");
    assert_eq!(out["found"], true);
    assert!(!out["matched_lines"].as_array().unwrap().is_empty());
}

#[test]
fn the_alternate_screen_suppresses_matching_and_is_reported() {
    let s = Server::start(60, 10);
    let call = py(&s, json!({"patterns": ["ALT-TEXT"], "timeout": 1.5}));
    s.send_recorded(
        "printf '\\033[?1049hALT-%s' TEXT; sleep 4; printf '\\033[?1049l'",
        true,
    );
    let out = done(call);
    assert_eq!(out["outcome"], "alternate_screen");
    assert_eq!(out["alternate_screen"], true);
    assert_eq!(out["found"], false);
}

fn engine_wait(
    s: &Server,
    until: &str,
    interval_ms: u64,
    push: bool,
) -> (waitfor::WaitHandle, waitfor::tmux::PaneReportHandle) {
    engine_wait_within(s, until, interval_ms, push, Duration::from_secs(20))
}

fn engine_wait_within(
    s: &Server,
    until: &str,
    interval_ms: u64,
    push: bool,
    max_wait: Duration,
) -> (waitfor::WaitHandle, waitfor::tmux::PaneReportHandle) {
    let probe = PaneProbe::new(
        s.tmux.clone(),
        PaneTarget {
            pane_id: Some(s.pane.clone()),
            ..Default::default()
        },
    )
    .push(push);
    let report = probe.report();
    let spec = Spec::new(Condition::Matches(Pattern::literal(until)))
        .interval(Duration::from_millis(interval_ms))
        .max_wait(max_wait);
    let handle = Engine::global()
        .start_with(spec, Some(Box::new(probe)), WaitOptions::default())
        .unwrap();
    s.until("entry sample", || report.get().captures > 0);
    (handle, report)
}

#[test]
fn a_killed_or_respawned_pane_ends_the_wait_as_gone() {
    let s = Server::start(60, 10);
    let first = s.pane.clone();
    s.cmd(&["split-window", "-t", &first, "env PS1='$ ' sh"]);
    let (handle, _) = engine_wait(&s, "never", 50, true);
    s.cmd(&["kill-pane", "-t", &first]);
    assert_eq!(handle.wait().outcome, Outcome::Gone);

    let s = Server::start(60, 10);
    let (handle, _) = engine_wait(&s, "never", 50, true);
    s.cmd(&["respawn-pane", "-k", "-t", &s.pane, "env PS1='$ ' sh"]);
    assert_eq!(handle.wait().outcome, Outcome::Gone);

    let call = py(&s, json!({"patterns": ["never"], "timeout": 20}));
    s.cmd(&["respawn-pane", "-k", "-t", &s.pane, "env PS1='$ ' sh"]);
    let (out, _) = call.finish();
    let err = out.unwrap_err();
    assert_eq!(err.code(), "runtime");
    assert!(err.to_string().contains("respawned"), "{err}");
}

#[test]
fn waits_on_one_pane_share_its_periodic_check_and_all_see_a_silent_kill() {
    // With no output, a wait's capture stands between checks, and the
    // check due every VERIFY_EVERY is one capture for all the pane's
    // waits, not one each.
    const WAITS: u64 = 12;
    let s = Server::start(60, 10);
    let pane = s.pane.clone();
    // A second pane keeps the session when the first is killed.
    s.cmd(&["split-window", "-t", &pane, "env PS1='$ ' sh"]);
    let waits: Vec<_> = (0..WAITS)
        .map(|_| engine_wait(&s, "never", 50, true))
        .collect();
    for (_, report) in &waits {
        s.until("attached, and captured since", || {
            report.read(|r| r.attached_at.is_some_and(|at| r.captures > at))
        });
    }
    let captures = || -> u64 { waits.iter().map(|(_, r)| r.get().captures).sum() };
    let (before, began) = (captures(), std::time::Instant::now());
    // An observation window, not a synchronisation: count what it takes.
    std::thread::sleep(Duration::from_secs(2));
    let (taken, elapsed) = (captures() - before, began.elapsed());
    let checks_due = (elapsed.as_millis() / VERIFY_EVERY.as_millis()) as u64 + 1;
    assert!(
        taken <= 2 * checks_due,
        "{taken} captures by {WAITS} silent waits in {elapsed:?}"
    );

    // A kill prints nothing: the check finds it for every wait.
    s.cmd(&["kill-pane", "-t", &pane]);
    for (handle, _) in waits {
        assert_eq!(handle.wait().outcome, Outcome::Gone);
    }
}

#[test]
fn waits_see_a_silent_redraw_of_a_pane_moved_out_of_their_session() {
    // tmux sends `%output` only to clients of a session the pane is in. A
    // pane moved to another session and redrawn in place keeps its pid,
    // size, cursor and history: only its screen tells the waits sharing
    // its check, and each wait captures at its next sample (found one by
    // one, a check every VERIFY_EVERY, the last would be past its deadline).
    const WAITS: u32 = 16;
    let s = Server::start(60, 10);
    // `main` keeps a window when the pane's leaves; `other` is as large.
    s.cmd(&["new-window", "-d", "-t", "main"]);
    s.cmd(&["new-session", "-d", "-s", "other", "-x", "60", "-y", "10"]);
    // Prints a line, cursor back at its start, and waits (no echo).
    s.type_line(
        "stty -echo; printf '%s-%s\\r' old mark; read x; printf '%s-%s\\r' new mark; sleep 600",
    );
    s.wait_screen(|t| t.lines().any(|l| l.starts_with("old-mark")));
    let within = VERIFY_EVERY * WAITS / 2;
    let waits: Vec<_> = (0..WAITS)
        .map(|_| engine_wait_within(&s, "new-mark", 50, true, within))
        .collect();
    for (_, report) in &waits {
        s.until("attached, and captured since", || {
            report.read(|r| r.attached_at.is_some_and(|at| r.captures > at))
        });
    }
    s.cmd(&["move-window", "-s", &s.pane, "-t", "other:"]);
    s.cmd(&["send-keys", "-t", &s.pane, "Enter"]);
    for (handle, _) in waits {
        assert_eq!(handle.wait().outcome, Outcome::Matched);
    }
}

#[test]
fn a_resized_pane_keeps_its_anchor() {
    let s = Server::start(60, 12);
    s.type_line("seq 1 30");
    s.wait_screen(|t| t.contains("\n30\n"));
    s.wait_prompt();
    let call = py(
        &s,
        json!({"patterns": ["after-resize", "^\\s*2[0-9]$"], "regex": true, "timeout": 10}),
    );
    s.cmd(&["resize-window", "-t", "main", "-y", "6", "-x", "50"]);
    s.cmd(&["resize-window", "-t", "main", "-y", "14", "-x", "70"]);
    s.send_recorded("printf '%s-%s\\n' after resize", true);
    let out = done(call);
    assert_eq!(out["matched_index"], 0, "{out}");
    assert_eq!(out["matched_lines"], json!(["after-resize"]));
}

#[test]
fn a_pattern_spanning_a_soft_wrap_is_matched() {
    let s = Server::start(20, 10);
    let call = py(
        &s,
        json!({"patterns": ["abcdefghij-KLMNOPQRST-uvwxyz"], "timeout": 10}),
    );
    s.send_recorded("printf '%s-%s\\n' abcdefghij KLMNOPQRST-uvwxyz", true);
    let out = done(call);
    assert_eq!(out["outcome"], "matched");
    assert_eq!(
        out["matched_lines"],
        json!(["abcdefghij-KLMNOPQRST-uvwxyz"])
    );
}

#[test]
fn output_without_a_trailing_newline_is_matched() {
    let s = Server::start(60, 10);
    // With the prompt after it (a literal `$`): matched before the prompt
    // came, the row would have no trailing space to keep.
    let call = py(&s, json!({"patterns": ["no-newline-end$"], "timeout": 10}));
    s.send_recorded("printf '%s-%s' no-newline end", true);
    let out = done(call);
    assert_eq!(out["outcome"], "matched");
    // The row as `capture-pane -J` prints it: the prompt's space is kept.
    assert_eq!(out["matched_lines"], json!(["no-newline-end$ "]));
}

#[test]
fn send_then_wait_matches_the_output_not_the_echo() {
    let s = Server::start(60, 10);
    s.send_recorded("sleep 0.5; echo sent-first", true);
    s.wait_screen(|t| t.contains("echo sent-first"));
    let out = done(py(&s, json!({"patterns": ["sent-first"], "timeout": 10})));
    assert_eq!(out["outcome"], "matched");
    assert_eq!(out["matched_lines"], json!(["sent-first"]));
}

#[test]
fn control_mode_answers_when_attached() {
    let s = Server::start(60, 10);
    // A poll interval far beyond the patience: only a wake can answer.
    let (handle, report) = engine_wait(&s, "pushed-line", 15_000, true);
    s.until("the control client attached", || {
        report.get().push == PushPath::ControlMode
    });
    s.type_line("echo pushed-line");
    let result = handle.wait();
    assert_eq!(result.outcome, Outcome::Matched);
    assert!(result.woken, "answered by the wake");
    assert!(
        s.control_clients().is_empty(),
        "the control client is closed"
    );
}

#[test]
fn polling_answers_when_the_control_client_goes_away() {
    let s = Server::start(60, 10);
    let (handle, report) = engine_wait(&s, "polled-line", 100, true);
    s.until("the control client attached", || {
        report.get().push == PushPath::ControlMode
    });
    for client in s.control_clients() {
        s.cmd(&["detach-client", "-t", &client]);
    }
    s.until("the probe fell back", || {
        matches!(report.get().push, PushPath::Fallback(_))
    });
    s.type_line("echo polled-line");
    let result = handle.wait();
    assert_eq!(result.outcome, Outcome::Matched);
    assert!(!result.woken, "answered by the poll timer");

    let (handle, report) = engine_wait(&s, "plain-poll", 50, false);
    s.type_line("echo plain-poll");
    assert_eq!(handle.wait().outcome, Outcome::Matched);
    assert_eq!(report.get().push, PushPath::Polling);
}

#[test]
fn cancel_mid_wait_leaves_no_tmux_process() {
    let s = Server::start(60, 10);
    let socket = s.name.clone().unwrap();
    let (handle, report) = engine_wait(&s, "never", 50, true);
    s.until("the control client attached", || {
        report.get().push == PushPath::ControlMode
    });
    assert!(!tmux_processes(&socket, "-C").is_empty());
    handle.control().cancel();
    assert_eq!(handle.wait().outcome, Outcome::Cancelled);
    s.until("no control client", || s.control_clients().is_empty());
    s.until("no tmux client process", || {
        tmux_processes(&socket, "-C").is_empty()
            && tmux_processes(&socket, "capture-pane").is_empty()
    });
}

#[test]
fn the_host_ceiling_clamps_the_timeout_and_is_reported() {
    let s = Server::start(60, 10);
    let host = Host {
        max_wait_ceiling: Some(Duration::from_millis(1500)),
        ..Host::default()
    };
    let running = start(
        PY,
        args(&s, json!({"patterns": ["never"], "timeout": 100})),
        &host,
    );
    let out = running.finish().0.unwrap();
    assert_eq!(out["effective_timeout"], 1.5);
    assert_eq!(out["outcome"], "timeout");
    let elapsed = out["elapsed_seconds"].as_f64().unwrap();
    assert!(
        elapsed >= 1.5 && (elapsed * 1000.0).fract() == 0.0,
        "{elapsed}"
    );
}

fn rejected(a: Value) -> (String, String) {
    match prepare(PY, &a, &Host::default()) {
        Ok(_) => panic!("{a} was accepted"),
        Err(waitfor::profiles::ToolError::InvalidArguments(e)) => (e.field, e.message),
        Err(e) => panic!("{a}: {e}"),
    }
}

#[test]
fn every_input_rule_of_the_python_schema() {
    let cases = [
        (json!({"bogus": 1}), "bogus", "unknown field"),
        (json!([]), "", "object"),
        (
            json!({"interval": 0.001}),
            "interval",
            "interval must be at least 0.01 s (received 0.001)",
        ),
        (json!({"interval": "1"}), "interval", "number"),
        (
            json!({"timeout": 0}),
            "timeout",
            "timeout must be positive (received 0.0)",
        ),
        (
            json!({"timeout": -1.5}),
            "timeout",
            "timeout must be positive",
        ),
        (json!({"timeout": true}), "timeout", "number"),
        (
            json!({"patterns": []}),
            "patterns",
            "patterns must be a non-empty list, or null to wait for any new output",
        ),
        (
            json!({"patterns": ["ok", ""]}),
            "patterns[1]",
            "patterns pattern must be a non-empty string",
        ),
        (json!({"patterns": "ok"}), "patterns", "list of strings"),
        (json!({"patterns": [1]}), "patterns", "list of strings"),
        (
            json!({"stop": [""]}),
            "stop[0]",
            "stop pattern must be a non-empty string",
        ),
        (json!({"stop": {}}), "stop", "list of strings"),
        (
            json!({"patterns": ["("], "regex": true}),
            "patterns[0]",
            "Invalid regex pattern",
        ),
        (json!({"regex": "yes"}), "regex", "boolean"),
        (
            json!({"patterns": ["x".repeat(64 * 1024 + 1)]}),
            "patterns[0]",
            "at most 65536 bytes",
        ),
        (json!({"match_case": 1}), "match_case", "boolean"),
        (json!({"pane_id": 3}), "pane_id", "string or null"),
        (json!({"window_id": []}), "window_id", "string or null"),
        (json!({"session_id": false}), "session_id", "string or null"),
        (json!({"session_name": 1}), "session_name", "string or null"),
        (json!({"socket_name": 1}), "socket_name", "string or null"),
    ];
    for (a, field, words) in cases {
        let (got_field, message) = rejected(a.clone());
        assert_eq!(got_field, field, "{a}");
        assert!(message.contains(words), "{a}: {message}");
    }
    // Accepted: defaults, nulls, an empty stop list, a literal "(".
    for ok in [
        json!({}),
        json!({"patterns": null, "stop": null, "pane_id": null}),
        json!({"stop": []}),
        json!({"patterns": ["("]}),
        json!({"interval": 0.01, "timeout": 1e300}),
    ] {
        assert!(prepare(PY, &ok, &Host::default()).is_ok(), "{ok}");
    }
}

#[test]
fn the_python_definition_is_the_originals() {
    let defs = waitfor::profiles::definitions();
    let d = defs.iter().find(|d| d.profile == PY).unwrap();
    assert_eq!(d.tool["name"], "wait_for_text");
    assert_eq!(d.tool["inputSchema"]["additionalProperties"], false);
    // FastMCP writes the float default as `8.0`.
    assert_eq!(
        d.tool["inputSchema"]["properties"]["timeout"]["default"],
        json!(8.0)
    );
    assert_eq!(
        d.tool["inputSchema"]["properties"]["interval"]["default"],
        0.05
    );
    assert_eq!(
        d.tool["outputSchema"]["required"],
        json!([
            "found",
            "outcome",
            "pane_id",
            "elapsed_seconds",
            "effective_timeout"
        ])
    );
    assert_eq!(d.tool["annotations"]["destructiveHint"], false);
    jsonschema::validator_for(&d.tool["outputSchema"]).unwrap();
    jsonschema::validator_for(&d.tool["inputSchema"]).unwrap();
}

/// libtmux-cxx keys echo records by which server the pane is on (socket
/// path, server pid and start time): a server restarted on the same
/// socket, whose pane reuses the id, does not inherit the old server's
/// records, so someone else's typing there is output.
#[test]
fn a_restarted_server_does_not_inherit_echo_records() {
    let s = Server::start(60, 10);
    s.wait_prompt();
    s.send_recorded("echo SAME-TYPING", false);
    s.wait_screen(|t| t.contains("echo SAME-TYPING"));
    let old_pane = s.pane.clone();
    let s = s.restart(60, 10);
    assert_eq!(s.pane, old_pane, "the new pane reuses the id");
    s.wait_prompt();
    s.cmd(&["send-keys", "-t", &s.pane, "-l", "echo SAME-TYPING"]);
    s.wait_screen(|t| t.contains("echo SAME-TYPING"));
    let target = PaneTarget {
        pane_id: Some(s.pane.clone()),
        ..Default::default()
    };
    let probe = PaneProbe::new(s.tmux.clone(), target)
        .credit_entry(true)
        .push(false);
    let spec = Spec::new(Condition::Matches(Pattern::literal("SAME-TYPING")))
        .interval(Duration::from_millis(50))
        .max_wait(Duration::from_secs(1));
    let result = Engine::global().wait(spec, probe).unwrap();
    assert_eq!(result.outcome, Outcome::Matched, "{result:?}");
    assert_eq!(result.samples, 1, "matched at entry");
}

/// A wait on the engine's own JSON spec with a tmux probe (socket and
/// patterns filled in), returned once its entry sample is taken.
fn json_spec_wait(s: &Server, tmux: Value, patterns: [&str; 2]) -> waitfor::WaitHandle {
    let mut probe = json!({"socket_name": s.name});
    for (k, v) in tmux.as_object().unwrap() {
        probe[k] = v.clone();
    }
    let spec = Spec::from_value(&json!({
        "probe": {"tmux": probe},
        "until": {"patterns": patterns},
        "interval_ms": 50,
        "max_wait_ms": 20000,
        "progress_every_ms": 1,
    }))
    .unwrap();
    let (sampled, entered) = std::sync::mpsc::channel();
    let options = WaitOptions::default().on_progress(move |_| {
        let _ = sampled.send(());
    });
    let handle = Engine::global().start_with(spec, None, options).unwrap();
    entered
        .recv_timeout(Duration::from_secs(20))
        .expect("the entry sample");
    handle
}

#[test]
fn a_json_spec_may_pick_the_first_pane_as_libtmux_mcp_does() {
    let s = Server::start(60, 10);
    let first = s.pane.clone();
    let active = s.cmd(&[
        "split-window",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        &first,
        "env PS1='$ ' sh",
    ]);
    let active = active.trim();
    let markers = ["in-first-pane", "in-active-pane"];
    let session = json!({"session_name": "main"});
    let by_default = json_spec_wait(&s, session.clone(), markers);
    let mut asked = session;
    asked["pick"] = json!("first");
    let first_pane = json_spec_wait(&s, asked, markers);
    // Each pane prints its own marker; a wait sees only its pane's.
    s.cmd(&["send-keys", "-t", active, "echo in-active-pane", "Enter"]);
    s.cmd(&["send-keys", "-t", &first, "echo in-first-pane", "Enter"]);
    assert_eq!(by_default.wait().matched_index, Some(1), "the active pane");
    assert_eq!(first_pane.wait().matched_index, Some(0), "the first pane");
}

#[test]
fn a_json_spec_may_count_rows_by_content_as_libtmux_mcp_does() {
    let s = Server::start(60, 10);
    s.wait_prompt();
    let pane = json!({"pane_id": s.pane});
    // The prompt `$ ` is on the entry row; typed text joins it unsubmitted.
    let markers = ["$", "typed-later"];
    let by_row = json_spec_wait(&s, pane.clone(), markers);
    let mut asked = pane;
    asked["freshness"] = json!("by_content");
    let by_content = json_spec_wait(&s, asked, markers);
    s.cmd(&["send-keys", "-t", &s.pane, "-l", "typed-later"]);
    // By row, only what follows the entry text counts: never the prompt.
    assert_eq!(by_row.wait().matched_index, Some(1));
    // By content, the changed row counts whole, prompt included.
    assert_eq!(by_content.wait().matched_index, Some(0));
}
