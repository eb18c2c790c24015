//! The `wait/1` envelope and its parts, with the seed's JSON field names.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::validate::validate_wait;

/// The version tag every wait carries in its `ax` field.
///
/// ```
/// assert_eq!(waitfor::ouro::WAIT_VERSION, "wait/1");
/// ```
pub const WAIT_VERSION: &str = "wait/1";

/// The state names, in the seed's order: how a wait ended.
///
/// ```
/// assert_eq!(waitfor::ouro::WAIT_STATES, ["satisfied", "waiting", "timed-out", "gone"]);
/// ```
pub const WAIT_STATES: [&str; 4] = ["satisfied", "waiting", "timed-out", "gone"];

/// A reference the agent already holds (a run, a job, a pane...).
///
/// The seed does not show `AxRef`'s fields, so it is kept opaque: any JSON
/// value, compared by equality when an event matcher names a `target`.
///
/// ```
/// let r: waitfor::ouro::AxRef = serde_json::json!({"kind": "run", "id": "42"});
/// assert!(r.is_object());
/// ```
pub type AxRef = Value;

/// How a wait ended.
///
/// ```
/// use waitfor::ouro::WaitState;
/// assert_eq!(serde_json::to_value(WaitState::TimedOut).unwrap(), "timed-out");
/// assert_eq!(WaitState::Gone.as_str(), "gone");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitState {
    /// It happened; `events` holds what happened.
    Satisfied,
    /// Still waiting (a stream's first line); keep reading or resume.
    Waiting,
    /// Nothing happened in time; `resume` waits again from the same cursor.
    TimedOut,
    /// What was awaited cannot happen any more (deleted, left, closed).
    Gone,
}

impl WaitState {
    /// Every state, in the order of [`WAIT_STATES`].
    ///
    /// ```
    /// assert_eq!(waitfor::ouro::WaitState::ALL.len(), 4);
    /// ```
    pub const ALL: [WaitState; 4] = [
        WaitState::Satisfied,
        WaitState::Waiting,
        WaitState::TimedOut,
        WaitState::Gone,
    ];

    /// The state's name as it appears in JSON.
    ///
    /// ```
    /// assert_eq!(waitfor::ouro::WaitState::Satisfied.as_str(), "satisfied");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            WaitState::Satisfied => "satisfied",
            WaitState::Waiting => "waiting",
            WaitState::TimedOut => "timed-out",
            WaitState::Gone => "gone",
        }
    }

    /// The state named `name`, if it is one of [`WAIT_STATES`].
    ///
    /// ```
    /// use waitfor::ouro::WaitState;
    /// assert_eq!(WaitState::from_name("timed-out"), Some(WaitState::TimedOut));
    /// assert_eq!(WaitState::from_name("done"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<WaitState> {
        WaitState::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// One thing that happened, with the cursor that resumes right after it.
///
/// `target` is always written (as `null` when absent); `data` is left out
/// when absent.
///
/// ```
/// use waitfor::ouro::AxEvent;
/// let e: AxEvent = serde_json::from_value(serde_json::json!({
///     "cursor": "c1", "type": "build.done", "at": "2026-01-01T00:00:00Z",
///     "by": "ci", "target": null, "summary": "build 7 passed"
/// })).unwrap();
/// assert_eq!(e.kind, "build.done");
/// assert_eq!(serde_json::to_value(&e).unwrap()["target"], serde_json::Value::Null);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxEvent {
    /// The cursor that resumes the wait right after this event.
    pub cursor: String,
    /// The event's type, such as `"build.done"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// When it happened (a timestamp string, as the source wrote it).
    pub at: String,
    /// Who or what did it.
    pub by: String,
    /// What it happened to, if anything.
    pub target: Option<AxRef>,
    /// One human-readable line.
    pub summary: String,
    /// Structured details, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
}

/// How current the source is, so an agent can tell "nothing happened" from
/// "nothing was seen". `asOf` is `null` when unknown.
///
/// ```
/// use waitfor::ouro::Fresh;
/// let f = Fresh { state: "current".into(), as_of: None };
/// assert_eq!(serde_json::to_string(&f).unwrap(), r#"{"state":"current","asOf":null}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fresh {
    /// A word for how current the source is (the JSONL source says
    /// `"current"` after a full read, `"missing"` when the file is gone).
    pub state: String,
    /// When the source was last known in that state.
    #[serde(rename = "asOf")]
    pub as_of: Option<String>,
}

/// A command the agent can run next, such as how to resume the wait.
///
/// The seed does not show `NextStep`; this library's shape is
/// `{ "command": string, "description"?: string }`: `command` is a complete
/// command line, ready to run, and `description` (left out when absent) says
/// what it does. Other fields a tool adds to a step are kept as given (the
/// seed's steps are the tool's own objects), after these two.
///
/// ```
/// use waitfor::ouro::NextStep;
/// let step = NextStep::new("waitfor events log.jsonl --cursor j1.0.0.0.0");
/// assert_eq!(serde_json::to_value(&step).unwrap(),
///            serde_json::json!({"command": "waitfor events log.jsonl --cursor j1.0.0.0.0"}));
/// let own = serde_json::json!({"command": "ax wait", "tool": "ax", "args": ["--cursor", "c1"]});
/// let step: NextStep = serde_json::from_value(own.clone()).unwrap();
/// assert_eq!(step.extra["tool"], "ax");
/// assert_eq!(serde_json::to_value(&step).unwrap(), own);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextStep {
    /// The command line to run.
    pub command: String,
    /// What running it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The tool's own fields, if any.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl NextStep {
    /// A step with a command and no description.
    ///
    /// ```
    /// assert_eq!(waitfor::ouro::NextStep::new("ls").command, "ls");
    /// ```
    pub fn new(command: impl Into<String>) -> NextStep {
        NextStep {
            command: command.into(),
            description: None,
            extra: Map::new(),
        }
    }

    /// The same step with a description.
    ///
    /// ```
    /// let s = waitfor::ouro::NextStep::new("ls").with_description("list files");
    /// assert_eq!(s.description.as_deref(), Some("list files"));
    /// ```
    pub fn with_description(mut self, description: impl Into<String>) -> NextStep {
        self.description = Some(description.into());
        self
    }
}

/// The envelope a wait returns (`wait/1`). Every field is always written;
/// absent values are `null` or `[]`.
///
/// ```
/// use waitfor::ouro::{wait, NextStep, WaitFields, WaitState};
/// let w = wait(WaitFields {
///     resume: Some(NextStep::new("waitfor events log.jsonl --cursor j1.0.0.0.0")),
///     ..WaitFields::new("build 7", WaitState::TimedOut, "2026-01-01T00:00:00Z")
/// }).unwrap();
/// let keys: Vec<String> = serde_json::to_value(&w).unwrap()
///     .as_object().unwrap().keys().cloned().collect();
/// assert_eq!(keys, ["ax", "for", "target", "state", "since", "until", "cursor",
///                   "events", "fresh", "resume", "reason", "callback", "next"]);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wait {
    /// Always [`WAIT_VERSION`].
    pub ax: String,
    /// What is awaited, in words.
    #[serde(rename = "for")]
    pub for_: String,
    /// The reference the wait is about.
    pub target: Option<AxRef>,
    /// How the wait ended.
    pub state: WaitState,
    /// When the wait began.
    pub since: String,
    /// When it ended or will give up.
    pub until: Option<String>,
    /// The cursor after the last event read.
    pub cursor: Option<String>,
    /// What happened.
    pub events: Vec<AxEvent>,
    /// How current the source is.
    pub fresh: Option<Fresh>,
    /// How to wait again from the same cursor.
    pub resume: Option<NextStep>,
    /// Why it ended this way, in words.
    pub reason: Option<String>,
    /// Where the host will report the outcome later, if anywhere.
    pub callback: Option<String>,
    /// What the agent can do next.
    pub next: Vec<NextStep>,
}

/// What [`wait`] takes: `for`, `state` and `since` are required, the rest
/// default to `null` / `[]` (see [`WaitFields::new`]).
///
/// ```
/// use waitfor::ouro::{WaitFields, WaitState};
/// let f = WaitFields::new("deploy", WaitState::Gone, "2026-01-01T00:00:00Z");
/// assert!(f.events.is_empty() && f.resume.is_none());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct WaitFields {
    /// See [`Wait::for_`].
    pub for_: String,
    /// See [`Wait::state`].
    pub state: WaitState,
    /// See [`Wait::since`].
    pub since: String,
    /// See [`Wait::target`].
    pub target: Option<AxRef>,
    /// See [`Wait::until`].
    pub until: Option<String>,
    /// See [`Wait::cursor`].
    pub cursor: Option<String>,
    /// See [`Wait::events`].
    pub events: Vec<AxEvent>,
    /// See [`Wait::fresh`].
    pub fresh: Option<Fresh>,
    /// See [`Wait::resume`].
    pub resume: Option<NextStep>,
    /// See [`Wait::reason`].
    pub reason: Option<String>,
    /// See [`Wait::callback`].
    pub callback: Option<String>,
    /// See [`Wait::next`].
    pub next: Vec<NextStep>,
}

impl WaitFields {
    /// The required fields; everything else empty.
    ///
    /// ```
    /// use waitfor::ouro::{WaitFields, WaitState};
    /// let f = WaitFields::new("x", WaitState::Waiting, "t0");
    /// assert_eq!(f.for_, "x");
    /// ```
    pub fn new(for_: impl Into<String>, state: WaitState, since: impl Into<String>) -> Self {
        WaitFields {
            for_: for_.into(),
            state,
            since: since.into(),
            target: None,
            until: None,
            cursor: None,
            events: Vec::new(),
            fresh: None,
            resume: None,
            reason: None,
            callback: None,
            next: Vec::new(),
        }
    }
}

/// Why [`wait`] refused to build a wait.
///
/// ```
/// use waitfor::ouro::{wait, WaitError, WaitFields, WaitState};
/// let err = wait(WaitFields::new("x", WaitState::Satisfied, "t0")).unwrap_err();
/// let WaitError::Invalid { errors } = err;
/// assert!(errors[0].starts_with("events"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaitError {
    /// The fields break a rule of [`validate_wait`]; one message per rule.
    #[error("invalid wait: {}", errors.join("; "))]
    Invalid {
        /// What is wrong, each message starting with the field's name.
        errors: Vec<String>,
    },
}

/// Builds a wait, filling in `ax`. Unlike the seed's `wait`, which builds
/// anything and leaves the rules to `validateWait`, this one checks them:
/// a timed-out or waiting wait needs `resume`, a satisfied one needs at
/// least one event; otherwise [`WaitError::Invalid`].
///
/// ```
/// use waitfor::ouro::{wait, WaitFields, WaitState, WAIT_VERSION};
/// let w = wait(WaitFields::new("deploy", WaitState::Gone, "t0")).unwrap();
/// assert_eq!(w.ax, WAIT_VERSION);
/// assert!(wait(WaitFields::new("deploy", WaitState::Waiting, "t0")).is_err());
/// ```
pub fn wait(fields: WaitFields) -> Result<Wait, WaitError> {
    let w = Wait {
        ax: WAIT_VERSION.to_string(),
        for_: fields.for_,
        target: fields.target,
        state: fields.state,
        since: fields.since,
        until: fields.until,
        cursor: fields.cursor,
        events: fields.events,
        fresh: fields.fresh,
        resume: fields.resume,
        reason: fields.reason,
        callback: fields.callback,
        next: fields.next,
    };
    let check = validate_wait(&serde_json::to_value(&w).unwrap_or(Value::Null));
    if check.ok {
        Ok(w)
    } else {
        Err(WaitError::Invalid {
            errors: check.errors,
        })
    }
}

/// Builds a wait as the seed's `wait` does, for bindings that take any
/// JSON: `ax` set, the optional fields defaulted, the fields in the
/// envelope's order (fields it does not know kept after them). Nothing is
/// checked ([`validate_wait`] does); `None` when `fields` is no object.
///
/// ```
/// use serde_json::json;
/// let w = waitfor::ouro::wait_json(json!({"state": "gone", "for": "x", "own": 1})).unwrap();
/// let keys: Vec<&str> = w.as_object().unwrap().keys().map(String::as_str).collect();
/// assert_eq!(keys[..5], ["ax", "for", "target", "state", "until"]);
/// assert_eq!((w["ax"].as_str(), keys.last()), (Some("wait/1"), Some(&"own")));
/// ```
pub fn wait_json(fields: Value) -> Option<Value> {
    let Value::Object(mut given) = fields else {
        return None;
    };
    given.remove("ax");
    let mut built = Map::new();
    built.insert("ax".into(), WAIT_VERSION.into());
    let (null, list) = (Some(Value::Null), Some(Value::Array(Vec::new())));
    for (name, empty) in [
        ("for", None),
        ("target", null.clone()),
        ("state", None),
        ("since", None),
        ("until", null.clone()),
        ("cursor", null.clone()),
        ("events", list.clone()),
        ("fresh", null.clone()),
        ("resume", null.clone()),
        ("reason", null.clone()),
        ("callback", null),
        ("next", list),
    ] {
        if let Some(value) = given.remove(name).or(empty) {
            built.insert(name.into(), value);
        }
    }
    built.extend(given);
    Some(Value::Object(built))
}

impl Wait {
    /// A wait from JSON, checked by [`validate_wait`] first, so that the
    /// refusal lists what is wrong as that does.
    ///
    /// ```
    /// use waitfor::ouro::{Wait, WaitError};
    /// let Err(WaitError::Invalid { errors }) = Wait::from_json(serde_json::json!({})) else { panic!() };
    /// assert!(!errors.is_empty());
    /// ```
    pub fn from_json(value: Value) -> Result<Wait, WaitError> {
        let check = validate_wait(&value);
        if !check.ok {
            return Err(WaitError::Invalid {
                errors: check.errors,
            });
        }
        serde_json::from_value(value).map_err(|e| WaitError::Invalid {
            errors: vec![e.to_string()],
        })
    }
}
