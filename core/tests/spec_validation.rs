//! Every spec rule gives a typed error naming the field and the rule, and
//! the exported JSON Schemas agree with the parser.

use serde_json::{json, Value};
use waitfor::{Rule, Spec, RESULT_SCHEMA, SPEC_SCHEMA};

fn rejected(spec: Value) -> (String, Rule) {
    let err = Spec::from_value(&spec).expect_err(&format!("accepted {spec}"));
    assert!(!err.message.is_empty());
    (err.field, err.rule)
}

fn base() -> Value {
    json!({"until": {"matches": "ready"}, "interval_ms": 100, "max_wait_ms": 1000})
}

fn with(key: &str, value: Value) -> Value {
    let mut spec = base();
    spec[key] = value;
    spec
}

#[test]
fn each_rule_names_its_field() {
    let cases: Vec<(Value, &str, Rule)> = vec![
        (with("colour", json!("red")), "colour", Rule::UnknownField),
        (
            with("interval_ms", json!("fast")),
            "interval_ms",
            Rule::WrongType,
        ),
        (
            with("interval_ms", json!(0)),
            "interval_ms",
            Rule::NotPositive,
        ),
        (
            with("interval_ms", json!(-5)),
            "interval_ms",
            Rule::NotPositive,
        ),
        (
            with("interval_ms", json!(5)),
            "interval_ms",
            Rule::OutOfRange,
        ),
        (
            with("interval_ms", json!(1000)),
            "interval_ms",
            Rule::IntervalNotBelowLimit,
        ),
        (
            with("interval_ms", json!(2000)),
            "interval_ms",
            Rule::IntervalNotBelowLimit,
        ),
        (
            with("max_wait_ms", json!(0)),
            "max_wait_ms",
            Rule::NotPositive,
        ),
        (
            with("max_wait_ms", json!(-1)),
            "max_wait_ms",
            Rule::NotPositive,
        ),
        (
            with("until", json!({"quiet_for_ms": 0})),
            "until.quiet_for_ms",
            Rule::NotPositive,
        ),
        (
            with("until", json!({"quiet_for_ms": 1001})),
            "until.quiet_for_ms",
            Rule::QuietAboveLimit,
        ),
        (
            with("until", json!({"matches": ""})),
            "until.matches",
            Rule::Empty,
        ),
        (
            with("until", json!({"matches": {"text": "(", "regex": true}})),
            "until.matches",
            Rule::InvalidRegex,
        ),
        (
            with("until", json!({"patterns": []})),
            "until.patterns",
            Rule::Empty,
        ),
        (
            with("until", json!({"patterns": ["ok", ""]})),
            "until.patterns[1]",
            Rule::Empty,
        ),
        (
            with("until", json!({"patterns": ["ok", 3]})),
            "until.patterns[1]",
            Rule::WrongType,
        ),
        (with("until", json!({})), "until", Rule::Empty),
        (
            with("until", json!({"matches": "a", "exit_code": 0})),
            "until",
            Rule::Conflict,
        ),
        (
            with("until", json!({"eventually": "a"})),
            "until.eventually",
            Rule::UnknownField,
        ),
        (with("until", json!("ready")), "until", Rule::WrongType),
        (with("until", json!({"any": []})), "until.any", Rule::Empty),
        (
            with(
                "until",
                json!({"all": [{"matches": "a"}, {"quiet_for_ms": 0}]}),
            ),
            "until.all[1].quiet_for_ms",
            Rule::NotPositive,
        ),
        (
            with(
                "until",
                json!({"any": [{"not_matches": {"text": "[", "regex": true}}]}),
            ),
            "until.any[0].not_matches",
            Rule::InvalidRegex,
        ),
        (
            with("until", json!({"any_output": false})),
            "until.any_output",
            Rule::WrongType,
        ),
        (
            with("until", json!({"json": {"pointer": "status"}})),
            "until.json",
            Rule::Conflict,
        ),
        (
            with(
                "until",
                json!({"json": {"pointer": "status", "exists": true}}),
            ),
            "until.json.pointer",
            Rule::InvalidPointer,
        ),
        (
            with(
                "until",
                json!({"json": {"pointer": "/a~2b", "exists": true}}),
            ),
            "until.json.pointer",
            Rule::InvalidPointer,
        ),
        (
            with(
                "until",
                json!({"json": {"pointer": "/a", "exists": true, "equals": 1}}),
            ),
            "until.json",
            Rule::Conflict,
        ),
        (
            with("until", json!({"exit_code": "zero"})),
            "until.exit_code",
            Rule::WrongType,
        ),
        (
            with("stop", json!(["ok", {"text": "x", "bogus": 1}])),
            "stop[1]",
            Rule::WrongType,
        ),
        (
            with("stop", json!([{"text": "(", "regex": true}])),
            "stop[0]",
            Rule::InvalidRegex,
        ),
        (with("view", json!("partial")), "view", Rule::UnknownField),
        (
            with("probe", json!({"command": {"argv": []}})),
            "probe.command.argv",
            Rule::Empty,
        ),
        (
            with("probe", json!({"command": {"argv": ["ls"], "shell": true}})),
            "probe.command.shell",
            Rule::UnknownField,
        ),
        (
            with("probe", json!({"file": {"path": ""}})),
            "probe.file.path",
            Rule::Empty,
        ),
        (
            with("probe", json!({"socket": {}})),
            "probe",
            Rule::UnknownField,
        ),
        (
            with("backoff", json!({"factor": 0.5, "max_interval_ms": 500})),
            "backoff.factor",
            Rule::OutOfRange,
        ),
        (
            with("backoff", json!({"factor": 2, "max_interval_ms": 50})),
            "backoff.max_interval_ms",
            Rule::OutOfRange,
        ),
        (
            with("on_probe_error", json!({"tolerate": -1})),
            "on_probe_error.tolerate",
            Rule::OutOfRange,
        ),
        (
            with("on_probe_error", json!("retry")),
            "on_probe_error",
            Rule::UnknownField,
        ),
        (
            with("output_cap_bytes", json!(0)),
            "output_cap_bytes",
            Rule::NotPositive,
        ),
        (
            with("tail", json!({"lines": 0, "bytes": 10})),
            "tail.lines",
            Rule::NotPositive,
        ),
        (
            with("progress_every_ms", json!(0)),
            "progress_every_ms",
            Rule::NotPositive,
        ),
        (
            with("resume", json!("not-a-token")),
            "resume",
            Rule::InvalidResume,
        ),
        (
            with("probe", json!({"command": {"argv": ["echo", "a\0b"]}})),
            "probe.command.argv[1]",
            Rule::ContainsNul,
        ),
        (
            with("probe", json!({"command": {"argv": ["pwd"], "cwd": "/\0"}})),
            "probe.command.cwd",
            Rule::ContainsNul,
        ),
        (
            with("probe", json!({"file": {"path": "/tmp/a\0b"}})),
            "probe.file.path",
            Rule::ContainsNul,
        ),
        (
            with("probe", json!({"tmux": {"target": "main\0:0"}})),
            "probe.tmux.target",
            Rule::ContainsNul,
        ),
        (
            with("probe", json!({"tmux": {"socket_name": "w\0rk"}})),
            "probe.tmux.socket_name",
            Rule::ContainsNul,
        ),
        (json!({"interval_ms": 100}), "until", Rule::MissingField),
        (json!([1, 2]), "", Rule::WrongType),
    ];
    for (spec, field, rule) in cases {
        assert_eq!(
            rejected(spec.clone()),
            (field.to_string(), rule),
            "for {spec}"
        );
    }
}

#[test]
fn invalid_json_is_its_own_rule() {
    let err = Spec::from_json("{\"until\": ").unwrap_err();
    assert_eq!(err.rule, Rule::InvalidJson);
}

#[test]
fn huge_patterns_are_refused() {
    let big = "x".repeat(waitfor::limits::MAX_PATTERN_BYTES + 1);
    let (field, rule) = rejected(with("until", json!({ "matches": big })));
    assert_eq!((field.as_str(), rule), ("until.matches", Rule::OutOfRange));
}

#[test]
fn more_patterns_than_a_wait_could_compile_are_refused_at_once() {
    let list = |n: usize| -> Vec<String> { (0..n).map(|i| format!("p{i}")).collect() };
    let max = waitfor::limits::MAX_PATTERNS;
    let nested = json!({"any": [{"patterns": list(max)}, {"matches": "one more"}]});
    let (field, rule) = rejected(with("until", nested));
    assert_eq!((field.as_str(), rule), ("until", Rule::OutOfRange));
    let mut split = with("until", json!({ "patterns": list(max / 2) }));
    split["stop"] = json!(list(max / 2 + 1));
    let (field, rule) = rejected(split);
    assert_eq!((field.as_str(), rule), ("stop", Rule::OutOfRange));
    let mut full = with("until", json!({ "patterns": list(max / 2) }));
    full["stop"] = json!(list(max / 2));
    assert!(
        Spec::from_value(&full).is_ok(),
        "the limit itself is allowed"
    );
}

#[test]
fn native_specs_are_validated_too() {
    use std::time::Duration;
    use waitfor::{Condition, Pattern};
    let spec = Spec::new(Condition::Matches(Pattern::regex("a(")));
    assert_eq!(spec.validate().unwrap_err().rule, Rule::InvalidRegex);
    let spec =
        Spec::new(Condition::QuietFor(Duration::from_secs(60))).max_wait(Duration::from_secs(30));
    assert_eq!(spec.validate().unwrap_err().rule, Rule::QuietAboveLimit);
}

fn validator(schema: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(schema).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn the_spec_schema_accepts_what_the_parser_accepts() {
    let schema = validator(SPEC_SCHEMA);
    let accepted = [
        base(),
        json!({"until": {"any": [{"patterns": ["a", {"text": "b.*", "regex": true}]}, {"quiet_for_ms": 500}]},
               "stop": ["error"], "view": "fresh", "regex": false, "case_sensitive": false,
               "probe": {"command": {"argv": ["make"], "cwd": "/tmp", "stderr": false}},
               "backoff": {"factor": 1.5, "max_interval_ms": 5000}, "on_probe_error": {"tolerate": 3},
               "output_cap_bytes": 1024, "tail": {"lines": 5, "bytes": 100}, "progress_every_ms": 250}),
        json!({"until": {"json": {"pointer": "/status", "equals": null}}, "probe": {"file": {"path": "/var/log/x"}}}),
        json!({"until": {"all": [{"exit_code": 0}, {"not_matches": "Pending"}]}, "on_probe_error": "fail"}),
        json!({"until": {"quiet_for_ms": 2000}, "sample_at_deadline": true, "quiet_on_plan": true,
               "probe": {"tmux": {"session_name": "build", "pick": "first", "freshness": "by_content"}}}),
    ];
    for spec in accepted {
        assert!(schema.is_valid(&spec), "schema rejects {spec}");
        Spec::from_value(&spec).unwrap_or_else(|e| panic!("parser rejects {spec}: {e}"));
    }
    let refused = [
        with("colour", json!(1)),
        with("interval_ms", json!(5)),
        with("until", json!({})),
        with("until", json!({"matches": "a", "exit_code": 0})),
        with("until", json!({"json": {"pointer": "/a"}})),
        with("probe", json!({"command": {"argv": []}})),
        with("stop", json!([""])),
        with("sample_at_deadline", json!("yes")),
        with("quiet_on_plan", json!(null)),
        with("probe", json!({"tmux": {"pick": "last"}})),
        with("probe", json!({"tmux": {"freshness": "by_time"}})),
        with("probe", json!({"command": {"argv": ["make"], "cwd": null}})),
        with("probe", json!({"tmux": {"pane_id": null}})),
        with("probe", json!({"tmux": {"socket_name": null}})),
    ];
    for spec in refused {
        assert!(!schema.is_valid(&spec), "schema accepts {spec}");
        assert!(Spec::from_value(&spec).is_err(), "parser accepts {spec}");
    }
}

#[test]
fn results_match_the_result_schema() {
    let schema = validator(RESULT_SCHEMA);
    for vector in [
        json!({"spec": {"until": {"matches": "ok"}, "interval_ms": 100}, "script": {"steps": [{"text": "ok"}]}}),
        json!({"spec": {"until": {"matches": "ok"}, "interval_ms": 100, "view": "fresh"}, "script": {"steps": [{"text": "a"}]}}),
        json!({"spec": {"until": {"matches": "ok"}, "interval_ms": 100}, "script": {"steps": [{"error": "boom"}]}}),
    ] {
        let answer = waitfor::vectors::run(&vector).unwrap();
        let result = &answer["result"];
        let errors: Vec<String> = schema.iter_errors(result).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{result}: {errors:?}");
    }
}

/// What passes the check compiles: an unknown Unicode class (`\\pa`) is
/// refused when the spec is read, not when its wait compiles it.
#[test]
fn an_unknown_unicode_class_is_refused_with_the_spec() {
    let err =
        Spec::from_json(r#"{"until": {"matches": {"text": "x\\pa", "regex": true}}}"#).unwrap_err();
    assert_eq!(err.rule, waitfor::Rule::InvalidRegex, "{err}");
    assert!(err.message.contains("Unicode property not found"), "{err}");
}

#[test]
fn the_originals_behaviours_are_spec_options_off_by_default() {
    use waitfor::tmux::{Freshness, PanePick};
    use waitfor::ProbeSpec;
    let plain =
        Spec::from_value(&json!({"until": {"matches": "a"}, "probe": {"tmux": {}}})).unwrap();
    assert!(!plain.sample_at_deadline && !plain.quiet_on_plan);
    let Some(ProbeSpec::Tmux {
        pick, freshness, ..
    }) = plain.probe
    else {
        panic!("a tmux probe")
    };
    assert_eq!((pick, freshness), (PanePick::Active, Freshness::ByRow));
    let asked = Spec::from_value(&json!({
        "until": {"quiet_for_ms": 2000}, "max_wait_ms": 5000,
        "sample_at_deadline": true, "quiet_on_plan": true,
        "probe": {"tmux": {"pick": "first", "freshness": "by_content"}}
    }))
    .unwrap();
    assert!(asked.sample_at_deadline && asked.quiet_on_plan);
    let Some(ProbeSpec::Tmux {
        pick, freshness, ..
    }) = asked.probe
    else {
        panic!("a tmux probe")
    };
    assert_eq!((pick, freshness), (PanePick::First, Freshness::ByContent));
}

/// The time this thread has run on a core, from the kernel's scheduler
/// statistics (Linux); `None` where there are none.
fn thread_cpu_time() -> Option<std::time::Duration> {
    let stats = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stats.split_whitespace().next()?.parse().ok()?;
    Some(std::time::Duration::from_nanos(nanos))
}

/// Translating a class set under case folding takes milliseconds a class;
/// validating (on the host's thread, before the deadline runs) only parses
/// and looks up the class names. When it translated, 64 KiB of these took
/// 17 s to validate, and the wait ended that long past its 100 ms deadline.
#[test]
fn validating_costly_class_sets_takes_time_linear_in_the_text() {
    use std::time::{Duration, Instant};
    let costly = r"(?i)[\p{Any}--\p{L}--\p{N}]";
    let count = waitfor::limits::MAX_PATTERN_BYTES / (costly.len() + 4);
    let many: Vec<Value> = (0..count)
        .map(|i| json!({"text": format!("{costly}{i}"), "regex": true}))
        .collect();
    let started = Instant::now();
    let cpu_before = thread_cpu_time();
    let spec = Spec::from_value(
        &json!({"until": {"patterns": many}, "max_wait_ms": 100, "interval_ms": 20}),
    )
    .expect("valid");
    let result = waitfor::Engine::global()
        .wait(
            spec,
            waitfor::probe_fn(|_| Ok(waitfor::Observation::text("x"))),
        )
        .unwrap();
    // The work is this thread's: timed by its CPU time (the wall clock's
    // where the system keeps none), to which a loaded machine keeping it
    // waiting for a core adds nothing. About 1.1 s in a debug build (the
    // wall clock's 1.6 s idle failed a 2 s bound under load); the old
    // code took 17 s.
    let ran = match (cpu_before, thread_cpu_time()) {
        (Some(before), Some(after)) => after.saturating_sub(before),
        _ => started.elapsed(),
    };
    assert!(
        ran < Duration::from_secs(5),
        "validating and waiting took {ran:?} of this thread's time"
    );
    // And the wait was not held elsewhere for as long (generous: the wall
    // clock's, on a loaded machine).
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(result.outcome, waitfor::Outcome::Timeout, "{result:?}");
}

/// Ignoring case, one pattern of 64 KiB of `\p{Any}` took a minute to
/// compile, on a worker that went on past the wait's deadline (no compile
/// can be stopped midway): it is refused before the wait, from its parse.
#[test]
fn a_pattern_whose_classes_take_long_to_fold_is_refused_before_its_wait() {
    let long = r"\p{Any}".repeat(waitfor::limits::MAX_PATTERN_BYTES / 8);
    for (pattern, field) in [
        (
            json!({"text": long, "regex": true, "case_sensitive": false}),
            "until.matches",
        ),
        (
            json!({"text": format!("(?i){long}"), "regex": true}),
            "until.matches",
        ),
    ] {
        let err = Spec::from_value(&json!({"until": {"matches": pattern}})).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.rule),
            (field, Rule::InvalidRegex),
            "{err}"
        );
        assert!(err.message.contains("million characters"), "{err}");
    }
    // Matching case, nothing is folded: the pattern is the compile's to judge.
    assert!(
        Spec::from_value(&json!({"until": {"matches": {"text": long, "regex": true}}})).is_ok()
    );
}

#[test]
fn a_pattern_only_its_translation_refuses_fails_its_wait_not_the_spec() {
    // (?-u) bytes outside UTF-8: found by the compile, in the wait's time.
    let spec = Spec::from_value(&json!({
        "until": {"matches": {"text": r"(?-u)\xFF", "regex": true}}, "max_wait_ms": 5000
    }))
    .expect("parsed and its classes found");
    let result = waitfor::Engine::global()
        .wait(
            spec,
            waitfor::probe_fn(|_| Ok(waitfor::Observation::text("x"))),
        )
        .unwrap();
    assert_eq!(result.outcome, waitfor::Outcome::Error, "{result:?}");
    let error = result.error.unwrap();
    assert!(error.contains("until.matches"), "{error}");
}

/// serde quotes a refused value whole, and names types as Rust does: a
/// megabyte where a number belongs made a megabyte of error, saying
/// "expected i64".
#[test]
fn a_wrong_type_is_named_in_words_and_its_value_quoted_cut() {
    let huge = "x".repeat(1 << 20);
    let err =
        Spec::from_value(&json!({"until": {"matches": "x"}, "interval_ms": huge})).unwrap_err();
    assert_eq!(
        (err.field.as_str(), err.rule),
        ("interval_ms", Rule::WrongType)
    );
    assert!(err.message.len() < 300, "{} bytes", err.message.len());
    assert!(
        err.message.ends_with("(cut), expected a whole number"),
        "{}",
        err.message
    );
    let err =
        Spec::from_value(&json!({"until": {"matches": "x"}, "max_wait_ms": 1.5})).unwrap_err();
    assert_eq!(
        err.message,
        "invalid type: floating point `1.5`, expected a whole number"
    );
    // A whole number out of the type's range says the range.
    let err =
        Spec::from_value(&json!({"until": {"matches": "x"}, "interval_ms": u64::MAX})).unwrap_err();
    assert_eq!(
        (err.field.as_str(), err.rule),
        ("interval_ms", Rule::OutOfRange)
    );
    assert!(
        err.message
            .ends_with("expected a whole number from -9223372036854775808 to 9223372036854775807"),
        "{}",
        err.message
    );
    // A condition's keys are quoted cut too.
    let key = "k".repeat(1 << 20);
    let err = Spec::from_value(&json!({"until": {"matches": "x", key: 1}})).unwrap_err();
    assert!(err.message.len() < 300, "{} bytes", err.message.len());
}

/// serde_json refuses a lone UTF-16 surrogate escape (and a bad escape, a
/// raw control character) inside a string as text that is not JSON; the
/// error named no field, where every other refused value is named.
#[test]
fn a_fault_inside_a_string_names_the_string() {
    let cases = [
        (r#"{"until": {"matches": "\ud800"}}"#, "until.matches"),
        (r#"{"until": {"matches": "ab\udc00"}}"#, "until.matches"),
        (r#"{"until": {"matches": "\ud800\u0041"}}"#, "until.matches"),
        (
            "{\"until\": {\"any\": [{\"matches\": \"x\"},\n {\"matches\": \"\\ud800\"}]}}",
            "until.any[1].matches",
        ),
        (
            r#"{"stop": ["a", "b,]}[", "c\ud800"], "until": {}}"#,
            "stop[2]",
        ),
        (
            r#"{"until": {"matches": "x"}, "k\"\u00e9\ud83d\ude00": {"\udfff": 1}}"#,
            "k\"é😀.\u{fffd}",
        ),
        (r#"{"until": {"matches": "\x"}}"#, "until.matches"),
        ("{\"until\": {\"matches\": \"a\x1bb\"}}", "until.matches"),
        ("{\"until\": {\"ma\rtches\": \"a\"}}", "until.ma\rtches"),
        (r#""\ud800""#, ""),
    ];
    for (text, field) in cases {
        let err = Spec::from_json(text).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.rule),
            (field, Rule::InvalidJson),
            "for {text}: {err}"
        );
        assert!(err.message.starts_with("not JSON: "), "{err}");
        assert!(err.message.contains(" at line "), "{err}");
    }
    let err = Spec::from_json(r#"{"until": {"matches": "\ud800"}}"#).unwrap_err();
    assert!(err.message.contains("\\uD800 to \\uDFFF"), "{err}");
    // A fault outside any string names no field, but says where it is.
    for text in [
        r#"{"until": {"matches": "x"} "a": 1}"#,
        r#"{"until": "#,
        "{\"a\": \"\\ud800",
    ] {
        let err = Spec::from_json(text).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.rule),
            ("", Rule::InvalidJson),
            "{err}"
        );
        assert!(err.message.contains(" at line 1 column "), "{err}");
    }
}

/// An unknown key is the last step of its field's path, and an agent's
/// key may be a megabyte: the field was that megabyte, whole, through
/// every door (and again in the message, which repeats the field).
#[test]
fn an_unknown_key_of_a_megabyte_is_named_cut() {
    let key = "x".repeat(1 << 20);
    let specs = [
        (json!({"until": {"matches": "x"}, key.clone(): 1}), ""),
        (
            json!({"until": {"matches": "x"}, "tail": {"lines": 1, "bytes": 1, key.clone(): 1}}),
            "tail.",
        ),
        (
            json!({"until": {"any": [{"matches": "x"}, {key.clone(): 1}]}}),
            "until.any[1].",
        ),
    ];
    for (spec, path) in specs {
        let err = Spec::from_value(&spec).unwrap_err();
        assert_eq!(err.rule, Rule::UnknownField, "{err}");
        assert!(err.field.len() < 300, "{} bytes", err.field.len());
        assert!(
            err.field.starts_with(&format!("{path}xxxx")),
            "{}",
            err.field
        );
        let cut = format!("... (cut; {} bytes in all)", path.len() + key.len());
        assert!(err.field.ends_with(&cut), "{}", err.field);
        assert!(
            err.to_string().len() < 600,
            "{} bytes",
            err.to_string().len()
        );
    }
    // A field of an ordinary length is whole.
    let err = Spec::from_value(&json!({"until": {"matches": "x"}, "colour": 1})).unwrap_err();
    assert_eq!(err.field, "colour");
}

/// The tool profiles check their arguments' keys themselves: an unknown
/// key of a megabyte is named cut there too, in the field and the message.
#[test]
fn a_tool_call_with_an_unknown_key_of_a_megabyte_is_refused_cut() {
    use waitfor::profiles::{prepare, Host, ToolError};
    let key = "x".repeat(1 << 20);
    let calls = [
        (
            "aura/wait_for",
            json!({"probe": {"tool": "t", "args": {}}, "until": {"matches": "x"}, key.clone(): 1}),
        ),
        ("ouro/wait", json!({"path": "/x", key.clone(): 1})),
    ];
    for (tool, args) in calls {
        let Err(ToolError::InvalidArguments(err)) = prepare(tool, &args, &Host::default()) else {
            panic!("{tool} took an unknown key");
        };
        assert_eq!(err.rule, Rule::UnknownField, "{tool}");
        assert!(err.field.starts_with("xxxx"), "{tool}: {}", err.field);
        assert!(
            err.field.ends_with("(cut; 1048576 bytes in all)"),
            "{tool}: {}",
            err.field
        );
        assert!(
            err.to_string().len() < 600,
            "{tool}: {} bytes",
            err.to_string().len()
        );
    }
}

#[test]
fn a_rule_reads_back_from_its_name() {
    for name in [
        "unknown_field",
        "wrong_type",
        "out_of_range",
        "invalid_json",
    ] {
        let rule: waitfor::Rule = serde_json::from_value(serde_json::json!(name)).unwrap();
        assert_eq!(serde_json::to_value(rule).unwrap(), name);
    }
    assert!(serde_json::from_value::<waitfor::Rule>(serde_json::json!("no_such_rule")).is_err());
}
