//! A declarative event matcher: which events a wait is waiting for.

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::envelope::{AxEvent, AxRef};
use crate::pattern::MAX_PATTERN_BYTES;

/// What a matching event looks like, as JSON (unknown fields are errors).
/// Every condition given must hold; an empty spec matches every event.
///
/// ```json
/// { "type": "build.done", "by": "ci", "target": {"kind": "build", "id": "7"},
///   "summary": "passed", "summaryRegex": false, "ignoreCase": false,
///   "data": [ {"pointer": "/status", "equals": "ok"},
///             {"pointer": "/artifact", "exists": true} ] }
/// ```
///
/// - `type`, `by`: equal to the event's (case-sensitive).
/// - `target`: equal, as JSON, to the event's target (`null` matches an
///   event without one).
/// - `summary`: found in the event's summary: a literal substring by
///   default, a regular expression (the `regex` crate's syntax, linear
///   time) when `summaryRegex` is true; `ignoreCase` applies to both.
/// - `data`: conditions on the event's `data` object by JSON pointer
///   (RFC 6901, `""` is the whole object). Each names exactly one of
///   `equals` (any JSON, `null` included) or `exists` (`true`: the pointer
///   resolves; `false`: it does not). An event without `data` has nothing
///   at any pointer.
///
/// ```
/// let spec: waitfor::ouro::EventMatchSpec =
///     serde_json::from_str(r#"{"type": "build.done", "summary": "passed"}"#).unwrap();
/// assert_eq!(spec.kind.as_deref(), Some("build.done"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventMatchSpec {
    /// The event type.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Who did it.
    pub by: Option<String>,
    /// What it happened to (JSON equality). `Some(Value::Null)` asks for no
    /// target; `None` means any.
    #[serde(default, deserialize_with = "present")]
    pub target: Option<AxRef>,
    /// A pattern the summary contains.
    pub summary: Option<String>,
    /// Whether `summary` is a regular expression (default: literal).
    #[serde(default)]
    pub summary_regex: bool,
    /// Whether `summary` ignores case.
    #[serde(default)]
    pub ignore_case: bool,
    /// Conditions on `data`.
    #[serde(default)]
    pub data: Vec<DataCondition>,
}

/// A condition on an event's `data` at a JSON pointer: exactly one of
/// `equals` or `exists`.
///
/// ```
/// let c: waitfor::ouro::DataCondition =
///     serde_json::from_str(r#"{"pointer": "/exit", "equals": null}"#).unwrap();
/// assert_eq!(c.equals, Some(serde_json::Value::Null));
/// ```
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataCondition {
    /// An RFC 6901 JSON pointer into `data`.
    pub pointer: String,
    /// The value there must equal this.
    #[serde(default, deserialize_with = "present")]
    pub equals: Option<Value>,
    /// Something must (true) or must not (false) be there.
    pub exists: Option<bool>,
}

/// Keeps an explicit `null` as `Some(Value::Null)`; a missing field stays
/// `None` through `#[serde(default)]`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Why a match spec was refused; the message names the field.
///
/// ```
/// let err = waitfor::ouro::EventMatcher::from_json(&serde_json::json!({"summry": "x"}))
///     .unwrap_err();
/// assert!(err.to_string().contains("summry"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    /// The JSON does not have the spec's shape.
    #[error("{field}: {message}")]
    Shape {
        /// Where in the spec (`"."` for the whole).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A field's value is not usable.
    #[error("{field}: {message}")]
    Invalid {
        /// The field, such as `summary` or `data[1].pointer`.
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// A compiled [`EventMatchSpec`].
///
/// ```
/// use serde_json::json;
/// use waitfor::ouro::{AxEvent, EventMatcher};
/// let m = EventMatcher::from_json(&json!({
///     "type": "build.done", "summary": "PASS", "ignoreCase": true,
///     "data": [{"pointer": "/build", "equals": 7}]
/// })).unwrap();
/// let event: AxEvent = serde_json::from_value(json!({
///     "cursor": "c", "type": "build.done", "at": "t", "by": "ci", "target": null,
///     "summary": "build 7 passed", "data": {"build": 7}
/// })).unwrap();
/// assert!(m.matches(&event));
/// ```
#[derive(Clone, Debug)]
pub struct EventMatcher {
    spec: EventMatchSpec,
    summary: Option<Regex>,
}

/// The largest compiled summary pattern allowed (bytes of regex program).
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// Why a summary pattern was refused, in the words a spec pattern's
/// refusal uses (`pattern`): the limit and what usually crosses it.
fn summary_error(e: &regex::Error) -> String {
    match e {
        regex::Error::CompiledTooBig(_) => format!(
            "the compiled pattern would take more than {} MiB, the limit for a summary \
             pattern: use a shorter or simpler pattern (large repetitions of Unicode classes \
             such as \\w{{150}} are the usual cause)",
            PATTERN_SIZE_LIMIT >> 20
        ),
        e => format!(
            "not a valid regular expression: {}",
            crate::pattern::one_line(&e.to_string())
        ),
    }
}

impl EventMatchSpec {
    /// Reads a spec from JSON and checks it as [`EventMatchSpec::check`]
    /// does, without compiling it.
    ///
    /// ```
    /// use waitfor::ouro::EventMatchSpec;
    /// let spec = EventMatchSpec::from_json(&serde_json::json!({"summary": "passed"})).unwrap();
    /// assert_eq!(spec.summary.as_deref(), Some("passed"));
    /// assert!(EventMatchSpec::from_json(&serde_json::json!({"type": 5})).is_err());
    /// ```
    pub fn from_json(v: &Value) -> Result<EventMatchSpec, MatchError> {
        // serde would also take a struct as an array of its fields in order;
        // a spec is only ever an object.
        let shape = |field: String| MatchError::Shape {
            field,
            message: "must be an object".into(),
        };
        let Some(obj) = v.as_object() else {
            return Err(shape(".".into()));
        };
        if let Some(Value::Array(conditions)) = obj.get("data") {
            if let Some(i) = conditions.iter().position(|c| !c.is_object()) {
                return Err(shape(format!("data[{i}]")));
            }
        }
        let spec: EventMatchSpec =
            serde_path_to_error::deserialize(v).map_err(|e| MatchError::Shape {
                field: e.path().to_string(),
                message: e.inner().to_string(),
            })?;
        spec.check()?;
        Ok(spec)
    }

    /// Checks what [`EventMatcher::new`] would, in time linear in the spec,
    /// so that a caller's thread may check and a wait's own time compile:
    /// the summary's length and syntax, and every data condition. Not what
    /// only compiling finds (a pattern whose program is too big), which
    /// can take seconds: case folding `(?i)\p{Any}` takes 10 ms a class.
    ///
    /// ```
    /// use waitfor::ouro::EventMatchSpec;
    /// let spec = EventMatchSpec { summary: Some("(".into()), summary_regex: true,
    ///                             ..Default::default() };
    /// assert!(spec.check().unwrap_err().to_string().starts_with("summary:"));
    /// ```
    pub fn check(&self) -> Result<(), MatchError> {
        if let Some(p) = &self.summary {
            Self::check_summary(p, self.summary_regex, self.ignore_case)
                .map_err(|message| invalid("summary", message))?;
        }
        for (i, c) in self.data.iter().enumerate() {
            if !c.pointer.is_empty() && !c.pointer.starts_with('/') {
                return Err(invalid(
                    &format!("data[{i}].pointer"),
                    "must be empty or start with \"/\" (RFC 6901)".into(),
                ));
            }
            if c.equals.is_some() == c.exists.is_some() {
                return Err(invalid(
                    &format!("data[{i}]"),
                    "must have exactly one of \"equals\" or \"exists\"".into(),
                ));
            }
        }
        Ok(())
    }

    /// The summary's length, and a regex's syntax and folding cost.
    fn check_summary(p: &str, regex: bool, ignore_case: bool) -> Result<(), String> {
        if p.len() > MAX_PATTERN_BYTES {
            return Err(format!(
                "a pattern may be at most {MAX_PATTERN_BYTES} bytes, this one is {}",
                p.len()
            ));
        }
        if regex {
            crate::pattern::check_syntax(p).map_err(|e| {
                format!(
                    "not a valid regular expression: {}",
                    crate::pattern::one_line(&e)
                )
            })?;
            crate::fold_cost::check(p, ignore_case)?;
        }
        Ok(())
    }

    /// The summary as a regex: itself, or escaped when it is literal.
    fn summary_source(&self) -> Option<String> {
        let p = self.summary.as_ref()?;
        Some(if self.summary_regex {
            p.clone()
        } else {
            regex::escape(p)
        })
    }
}

impl EventMatcher {
    /// Compiles a spec: checks it ([`EventMatchSpec::check`]), then
    /// compiles the summary pattern.
    ///
    /// ```
    /// use waitfor::ouro::{EventMatchSpec, EventMatcher};
    /// let spec = EventMatchSpec { summary: Some(r"\w{150}".repeat(8)), summary_regex: true,
    ///                             ..Default::default() };
    /// assert!(EventMatcher::new(spec).unwrap_err().to_string().contains("1 MiB"));
    /// ```
    pub fn new(spec: EventMatchSpec) -> Result<EventMatcher, MatchError> {
        spec.check()?;
        let summary = match spec.summary_source() {
            None => None,
            Some(source) => {
                let re = RegexBuilder::new(&source)
                    .case_insensitive(spec.ignore_case)
                    .size_limit(PATTERN_SIZE_LIMIT)
                    .build()
                    .map_err(|e| invalid("summary", summary_error(&e)))?;
                Some(re)
            }
        };
        Ok(EventMatcher { spec, summary })
    }

    /// Reads a spec from JSON and compiles it.
    ///
    /// ```
    /// let err = waitfor::ouro::EventMatcher::from_json(&serde_json::json!({"type": 5}))
    ///     .unwrap_err();
    /// assert!(err.to_string().starts_with("type:"));
    /// ```
    pub fn from_json(v: &Value) -> Result<EventMatcher, MatchError> {
        EventMatcher::new(EventMatchSpec::from_json(v)?)
    }

    /// The spec this matcher was built from.
    ///
    /// ```
    /// let m = waitfor::ouro::EventMatcher::new(Default::default()).unwrap();
    /// assert!(m.spec().kind.is_none());
    /// ```
    pub fn spec(&self) -> &EventMatchSpec {
        &self.spec
    }

    /// Whether the event meets every condition.
    ///
    /// ```
    /// use waitfor::ouro::EventMatcher;
    /// let m = EventMatcher::from_json(&serde_json::json!({"by": "ci"})).unwrap();
    /// let e: waitfor::ouro::AxEvent = serde_json::from_value(serde_json::json!({
    ///     "cursor": "c", "type": "x", "at": "t", "by": "bob", "target": null, "summary": ""
    /// })).unwrap();
    /// assert!(!m.matches(&e));
    /// ```
    pub fn matches(&self, e: &AxEvent) -> bool {
        let s = &self.spec;
        let target = e.target.as_ref().unwrap_or(&Value::Null);
        s.kind.as_ref().is_none_or(|k| *k == e.kind)
            && s.by.as_ref().is_none_or(|b| *b == e.by)
            && s.target.as_ref().is_none_or(|t| t == target)
            && self
                .summary
                .as_ref()
                .is_none_or(|re| re.is_match(&e.summary))
            && s.data.iter().all(|c| data_holds(c, e))
    }
}

fn data_holds(c: &DataCondition, e: &AxEvent) -> bool {
    let found = e.data.as_ref().and_then(|data| {
        if c.pointer.is_empty() {
            return Some(Found::Whole(data));
        }
        // The first token indexes the map; serde_json resolves the rest.
        let rest = &c.pointer[1..];
        let (first, tail) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
        let key = first.replace("~1", "/").replace("~0", "~");
        data.get(&key)
            .and_then(|v| {
                if tail.is_empty() {
                    Some(v)
                } else {
                    v.pointer(tail)
                }
            })
            .map(Found::Part)
    });
    match (&c.equals, c.exists) {
        (Some(want), _) => found.is_some_and(|found| found.equals(want)),
        (None, Some(exists)) => found.is_some() == exists,
        (None, None) => true,
    }
}

/// What a condition's pointer names in an event's data: the whole data
/// (the empty pointer), compared where it is, as a copy of it for each
/// condition and event would cost the data's size each time; or a part.
enum Found<'a> {
    Whole(&'a Map<String, Value>),
    Part(&'a Value),
}

impl Found<'_> {
    fn equals(&self, want: &Value) -> bool {
        match self {
            Found::Whole(data) => want.as_object() == Some(*data),
            Found::Part(value) => *value == want,
        }
    }
}

fn invalid(field: &str, message: String) -> MatchError {
    MatchError::Invalid {
        field: field.to_string(),
        message,
    }
}
