//! The spec: everything a wait needs, validated before the first probe call.

mod pane;
mod parse;
mod validate;

use crate::error::SpecError;
use crate::pattern::Pattern;
use serde_json::Value;
use std::time::Duration;

pub use pane::{Freshness, PanePick, PaneTarget};
pub use parse::SPEC_SCHEMA;

/// The smallest poll interval a wait accepts.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// How successive observations become what the conditions see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ViewKind {
    /// Each observation is the whole current state (AURA).
    #[default]
    Whole,
    /// Only what appeared after the wait began (the tmux tools): stream
    /// probes are appended, snapshot probes are diffed against an anchor.
    Fresh,
}

/// A test on structured (JSON) output at an RFC 6901 pointer.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonTest {
    /// The value at the pointer equals this value.
    Equals(Value),
    /// The pointer resolves (`true`) or does not (`false`).
    Exists(bool),
}

/// A success condition.
///
/// ```
/// use waitfor::{Condition, Pattern};
/// use std::time::Duration;
/// let c = Condition::Any(vec![
///     Condition::Matches(Pattern::literal("ready")),
///     Condition::QuietFor(Duration::from_secs(5)),
/// ]);
/// assert!(matches!(c, Condition::Any(_)));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// The pattern matches the view.
    Matches(Pattern),
    /// The pattern no longer matches the latest view text (rescanned whole,
    /// since a match can disappear from anywhere).
    NotMatches(Pattern),
    /// Any of these patterns matches; the result names the index that hit.
    Patterns(Vec<Pattern>),
    /// The view has not changed for this long.
    QuietFor(Duration),
    /// Any new output at all (fresh view: anything new; whole view: the
    /// observation differs from the first one).
    AnyOutput,
    /// A test on structured output.
    Json {
        /// RFC 6901 pointer, `""` for the whole document.
        pointer: String,
        /// What must hold there.
        test: JsonTest,
    },
    /// The `command` probe's exit status equals this.
    ExitCode(i32),
    /// At least one of these holds (the first in order is reported).
    Any(Vec<Condition>),
    /// All of these hold at the same sample (pattern hits are remembered
    /// while the view text they were found in is still there).
    All(Vec<Condition>),
}

/// What the engine does when a probe call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorPolicy {
    /// End the wait with outcome `probe_error` at the first failure.
    #[default]
    Fail,
    /// Keep sampling through up to this many consecutive failures; the
    /// next one ends the wait. A success resets the count.
    Tolerate(u32),
}

/// Grow the interval after each sample that decided nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// Multiplier applied to the interval after each sample (>= 1).
    pub factor: f64,
    /// The interval never grows past this.
    pub max_interval: Duration,
}

/// How much of the last observation the result keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailLimits {
    /// At most this many lines (the last ones).
    pub lines: usize,
    /// At most this many bytes (the end is kept).
    pub bytes: usize,
}

impl Default for TailLimits {
    fn default() -> Self {
        Self {
            lines: 20,
            bytes: 2000,
        }
    }
}

/// A built-in probe named by the spec; a host callback probe is passed to
/// the engine instead and needs no entry here.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeSpec {
    /// Run `argv` (never through a shell) and observe its output.
    Command {
        /// Program and arguments.
        argv: Vec<String>,
        /// Working directory, if not the current one.
        cwd: Option<String>,
        /// Observe stderr after stdout (default true).
        stderr: bool,
    },
    /// Observe bytes appended to a file since the wait began.
    File {
        /// The file; it need not exist yet.
        path: String,
    },
    /// Observe what a tmux pane prints after the wait began (the pane
    /// probe keeps its own anchor, so the whole view sees only fresh rows).
    Tmux {
        /// Which pane: the first field given wins, in the order of
        /// [`PaneTarget`]; none means the first session's.
        pane: PaneTarget,
        /// `tmux -L` socket name; the default server if `None` or empty.
        socket_name: Option<String>,
        /// Wake on the pane's output through a control-mode client
        /// (default true); polling only when false.
        push: bool,
        /// Which pane a window or session target stands for.
        pick: PanePick,
        /// Which rows count as new.
        freshness: Freshness,
    },
}

/// Everything a wait needs. Build it natively or parse it from JSON with
/// [`Spec::from_json`]; either way [`Spec::validate`] runs before the first
/// probe call.
///
/// ```
/// use waitfor::{Condition, Pattern, Spec};
/// use std::time::Duration;
/// let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
///     .interval(Duration::from_millis(100))
///     .max_wait(Duration::from_secs(5))
///     .stop([Pattern::literal("error")]);
/// spec.validate().unwrap();
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The built-in probe, when the spec names one.
    pub probe: Option<ProbeSpec>,
    /// How observations become what the conditions see.
    pub view: ViewKind,
    /// What ends the wait successfully.
    pub until: Condition,
    /// Failure markers; a hit wins over a success in the same sample.
    pub stop: Vec<Pattern>,
    /// Time between two planned samples: samples are planned this far
    /// apart from the first; a planned time that passes while a call
    /// still runs is skipped.
    pub interval: Duration,
    /// Optional growth of the interval.
    pub backoff: Option<Backoff>,
    /// Requested time limit, before the host's ceiling clamps it.
    pub max_wait: Duration,
    /// What a failing probe call does to the wait.
    pub on_probe_error: ErrorPolicy,
    /// Largest observation accepted, in bytes (the host's default if unset).
    pub output_cap: Option<usize>,
    /// How much of the last observation the result keeps.
    pub tail: TailLimits,
    /// Least time between two progress reports.
    pub progress_every: Duration,
    /// Continue from where an earlier wait stopped (its `resume` token).
    pub resume: Option<String>,
    /// When the deadline comes between two samples, take one more sample
    /// at the deadline (the last interval cut short), with no time left
    /// to answer: an answer ready at once still counts. AURA's `wait_for`
    /// samples so (its profile sets this); off, the wait ends at the
    /// deadline without sampling.
    pub sample_at_deadline: bool,
    /// Measure `quiet_for` between the planned times of samples instead
    /// of between the times their answers came: a window of whole
    /// intervals then settles after that many intervals however long each
    /// call took, as in AURA's `wait_for`, which sleeps a whole interval
    /// after each answer (its profile sets this).
    pub quiet_on_plan: bool,
}

impl Spec {
    /// A spec with defaults: whole view, 1 s interval, 30 s limit.
    pub fn new(until: Condition) -> Self {
        Self {
            probe: None,
            view: ViewKind::Whole,
            until,
            stop: Vec::new(),
            interval: Duration::from_secs(1),
            backoff: None,
            max_wait: Duration::from_secs(30),
            on_probe_error: ErrorPolicy::Fail,
            output_cap: None,
            tail: TailLimits::default(),
            progress_every: Duration::from_secs(1),
            resume: None,
            sample_at_deadline: false,
            quiet_on_plan: false,
        }
    }

    /// Parses and validates a JSON spec (see [`SPEC_SCHEMA`] and
    /// [`Spec::validate`]).
    ///
    /// ```
    /// let spec = waitfor::Spec::from_json(
    ///     r#"{"until": {"matches": "ready"}, "interval_ms": 50, "max_wait_ms": 2000}"#,
    /// ).unwrap();
    /// assert_eq!(spec.interval.as_millis(), 50);
    /// ```
    pub fn from_json(text: &str) -> Result<Self, SpecError> {
        let spec = parse::parse(text)?;
        spec.validate()?;
        Ok(spec)
    }

    /// Parses and validates an already-decoded JSON value.
    pub fn from_value(value: &Value) -> Result<Self, SpecError> {
        let spec = parse::parse_value(value)?;
        spec.validate()?;
        Ok(spec)
    }

    /// Checks every rule; the error names the field and the rule. It takes
    /// bounded time: regexes are parsed (up to
    /// [`MAX_PATTERN_BYTES`](crate::limits::MAX_PATTERN_BYTES) of them), not
    /// compiled. A wait compiles them in its own time (large ones can take
    /// seconds); one that does not compile after all (its program too
    /// large, a class name unknown) ends the wait with outcome `error`.
    pub fn validate(&self) -> Result<(), SpecError> {
        validate::validate(self)
    }

    /// Every rule but checking the patterns and decoding the resume
    /// token, for the wait's machine, which does both right after (it
    /// keeps the decoded token).
    pub(crate) fn validate_fields(&self) -> Result<(), SpecError> {
        validate::validate_fields(self)
    }

    /// The patterns' length and (up to a bound) syntax, without compiling
    /// them: what a host's thread checks before a wait starts, in bounded
    /// time. The wait compiles them in its own time.
    pub(crate) fn check_patterns(&self) -> Result<(), SpecError> {
        validate::check_patterns(self)
    }

    /// Sets the probe.
    pub fn probe(mut self, probe: ProbeSpec) -> Self {
        self.probe = Some(probe);
        self
    }

    /// Sets the view.
    pub fn view(mut self, view: ViewKind) -> Self {
        self.view = view;
        self
    }

    /// Sets the failure markers.
    pub fn stop(mut self, stop: impl IntoIterator<Item = Pattern>) -> Self {
        self.stop = stop.into_iter().collect();
        self
    }

    /// Sets the poll interval.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Sets the backoff.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = Some(backoff);
        self
    }

    /// Sets the requested time limit.
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self
    }

    /// Sets the probe-error policy.
    pub fn on_probe_error(mut self, policy: ErrorPolicy) -> Self {
        self.on_probe_error = policy;
        self
    }

    /// Sets the output cap in bytes.
    pub fn output_cap(mut self, bytes: usize) -> Self {
        self.output_cap = Some(bytes);
        self
    }

    /// Sets the resume token.
    pub fn resume(mut self, token: impl Into<String>) -> Self {
        self.resume = Some(token.into());
        self
    }
}

/// A short description of a condition, for logs and the `wait_condition`
/// span attribute.
///
/// ```
/// use waitfor::{Condition, Pattern};
/// let c = Condition::Matches(Pattern::regex("ready|done"));
/// assert_eq!(waitfor::describe(&c), "matches /ready|done/");
/// ```
pub fn describe(condition: &Condition) -> String {
    fn pattern(p: &Pattern) -> String {
        let flags = if p.case_sensitive { "" } else { "i" };
        if p.regex {
            format!("/{}/{flags}", p.text)
        } else {
            format!("{:?}{flags}", p.text)
        }
    }
    fn list(children: &[Condition]) -> String {
        children.iter().map(describe).collect::<Vec<_>>().join(", ")
    }
    match condition {
        Condition::Matches(p) => format!("matches {}", pattern(p)),
        Condition::NotMatches(p) => format!("not_matches {}", pattern(p)),
        Condition::Patterns(ps) => format!(
            "patterns [{}]",
            ps.iter().map(pattern).collect::<Vec<_>>().join(", ")
        ),
        Condition::QuietFor(d) => format!("quiet_for {} ms", d.as_millis()),
        Condition::AnyOutput => "any_output".to_string(),
        Condition::Json { pointer, test } => match test {
            JsonTest::Equals(v) => format!("json {pointer:?} == {v}"),
            JsonTest::Exists(e) => format!("json {pointer:?} exists={e}"),
        },
        Condition::ExitCode(code) => format!("exit_code {code}"),
        Condition::Any(children) => format!("any({})", list(children)),
        Condition::All(children) => format!("all({})", list(children)),
    }
}
