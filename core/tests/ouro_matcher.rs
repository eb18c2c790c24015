//! The declarative event matcher: each condition, and spec errors naming
//! the field.

use serde_json::{json, Value};
use waitfor::ouro::{AxEvent, EventMatcher, MatchError};

fn event(v: Value) -> AxEvent {
    let mut base = json!({"cursor": "c", "type": "build.done", "at": "t", "by": "ci",
        "target": {"kind": "build", "id": "7"}, "summary": "Build 7 passed (a.b)",
        "data": {"exit": 0, "tags": ["x"], "a/b": {"~k": null}}});
    for (k, val) in v.as_object().unwrap() {
        base[k] = val.clone();
    }
    if base["data"].is_null() {
        base.as_object_mut().unwrap().remove("data");
    }
    serde_json::from_value(base).unwrap()
}

fn matches(spec: Value, e: &AxEvent) -> bool {
    EventMatcher::from_json(&spec).unwrap().matches(e)
}

#[test]
fn each_condition() {
    let e = event(json!({}));
    assert!(matches(json!({}), &e), "an empty spec matches all");
    assert!(matches(json!({"type": "build.done"}), &e));
    assert!(!matches(json!({"type": "build"}), &e));
    assert!(matches(json!({"by": "ci"}), &e));
    assert!(!matches(json!({"by": "CI"}), &e));
    assert!(matches(json!({"target": {"id": "7", "kind": "build"}}), &e));
    assert!(!matches(json!({"target": {"kind": "build"}}), &e));
    assert!(!matches(json!({"target": null}), &e));
    assert!(matches(
        json!({"target": null}),
        &event(json!({"target": null}))
    ));
    // summary: literal by default, so regex metacharacters are plain text.
    assert!(matches(json!({"summary": "(a.b)"}), &e));
    assert!(!matches(json!({"summary": "a.c"}), &e));
    assert!(!matches(json!({"summary": "build 7"}), &e));
    assert!(matches(
        json!({"summary": "build 7", "ignoreCase": true}),
        &e
    ));
    assert!(matches(
        json!({"summary": r"^Build \d+ passed", "summaryRegex": true}),
        &e
    ));
    assert!(!matches(
        json!({"summary": r"^\d", "summaryRegex": true}),
        &e
    ));
    // all conditions must hold
    assert!(!matches(json!({"type": "build.done", "by": "bob"}), &e));
}

#[test]
fn data_pointer_conditions() {
    let e = event(json!({}));
    assert!(matches(
        json!({"data": [{"pointer": "/exit", "equals": 0}]}),
        &e
    ));
    assert!(!matches(
        json!({"data": [{"pointer": "/exit", "equals": "0"}]}),
        &e
    ));
    assert!(matches(
        json!({"data": [{"pointer": "/tags/0", "equals": "x"}]}),
        &e
    ));
    assert!(matches(
        json!({"data": [{"pointer": "/a~1b/~0k", "equals": null}]}),
        &e
    ));
    assert!(matches(
        json!({"data": [{"pointer": "/a~1b/~0k", "exists": true}]}),
        &e
    ));
    assert!(matches(
        json!({"data": [{"pointer": "/missing", "exists": false}]}),
        &e
    ));
    assert!(!matches(
        json!({"data": [{"pointer": "/missing", "equals": null}]}),
        &e
    ));
    assert!(!matches(
        json!({"data": [{"pointer": "/exit", "exists": false}]}),
        &e
    ));
    assert!(matches(
        json!({"data": [{"pointer": "", "exists": true}]}),
        &e
    ));
    assert!(matches(
        json!({"data": [{"pointer": "/exit", "equals": 0}, {"pointer": "/tags", "exists": true}]}),
        &e
    ));
    let bare = event(json!({"data": null}));
    assert!(!matches(
        json!({"data": [{"pointer": "", "exists": true}]}),
        &bare
    ));
    assert!(matches(
        json!({"data": [{"pointer": "/x", "exists": false}]}),
        &bare
    ));
}

fn error(spec: Value) -> MatchError {
    EventMatcher::from_json(&spec).unwrap_err()
}

#[test]
fn spec_errors_name_the_field() {
    let cases = [
        (json!({"kind": "x"}), "kind"),
        (json!({"type": 1}), "type:"),
        (json!({"summaryRegex": "yes"}), "summaryRegex:"),
        (json!({"data": {}}), "data:"),
        (
            json!({"data": [{"pointer": "/a", "equals": 1, "why": 2}]}),
            "why",
        ),
        (json!({"data": [{"equals": 1}]}), "pointer"),
        (json!({"summary": "(", "summaryRegex": true}), "summary:"),
        (
            json!({"summary": "x{99999999}", "summaryRegex": true}),
            "summary:",
        ),
        (
            json!({"data": [{"pointer": "a", "exists": true}]}),
            "data[0].pointer:",
        ),
        (json!({"data": [{"pointer": "/a"}]}), "data[0]:"),
        (
            json!({"data": [{"pointer": "/a", "equals": 1, "exists": true}]}),
            "data[0]:",
        ),
        (json!([]), ".: must be an object"),
        (
            json!(["build.done", null, null, null, false, false, []]),
            ".: must be an object",
        ),
        (
            json!({"data": [["/a", 1, null]]}),
            "data[0]: must be an object",
        ),
    ];
    for (spec, want) in cases {
        let err = error(spec.clone()).to_string();
        assert!(err.contains(want), "{spec}: {err:?} lacks {want:?}");
    }
    // A literal summary with regex characters is fine.
    assert!(EventMatcher::from_json(&json!({"summary": "("})).is_ok());
}

#[test]
fn a_summary_pattern_too_large_is_refused_with_its_limit_and_a_way_out() {
    let err = error(json!({"summary": "\\w{150}N", "summaryRegex": true})).to_string();
    assert!(
        err.starts_with("summary: the compiled pattern would take more than 1 MiB"),
        "{err}"
    );
    assert!(err.contains("use a shorter or simpler pattern"), "{err}");
    // A syntax error is one line, as a spec pattern's is.
    let err = error(json!({"summary": "(", "summaryRegex": true})).to_string();
    assert!(
        err.starts_with("summary: not a valid regular expression: ") && !err.contains('\n'),
        "{err}"
    );
}
