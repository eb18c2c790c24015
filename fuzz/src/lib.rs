//! What the fuzz targets share: a scratch directory, keeping inputs away
//! from real files, and the checks every validation error must pass.
//!
//! Every target stays off the machine: nothing runs a command, a tmux
//! client or a real wait; file paths an input names are pointed into the
//! scratch directory first (a FIFO or a device named by an input would
//! block a `cursor: "end"` call).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;
use waitfor::profiles::{prepare, Host, ToolError};
use waitfor::simulate::{simulate, Script, ScriptStep};
use waitfor::{Observation, Rule, SpecError};

/// A directory of this fuzzing process's own, made on first use, under
/// `TMPDIR` (`scripts/fuzz.sh` points that at a directory it removes).
pub fn scratch_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("waitfor-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the temp dir is writable");
        dir
    })
}

/// Points every non-empty string under a `path` key into the scratch
/// directory, at a file that does not exist. Empty strings and other types
/// stay, so their validation is still fuzzed.
pub fn confine_paths(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match v {
                    Value::String(s) if key == "path" && !s.is_empty() => {
                        *s = scratch_dir().join("absent.jsonl").display().to_string();
                    }
                    _ => confine_paths(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(confine_paths),
        _ => {}
    }
}

/// The value a validation error's `field` names (`a.b[2].c`), if the
/// input has one there. `None` also when a key of the input has a `.` or
/// a `[` in it, which the path form cannot spell.
pub fn at_field<'a>(root: &'a Value, field: &str) -> Option<&'a Value> {
    if field.is_empty() {
        return Some(root);
    }
    let mut here = root;
    for part in field.split('.') {
        let (key, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            here = here.get(key)?;
        }
        for index in indexes.split('[').skip(1) {
            here = here.get(index.strip_suffix(']')?.parse::<usize>().ok()?)?;
        }
    }
    Some(here)
}

/// Whether every object key in `value` can be spelled in a field path.
pub fn keys_are_plain(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .all(|(k, v)| !k.contains(['.', '[', ']']) && keys_are_plain(v)),
        Value::Array(items) => items.iter().all(keys_are_plain),
        _ => true,
    }
}

/// Checks a validation error against the input it rejected: it says what
/// is wrong, and for the rules about a value that is there its `field`
/// leads to that value.
pub fn check_spec_error(err: &SpecError, input: &Value) {
    assert!(!err.message.is_empty(), "{err:?} says nothing");
    // A field too long to echo whole (a long key) is cut and says so: it
    // leads nowhere, and stays short.
    if let Some((kept, _)) = err.field.split_once("... (cut; ") {
        assert!(
            kept.len() <= 4096,
            "{err:?} keeps {} bytes of its field",
            kept.len()
        );
        return;
    }
    let about_a_present_value = matches!(
        err.rule,
        Rule::UnknownField | Rule::WrongType | Rule::Empty | Rule::InvalidRegex
    );
    if about_a_present_value && keys_are_plain(input) {
        assert!(
            at_field(input, &err.field).is_some(),
            "{err:?} names a field that is not in {input}"
        );
    }
}

/// Prepares a call of `profile` with the arguments in `data` (when they
/// are JSON) and checks the answer: an argument error names its field;
/// a prepared call has a valid spec and renders the result of a wait that
/// ends at its first sample. Never runs the probe.
pub fn check_profile(profile: &str, data: &[u8]) {
    let Ok(mut args) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    confine_paths(&mut args);
    match prepare(profile, &args, &Host::default()) {
        Err(ToolError::InvalidArguments(err)) => {
            check_spec_error(&err, &args);
            if args.is_object() && err.field.is_empty() {
                assert!(args.get("").is_some(), "{err:?} names no field in {args}");
            }
        }
        Err(other) => panic!("{profile}: {other:?} is not an argument error, for {args}"),
        Ok(prepared) => {
            prepared.spec.validate().expect("a prepared spec is valid");
            let script = Script {
                mode: prepared.probe.mode(),
                steps: vec![ScriptStep {
                    takes: Duration::ZERO,
                    answer: Some(Ok(Observation::text("").with_gone())),
                }],
                controls: Vec::new(),
            };
            let sim = match simulate(&prepared.spec, &prepared.policy, &script) {
                Ok(sim) => sim,
                // What only compiling finds: the wait ends with an error.
                Err(err) if err.rule == Rule::InvalidRegex => return,
                Err(err) => panic!("a prepared spec simulates: {err:?}"),
            };
            assert_eq!(
                sim.call_starts_ms,
                [0],
                "a gone target ends the wait at once"
            );
            // A rendering error is an answer too; only a panic is wrong.
            let _ = (prepared.render)(&sim.result);
        }
    }
}
