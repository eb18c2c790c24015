//! `Script::from_json` reads its text as every caller JSON is read
//! (`input::parse`): the same size bound and the same string faults,
//! named as the script's other refusals are.

use waitfor::input::MAX_INPUT_BYTES;
use waitfor::simulate::Script;
use waitfor::{Rule, Spec};

#[test]
fn a_script_past_the_input_bound_is_refused_as_too_large() {
    let text = format!(
        r#"{{"steps": [{{"text": "{}"}}]}}"#,
        "x".repeat(MAX_INPUT_BYTES)
    );
    let err = Script::from_json(&text).unwrap_err();
    assert_eq!(
        (err.field.as_str(), err.rule),
        ("", Rule::TooLarge),
        "{err}"
    );
}

#[test]
fn a_lone_surrogate_names_its_string_as_a_spec_does() {
    let err = Script::from_json(r#"{"steps": [{"after_ms": 0, "text": "a\ud800"}]}"#).unwrap_err();
    assert_eq!(
        (err.field.as_str(), err.rule),
        ("script.steps[0].text", Rule::InvalidJson),
        "{err}"
    );
    // The same words as a spec's lone surrogate.
    let spec = Spec::from_json(r#"{"until": {"matches": "a\ud800"}}"#).unwrap_err();
    let words = |m: &str| m.split(" at line ").next().unwrap_or_default().to_string();
    assert_eq!(words(&err.message), words(&spec.message));
    // Not JSON outside any string: the script as a whole.
    let err = Script::from_json(r#"{"steps": "#).unwrap_err();
    assert_eq!(
        (err.field.as_str(), err.rule),
        ("", Rule::InvalidJson),
        "{err}"
    );
    assert!(err.message.starts_with("not JSON: "), "{err}");
}

#[test]
fn an_unknown_mode_of_a_megabyte_is_named_cut() {
    let mode = "x".repeat(1 << 20);
    let text = format!(r#"{{"mode": "{mode}", "steps": [{{"text": "a"}}]}}"#);
    let err = Script::from_json(&text).unwrap_err();
    assert_eq!(err.field, "script.mode", "{err}");
    assert!(err.message.len() < 200, "{}", &err.message[..200]);
    assert!(err.message.contains("(cut; 1048576 bytes in all)"), "{err}");
    // A short one is named whole.
    let err = Script::from_json(r#"{"mode": "streams", "steps": []}"#).unwrap_err();
    assert!(err.message.contains("\"streams\""), "{err}");
}
