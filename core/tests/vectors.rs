//! Runs the shared test vectors (`tests/vectors/*.json`) on virtual time.
//! The C, C++, Python and Node suites run the same files.

use serde_json::Value;
use std::path::PathBuf;

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

#[test]
fn every_vector_gives_its_expected_answer() {
    let mut ran = 0;
    let mut failures = Vec::new();
    for file in vector_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let doc: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for vector in doc["vectors"].as_array().expect("a `vectors` list") {
            let name = format!(
                "{} / {}",
                file.file_name().unwrap().to_string_lossy(),
                vector["name"]
            );
            match waitfor::simulate::simulate_json(vector) {
                Ok(answer) => {
                    let mut wrong = Vec::new();
                    contains(&answer, &vector["expect"], "", &mut wrong);
                    failures.extend(wrong.into_iter().map(|w| format!("{name}: {w}")));
                }
                Err(err) => failures.push(format!("{name}: {err}")),
            }
            ran += 1;
        }
    }
    assert!(ran >= 50, "only {ran} vectors found");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
