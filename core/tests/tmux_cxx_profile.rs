//! The libtmux-cxx `wait_for_text` profile against a real tmux server. The
//! profile talks to the default socket (as the C++ server does), so this
//! binary points `TMUX_TMPDIR` at a private directory and runs its cases
//! in one test, on one server it kills at the end.
#![cfg(unix)] // tmux runs on Unix.

mod support;

use serde_json::{json, Value};
use support::{assert_valid, keys, output_schema, start, Server};
use waitfor::profiles::{prepare, Host, ToolError};

const CXX: &str = "libtmux-cxx/wait_for_text";

fn call(s: &Server, text: &str, timeout_ms: u64) -> support::Running {
    let running = start(
        CXX,
        json!({"target": s.pane, "text": text, "timeout_ms": timeout_ms}),
        &Host::default(),
    );
    running.entered();
    running
}

fn done(running: support::Running) -> Value {
    let out = running.finish().0.expect("a result");
    assert_valid(&output_schema(CXX), &out);
    out
}

#[test]
fn the_cxx_profile_on_a_real_pane() {
    let dir = std::env::temp_dir().join(format!("waitfor-cxx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::env::set_var("TMUX_TMPDIR", &dir);
    std::env::remove_var("TMUX");
    let s = Server::start_default(60, 10);
    s.wait_prompt();

    // Confirmed output already on screen is credited at entry.
    s.type_line("echo ENTRY-TEXT");
    s.wait_screen(|t| t.contains("\nENTRY-TEXT"));
    s.wait_prompt();
    let out = done(call(&s, "ENTRY-TEXT", 5000));
    assert_eq!(out["matched"], true);
    assert_eq!(out["matched_at_entry"], true);
    assert_eq!(out["mode"], "capture-at-entry");
    assert_eq!(out["timed_out"], false);
    assert_eq!(out["pane_id"], s.pane);
    // libtmux-cxx answers with the capture the match came from
    // (`capture-pane -p -J`: the prompt keeps its trailing space).
    assert_eq!(
        out["text"],
        s.cmd(&["capture-pane", "-p", "-J", "-t", &s.pane])
    );
    // The result is nlohmann::json over a std::map: its keys sorted,
    // `pane_id` between `mode` and `text`.
    assert_eq!(
        keys(&out),
        [
            "elapsed_ms",
            "matched",
            "matched_at_entry",
            "mode",
            "pane_id",
            "text",
            "timed_out"
        ]
    );

    // libtmux-cxx captures with `-J`: a line wrapped at the pane's width
    // (60) is one line, in `text` and for `matched_at_entry`.
    s.wait_prompt();
    s.type_line("printf '%059d%s%s\\n' 0 Y Z");
    let wrapped = format!("{}YZ\n", "0".repeat(59));
    s.wait_screen(|t| t.contains(&wrapped));
    s.wait_prompt();
    let out = done(call(&s, "0YZ", 5000));
    assert_eq!(out["matched"], true, "{out}");
    assert_eq!(out["matched_at_entry"], true, "{out}");
    assert!(out["text"].as_str().unwrap().contains(&wrapped), "{out}");
    s.type_line("clear");
    s.wait_screen(|t| !t.contains(&wrapped));

    // The text is found in the capture as one string: it may span rows.
    s.wait_prompt();
    s.type_line("printf 'one\\ntwo\\n'");
    s.wait_screen(|t| t.contains("\none\ntwo\n"));
    let out = done(call(&s, "one\ntwo", 5000));
    assert_eq!(out["matched"], true, "{out}");

    // Send then wait: the echo is on screen at entry but is not credited;
    // the output that follows is.
    s.wait_prompt();
    s.send_recorded("sleep 0.5; echo cxx-sent", true);
    s.wait_screen(|t| t.contains("echo cxx-sent"));
    let out = done(call(&s, "cxx-sent", 10_000));
    assert_eq!(out["matched"], true);
    // libtmux-cxx: visible at entry (as the echo), so true even though
    // the match is the output that came after.
    assert_eq!(out["matched_at_entry"], true);
    let mode = out["mode"].as_str().unwrap();
    assert!(
        mode == "control-output" || mode == "capture-after-control-connect",
        "{mode}"
    );
    let text = out["text"].as_str().unwrap();
    assert!(text.contains("\ncxx-sent\n"), "{text}");
    assert_eq!(text.lines().count(), 10, "the whole screen: {text:?}");

    // Wait then send, answered by a wake.
    s.wait_prompt();
    let running = call(&s, "cxx-after", 10_000);
    s.send_recorded("echo cxx-after", true);
    let out = done(running);
    assert_eq!(out["matched"], true);
    assert_eq!(out["matched_at_entry"], false);
    let mode = out["mode"].as_str().unwrap();
    assert!(
        mode == "control-output" || mode == "capture-after-control-connect",
        "{mode}"
    );

    // Typed but not submitted: only the server's own echo shows it.
    s.wait_prompt();
    s.send_recorded("echo cxx-pending", false);
    s.wait_screen(|t| t.contains("echo cxx-pending"));
    let out = done(call(&s, "cxx-pending", 800));
    assert_eq!(out["matched"], false);
    assert_eq!(out["timed_out"], true);
    assert_eq!(out["mode"], "control-output-unconfirmed", "{out}");
    // Visible at entry, even though only as the server's own echo.
    assert_eq!(out["matched_at_entry"], true, "{out}");
    assert!(out["text"].as_str().unwrap().contains("$ echo cxx-pending"));
    s.cmd(&["send-keys", "-t", &s.pane, "C-c"]);

    // A quiet timeout is plain.
    s.wait_prompt();
    let out = done(call(&s, "never-there", 300));
    assert_eq!(out["timed_out"], true);
    assert_eq!(out["mode"], "control-output");
    assert_eq!(out["matched_at_entry"], false);

    a_short_timeout_is_waited_exactly(&s);
    a_scripted_pane_gives_the_output_the_real_pane_gives(&s);
    a_lookup_past_the_deadline_is_a_pane_lookup_timeout(&s);

    // A target tmux resolves.
    let running = start(
        CXX,
        json!({"target": "main:0.0", "text": "ENTRY-TEXT"}),
        &Host::default(),
    );
    let out = running.finish().0.unwrap();
    assert_eq!(out["pane_id"], s.pane);

    // An unknown pane is a runtime error, not a result.
    let running = start(
        CXX,
        json!({"target": "%999", "text": "x", "timeout_ms": 1000}),
        &Host::default(),
    );
    assert_eq!(running.finish().0.unwrap_err().code(), "runtime");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The shared vectors run this profile on scripted panes
/// (`vectors::run`): the screens of a real wait, scripted, give the
/// output the real pane gave, but for its elapsed time and its mode (the
/// simulator has no control client: it polls).
fn a_scripted_pane_gives_the_output_the_real_pane_gives(s: &Server) {
    s.wait_prompt();
    let rows = || -> Vec<String> {
        let text = s.cmd(&["capture-pane", "-p", "-N", "-t", &s.pane]);
        text.lines().map(str::to_string).collect()
    };
    let entry = rows();
    let running = call(s, "never-there", 1500);
    s.type_line("echo scripted");
    let mut real = done(running);
    let after = rows();
    let vector = json!({
        "profile": CXX,
        "arguments": {"target": s.pane, "text": "never-there", "timeout_ms": 1500},
        "script": {"steps": [
            {"pane_id": s.pane, "screen": entry},
            {"pane_id": s.pane, "screen": after},
        ]},
    });
    let answer = waitfor::vectors::run(&vector).unwrap();
    let mut simulated = answer["output"].clone();
    assert_eq!(simulated["mode"], "capture-polling");
    for out in [&mut real, &mut simulated] {
        out["elapsed_ms"] = Value::Null;
        out["mode"] = Value::Null;
    }
    assert!(
        real["text"].as_str().unwrap().contains("\nscripted\n"),
        "{real}"
    );
    assert_eq!(simulated, real);
}

/// libtmux-cxx's deadline is `timeout_ms` itself, however short (not the
/// 50 ms poll interval).
fn a_short_timeout_is_waited_exactly(s: &Server) {
    s.wait_prompt();
    for timeout_ms in [1, 5, 50] {
        let (out, result) = call(s, "never-there", timeout_ms).finish();
        let out = out.expect("a result");
        assert_eq!(out["timed_out"], true);
        assert_eq!(result.effective_max_wait_ms, timeout_ms);
    }
}

/// libtmux-cxx: a deadline that passes while the pane is looked up is a
/// timeout in mode `pane-lookup`, with no `pane_id` and no text.
fn a_lookup_past_the_deadline_is_a_pane_lookup_timeout(s: &Server) {
    let args = json!({"target": s.pane, "text": "x", "timeout_ms": 300});
    let out = s.frozen(|| start(CXX, args, &Host::default()).finish().0);
    let out = out.expect("a timeout, not an error");
    assert_valid(&output_schema(CXX), &out);
    assert_eq!(out["timed_out"], true);
    assert_eq!(out["matched"], false);
    assert_eq!(out["mode"], "pane-lookup");
    assert_eq!(out["text"], "");
    assert!(out.get("pane_id").is_none(), "{out}");
}

fn rejected(a: Value) -> (String, String) {
    match prepare(CXX, &a, &Host::default()) {
        Ok(_) => panic!("{a} was accepted"),
        Err(ToolError::InvalidArguments(e)) => (e.field, e.message),
        Err(e) => panic!("{a}: {e}"),
    }
}

#[test]
fn every_input_rule_of_the_cxx_schema() {
    let long_target = "t".repeat(513);
    let long_text = "é".repeat(4097);
    let cases = [
        (json!({"text": "x"}), "target", "required"),
        (json!({"target": "%1"}), "text", "required"),
        (
            json!({"target": "%1", "text": "x", "extra": 1}),
            "extra",
            "unknown field",
        ),
        (json!({"target": 1, "text": "x"}), "target", "string"),
        (json!({"target": "%1", "text": null}), "text", "string"),
        (
            json!({"target": long_target, "text": "x"}),
            "target",
            "at most 512",
        ),
        (
            json!({"target": "%1", "text": long_text}),
            "text",
            "at most 4096",
        ),
        (
            json!({"target": "%1", "text": "x", "timeout_ms": 0}),
            "timeout_ms",
            "between 1 and 60000",
        ),
        (
            json!({"target": "%1", "text": "x", "timeout_ms": 60001}),
            "timeout_ms",
            "between 1 and 60000",
        ),
        (
            json!({"target": "%1", "text": "x", "timeout_ms": -5}),
            "timeout_ms",
            "between 1 and 60000",
        ),
        (
            json!({"target": "%1", "text": "x", "timeout_ms": 1.5}),
            "timeout_ms",
            "integer",
        ),
        (
            json!({"target": "%1", "text": "x", "timeout_ms": "10"}),
            "timeout_ms",
            "integer",
        ),
        (json!({"target": "", "text": "x"}), "target", "empty"),
        (json!({"target": "%1", "text": ""}), "text", "empty"),
        (json!("x"), "", "object"),
    ];
    for (a, field, words) in cases {
        let (got_field, message) = rejected(a.clone());
        assert_eq!(got_field, field, "{a}");
        assert!(message.contains(words), "{a}: {message}");
    }
    for ok in [
        json!({"target": "%1", "text": "x"}),
        json!({"target": "%1", "text": "é".repeat(4096), "timeout_ms": 60000}),
        json!({"target": "s:1.2", "text": "x", "timeout_ms": 1}),
        json!({"target": "%1", "text": "x", "timeout_ms": 20.0}),
    ] {
        assert!(prepare(CXX, &ok, &Host::default()).is_ok(), "{ok}");
    }
    let defs = waitfor::profiles::definitions();
    let d = defs.iter().find(|d| d.profile == CXX).unwrap();
    assert_eq!(d.tool["name"], "wait_for_text");
    assert_eq!(d.tool["title"], "Wait for pane text");
    assert_eq!(d.tool["inputSchema"]["required"], json!(["target", "text"]));
    jsonschema::validator_for(&d.tool["outputSchema"]).unwrap();
}

/// libtmux-cxx (`EmitsProgressForABoundedWait`): progress is the
/// milliseconds elapsed of `timeout_ms`, at most once a second, with the
/// step under way ("waiting via capture-polling").
#[test]
fn progress_counts_milliseconds_of_timeout_ms_and_names_the_step() {
    let answer = waitfor::vectors::run(&json!({
        "profile": CXX,
        "arguments": {"target": "%1", "text": "ready", "timeout_ms": 2500},
        "script": {"steps": [{"screen": ["$ make", "building"]}]},
    }))
    .unwrap();
    assert_eq!(answer["output"]["timed_out"], true, "{answer}");
    let notices = answer["notices"].as_array().unwrap();
    let seen: Vec<(f64, f64)> = notices
        .iter()
        .map(|n| {
            (
                n["progress"].as_f64().unwrap(),
                n["total"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [(0.0, 2500.0), (1000.0, 2500.0), (2000.0, 2500.0)],
        "{answer}"
    );
    let modes: Vec<&str> = notices
        .iter()
        .map(|n| n["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        modes,
        [
            "waiting via capture-before-control",
            "waiting via capture-polling",
            "waiting via capture-polling"
        ],
        "{answer}"
    );
}

/// libtmux-cxx: a target tmux cannot resolve to a pane is an error in the
/// original's words (`display-message` prints nothing for it).
#[test]
fn a_target_tmux_cannot_resolve_reads_as_the_original_words_it() {
    for target in ["%7", "%70"] {
        let answer = waitfor::vectors::run(&json!({
            "profile": CXX,
            "arguments": {"target": target, "text": "ready", "timeout_ms": 500},
            "script": {"steps": [{"screen": ["$ "]}]},
        }))
        .unwrap();
        assert_eq!(
            answer["tool_error"]["message"], "tmux could not resolve the requested pane",
            "{answer}"
        );
    }
}
