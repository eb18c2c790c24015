//! Runs the shared test vectors (`tests/vectors/*.json`, described in
//! `tests/vectors/README.md`) through the crate's public API. Each
//! vector's whole answer must equal its `answer`, compared as canonical
//! JSON, and hold every field of its `expect`. The C, Python and Node
//! suites run the same files through their own public APIs.
//!
//! `WAITFOR_BLESS=1 cargo test -p waitfor --test vectors` writes each
//! vector's `answer` from this crate (after a deliberate change), still
//! checking `expect`.

use serde_json::{json, Value};
use std::path::PathBuf;
use waitfor::profiles::{self, Host};
use waitfor::{ErrorCode, ErrorInfo, Spec};

fn vector_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

/// Every field of `expected` is in `actual` with the same value; objects
/// are compared field by field, everything else exactly.
fn contains(actual: &Value, expected: &Value, path: &str, failures: &mut Vec<String>) {
    match (actual, expected) {
        (Value::Object(actual), Value::Object(expected)) => {
            for (key, want) in expected {
                let at = format!("{path}.{key}");
                match actual.get(key) {
                    Some(got) => contains(got, want, &at, failures),
                    None => failures.push(format!("{at}: missing, want {want}")),
                }
            }
        }
        _ if actual == expected => {}
        _ => failures.push(format!("{path}: got {actual}, want {expected}")),
    }
}

/// Canonical JSON: no whitespace, object keys sorted, a number with an
/// integral value below 2^53 written as an integer (JavaScript cannot tell
/// `2.0` from `2`), other numbers in their shortest form.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                format!("{}", f as i64)
            }
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn error(info: ErrorInfo) -> Value {
    json!({ "error": info.to_json() })
}

/// The vector's whole answer, through the public API its `kind` names.
fn answer(vector: &Value) -> Value {
    let text = |key: &str| vector[key].as_str().unwrap_or_default().to_string();
    match vector["kind"].as_str() {
        None => match waitfor::vectors::run(vector) {
            Ok(answer) => answer,
            Err(err) => error(ErrorInfo::spec(ErrorCode::InvalidSpec, &err)),
        },
        Some("spec") => match Spec::from_value(&vector["spec"]) {
            Ok(_) => json!({"ok": true}),
            Err(err) => error(ErrorInfo::spec(ErrorCode::InvalidSpec, &err)),
        },
        Some("arguments") => {
            match profiles::check(&text("tool"), &vector["arguments"], &Host::default()) {
                Ok(profile) => json!({ "ok": profile }),
                Err(err) => error(ErrorInfo::from(&err)),
            }
        }
        Some("profile") => match profiles::find(&text("lookup")) {
            Ok(def) => json!({"ok": {"profile": def.profile, "tool": def.tool["name"]}}),
            Err(err) => error(ErrorInfo::from(&err)),
        },
        Some("pane_id") => match waitfor::tmux::parse_pane_id(&text("pane_id"), "pane_id") {
            Ok(n) => json!({ "ok": n }),
            Err(err) => error(ErrorInfo::spec(ErrorCode::InvalidArguments, &err)),
        },
        Some("duration") => duration(vector),
        Some("envelope") => {
            serde_json::to_value(waitfor::ouro::validate_wait(&vector["envelope"])).unwrap()
        }
        Some(other) => panic!("unknown vector kind {other}"),
    }
}

/// A `duration` vector's number: JSON's, or `"NaN"`, `"Infinity"` and
/// `"-Infinity"`, which JSON cannot hold.
fn number(value: &Value) -> f64 {
    match value.as_str() {
        Some("NaN") => f64::NAN,
        Some("Infinity") => f64::INFINITY,
        Some("-Infinity") => f64::NEG_INFINITY,
        _ => value.as_f64().expect("`format` is a number"),
    }
}

/// A `duration` vector's answer: `format` (a number of milliseconds) or
/// `parse` (a text), by the one rule every binding follows.
fn duration(vector: &Value) -> Value {
    let answer = match (vector.get("format"), vector.get("parse")) {
        (Some(ms), None) => waitfor::duration::format_millis(number(ms)).map(Value::from),
        (None, Some(text)) => {
            waitfor::duration::parse_millis(text.as_str().expect("`parse` is a text"))
                .map(Value::from)
        }
        _ => panic!("a duration vector has `format` or `parse`"),
    };
    match answer {
        Ok(ok) => json!({ "ok": ok }),
        Err(err) => error(ErrorInfo::spec(ErrorCode::InvalidArguments, &err)),
    }
}

#[test]
fn every_vector_gives_its_whole_answer() {
    let bless = std::env::var_os("WAITFOR_BLESS").is_some();
    let mut ran = 0;
    let mut failures = Vec::new();
    for file in vector_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut doc: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let label = file.file_name().unwrap().to_string_lossy().to_string();
        for vector in doc["vectors"].as_array_mut().expect("a `vectors` list") {
            let name = format!("{label} / {}", vector["name"]);
            let got = answer(vector);
            let mut wrong = Vec::new();
            if let Some(expect) = vector.get("expect") {
                contains(&got, expect, "", &mut wrong);
            }
            if bless {
                vector["answer"] = got;
            } else if canonical(&got) != canonical(&vector["answer"]) {
                wrong.push(format!(
                    "answer differs:\n  got  {}\n  want {}",
                    canonical(&got),
                    canonical(&vector["answer"])
                ));
            }
            failures.extend(wrong.into_iter().map(|w| format!("{name}: {w}")));
            ran += 1;
        }
        if bless {
            let text = serde_json::to_string_pretty(&doc).unwrap() + "\n";
            std::fs::write(&file, text).unwrap();
        }
    }
    assert!(ran >= 250, "only {ran} vectors found");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn canonical_json_sorts_keys_and_writes_whole_numbers_as_integers() {
    let value: Value =
        serde_json::from_str(r#"{"b": [2.0, 0.5, -3], "a": {"y": "\n", "x": null}}"#).unwrap();
    assert_eq!(
        canonical(&value),
        r#"{"a":{"x":null,"y":"\n"},"b":[2,0.5,-3]}"#
    );
}

/// An event vector writes only plain files of its own directory, and few:
/// no path, no Windows device (which Windows would open instead), at most
/// 16 names across its files and its scripts' edits, and 1,024 edits.
#[test]
fn an_event_vector_writes_few_plain_files_in_its_own_directory() {
    let vector = |files: Value, log: Value| {
        json!({"profile": "ouro/wait", "arguments": {"path": "$FILES/a.jsonl", "timeout": "1s"},
               "files": files, "script": {"log": log}})
    };
    let refused = |v: Value| waitfor::vectors::run(&v).expect_err("refused").message;
    for name in [
        "NUL", "com1.log", "CONOUT$", "Lpt9", "aux .txt", "a.", "b ", "..", "../x", "a/b", "c:d",
    ] {
        let message = refused(vector(json!({ name: [] }), json!([])));
        assert!(
            message.contains("not a plain file name"),
            "{name}: {message}"
        );
    }
    for name in ["COM10.log", "console.log", "nul-free.jsonl"] {
        waitfor::vectors::run(&vector(json!({ name: [] }), json!([])))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let names: Vec<Value> = (0..17)
        .map(|i| json!({"file": format!("f{i}"), "append": []}))
        .collect();
    let message = refused(vector(json!({}), Value::Array(names)));
    assert!(message.contains("at most 16 files"), "{message}");
    let edits = vec![json!({"file": "a.jsonl", "append": []}); 1025];
    let message = refused(vector(json!({}), Value::Array(edits)));
    assert!(message.contains("at most 1024 edits"), "{message}");
}
