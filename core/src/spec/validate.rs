//! The rules a spec must meet before a wait starts.

use super::{Condition, ProbeSpec, Spec, MIN_INTERVAL};
use crate::error::{Rule, SpecError};
use crate::pattern::{Pattern, MAX_PATTERNS, MAX_PATTERN_BYTES};
use std::time::Duration;

/// Every rule, in bounded time: the patterns are checked, not compiled
/// (see [`check_patterns`]).
pub(super) fn validate(spec: &Spec) -> Result<(), SpecError> {
    validate_fields(spec)?;
    check_patterns(spec)?;
    if let Some(token) = &spec.resume {
        check_resume_kind(&crate::resume::ResumeToken::decode(token)?, spec)?;
    }
    Ok(())
}

/// A file wait resumes from a file position, any other from the lines it
/// last showed: a token of the other kind would be ignored, and the wait
/// would skip what was written between the two calls without a word.
fn check_resume_kind(token: &crate::resume::ResumeToken, spec: &Spec) -> Result<(), SpecError> {
    let file_wait = matches!(spec.probe, Some(ProbeSpec::File { .. }));
    let file_token = matches!(token, crate::resume::ResumeToken::File(_));
    if file_wait == file_token {
        return Ok(());
    }
    let (token_of, wait) = if file_token {
        ("a file wait", "this wait")
    } else {
        ("a wait that is not on a file", "a file wait")
    };
    Err(SpecError::new(
        "resume",
        Rule::InvalidResume,
        format!("the resume token is {token_of}'s; it does not fit {wait}: wait again without it"),
    ))
}

/// Regex text parsed by [`check_patterns`] at most: as much as one
/// pattern of the longest kind, whose parse takes milliseconds.
const SYNTAX_CHECKED_BYTES: usize = MAX_PATTERN_BYTES;

/// The number of patterns (at most [`MAX_PATTERNS`]), their length, and
/// the syntax of the first of them up to
/// [`SYNTAX_CHECKED_BYTES`], in the order compiling them meets them (so
/// the same first error), without compiling them (see `Pattern::check`).
/// A longer list of regexes is checked as the wait compiles it, in its
/// own time.
pub(super) fn check_patterns(spec: &Spec) -> Result<(), SpecError> {
    let until = pattern_count(&spec.until);
    if until.saturating_add(spec.stop.len()) > MAX_PATTERNS {
        return Err(SpecError::new(
            if until > MAX_PATTERNS {
                "until"
            } else {
                "stop"
            },
            Rule::OutOfRange,
            format!("a spec may list at most {MAX_PATTERNS} patterns in all"),
        ));
    }
    let mut budget = SYNTAX_CHECKED_BYTES;
    check_condition_patterns(&spec.until, "until", &mut budget)?;
    check_each(&spec.stop, "stop", &mut budget)
}

/// How many patterns `condition` lists.
fn pattern_count(condition: &Condition) -> usize {
    match condition {
        Condition::Matches(_) | Condition::NotMatches(_) => 1,
        Condition::Patterns(list) => list.len(),
        Condition::Any(children) | Condition::All(children) => {
            children.iter().map(pattern_count).sum()
        }
        _ => 0,
    }
}

fn check_condition_patterns(
    condition: &Condition,
    field: &str,
    budget: &mut usize,
) -> Result<(), SpecError> {
    match condition {
        Condition::Matches(p) => check_one(p, &format!("{field}.matches"), budget),
        Condition::NotMatches(p) => check_one(p, &format!("{field}.not_matches"), budget),
        Condition::Patterns(list) => check_each(list, &format!("{field}.patterns"), budget),
        Condition::Any(children) | Condition::All(children) => {
            let kind = if matches!(condition, Condition::Any(_)) {
                "any"
            } else {
                "all"
            };
            children.iter().enumerate().try_for_each(|(i, c)| {
                check_condition_patterns(c, &format!("{field}.{kind}[{i}]"), budget)
            })
        }
        _ => Ok(()),
    }
}

fn check_each(patterns: &[Pattern], field: &str, budget: &mut usize) -> Result<(), SpecError> {
    patterns
        .iter()
        .enumerate()
        .try_for_each(|(i, p)| check_one(p, &format!("{field}[{i}]"), budget))
}

fn check_one(pattern: &Pattern, field: &str, budget: &mut usize) -> Result<(), SpecError> {
    if !pattern.regex || pattern.text.len() > *budget {
        return pattern.check_length(field);
    }
    *budget -= pattern.text.len();
    pattern.check(field)
}

/// Every rule but the last two of [`validate`]: the patterns check out
/// and the resume token decodes. A caller that checks and decodes them
/// next, in that order, gets the same first error as from `validate`.
pub(super) fn validate_fields(spec: &Spec) -> Result<(), SpecError> {
    if spec.max_wait.is_zero() {
        return Err(not_positive("max_wait_ms"));
    }
    if spec.interval < MIN_INTERVAL {
        return Err(SpecError::new(
            "interval_ms",
            Rule::OutOfRange,
            format!(
                "must be at least {} ms, got {} ms",
                MIN_INTERVAL.as_millis(),
                spec.interval.as_millis()
            ),
        ));
    }
    if spec.interval >= spec.max_wait {
        return Err(SpecError::new(
            "interval_ms",
            Rule::IntervalNotBelowLimit,
            format!(
                "the interval ({} ms) must be below the time limit max_wait_ms ({} ms)",
                spec.interval.as_millis(),
                spec.max_wait.as_millis()
            ),
        ));
    }
    if let Some(backoff) = &spec.backoff {
        if !(backoff.factor.is_finite() && backoff.factor >= 1.0) {
            return Err(SpecError::new(
                "backoff.factor",
                Rule::OutOfRange,
                format!(
                    "must be a finite number of at least 1, got {}",
                    backoff.factor
                ),
            ));
        }
        if backoff.max_interval < spec.interval {
            return Err(SpecError::new(
                "backoff.max_interval_ms",
                Rule::OutOfRange,
                "must not be below interval_ms",
            ));
        }
    }
    if spec.output_cap == Some(0) {
        return Err(not_positive("output_cap_bytes"));
    }
    if spec.tail.lines == 0 {
        return Err(not_positive("tail.lines"));
    }
    if spec.tail.bytes == 0 {
        return Err(not_positive("tail.bytes"));
    }
    if spec.progress_every.is_zero() {
        return Err(not_positive("progress_every_ms"));
    }
    if let Some(probe) = &spec.probe {
        validate_probe(probe)?;
    }
    check_condition(&spec.until, "until", spec.max_wait)
}

fn not_positive(field: &str) -> SpecError {
    SpecError::new(field, Rule::NotPositive, "must be greater than 0")
}

fn validate_probe(probe: &ProbeSpec) -> Result<(), SpecError> {
    match probe {
        ProbeSpec::Command { argv, cwd, .. } => {
            if argv.first().is_none_or(|program| program.is_empty()) {
                return Err(SpecError::new(
                    "probe.command.argv",
                    Rule::Empty,
                    "needs at least a program name",
                ));
            }
            for (i, arg) in argv.iter().enumerate() {
                SpecError::check_no_nul(&format!("probe.command.argv[{i}]"), arg)?;
            }
            if let Some(cwd) = cwd {
                SpecError::check_no_nul("probe.command.cwd", cwd)?;
            }
        }
        ProbeSpec::File { path } => {
            if path.is_empty() {
                return Err(SpecError::new(
                    "probe.file.path",
                    Rule::Empty,
                    "must not be empty",
                ));
            }
            SpecError::check_no_nul("probe.file.path", path)?;
        }
        ProbeSpec::Tmux {
            socket_name, pane, ..
        } => {
            // An empty name is the default socket, as in every door.
            if let Some(name) = socket_name {
                SpecError::check_socket_name("probe.tmux.socket_name", name)?;
            }
            let names = [
                ("pane_id", &pane.pane_id),
                ("window_id", &pane.window_id),
                ("session_id", &pane.session_id),
                ("session_name", &pane.session_name),
                ("target", &pane.target),
            ];
            for (name, value) in names {
                if let Some(value) = value {
                    SpecError::check_no_nul(&format!("probe.tmux.{name}"), value)?;
                }
            }
        }
    }
    Ok(())
}

/// Rules that span fields: list sizes, quiet windows against the limit,
/// pointer syntax. Pattern syntax is checked by compiling.
fn check_condition(
    condition: &Condition,
    field: &str,
    max_wait: Duration,
) -> Result<(), SpecError> {
    match condition {
        Condition::Patterns(list) if list.is_empty() => Err(SpecError::new(
            format!("{field}.patterns"),
            Rule::Empty,
            "needs at least one pattern",
        )),
        Condition::QuietFor(quiet) => {
            let at = format!("{field}.quiet_for_ms");
            if quiet.is_zero() {
                Err(not_positive(&at))
            } else if *quiet > max_wait {
                Err(SpecError::new(
                    at,
                    Rule::QuietAboveLimit,
                    format!(
                        "the quiet window ({} ms) must not exceed the time limit max_wait_ms ({} ms)",
                        quiet.as_millis(),
                        max_wait.as_millis()
                    ),
                ))
            } else {
                Ok(())
            }
        }
        Condition::Json { pointer, .. } if !is_json_pointer(pointer) => Err(SpecError::new(
            format!("{field}.json.pointer"),
            Rule::InvalidPointer,
            format!("`{pointer}` is not an RFC 6901 pointer: it is empty or starts with `/`, and `~` is only in `~0` or `~1`"),
        )),
        Condition::Any(children) | Condition::All(children) => {
            let kind = if matches!(condition, Condition::Any(_)) { "any" } else { "all" };
            if children.is_empty() {
                return Err(SpecError::new(
                    format!("{field}.{kind}"),
                    Rule::Empty,
                    "needs at least one condition",
                ));
            }
            children
                .iter()
                .enumerate()
                .try_for_each(|(i, c)| check_condition(c, &format!("{field}.{kind}[{i}]"), max_wait))
        }
        _ => Ok(()),
    }
}

/// RFC 6901: `""`, or `/`-separated tokens where `~` is followed by 0 or 1.
pub(crate) fn is_json_pointer(pointer: &str) -> bool {
    if pointer.is_empty() {
        return true;
    }
    if !pointer.starts_with('/') {
        return false;
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return false;
        }
    }
    true
}
