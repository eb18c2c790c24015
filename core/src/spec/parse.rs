//! JSON form of the spec: serde types close to the wire, then conversion.

use super::{
    Backoff, Condition, ErrorPolicy, Freshness, JsonTest, PanePick, ProbeSpec, Spec, TailLimits,
    ViewKind,
};
use crate::error::{Rule, SpecError};
use crate::pattern::Pattern;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::time::Duration;

/// JSON Schema (draft 2020-12) of the spec that [`Spec::from_json`] reads.
pub const SPEC_SCHEMA: &str = include_str!("spec.schema.json");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    #[serde(default, deserialize_with = "present")]
    probe: Option<RawProbe>,
    #[serde(default, deserialize_with = "present")]
    view: Option<RawView>,
    until: Value,
    #[serde(default)]
    stop: Vec<RawPattern>,
    #[serde(default)]
    regex: bool,
    #[serde(default = "yes")]
    case_sensitive: bool,
    #[serde(default, deserialize_with = "present")]
    interval_ms: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    backoff: Option<RawBackoff>,
    #[serde(default, deserialize_with = "present")]
    max_wait_ms: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    on_probe_error: Option<RawErrorPolicy>,
    #[serde(default, deserialize_with = "present")]
    output_cap_bytes: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    tail: Option<RawTail>,
    #[serde(default, deserialize_with = "present")]
    progress_every_ms: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    resume: Option<String>,
    #[serde(default)]
    sample_at_deadline: bool,
    #[serde(default)]
    quiet_on_plan: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RawProbe {
    Command {
        argv: Vec<String>,
        #[serde(default, deserialize_with = "present")]
        cwd: Option<String>,
        #[serde(default = "yes")]
        stderr: bool,
    },
    File {
        path: String,
    },
    Tmux {
        #[serde(default, deserialize_with = "present")]
        pane_id: Option<String>,
        #[serde(default, deserialize_with = "present")]
        window_id: Option<String>,
        #[serde(default, deserialize_with = "present")]
        session_id: Option<String>,
        #[serde(default, deserialize_with = "present")]
        session_name: Option<String>,
        #[serde(default, deserialize_with = "present")]
        target: Option<String>,
        #[serde(default, deserialize_with = "present")]
        socket_name: Option<String>,
        #[serde(default = "yes")]
        push: bool,
        #[serde(default)]
        pick: RawPick,
        #[serde(default)]
        freshness: RawFreshness,
    },
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "snake_case")]
enum RawPick {
    #[default]
    Active,
    First,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "snake_case")]
enum RawFreshness {
    #[default]
    ByRow,
    ByContent,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum RawView {
    Whole,
    Fresh,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawPattern {
    Text(String),
    Full(RawPatternObject),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPatternObject {
    text: String,
    #[serde(default, deserialize_with = "present")]
    regex: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    case_sensitive: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBackoff {
    factor: f64,
    max_interval_ms: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RawErrorPolicy {
    Fail,
    Tolerate(i64),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTail {
    lines: i64,
    bytes: i64,
}

/// Pattern defaults that plain-string patterns take from the spec.
#[derive(Clone, Copy)]
struct PatternDefaults {
    regex: bool,
    case_sensitive: bool,
}

pub(super) fn parse(text: &str) -> Result<Spec, SpecError> {
    parse_value(&crate::input::parse(text)?)
}

pub(super) fn parse_value(value: &Value) -> Result<Spec, SpecError> {
    if !value.is_object() {
        return Err(SpecError::new(
            "",
            Rule::WrongType,
            "a spec must be a JSON object",
        ));
    }
    let raw: RawSpec = serde_path_to_error::deserialize(value)
        .map_err(|e| SpecError::from_serde(e.path().to_string(), e.inner()))?;
    let defaults = PatternDefaults {
        regex: raw.regex,
        case_sensitive: raw.case_sensitive,
    };
    let mut spec = Spec::new(parse_condition(&raw.until, "until", defaults)?);
    spec.probe = raw.probe.map(|p| match p {
        RawProbe::Command { argv, cwd, stderr } => ProbeSpec::Command { argv, cwd, stderr },
        RawProbe::File { path } => ProbeSpec::File { path },
        RawProbe::Tmux {
            pane_id,
            window_id,
            session_id,
            session_name,
            target,
            socket_name,
            push,
            pick,
            freshness,
        } => ProbeSpec::Tmux {
            pane: super::PaneTarget {
                pane_id,
                window_id,
                session_id,
                session_name,
                target,
            },
            socket_name,
            push,
            pick: match pick {
                RawPick::Active => PanePick::Active,
                RawPick::First => PanePick::First,
            },
            freshness: match freshness {
                RawFreshness::ByRow => Freshness::ByRow,
                RawFreshness::ByContent => Freshness::ByContent,
            },
        },
    });
    spec.view = match raw.view {
        None | Some(RawView::Whole) => ViewKind::Whole,
        Some(RawView::Fresh) => ViewKind::Fresh,
    };
    spec.stop = raw.stop.into_iter().map(|p| pattern(p, defaults)).collect();
    if let Some(ms) = raw.interval_ms {
        spec.interval = millis(ms, "interval_ms")?;
    }
    if let Some(ms) = raw.max_wait_ms {
        spec.max_wait = millis(ms, "max_wait_ms")?;
    }
    if let Some(b) = raw.backoff {
        spec.backoff = Some(Backoff {
            factor: b.factor,
            max_interval: millis(b.max_interval_ms, "backoff.max_interval_ms")?,
        });
    }
    spec.on_probe_error = match raw.on_probe_error {
        None | Some(RawErrorPolicy::Fail) => ErrorPolicy::Fail,
        Some(RawErrorPolicy::Tolerate(n)) => {
            let n = u32::try_from(n).map_err(|_| {
                SpecError::new(
                    "on_probe_error.tolerate",
                    Rule::OutOfRange,
                    format!("must be between 0 and {}, got {n}", u32::MAX),
                )
            })?;
            ErrorPolicy::Tolerate(n)
        }
    };
    if let Some(bytes) = raw.output_cap_bytes {
        spec.output_cap = Some(positive(bytes, "output_cap_bytes")?);
    }
    if let Some(t) = raw.tail {
        spec.tail = TailLimits {
            lines: positive(t.lines, "tail.lines")?,
            bytes: positive(t.bytes, "tail.bytes")?,
        };
    }
    if let Some(ms) = raw.progress_every_ms {
        spec.progress_every = millis(ms, "progress_every_ms")?;
    }
    spec.resume = raw.resume;
    spec.sample_at_deadline = raw.sample_at_deadline;
    spec.quiet_on_plan = raw.quiet_on_plan;
    Ok(spec)
}

fn positive(n: i64, field: &str) -> Result<usize, SpecError> {
    if n <= 0 {
        return Err(SpecError::new(
            field,
            Rule::NotPositive,
            format!("must be greater than 0, got {n}"),
        ));
    }
    usize::try_from(n)
        .map_err(|_| SpecError::new(field, Rule::OutOfRange, format!("{n} is too large")))
}

fn millis(ms: i64, field: &str) -> Result<Duration, SpecError> {
    Ok(Duration::from_millis(positive(ms, field)? as u64))
}

fn pattern(raw: RawPattern, defaults: PatternDefaults) -> Pattern {
    match raw {
        RawPattern::Text(text) => Pattern {
            text,
            regex: defaults.regex,
            case_sensitive: defaults.case_sensitive,
        },
        RawPattern::Full(p) => Pattern {
            text: p.text,
            regex: p.regex.unwrap_or(defaults.regex),
            case_sensitive: p.case_sensitive.unwrap_or(defaults.case_sensitive),
        },
    }
}

fn deserialize_at<T: serde::de::DeserializeOwned>(
    value: &Value,
    field: &str,
) -> Result<T, SpecError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let path = match inner.trim_start_matches('.') {
            "" => field.to_string(),
            index if index.starts_with('[') => format!("{field}{index}"),
            key => format!("{field}.{key}"),
        };
        SpecError::from_serde(path, e.inner())
    })
}

const CONDITION_KEYS: &str =
    "matches, not_matches, patterns, quiet_for_ms, any_output, json, exit_code, any, all";

/// Conditions are objects with exactly one key naming the kind, so the
/// error can say which key was wrong instead of serde's generic message.
fn parse_condition(
    value: &Value,
    field: &str,
    defaults: PatternDefaults,
) -> Result<Condition, SpecError> {
    let object = value.as_object().ok_or_else(|| {
        SpecError::new(
            field,
            Rule::WrongType,
            format!("a condition must be an object with one of: {CONDITION_KEYS}"),
        )
    })?;
    let (key, inner) = single_entry(object, field)?;
    let at = format!("{field}.{key}");
    let condition = match key.as_str() {
        "matches" => Condition::Matches(pattern(deserialize_at(inner, &at)?, defaults)),
        "not_matches" => Condition::NotMatches(pattern(deserialize_at(inner, &at)?, defaults)),
        "patterns" => {
            let list: Vec<RawPattern> = deserialize_at(inner, &at)?;
            Condition::Patterns(list.into_iter().map(|p| pattern(p, defaults)).collect())
        }
        "quiet_for_ms" => Condition::QuietFor(millis(deserialize_at(inner, &at)?, &at)?),
        "any_output" => match inner {
            Value::Bool(true) => Condition::AnyOutput,
            _ => {
                return Err(SpecError::new(
                    at,
                    Rule::WrongType,
                    "any_output takes the value true",
                ))
            }
        },
        "json" => parse_json_test(inner, &at)?,
        "exit_code" => Condition::ExitCode(deserialize_at(inner, &at)?),
        "any" | "all" => {
            let list = inner.as_array().ok_or_else(|| {
                SpecError::new(&at, Rule::WrongType, "expected a list of conditions")
            })?;
            let children = list
                .iter()
                .enumerate()
                .map(|(i, c)| parse_condition(c, &format!("{at}[{i}]"), defaults))
                .collect::<Result<Vec<_>, _>>()?;
            if key == "any" {
                Condition::Any(children)
            } else {
                Condition::All(children)
            }
        }
        other => {
            return Err(SpecError::new(
                format!("{field}.{other}"),
                Rule::UnknownField,
                crate::error::cut_quote(format!(
                    "unknown condition `{other}`, expected one of: {CONDITION_KEYS}"
                )),
            ))
        }
    };
    Ok(condition)
}

fn single_entry<'a>(
    object: &'a Map<String, Value>,
    field: &str,
) -> Result<(&'a String, &'a Value), SpecError> {
    let mut entries = object.iter();
    match (entries.next(), entries.next()) {
        (Some(entry), None) => Ok(entry),
        (None, _) => Err(SpecError::new(
            field,
            Rule::Empty,
            format!("a condition needs exactly one of: {CONDITION_KEYS}"),
        )),
        (Some(_), Some(_)) => Err(SpecError::new(
            field,
            Rule::Conflict,
            format!(
                "a condition has exactly one key, got {}; combine conditions with any or all",
                object
                    .keys()
                    .map(|key| crate::error::echo(key))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJsonTest {
    pointer: String,
    // `"equals": null` tests for null: present, as `Some(Value::Null)`.
    #[serde(default, deserialize_with = "present")]
    equals: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    exists: Option<bool>,
}

/// An optional field that, when given, must hold a value of its type:
/// `null` is refused as the schema refuses it (a JavaScript `NaN` arrives
/// as `null` and must not mean "the default").
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

fn parse_json_test(value: &Value, field: &str) -> Result<Condition, SpecError> {
    let raw: RawJsonTest = deserialize_at(value, field)?;
    let test = match (raw.equals, raw.exists) {
        (Some(v), None) => JsonTest::Equals(v),
        (None, Some(b)) => JsonTest::Exists(b),
        _ => {
            return Err(SpecError::new(
                field,
                Rule::Conflict,
                "give exactly one of `equals` and `exists`",
            ))
        }
    };
    Ok(Condition::Json {
        pointer: raw.pointer,
        test,
    })
}
