//! The text form of a result, for people. `--json` prints
//! [`WaitResult::to_json`] instead.
//!
//! Every value in it that the wait did not make up (a probe's error, which
//! quotes the agent's command or path; the observed output's lines) is
//! [`escaped`]: the output lines are the product, but here each is one
//! line of the summary behind its marker (`> `, `| `), and a `\r` or an
//! escape sequence in one could write over the outcome line above it.
//! `--json` has them exact.

use crate::controls::escaped;
use std::fmt::Write;
use waitfor::{Outcome, WaitResult};

/// The pattern texts, to name the one a result's index points at.
#[derive(Debug, Default, Clone)]
pub struct Names {
    /// `--pattern` values, in order.
    pub patterns: Vec<String>,
    /// `--stop` values, in order.
    pub stops: Vec<String>,
}

/// A short human form of milliseconds: `640ms`, `12.3s`, `2m05s`, `1h02m`.
pub fn human_ms(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms}ms"),
        1_000..=59_999 => format!("{:.1}s", ms as f64 / 1000.0),
        60_000..=3_599_999 => format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60),
        _ => format!("{}h{:02}m", ms / 3_600_000, (ms / 60_000) % 60),
    }
}

/// The text summary: outcome line, what matched, and the tail of the
/// output when the wait did not succeed.
pub fn text(result: &WaitResult, names: &Names) -> String {
    let mut out = String::new();
    let verb = if result.outcome.is_success() {
        "in"
    } else {
        "after"
    };
    let samples = match result.samples {
        1 => "1 sample".to_string(),
        n => format!("{n} samples"),
    };
    let exit = result
        .exit_code
        .map(|c| format!(", last exit status {c}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{} {verb} {} ({samples}{exit})",
        result.outcome.as_str(),
        human_ms(result.elapsed_ms)
    );
    let list = if result.outcome == Outcome::Stopped {
        Some(("--stop", &names.stops))
    } else if result.outcome == Outcome::Matched && !names.patterns.is_empty() {
        Some(("--pattern", &names.patterns))
    } else {
        None
    };
    if let (Some((flag, list)), Some(index)) = (list, result.matched_index) {
        match list.get(index) {
            // `{:?}` quotes the pattern and escapes its controls too.
            Some(p) => {
                let _ = writeln!(out, "  {flag} {index}: {p:?}");
            }
            None => {
                let _ = writeln!(out, "  {flag} {index}");
            }
        }
    } else if result.outcome == Outcome::Stopped && names.stops.len() == 1 {
        let _ = writeln!(out, "  --stop {:?}", names.stops[0]);
    }
    for line in &result.matched_lines {
        let _ = writeln!(out, "  > {}", escaped(line));
    }
    if result.matched_at_entry {
        let _ = writeln!(out, "  (the pattern was already there when the wait began)");
    }
    if result.clamped {
        let _ = writeln!(
            out,
            "  time limit lowered to {}",
            human_ms(result.effective_max_wait_ms)
        );
    }
    if let Some(error) = &result.error {
        let _ = writeln!(out, "  error: {}", escaped(error));
    }
    if result.probe.abandoned > 0 {
        let _ = writeln!(out, "  abandoned probe calls: {}", result.probe.abandoned);
    }
    for notice in &result.notices {
        let _ = writeln!(out, "  note: {notice}");
    }
    if !result.outcome.is_success() {
        if result.tail.lines.is_empty() {
            if result.samples > 0 && result.error.is_none() {
                let _ = writeln!(out, "  (no output)");
            }
        } else {
            let more = if result.tail.truncated {
                ", earlier lines left out"
            } else {
                ""
            };
            let _ = writeln!(out, "  last output{more}:");
            for line in &result.tail.lines {
                let _ = writeln!(out, "  | {}", escaped(line));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use waitfor::{ProbeAccounting, Tail};

    fn result(outcome: Outcome) -> WaitResult {
        WaitResult {
            outcome,
            matched_index: None,
            matched_lines: Vec::new(),
            matched_at_entry: false,
            saw_new_output: true,
            tail: Tail {
                lines: vec!["a".into(), "b".into()],
                truncated: true,
            },
            exit_code: Some(1),
            samples: 3,
            elapsed_ms: 1500,
            effective_max_wait_ms: 5000,
            clamped: false,
            probe: ProbeAccounting::default(),
            error: None,
            resume: None,
            woken: false,
            alternate_screen: false,
            notices: Vec::new(),
            last_observation: "a\nb".into(),
        }
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_ms(640), "640ms");
        assert_eq!(human_ms(12_340), "12.3s");
        assert_eq!(human_ms(125_000), "2m05s");
        assert_eq!(human_ms(3_720_000), "1h02m");
    }

    #[test]
    fn a_failure_shows_the_tail() {
        let text = text(&result(Outcome::Timeout), &Names::default());
        assert!(
            text.starts_with("timeout after 1.5s (3 samples, last exit status 1)\n"),
            "{text}"
        );
        assert!(text.contains("earlier lines left out"), "{text}");
        assert!(text.contains("  | b\n"), "{text}");
    }

    #[test]
    fn a_probe_s_notices_are_shown() {
        let mut r = result(Outcome::Timeout);
        assert!(!text(&r, &Names::default()).contains("note:"));
        r.notices = vec!["sampled once in 2.0s: turns".into()];
        let text = text(&r, &Names::default());
        assert!(
            text.contains("  note: sampled once in 2.0s: turns\n"),
            "{text}"
        );
    }

    #[test]
    fn a_match_names_the_pattern_and_hides_the_tail() {
        let mut r = result(Outcome::Matched);
        r.matched_index = Some(1);
        r.matched_lines = vec!["found bar".into()];
        let names = Names {
            patterns: vec!["foo".into(), "bar".into()],
            stops: Vec::new(),
        };
        let text = text(&r, &names);
        assert!(text.contains("--pattern 1: \"bar\""), "{text}");
        assert!(text.contains("  > found bar"), "{text}");
        assert!(!text.contains("  | "), "{text}");
    }
}
