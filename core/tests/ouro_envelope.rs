//! The wait/1 envelope: building, shape, rules, text and exit codes.

use serde_json::{json, Value};
use waitfor::ouro::{
    default_exit_table, is_wait, validate_wait, wait, wait_exit, wait_text, AxEvent,
    CommandTemplate, ExitTable, Fresh, NextStep, Wait, WaitError, WaitExits, WaitFields, WaitState,
    DEFAULT_WAIT_EXITS, WAIT_FLAGS, WAIT_STATES, WAIT_VERSION,
};

const SINCE: &str = "2026-01-01T00:00:00.000Z";
const UNTIL: &str = "2026-01-01T00:01:30.000Z";

fn event(kind: &str, summary: &str) -> AxEvent {
    AxEvent {
        cursor: "j1.10.1.1.2.0000000000000001".into(),
        kind: kind.into(),
        at: "2026-01-01T00:00:05.000Z".into(),
        by: "ci".into(),
        target: Some(json!({"kind": "build", "id": "7"})),
        summary: summary.into(),
        data: None,
    }
}

fn resume() -> NextStep {
    CommandTemplate::parse("waitfor events log.jsonl --cursor {cursor}")
        .unwrap()
        .step(Some("j1.10.1.1.2.0000000000000001"), None)
        .unwrap()
}

fn build(state: WaitState) -> Wait {
    let mut f = WaitFields::new("build 7", state, SINCE);
    match state {
        WaitState::Satisfied => f.events = vec![event("build.done", "build 7 passed")],
        WaitState::Waiting | WaitState::TimedOut => f.resume = Some(resume()),
        WaitState::Gone => f.reason = Some("build 7 was deleted".into()),
    }
    wait(f).unwrap()
}

fn as_json(w: &Wait) -> Value {
    serde_json::to_value(w).unwrap()
}

#[test]
fn every_state_builds_validates_and_round_trips() {
    for state in WaitState::ALL {
        let w = build(state);
        assert_eq!(w.ax, WAIT_VERSION);
        let v = as_json(&w);
        assert_eq!(v["state"], state.as_str());
        assert!(is_wait(&v), "{state:?}");
        let check = validate_wait(&v);
        assert!(check.ok, "{state:?}: {:?}", check.errors);
        let back: Wait = serde_json::from_value(v).unwrap();
        assert_eq!(back, w);
    }
    let names: Vec<&str> = WaitState::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(names, WAIT_STATES);
}

#[test]
fn json_field_names_are_the_seeds() {
    let mut w = build(WaitState::Satisfied);
    w.fresh = Some(Fresh {
        state: "current".into(),
        as_of: Some(SINCE.into()),
    });
    w.events[0].data = Some(json!({"exit": 0}).as_object().unwrap().clone());
    let v = as_json(&w);
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "ax", "for", "target", "state", "since", "until", "cursor", "events", "fresh",
            "resume", "reason", "callback", "next"
        ]
    );
    let event_keys: Vec<&String> = v["events"][0].as_object().unwrap().keys().collect();
    assert_eq!(
        event_keys,
        ["cursor", "type", "at", "by", "target", "summary", "data"]
    );
    assert_eq!(v["fresh"], json!({"state": "current", "asOf": SINCE}));
    assert_eq!(v["until"], Value::Null);
    assert_eq!(v["next"], json!([]));
}

#[test]
fn builder_refuses_what_validate_rejects() {
    for state in [WaitState::Waiting, WaitState::TimedOut] {
        let err = wait(WaitFields::new("x", state, SINCE)).unwrap_err();
        let WaitError::Invalid { errors } = err;
        assert_eq!(
            errors,
            [format!(
                "resume: a {} wait must say how to resume it",
                state.as_str()
            )]
        );
    }
    let err = wait(WaitFields::new("x", WaitState::Satisfied, SINCE)).unwrap_err();
    assert!(err.to_string().contains("events: a satisfied wait"));
}

#[test]
fn validate_rules_accept_and_reject() {
    // timed-out and waiting need resume; satisfied and gone do not.
    for state in ["timed-out", "waiting"] {
        let mut v = as_json(&build(WaitState::TimedOut));
        v["state"] = json!(state);
        assert!(validate_wait(&v).ok);
        v["resume"] = Value::Null;
        let check = validate_wait(&v);
        assert!(!check.ok);
        assert_eq!(
            check.errors,
            [format!("resume: a {state} wait must say how to resume it")]
        );
        assert!(is_wait(&v), "the rule is not part of the shape");
    }
    let mut gone = as_json(&build(WaitState::Gone));
    gone["resume"] = Value::Null;
    assert!(validate_wait(&gone).ok);

    // satisfied needs at least one event; other states may have none.
    let mut v = as_json(&build(WaitState::Satisfied));
    v["events"] = json!([]);
    let check = validate_wait(&v);
    assert_eq!(
        check.errors,
        ["events: a satisfied wait must carry at least one event"]
    );
    v["state"] = json!("gone");
    assert!(validate_wait(&v).ok);
}

#[test]
fn validate_shape_errors_name_the_field() {
    let good = as_json(&build(WaitState::Satisfied));
    let cases: Vec<(&str, Value, &str)> = vec![
        ("ax", json!("wait/2"), "ax: must be \"wait/1\""),
        ("for", json!(5), "for: must be a string"),
        ("state", json!("done"), "state: must be one of"),
        ("since", Value::Null, "since: must be a string"),
        ("until", json!(1), "until: must be a string or null"),
        ("cursor", json!([]), "cursor: must be a string or null"),
        ("reason", json!({}), "reason: must be a string or null"),
        (
            "callback",
            json!(true),
            "callback: must be a string or null",
        ),
        ("events", json!({}), "events: must be an array"),
        ("events", json!([1]), "events[0]: must be an object"),
        ("fresh", json!("now"), "fresh: must be an object or null"),
        (
            "fresh",
            json!({"state": "x"}),
            "fresh.asOf: must be a string or null",
        ),
        ("resume", json!("run me"), "resume: must be an object"),
        (
            "resume",
            json!({"command": ""}),
            "resume.command: must be a non-empty string",
        ),
        ("next", Value::Null, "next: must be an array"),
        (
            "next",
            json!([{"why": "y"}]),
            "next[0].command: must be a non-empty string",
        ),
        ("extra", json!(1), "extra: unknown field"),
    ];
    for (field, value, want) in cases {
        let mut v = good.clone();
        v[field] = value;
        let check = validate_wait(&v);
        assert!(!check.ok && !is_wait(&v), "{field} accepted");
        assert!(
            check.errors.iter().any(|e| e.starts_with(want)),
            "{field}: {:?} lacks {want:?}",
            check.errors
        );
    }
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("target");
    assert_eq!(
        validate_wait(&missing).errors,
        ["target: is required (may be null)"]
    );
    let mut bad_event = good.clone();
    bad_event["events"][0]["at"] = json!(3);
    bad_event["events"][0]["data"] = json!([1]);
    bad_event["events"][0].as_object_mut().unwrap().remove("by");
    let errors = validate_wait(&bad_event).errors;
    assert!(errors.contains(&"events[0].at: must be a string".to_string()));
    assert!(errors.contains(&"events[0].by: must be a string".to_string()));
    assert!(errors.contains(&"events[0].data: must be an object when present".to_string()));
    for not_object in [json!(null), json!([]), json!("wait/1"), json!(1)] {
        assert_eq!(
            validate_wait(&not_object).errors,
            ["wait: must be an object"]
        );
        assert!(!is_wait(&not_object));
    }
}

#[test]
fn an_unknown_key_of_a_megabyte_is_cut_in_its_error() {
    let key = "k".repeat(1 << 20);
    let mut v = as_json(&build(WaitState::Satisfied));
    v[key.as_str()] = json!(1);
    v["events"][0][key.as_str()] = json!(1);
    let errors = validate_wait(&v).errors;
    assert_eq!(errors.len(), 2, "{:.300?}", errors);
    for (error, path_bytes) in errors
        .iter()
        .zip([key.len(), "events[0].".len() + key.len()])
    {
        // Cut as a refused field is everywhere: its start, then its size.
        let tail = format!("... (cut; {path_bytes} bytes in all): unknown field");
        assert!(error.len() < 300 && error.ends_with(&tail), "{error:.300}");
    }
}

#[test]
fn text_for_each_state() {
    let satisfied = build(WaitState::Satisfied);
    assert_eq!(
        wait_text(&satisfied),
        "2026-01-01T00:00:05.000Z build.done by ci: build 7 passed"
    );

    let waiting = build(WaitState::Waiting);
    assert_eq!(
        wait_text(&waiting),
        "waiting for build 7: nothing yet\n\
         resume: waitfor events log.jsonl --cursor j1.10.1.1.2.0000000000000001"
    );

    let mut timed_out = build(WaitState::TimedOut);
    timed_out.until = Some(UNTIL.into());
    timed_out.fresh = Some(Fresh {
        state: "current".into(),
        as_of: Some(UNTIL.into()),
    });
    timed_out.resume = Some(resume().with_description("wait again from the same cursor"));
    assert_eq!(
        wait_text(&timed_out),
        format!(
            "nothing happened for build 7 before {UNTIL}\n\
             source: current as of {UNTIL}\n\
             resume: waitfor events log.jsonl --cursor j1.10.1.1.2.0000000000000001  \
             # wait again from the same cursor"
        )
    );
    timed_out.until = None;
    assert!(wait_text(&timed_out).starts_with("nothing happened for build 7 in time\n"));

    let mut gone = build(WaitState::Gone);
    assert_eq!(wait_text(&gone), "gone: build 7: build 7 was deleted");
    gone.events = vec![event("deleted", "build 7 deleted\nby admin")];
    gone.reason = None;
    gone.fresh = Some(Fresh {
        state: "missing".into(),
        as_of: None,
    });
    gone.next = vec![NextStep::new("waitfor runs list")];
    assert_eq!(
        wait_text(&gone),
        "2026-01-01T00:00:05.000Z deleted by ci: build 7 deleted by admin\n\
         gone: build 7: cannot happen any more\n\
         source: missing\n\
         next: waitfor runs list"
    );
}

#[test]
fn exit_codes_by_state() {
    let table = default_exit_table();
    let expect = [
        (WaitState::Satisfied, 0),
        (WaitState::Waiting, 0),
        (WaitState::TimedOut, 1),
        (WaitState::Gone, 1),
    ];
    for (state, code) in expect {
        assert_eq!(wait_exit(&build(state), &table, None), code, "{state:?}");
    }
    // A tool's own table and names.
    let table: ExitTable = [
        ("ok".to_string(), 0),
        ("error".to_string(), 1),
        ("timeout".to_string(), 124),
        ("not-found".to_string(), 4),
    ]
    .into();
    let names = WaitExits {
        timed_out: "timeout".into(),
        gone: "not-found".into(),
        ..DEFAULT_WAIT_EXITS
    };
    assert_eq!(
        wait_exit(&build(WaitState::TimedOut), &table, Some(&names)),
        124
    );
    assert_eq!(wait_exit(&build(WaitState::Gone), &table, Some(&names)), 4);
    assert_eq!(
        wait_exit(&build(WaitState::Satisfied), &table, Some(&names)),
        0
    );
    // A name missing from the table never reports success.
    let empty = ExitTable::new();
    assert_eq!(wait_exit(&build(WaitState::Satisfied), &empty, None), 1);
    let parsed: WaitExits = serde_json::from_value(json!(
        {"satisfied": "ok", "waiting": "ok", "timed-out": "timeout", "gone": "error"}
    ))
    .unwrap();
    assert_eq!(parsed.timed_out, "timeout");
}

#[test]
fn wait_flags_shape() {
    let flags = WAIT_FLAGS.as_object().unwrap();
    assert_eq!(flags.keys().collect::<Vec<_>>(), ["timeout", "cursor"]);
    for (name, placeholder) in [("timeout", "<duration>"), ("cursor", "<cursor>")] {
        let flag = &flags[name];
        assert_eq!(flag["type"], "string");
        assert_eq!(flag["placeholder"], placeholder);
        assert!(flag["description"].as_str().unwrap().len() > 10);
    }
    assert_eq!(
        flags["timeout"]["description"],
        "How long to wait, such as \"90s\" or \"5m\"; then it exits with a resume command."
    );
}

#[test]
fn resume_template_quotes_odd_cursors() {
    let t = CommandTemplate::parse("waitfor events 'my log.jsonl' --cursor {cursor}").unwrap();
    assert_eq!(
        t.render(Some("a'b; rm -rf ~")).unwrap(),
        r"waitfor events 'my log.jsonl' --cursor 'a'\''b; rm -rf ~'"
    );
    assert_eq!(
        t.render(Some("")).unwrap(),
        "waitfor events 'my log.jsonl' --cursor ''"
    );
}

#[test]
fn a_step_keeps_the_fields_of_its_tool() {
    let step = json!({"command": "ax wait --cursor c1", "description": "again", "tool": "ax", "args": ["--cursor", "c1"]});
    let mut f = WaitFields::new("build 7", WaitState::TimedOut, SINCE);
    f.resume = Some(serde_json::from_value(step.clone()).unwrap());
    f.next = vec![serde_json::from_value(step.clone()).unwrap()];
    let v = as_json(&wait(f).unwrap());
    assert_eq!((&v["resume"], &v["next"][0]), (&step, &step));
    assert!(validate_wait(&v).ok);
    let back: Wait = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(as_json(&back), v);
}

#[test]
fn wait_json_builds_as_the_seed_does_and_checks_nothing() {
    let built = waitfor::ouro::wait_json(json!({
        "own": 1, "reason": "deleted", "state": "gone", "for": "deploy", "since": SINCE, "ax": "wait/0",
    }))
    .unwrap();
    let keys: Vec<&str> = built
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "ax", "for", "target", "state", "since", "until", "cursor", "events", "fresh",
            "resume", "reason", "callback", "next", "own"
        ]
    );
    assert_eq!(
        (&built["ax"], &built["events"]),
        (&json!("wait/1"), &json!([]))
    );
    // A timed-out wait without resume is built; the rules are validate_wait's.
    let open = waitfor::ouro::wait_json(json!({"for": "x", "state": "timed-out", "since": SINCE}));
    assert!(!validate_wait(&open.unwrap()).ok);
    assert_eq!(waitfor::ouro::wait_json(json!([1])), None);
}

#[test]
fn wait_from_json_lists_the_rules_broken() {
    let gone = wait(WaitFields::new("deploy", WaitState::Gone, SINCE)).unwrap();
    let value = serde_json::to_value(&gone).unwrap();
    assert_eq!(Wait::from_json(value.clone()).unwrap(), gone);
    let Err(WaitError::Invalid { errors }) = Wait::from_json(json!({"ax": "wait/1"})) else {
        panic!("accepted")
    };
    assert!(!errors.is_empty());
    let mut open = value;
    open["state"] = json!("waiting");
    let Err(err) = Wait::from_json(open) else {
        panic!("accepted")
    };
    assert!(err.to_string().starts_with("invalid wait: resume"), "{err}");
}

#[test]
fn jsonl_errors_have_their_codes() {
    use waitfor::{ouro::JsonlError, ErrorCode, ErrorInfo};
    let replaced = JsonlError::Replaced {
        path: "log".into(),
        reason: "truncated".into(),
    };
    let io = JsonlError::Io {
        path: "log".into(),
        source: std::io::Error::other("gone"),
    };
    assert_eq!(ErrorInfo::from(&replaced).code, ErrorCode::SourceReplaced);
    assert_eq!(ErrorInfo::from(&io).code, ErrorCode::Io);
    assert_eq!(ErrorInfo::from(&io).message, "log: gone");
}
