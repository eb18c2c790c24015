//! The result of a wait: always structured, whatever the ending.

use serde::Serialize;

/// JSON Schema (draft 2020-12) of [`WaitResult`]'s JSON form.
pub const RESULT_SCHEMA: &str = include_str!("result.schema.json");

/// How a wait ended. A timeout is a normal ending, not an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A success condition held.
    Matched,
    /// The view stayed unchanged for the quiet window.
    Settled,
    /// New output appeared (the `any_output` condition).
    AnyOutput,
    /// A `stop` failure marker hit.
    Stopped,
    /// The target can no longer change.
    Gone,
    /// The time limit passed.
    Timeout,
    /// The host cancelled the wait.
    Cancelled,
    /// The probe failed beyond the error policy, or never answered.
    ProbeError,
    /// The wait could not go on (output over the cap, a lost anchor).
    Error,
}

impl Outcome {
    /// The outcome's JSON name.
    ///
    /// ```
    /// assert_eq!(waitfor::Outcome::AnyOutput.as_str(), "any_output");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Matched => "matched",
            Self::Settled => "settled",
            Self::AnyOutput => "any_output",
            Self::Stopped => "stopped",
            Self::Gone => "gone",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::ProbeError => "probe_error",
            Self::Error => "error",
        }
    }

    /// Whether a success condition held.
    pub fn is_success(self) -> bool {
        matches!(self, Self::Matched | Self::Settled | Self::AnyOutput)
    }
}

/// A bounded tail of the last observation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Tail {
    /// The last lines, oldest first.
    pub lines: Vec<String>,
    /// Whether lines or bytes were left out at the front.
    pub truncated: bool,
}

/// How the probe fared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProbeAccounting {
    /// Probe calls that failed.
    pub errors: u64,
    /// Probe calls still running at the deadline or cancel, abandoned.
    pub abandoned: u64,
    /// The last failure's message, at most
    /// [`ProbeError::MAX_MESSAGE_BYTES`](crate::ProbeError::MAX_MESSAGE_BYTES).
    pub last_error: Option<String>,
}

/// Everything a wait reports.
///
/// ```
/// use waitfor::{probe_fn, Condition, Engine, Observation, Pattern, Spec};
/// use std::time::Duration;
/// let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
///     .interval(Duration::from_millis(10));
/// let result = Engine::global().wait(spec, probe_fn(|_| Ok(Observation::text("ready")))).unwrap();
/// assert_eq!(result.outcome, waitfor::Outcome::Matched);
/// assert_eq!(result.samples, 1);
/// let json = result.to_json();
/// assert_eq!(json["outcome"], "matched");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaitResult {
    /// How the wait ended.
    pub outcome: Outcome,
    /// Index into the pattern list (or `stop` when stopped) that hit.
    pub matched_index: Option<usize>,
    /// The lines that matched.
    pub matched_lines: Vec<String>,
    /// A success pattern already matched what was there at entry, and
    /// nothing new matched (fresh view).
    pub matched_at_entry: bool,
    /// Anything new appeared since the wait began.
    pub saw_new_output: bool,
    /// The end of the last observation.
    pub tail: Tail,
    /// Exit status of the last command the probe ran.
    pub exit_code: Option<i32>,
    /// Probe calls that returned (successfully or not).
    pub samples: u64,
    /// Time from the start to the end of the wait.
    pub elapsed_ms: u64,
    /// The time limit enforced, after the host's ceiling.
    pub effective_max_wait_ms: u64,
    /// Whether the ceiling lowered the requested limit.
    pub clamped: bool,
    /// Probe failures and abandoned calls.
    pub probe: ProbeAccounting,
    /// Why the wait ended with `error` or `probe_error`.
    pub error: Option<String>,
    /// Where a later wait continues from (see [`crate::ResumeToken`]).
    pub resume: Option<String>,
    /// Whether the deciding sample was taken because of a wake-up rather
    /// than the poll timer: a push source's (a file change, a pane's
    /// output, [`crate::WaitControl::wake`]) or the probe's own request for
    /// its next sample at once (a pane wait once its control client is
    /// attached, an event log with more to read).
    pub woken: bool,
    /// The probe saw the target on an alternate screen at some sample
    /// (matching was suppressed for those samples).
    pub alternate_screen: bool,
    /// What the probe has to say about how the wait ended (see
    /// [`crate::EndNotices`]): a pane wait on a busy tmux server, or a
    /// command wait whose commands waited for their start turns, says when
    /// this process's other waits held every turn, so that it sampled less
    /// often than asked, or not at all. Left out of the JSON form when
    /// empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// The last observation's text, whole (not in the JSON form: `tail`
    /// is the bounded part).
    #[serde(skip)]
    pub last_observation: String,
}

impl WaitResult {
    /// The JSON form (see [`RESULT_SCHEMA`]).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a wait result always serializes")
    }
}

/// Keeps the end of `text`: at most `max_lines` lines and `max_bytes`
/// bytes (cut at a character boundary).
pub(crate) fn tail_of(text: &str, max_lines: usize, max_bytes: usize) -> Tail {
    let text = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return Tail::default();
    }
    let mut truncated = false;
    let mut start = 0;
    if text.len() > max_bytes {
        start = text.len() - max_bytes;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        truncated = true;
    }
    let kept = &text[start..];
    let mut lines: Vec<String> = kept.split('\n').map(str::to_string).collect();
    if lines.len() > max_lines {
        lines.drain(..lines.len() - max_lines);
        truncated = true;
    }
    Tail { lines, truncated }
}

/// The tail of a list of lines, as [`tail_of`] keeps it from their text
/// joined with newlines. Lines already within the limits are kept as they
/// are, without joining and splitting them again.
pub(crate) fn tail_of_lines(lines: Vec<String>, max_lines: usize, max_bytes: usize) -> Vec<String> {
    let joined_bytes = lines
        .iter()
        .map(|l| l.len() + 1)
        .sum::<usize>()
        .saturating_sub(1);
    let kept_as_they_are = lines.len() <= max_lines
        && joined_bytes <= max_bytes
        // A last empty line is a trailing newline, which `tail_of` drops.
        && lines.last().is_some_and(|l| !l.is_empty())
        && lines.iter().all(|l| !l.contains('\n'));
    if kept_as_they_are {
        return lines;
    }
    tail_of(&lines.join("\n"), max_lines, max_bytes).lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_last_lines_and_says_it_cut() {
        let tail = tail_of("a\nb\nc\n", 2, 100);
        assert_eq!(tail.lines, vec!["b", "c"]);
        assert!(tail.truncated);
    }

    /// Lines kept as they are must be exactly what the tail of
    /// their joined text would keep.
    #[test]
    fn lines_kept_as_they_are_follow_the_tail_rules() {
        let cases: [&[&str]; 8] = [
            &[],
            &[""],
            &["ready"],
            &["a", "", "ready"],
            &["a", "b", ""],
            &["one", "two", "three", "four", "five"],
            &["ééé", "0123456789"],
            &["two\nlines", "ready"],
        ];
        for lines in cases {
            for (max_lines, max_bytes) in [
                (10, 1000),
                (2, 1000),
                (10, 7),
                (10, 8),
                (10, 9),
                (10, 16),
                (10, 17),
                (1, 1),
            ] {
                let owned: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                assert_eq!(
                    tail_of_lines(owned, max_lines, max_bytes),
                    tail_of(&lines.join("\n"), max_lines, max_bytes).lines,
                    "{lines:?} within {max_lines} lines, {max_bytes} bytes"
                );
            }
        }
    }
}
