//! [`HostStepper`]: the event wait for a host that speaks JSON and counts
//! milliseconds. Its refusals name the host's own fields, and its actions
//! and envelope are the [`waitfor::ouro::Stepper`]'s, as JSON.

use serde_json::{json, Value};
use waitfor::ouro::{validate_wait, HostStepper};
use waitfor::{ErrorCode, ErrorInfo, Rule};

fn args(over: Value) -> Value {
    let mut args = json!({"for": "build 7", "timeoutMs": 2500, "intervalMs": 1000});
    args.as_object_mut()
        .unwrap()
        .extend(over.as_object().unwrap().clone());
    args
}

fn refused(err: ErrorInfo, field: &str, rule: Rule) {
    assert_eq!(err.code, ErrorCode::InvalidArguments, "{err:?}");
    assert_eq!(
        (err.field.as_deref(), err.rule),
        (Some(field), Some(rule)),
        "{err:?}"
    );
    assert!(err.message.starts_with(&format!("{field}: ")), "{err:?}");
}

#[test]
fn options_are_refused_under_the_hosts_names() {
    let start = |over| HostStepper::new(&args(over), 0.0).err().unwrap();
    refused(start(json!({"for": null})), "for", Rule::WrongType);
    refused(start(json!({"for": 7})), "for", Rule::WrongType);
    refused(start(json!({"cursor": 5})), "cursor", Rule::WrongType);
    refused(start(json!({"callback": []})), "callback", Rule::WrongType);
    // Above 2^53 - 1 ms, every host's longest duration, as no limit at all.
    let over = json!(9_007_199_254_740_992_u64);
    for timeout in [
        json!(-1),
        json!("NaN"),
        json!(null),
        json!("100"),
        json!(1e300),
        over,
    ] {
        refused(
            start(json!({"timeoutMs": timeout})),
            "timeoutMs",
            Rule::OutOfRange,
        );
    }
    let short = start(json!({"timeoutMs": 19}));
    assert!(short.message.contains("at least 20 ms"), "{short:?}");
    refused(short, "timeoutMs", Rule::OutOfRange);
    for interval in [json!(-5), json!(1e300)] {
        refused(
            start(json!({"intervalMs": interval})),
            "intervalMs",
            Rule::OutOfRange,
        );
    }
    let longest = args(json!({"timeoutMs": 9_007_199_254_740_991_u64}));
    let (_, first) = HostStepper::new(&longest, 0.0).unwrap();
    assert_eq!(first["ms"], json!(9_007_199_254_740_991.0));
    let err = HostStepper::new(&json!(5), 0.0).err().unwrap();
    refused(err, "options", Rule::WrongType);
    for now in [f64::NAN, f64::INFINITY, -1.0, 1e300] {
        let err = HostStepper::new(&args(json!({})), now).err().unwrap();
        refused(err, "now", Rule::OutOfRange);
    }
}

#[test]
fn a_read_and_the_steps_returned_are_refused_unless_they_are_what_the_seed_says() {
    for answer in [
        json!(42),
        Value::Null,
        json!("events"),
        json!({"events": "e1"}),
    ] {
        let (mut stepper, _) = HostStepper::new(&args(json!({})), 0.0).unwrap();
        let err = stepper.step(1.0, "read", Some(answer)).err().unwrap();
        refused(err, "read", Rule::WrongType);
    }
    let (mut stepper, _) = HostStepper::new(&args(json!({})), 0.0).unwrap();
    stepper.step(0.0, "read", None).err().unwrap();
    let (mut stepper, _) = HostStepper::new(&args(json!({})), 0.0).unwrap();
    let empty = json!({"events": [], "cursor": "c1"});
    stepper.step(0.0, "read", Some(empty.clone())).unwrap();
    // Asleep, no read is in flight: an answer now is refused.
    let err = stepper.step(1.0, "read", Some(empty)).err().unwrap();
    refused(err, "read", Rule::Conflict);
    stepper.step(2.0, "cancel", None).unwrap();
    let err = stepper
        .finish(&json!({"resume": "not a step"}))
        .err()
        .unwrap();
    refused(err, "resume", Rule::WrongType);
    let err = stepper
        .finish(&json!({"resume": {"command": "x"}, "next": null}))
        .err()
        .unwrap();
    refused(err, "next", Rule::WrongType);
}

#[test]
fn a_wait_runs_to_satisfied_with_the_steps_the_host_returned() {
    let event = json!({"cursor": "c2", "type": "build.done", "at": "2026-01-01T00:00:00Z",
        "by": "ci", "target": null, "summary": "passed"});
    let target = json!({"kind": "build", "id": "7"});
    let over = json!({"target": target, "cursor": "c0", "callback": "https://example.invalid/h"});
    let (mut stepper, first) = HostStepper::new(&args(over), 1000.0).unwrap();
    assert_eq!(first, json!({"do": "read", "cursor": "c0", "ms": 2500.0}));
    let read = json!({"events": [], "cursor": "c1"});
    let sleep = stepper.step(1000.5, "read", Some(read)).unwrap();
    assert_eq!(sleep, json!({"do": "sleep", "ms": 999.5}));
    let again = stepper.step(2000.0, "tick", None).unwrap();
    assert_eq!(again, json!({"do": "read", "cursor": "c1", "ms": 1500.0}));
    let read = json!({"events": [event], "cursor": "c2"});
    let done = stepper.step(2000.0, "read", Some(read)).unwrap();
    assert_eq!(
        done,
        json!({"do": "done", "resume": true, "cursor": "c2", "next": [event]})
    );
    let step = json!({"command": "ax show c2", "tool": "ax"});
    let returned = json!({"resume": {"command": "again c2"}, "next": [step]});
    let wait = stepper.finish(&returned).unwrap();
    assert_eq!(wait["state"], "satisfied");
    assert_eq!(
        (&wait["since"], &wait["until"]),
        (
            &json!("1970-01-01T00:00:01.000Z"),
            &json!("1970-01-01T00:00:02.000Z")
        )
    );
    assert_eq!((&wait["target"], &wait["next"]), (&target, &json!([step])));
    assert_eq!(wait["callback"], "https://example.invalid/h");
    assert!(validate_wait(&wait).ok, "{wait}");
}

#[test]
fn a_timed_out_wait_has_no_next_and_is_invalid_without_its_resume() {
    let (mut stepper, _) = HostStepper::new(&args(json!({})), 0.0).unwrap();
    let read = json!({"events": [], "cursor": null});
    stepper.step(0.0, "read", Some(read)).unwrap();
    let done = stepper.step(3000.0, "tick", None).unwrap();
    assert_eq!(
        done,
        json!({"do": "done", "resume": true, "cursor": null, "next": null})
    );
    let err = stepper.finish(&json!({})).err().unwrap();
    assert_eq!(err.code, ErrorCode::InvalidWait, "{err:?}");
}
