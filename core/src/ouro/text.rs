//! [`wait_text`]: a wait as lines an agent reads.

use super::envelope::{AxEvent, NextStep, Wait, WaitState};

/// The wait as text: what happened, or that nothing did, then how to resume.
///
/// The format, one item per line, lines joined by `\n`, no trailing newline:
///
/// 1. One line per event: `{at} {type} by {by}: {summary}`.
/// 2. When there are no events, one line saying so, by state:
///    - `satisfied`: `nothing happened for {for}`
///    - `waiting`: `waiting for {for}: nothing yet`
///    - `timed-out`: `nothing happened for {for} before {until}`
///      (`... in time` when `until` is null)
/// 3. `gone` always adds `gone: {for}: {reason}` (`... cannot happen any
///    more` when `reason` is null), after any events.
/// 4. `source: {fresh.state} as of {fresh.asOf}` when `fresh` is set
///    (`as of ...` left out when `asOf` is null).
/// 5. `resume: {command}` when `resume` is set, then `next: {command}` per
///    next step; a step's description follows as `  # {description}`, so the
///    line stays runnable in a shell.
///
/// Line breaks inside any value are written as spaces, so each item stays
/// on its own line.
///
/// ```
/// use waitfor::ouro::{wait, wait_text, NextStep, WaitFields, WaitState};
/// let w = wait(WaitFields {
///     until: Some("2026-01-01T00:01:30Z".into()),
///     resume: Some(NextStep::new("waitfor events log.jsonl --cursor j1.5.0.0.0")),
///     ..WaitFields::new("build 7", WaitState::TimedOut, "2026-01-01T00:00:00Z")
/// }).unwrap();
/// assert_eq!(wait_text(&w),
///     "nothing happened for build 7 before 2026-01-01T00:01:30Z\n\
///      resume: waitfor events log.jsonl --cursor j1.5.0.0.0");
/// ```
pub fn wait_text(w: &Wait) -> String {
    let mut lines: Vec<String> = w.events.iter().map(event_line).collect();
    let what = one_line(&w.for_);
    if w.events.is_empty() {
        match w.state {
            WaitState::Satisfied => lines.push(format!("nothing happened for {what}")),
            WaitState::Waiting => lines.push(format!("waiting for {what}: nothing yet")),
            WaitState::TimedOut => lines.push(match &w.until {
                Some(until) => format!("nothing happened for {what} before {}", one_line(until)),
                None => format!("nothing happened for {what} in time"),
            }),
            WaitState::Gone => {}
        }
    }
    if w.state == WaitState::Gone {
        let reason = w.reason.as_deref().unwrap_or("cannot happen any more");
        lines.push(format!("gone: {what}: {}", one_line(reason)));
    }
    if let Some(fresh) = &w.fresh {
        lines.push(match &fresh.as_of {
            Some(as_of) => format!(
                "source: {} as of {}",
                one_line(&fresh.state),
                one_line(as_of)
            ),
            None => format!("source: {}", one_line(&fresh.state)),
        });
    }
    if let Some(step) = &w.resume {
        lines.push(step_line("resume", step));
    }
    lines.extend(w.next.iter().map(|s| step_line("next", s)));
    lines.join("\n")
}

fn event_line(e: &AxEvent) -> String {
    format!(
        "{} {} by {}: {}",
        one_line(&e.at),
        one_line(&e.kind),
        one_line(&e.by),
        one_line(&e.summary)
    )
}

fn step_line(label: &str, step: &NextStep) -> String {
    match &step.description {
        Some(d) => format!("{label}: {}  # {}", one_line(&step.command), one_line(d)),
        None => format!("{label}: {}", one_line(&step.command)),
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}
