//! The `aura/wait_for` profile behaves as AURA's `wait_for` (its source,
//! `crates/aura/src/orchestration/tools/wait_for.rs`, and the unit tests
//! there). Each test names the behaviour of the original it checks. Timing
//! runs on virtual time (the simulator); errors of a real probe run on the
//! engine with a host tool.

use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use waitfor::profiles::{
    call, definitions, prepare, refusal_notices, Host, Notice, ToolCaller, ToolProgress,
    UNKNOWN_TOOL,
};
use waitfor::vectors;
use waitfor::{ProbeContext, ProbeError};

/// A call of the profile on virtual time: `steps` is the simulator's
/// script (each `{after_ms?, text | error | hang}`).
fn simulate(arguments: Value, steps: Value) -> Value {
    vectors::run(&json!({
        "profile": "aura/wait_for",
        "arguments": arguments,
        "script": {"steps": steps}
    }))
    .expect("a runnable vector")
}

fn args(until: Value, poll_sec: u64, max_wait_sec: u64) -> Value {
    json!({
        "probe": {"tool": "sample_probe", "args": {}},
        "until": until,
        "poll_sec": poll_sec,
        "max_wait_sec": max_wait_sec
    })
}

fn texts(texts: &[&str]) -> Value {
    texts.iter().map(|t| json!({ "text": t })).collect()
}

/// The refusal of a call: (field, rule, message); the message reads
/// "invalid arguments: FIELD: " and AURA's own words.
fn refusal(arguments: Value) -> (String, String, String) {
    let answer = vectors::run(&json!({"profile": "aura/wait_for", "arguments": arguments}))
        .expect("a vector");
    let error = &answer["tool_error"];
    assert_eq!(error["code"], "invalid_arguments", "{answer}");
    (
        error["field"].as_str().unwrap().to_string(),
        error["rule"].as_str().unwrap().to_string(),
        error["message"].as_str().unwrap().to_string(),
    )
}

// --- 1. A sample at the bound -------------------------------------------

/// AURA `timeout_returns_last_observation_on_success_track`: poll 2 s,
/// bound 5 s: sleeps of 2, 2 and 1 s (the last trimmed to the bound), so
/// four samples, the last at the bound.
#[test]
fn the_last_sleep_is_trimmed_and_a_sample_is_taken_at_the_bound() {
    let answer = simulate(
        args(json!({"matches": "ready_token"}), 2, 5),
        texts(&["never the droid"]),
    );
    assert_eq!(answer["call_starts_ms"], json!([0, 2000, 4000, 5000]));
    assert_eq!(
        answer["output"],
        json!({"reason": "timeout", "last_observation": "never the droid",
               "elapsed_sec": 5, "samples": 4, "effective_max_wait_sec": 5})
    );
}

/// AURA evaluates the sample at the bound before it checks the bound: a
/// condition that comes true in the last, partial interval is seen.
#[test]
fn a_condition_true_in_the_last_partial_interval_is_seen() {
    let answer = simulate(
        args(json!({"matches": "done"}), 2, 5),
        texts(&["working", "working", "working", "done"]),
    );
    assert_eq!(answer["output"]["reason"], "matched");
    assert_eq!(answer["output"]["samples"], 4);
    assert_eq!(answer["output"]["elapsed_sec"], 5);
}

/// AURA `clamp_above_ceiling_reported_in_effective_bound`: poll 250 s,
/// bound 400 s clamped to 300 s: a timeout at 300 s, reported as such.
#[test]
fn a_bound_above_the_ceiling_is_clamped_and_sampled_at() {
    let answer = simulate(
        args(json!({"matches": "never_present"}), 250, 400),
        texts(&["quiet output"]),
    );
    assert_eq!(answer["call_starts_ms"], json!([0, 250_000, 300_000]));
    assert_eq!(answer["output"]["reason"], "timeout");
    assert_eq!(answer["output"]["elapsed_sec"], 300);
    assert_eq!(answer["output"]["effective_max_wait_sec"], 300);
}

/// AURA `quiet_window_equal_to_bound_settles_at_the_bound`: a quiet
/// window as long as the bound settles on the sample at the bound.
#[test]
fn a_quiet_window_equal_to_the_bound_settles_at_the_bound() {
    let answer = simulate(
        args(json!({"quiet_for_sec": 6}), 2, 6),
        texts(&["constant"]),
    );
    assert_eq!(answer["output"]["reason"], "settled");
    assert_eq!(answer["output"]["elapsed_sec"], 6);
    assert_eq!(answer["output"]["samples"], 4);
}

/// AURA races the sample at the bound against what is left of the bound,
/// nothing: an answer not ready at once is dropped, and the wait is a
/// timeout with the sample before.
#[test]
fn the_sample_at_the_bound_has_no_time_to_answer() {
    let steps = json!([{"text": "working"}, {"text": "working"}, {"text": "working"},
                       {"text": "done", "after_ms": 1}]);
    let answer = simulate(args(json!({"matches": "done"}), 2, 5), steps);
    assert_eq!(answer["call_starts_ms"], json!([0, 2000, 4000, 5000]));
    assert_eq!(answer["output"]["reason"], "timeout");
    assert_eq!(answer["output"]["last_observation"], "working");
    assert_eq!(answer["output"]["samples"], 3);
    assert_eq!(answer["result"]["probe"]["abandoned"], 1);
}

/// AURA `probe_that_hangs_after_a_sample_times_out_with_that_observation`:
/// a call still running at the bound is not followed by another sample.
#[test]
fn a_call_running_at_the_bound_ends_the_wait_with_the_earlier_sample() {
    let steps = json!([{"text": "working"}, {"hang": true}]);
    let answer = simulate(args(json!({"matches": "never"}), 1, 5), steps);
    assert_eq!(answer["call_starts_ms"], json!([0, 1000]));
    assert_eq!(answer["output"]["reason"], "timeout");
    assert_eq!(answer["output"]["last_observation"], "working");
    assert_eq!(answer["output"]["samples"], 1);
    assert_eq!(answer["output"]["elapsed_sec"], 5);
}

// --- 2. Clamp first, then refuse ----------------------------------------

/// AURA `poll_above_clamped_bound_reports_effective_bound_and_ceiling`:
/// poll_sec is checked against the clamped bound, in AURA's words.
#[test]
fn poll_sec_is_checked_against_the_clamped_bound() {
    let (field, rule, message) = refusal(args(json!({"matches": "x"}), 310, 400));
    assert_eq!(
        (field.as_str(), rule.as_str()),
        ("poll_sec", "interval_not_below_limit")
    );
    assert_eq!(
        message,
        "invalid arguments: poll_sec: poll_sec 310s must be strictly less than max_wait_sec 300s; the loop could \
         never take a second sample inside the bound (max_wait_sec is capped at 300s)"
    );
}

/// AURA `quiet_window_above_clamped_bound_reports_effective_bound_and_ceiling`.
#[test]
fn quiet_for_sec_is_checked_against_the_clamped_bound() {
    let (field, rule, message) = refusal(args(json!({"quiet_for_sec": 350}), 2, 400));
    assert_eq!(
        (field.as_str(), rule.as_str()),
        ("until.quiet_for_sec", "quiet_above_limit")
    );
    assert_eq!(
        message,
        "invalid arguments: until.quiet_for_sec: quiet_for_sec 350s exceeds max_wait_sec 300s; the condition could \
         never hold (max_wait_sec is capped at 300s)"
    );
}

/// AURA `parse_rejects_every_invalid_call`: each refusal, in AURA's words.
#[test]
fn every_invalid_call_is_refused_as_aura_refuses_it() {
    let probe = |tool: &str, args: Value| json!({"tool": tool, "args": args});
    let cases = [
        (
            json!({"probe": probe("", json!({})), "until": {"matches": "x"}}),
            "probe.tool",
            "empty",
            "probe.tool must be a non-empty tool name",
        ),
        (
            json!({"probe": probe("t", json!([1, 2])), "until": {"matches": "x"}}),
            "probe.args",
            "wrong_type",
            "probe.args must be a JSON object",
        ),
        (
            json!({"probe": probe("t", json!({})), "until": {"quiet_for_sec": 0}}),
            "until.quiet_for_sec",
            "not_positive",
            "until.quiet_for_sec must be at least 1",
        ),
        (
            json!({"probe": probe("t", json!({})), "until": {"matches": "x"}, "poll_sec": 0}),
            "poll_sec",
            "not_positive",
            "poll_sec must be at least 1",
        ),
        (
            json!({"probe": probe("t", json!({})), "until": {"matches": "x"}, "max_wait_sec": 0}),
            "max_wait_sec",
            "not_positive",
            "max_wait_sec must be at least 1",
        ),
        (
            json!({"probe": probe("t", json!({})), "until": {"matches": "x"}, "poll_sec": 120, "max_wait_sec": 120}),
            "poll_sec",
            "interval_not_below_limit",
            "poll_sec 120s must be strictly less than max_wait_sec 120s",
        ),
        (
            json!({"probe": probe("t", json!({})), "until": {"matches": "x"}, "poll_sec": 120, "max_wait_sec": 100}),
            "poll_sec",
            "interval_not_below_limit",
            "poll_sec 120s must be strictly less than max_wait_sec 100s",
        ),
        (
            json!({"probe": probe("t", json!({})), "until": {"quiet_for_sec": 200}, "max_wait_sec": 100}),
            "until.quiet_for_sec",
            "quiet_above_limit",
            "quiet_for_sec 200s exceeds max_wait_sec 100s",
        ),
    ];
    for (arguments, want_field, want_rule, want_message) in cases {
        let (field, rule, message) = refusal(arguments.clone());
        assert_eq!(
            (field.as_str(), rule.as_str()),
            (want_field, want_rule),
            "{arguments}"
        );
        assert!(
            message.starts_with(&format!("invalid arguments: {field}: {want_message}")),
            "{arguments}: {message}"
        );
    }
}

/// AURA decodes `poll_sec` and `max_wait_sec` as optional numbers with a
/// default: an explicit `null` is the same as leaving the field out, so the
/// defaults (2 s and 120 s) apply.
#[test]
fn null_seconds_take_auras_defaults() {
    let answer = simulate(
        json!({
            "probe": {"tool": "sample_probe", "args": {}},
            "until": {"matches": "done"},
            "poll_sec": null,
            "max_wait_sec": null
        }),
        texts(&["running", "done"]),
    );
    let result = &answer["output"];
    assert_eq!(result["reason"], "matched", "{answer}");
    assert_eq!(result["elapsed_sec"], 2, "the default interval: {answer}");
    assert_eq!(result["effective_max_wait_sec"], 120, "{answer}");
}

/// AURA checks the interval against the bound before the quiet window:
/// a call breaking both is refused for its interval.
#[test]
fn the_interval_is_checked_before_the_quiet_window() {
    let (field, _, _) = refusal(args(json!({"quiet_for_sec": 200}), 150, 100));
    assert_eq!(field, "poll_sec");
}

// --- 3. quiet_for_sec on the sample plan --------------------------------

/// AURA `settled_via_quiet_window`: outputs a, b, b, b, b with a 4 s
/// window at poll 2 s settle on the sample 4 s after the change.
#[test]
fn a_quiet_window_settles_on_the_sample_a_window_after_the_change() {
    let answer = simulate(
        args(json!({"quiet_for_sec": 4}), 2, 120),
        texts(&["a", "b", "b", "b", "b"]),
    );
    assert_eq!(answer["output"]["reason"], "settled");
    assert_eq!(answer["output"]["last_observation"], "b");
    assert_eq!(answer["output"]["samples"], 4);
    assert_eq!(answer["output"]["elapsed_sec"], 6);
}

/// AURA sleeps a whole interval after each answer, so a window of k
/// intervals settles k samples after the change however long each call
/// took. Here the call that saw the change answered half an interval late:
/// the window still holds on the sample two intervals later.
#[test]
fn an_exact_window_settles_after_as_many_intervals_whatever_the_calls_took() {
    let steps = json!([
        {"text": "a"},
        {"text": "b", "after_ms": 500},
        {"text": "b"},
        {"text": "b"},
        {"text": "b"}
    ]);
    let answer = simulate(args(json!({"quiet_for_sec": 2}), 1, 30), steps);
    assert_eq!(answer["output"]["reason"], "settled");
    assert_eq!(answer["output"]["samples"], 4);
    assert_eq!(answer["call_starts_ms"], json!([0, 1000, 2000, 3000]));
}

/// Answers "a", then "b" half a second late, then "b" at once.
struct SlowChange {
    calls: AtomicU64,
}

impl ToolCaller for SlowChange {
    fn call_tool(&self, _: &str, _: &Value, _: &ProbeContext) -> Result<String, ProbeError> {
        match self.calls.fetch_add(1, Ordering::SeqCst) {
            0 => Ok("a".into()),
            1 => {
                std::thread::sleep(Duration::from_millis(500));
                Ok("b".into())
            }
            _ => Ok("b".into()),
        }
    }
}

/// The same on real threads: the window is counted from the planned time
/// of the sample that saw the change (1 s), not from its late answer
/// (1.5 s), so it holds on the sample planned at 3 s, the fourth, and not
/// one poll later.
#[test]
fn on_the_engine_an_exact_window_settles_after_as_many_intervals() {
    let host = Host {
        tools: Some(Arc::new(SlowChange {
            calls: AtomicU64::new(0),
        })),
        ..Host::default()
    };
    let arguments = json!({"probe": {"tool": "status", "args": {}},
                           "until": {"quiet_for_sec": 2}, "poll_sec": 1, "max_wait_sec": 30});
    let out = call("aura/wait_for", &arguments, &host).unwrap();
    assert_eq!(out["reason"], "settled", "{out}");
    assert_eq!(out["samples"], 4, "{out}");
    assert_eq!(out["elapsed_sec"], 3, "{out}");
}

// --- 4. Regex flags ------------------------------------------------------

/// AURA compiles `regex::Regex::new(pattern)`: default flags, so `^` and
/// `$` match at the ends of the whole output, not at line ends.
#[test]
fn anchors_match_at_the_ends_of_the_whole_output() {
    let lines = texts(&["build\ndone\n"]);
    let at_line = simulate(args(json!({"matches": "^done$"}), 1, 3), lines.clone());
    assert_eq!(at_line["output"]["reason"], "timeout");
    let at_start = simulate(args(json!({"matches": "^build"}), 1, 3), lines.clone());
    assert_eq!(at_start["output"]["reason"], "matched");
    let not_at_line = simulate(args(json!({"not_matches": "^done"}), 1, 3), lines);
    assert_eq!(not_at_line["output"]["reason"], "matched");
    // A pattern may still ask for multi-line itself.
    let asked = simulate(
        args(json!({"matches": "(?m)^done$"}), 1, 3),
        texts(&["build\ndone\n"]),
    );
    assert_eq!(asked["output"]["reason"], "matched");
}

/// The flag covers every alternative of the pattern, not only the first.
#[test]
fn default_flags_hold_across_alternatives() {
    let answer = simulate(
        args(json!({"matches": "x|^done"}), 1, 3),
        texts(&["build\ndone"]),
    );
    assert_eq!(answer["output"]["reason"], "timeout");
}

/// AURA accepts an empty regex (`Regex::new("")`), which matches any
/// output.
#[test]
fn an_empty_regex_is_accepted_and_matches_anything() {
    let answer = simulate(args(json!({"matches": ""}), 1, 3), texts(&["anything"]));
    assert_eq!(answer["output"]["reason"], "matched");
    assert_eq!(answer["output"]["samples"], 1);
    let never = simulate(args(json!({"not_matches": ""}), 1, 3), texts(&["anything"]));
    assert_eq!(never["output"]["reason"], "timeout");
}

/// AURA's `InvalidPattern`: "condition regex is invalid: " and the regex
/// crate's own message.
#[test]
fn an_invalid_regex_is_refused_in_auras_words() {
    let (field, rule, message) = refusal(args(json!({"matches": "[unclosed"}), 1, 3));
    assert_eq!(
        (field.as_str(), rule.as_str()),
        ("until.matches", "invalid_regex")
    );
    assert!(
        message.starts_with(
            "invalid arguments: until.matches: condition regex is invalid: regex parse error:"
        ),
        "{message}"
    );
    assert!(message.contains("[unclosed"), "{message}");
}

// --- 5. Errors name the probe tool and the sample ------------------------

/// AURA `probe_call_failure_carries_tool_name_and_sample_index`.
#[test]
fn a_failed_call_names_the_probe_tool_and_the_sample() {
    let steps = json!([{"text": "still working"}, {"error": "probe transport dropped"}]);
    let answer = simulate(args(json!({"matches": "never_present"}), 2, 120), steps);
    assert_eq!(answer["tool_error"]["code"], "runtime");
    assert_eq!(
        answer["tool_error"]["message"],
        "probe tool 'sample_probe' failed on sample 2: probe transport dropped"
    );
}

/// AURA `hanging_probe_cannot_outrun_the_bound`: a probe that never
/// answers ends at the bound with `ProbeTimedOut`.
#[test]
fn a_probe_that_never_answers_is_reported_as_hanging() {
    let arguments = json!({"probe": {"tool": "hangs", "args": {}}, "until": {"matches": "done"},
                           "poll_sec": 1, "max_wait_sec": 5});
    let answer = simulate(arguments, json!([{"hang": true}]));
    assert_eq!(
        answer["tool_error"]["message"],
        "probe tool 'hangs' returned nothing within max_wait_sec 5s; the probe itself is \
         hanging, so no observation is available"
    );
}

/// Answers until its second call, which fails.
struct FailsOnSecondCall(AtomicU64);

impl ToolCaller for FailsOnSecondCall {
    fn call_tool(&self, _: &str, _: &Value, _: &ProbeContext) -> Result<String, ProbeError> {
        match self.0.fetch_add(1, Ordering::SeqCst) {
            0 => Ok("still working".into()),
            _ => Err(ProbeError::new("probe transport dropped")),
        }
    }
}

/// The same, with a real host tool on the engine.
#[test]
fn a_host_tool_failure_names_the_probe_tool_and_the_sample() {
    let host = Host {
        tools: Some(Arc::new(FailsOnSecondCall(AtomicU64::new(0)))),
        ..Host::default()
    };
    let arguments = json!({"probe": {"tool": "kubectl_get", "args": {}},
                           "until": {"matches": "done"}, "poll_sec": 1, "max_wait_sec": 30});
    let error = call("aura/wait_for", &arguments, &host).unwrap_err();
    assert_eq!(error.code(), "runtime");
    assert_eq!(
        error.to_string(),
        "probe tool 'kubectl_get' failed on sample 2: probe transport dropped"
    );
}

/// Always answers "working".
struct Working;

impl ToolCaller for Working {
    fn call_tool(&self, _: &str, _: &Value, _: &ProbeContext) -> Result<String, ProbeError> {
        Ok("working".into())
    }
}

/// On the engine, the sample at the bound has no time left: the wait
/// still ends at its bound, as a timeout.
#[test]
fn on_the_engine_a_wait_sampling_at_the_bound_ends_at_the_bound() {
    let host = Host {
        tools: Some(Arc::new(Working)),
        ..Host::default()
    };
    let arguments = json!({"probe": {"tool": "status", "args": {}},
                           "until": {"matches": "done"}, "poll_sec": 1, "max_wait_sec": 2});
    let started = Instant::now();
    let out = call("aura/wait_for", &arguments, &host).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out["reason"], "timeout");
    assert_eq!(out["elapsed_sec"], 2);
    let samples = out["samples"].as_u64().unwrap();
    assert!((2..=3).contains(&samples), "{out}");
}

/// Answers "working", but from the third call on blocks until the test
/// drops the sender: a host tool that ignores its budget.
struct BlocksAtTheBound {
    calls: AtomicU64,
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl ToolCaller for BlocksAtTheBound {
    fn call_tool(&self, _: &str, _: &Value, _: &ProbeContext) -> Result<String, ProbeError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= 2 {
            let _ = self.release.lock().unwrap().recv();
        }
        Ok("working".into())
    }
}

/// A host tool that does not return at the sample at the bound (it
/// ignores its empty budget) is abandoned there: the wait still ends at
/// its bound, as a timeout with the samples before. The call at the bound
/// has no time at all, so on a loaded machine it may be abandoned before a
/// worker begins it: the test tries again until one was begun.
#[test]
fn a_host_tool_blocking_at_the_bound_does_not_hold_the_wait() {
    let arguments = json!({"probe": {"tool": "status", "args": {}},
                           "until": {"matches": "done"}, "poll_sec": 1, "max_wait_sec": 2});
    for _ in 0..10 {
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        let tool = Arc::new(BlocksAtTheBound {
            calls: AtomicU64::new(0),
            release: std::sync::Mutex::new(blocked),
        });
        let host = Host {
            tools: Some(tool.clone()),
            ..Host::default()
        };
        let started = Instant::now();
        let out = call("aura/wait_for", &arguments, &host).unwrap();
        let took = started.elapsed();
        drop(release);
        // Generous: the bound is 2 s; before, the wait lasted as long as the call.
        assert!(took < Duration::from_secs(4), "{took:?}");
        assert_eq!(out["reason"], "timeout");
        assert_eq!(out["samples"], 2, "{out}");
        if tool.calls.load(Ordering::SeqCst) == 3 {
            return;
        }
    }
    panic!("in 10 runs, no call at the bound began before it was abandoned");
}

/// The same with the built-in `run_command`: the command run at the bound
/// has no time and is killed at once; that call is abandoned, and the
/// wait is a timeout, not a failed probe.
#[test]
fn a_command_run_at_the_bound_ends_the_wait_as_a_timeout() {
    let host = Host {
        grants: waitfor::grants::Grants::none()
            .commands(waitfor::grants::Commands::Only(vec!["true".into()])),
        ..Host::default()
    };
    let arguments = json!({"probe": {"tool": "run_command", "args": {"argv": ["true"]}},
                           "until": {"matches": "never"}, "poll_sec": 1, "max_wait_sec": 2});
    let out = call("aura/wait_for", &arguments, &host).unwrap();
    assert_eq!(out["reason"], "timeout", "{out}");
    assert_eq!(out["effective_max_wait_sec"], 2);
}

// --- 6. The tool definition and the decoder -------------------------------

/// AURA `test_wait_for_definition` and its `tool_definition`: the
/// description, `until` as a `oneOf` of three single-key objects, and a
/// probe that needs both `tool` and `args`.
#[test]
fn the_definition_follows_auras() {
    let def = definitions()
        .into_iter()
        .find(|d| d.profile == "aura/wait_for")
        .expect("the profile")
        .tool;
    assert_eq!(def["name"], "wait_for");
    let description = def["description"].as_str().unwrap();
    assert!(description
        .starts_with("Poll an MCP tool repeatedly until a stop condition you supply holds"));
    let schema = &def["inputSchema"];
    assert_eq!(schema["required"], json!(["probe", "until"]));
    assert_eq!(schema["additionalProperties"], false);
    let props = &schema["properties"];
    assert_eq!(props["probe"]["required"], json!(["tool", "args"]));
    assert_eq!(props["poll_sec"]["default"], 2);
    assert_eq!(props["max_wait_sec"]["default"], 120);
    let branches = props["until"]["oneOf"].as_array().unwrap();
    let keys: Vec<_> = branches
        .iter()
        .map(|b| b["required"][0].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["matches", "not_matches", "quiet_for_sec"]);
    for branch in branches {
        assert_eq!(branch["additionalProperties"], false);
    }
}

/// AURA's `ProbeSpec` has `args` without a default: a probe without it is
/// refused.
#[test]
fn a_probe_without_args_is_refused() {
    let (field, rule, _) =
        refusal(json!({"probe": {"tool": "status"}, "until": {"matches": "done"}}));
    assert_eq!(
        (field.as_str(), rule.as_str()),
        ("probe.args", "missing_field")
    );
}

/// AURA decodes seconds as `u64`: `2.0`, `1.5`, `-3` and `"2"` are refused.
#[test]
fn seconds_must_be_unsigned_integers() {
    for bad in [json!(2.0), json!(1.5), json!(-3), json!("2")] {
        let arguments = json!({"probe": {"tool": "t", "args": {}}, "until": {"matches": "x"},
                               "poll_sec": bad});
        let (field, rule, _) = refusal(arguments);
        assert_eq!(
            (field.as_str(), rule.as_str()),
            ("poll_sec", "wrong_type"),
            "{bad}"
        );
        let arguments =
            json!({"probe": {"tool": "t", "args": {}}, "until": {"quiet_for_sec": bad}});
        let (field, rule, _) = refusal(arguments);
        assert_eq!(
            (field.as_str(), rule.as_str()),
            ("until.quiet_for_sec", "wrong_type"),
            "{bad}"
        );
    }
}

/// AURA `multi_key_until_fails_wire_deserialization` and
/// `unknown_top_level_field_fails_wire_deserialization`.
#[test]
fn two_conditions_or_an_unknown_field_are_refused() {
    let probe = json!({"tool": "t", "args": {}});
    let (field, _, _) =
        refusal(json!({"probe": probe, "until": {"matches": "x", "quiet_for_sec": 5}}));
    assert_eq!(field, "until");
    let (field, rule, _) =
        refusal(json!({"probe": probe, "until": {"matches": "x"}, "poll_secs": 3}));
    assert_eq!(
        (field.as_str(), rule.as_str()),
        ("poll_secs", "unknown_field")
    );
}

// --- 7. Errors of AURA's probe dispatch and its notices -------------------

/// Answers every call with one byte over AURA's 256 KiB cap.
struct OverTheCap;

impl ToolCaller for OverTheCap {
    fn call_tool(&self, _: &str, _: &Value, _: &ProbeContext) -> Result<String, ProbeError> {
        Ok("x".repeat(256 * 1024 + 1))
    }
}

/// AURA `observation_over_the_cap_is_rejected`: an answer over 256 KiB
/// ends the wait with "probe tool 'T' returned B bytes on sample N, over
/// the 262144-byte cap; narrow the probe so it returns less".
#[test]
fn an_answer_over_the_cap_is_refused_in_auras_words() {
    let host = Host {
        tools: Some(Arc::new(OverTheCap)),
        ..Host::default()
    };
    let arguments = json!({"probe": {"tool": "dump_logs", "args": {}},
                           "until": {"matches": "done"}, "poll_sec": 1, "max_wait_sec": 30});
    let error = call("aura/wait_for", &arguments, &host).unwrap_err();
    assert_eq!(error.code(), "runtime");
    assert_eq!(
        error.to_string(),
        "probe tool 'dump_logs' returned 262145 bytes on sample 1, over the 262144-byte cap; \
         narrow the probe so it returns less"
    );
}

/// Has no tools at all; says so with `prefix` before [`UNKNOWN_TOOL`], as
/// a binding writes what a host's tool raised.
struct NoTools(&'static str);

impl ToolCaller for NoTools {
    fn call_tool(&self, _: &str, _: &Value, _: &ProbeContext) -> Result<String, ProbeError> {
        Err(ProbeError::new(format!("{}{UNKNOWN_TOOL}", self.0)))
    }
}

/// AURA's `UnknownProbeTool`: a probe tool no server exposes ends the
/// wait with "probe tool 'T' is not exposed by any connected MCP server",
/// whether the host's tools or the built-in ones are asked.
#[test]
fn an_unknown_probe_tool_is_not_exposed_by_any_server() {
    let arguments = json!({"probe": {"tool": "kubectl_get", "args": {}},
                           "until": {"matches": "done"}, "poll_sec": 1, "max_wait_sec": 30});
    let expected = "probe tool 'kubectl_get' is not exposed by any connected MCP server";
    for prefix in ["", "LookupError: ", "the tool threw: "] {
        let host = Host {
            tools: Some(Arc::new(NoTools(prefix))),
            ..Host::default()
        };
        let error = call("aura/wait_for", &arguments, &host).unwrap_err();
        assert_eq!(
            (error.code(), error.to_string().as_str()),
            ("runtime", expected)
        );
    }
    let error = call("aura/wait_for", &arguments, &Host::default()).unwrap_err();
    assert_eq!(
        (error.code(), error.to_string().as_str()),
        ("runtime", expected)
    );
    // Only the whole text says so.
    let host = Host {
        tools: Some(Arc::new(NoTools("the "))),
        ..Host::default()
    };
    let error = call("aura/wait_for", &arguments, &host).unwrap_err();
    assert!(error.to_string().contains("failed on sample 1"), "{error}");
}

/// AURA sends no progress of its own: the profile reports the seconds
/// elapsed out of the clamped bound, with no message, and logs nothing.
#[test]
fn progress_is_the_seconds_elapsed_of_the_clamped_bound() {
    let arguments = json!({"probe": {"tool": "status", "args": {}},
                           "until": {"matches": "done"}, "max_wait_sec": 400});
    let prepared = prepare("aura/wait_for", &arguments, &Host::default()).unwrap();
    let progress = waitfor::Progress {
        samples: 3,
        elapsed_ms: 4500,
        last_line: Some("working".into()),
    };
    assert_eq!(
        prepared.report.progress(&progress),
        [Notice::Progress(ToolProgress {
            progress: 4.5,
            total: Some(300.0),
            message: None
        })]
    );
    let args = json!({"probe": {"tool": "status", "args": {}}, "until": {"matches": "("}});
    let error = prepare("aura/wait_for", &args, &Host::default())
        .err()
        .unwrap();
    assert!(refusal_notices("aura/wait_for", &error).is_empty());
}

/// The built-in tools' arguments: a missing one is named as missing, an
/// empty `argv` as empty, one of another type as of the wrong type.
#[test]
fn built_in_tool_arguments_say_what_is_wrong_with_them() {
    use waitfor::profiles::{prepare, Host, ToolError};
    let rule = |tool: &str, args: Value| {
        let call = json!({"probe": {"tool": tool, "args": args}, "until": {"matches": "x"}});
        match prepare("aura/wait_for", &call, &Host::default()) {
            Err(ToolError::InvalidArguments(e)) => (
                e.field,
                serde_json::to_value(e.rule)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string(),
            ),
            other => panic!("{:?}", other.map(|_| ())),
        }
    };
    let field = |f: &str| f.to_string();
    assert_eq!(
        rule("run_command", json!({"name": "web"})),
        (field("probe.args.argv"), field("missing_field"))
    );
    assert_eq!(
        rule("run_command", json!({"argv": []})),
        (field("probe.args.argv"), field("empty"))
    );
    assert_eq!(
        rule("run_command", json!({"argv": "ls"})),
        (field("probe.args.argv"), field("wrong_type"))
    );
    assert_eq!(
        rule("read_file", json!({})),
        (field("probe.args.path"), field("missing_field"))
    );
    assert_eq!(
        rule("read_file", json!({"path": 7})),
        (field("probe.args.path"), field("wrong_type"))
    );
}
