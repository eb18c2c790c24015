//! From flags to a validated [`Spec`]: conditions, stop markers, timing.
//!
//! Every rule the engine would reject is checked here first against the
//! flag the user typed, so a usage error names `--every`, not
//! `interval_ms`.

use crate::args::{ConditionArgs, TimingArgs};
use std::time::Duration;
use waitfor::limits::MIN_INTERVAL;
use waitfor::{Condition, Pattern, ProbeSpec, Spec, ViewKind};

/// How often the live status line gets fresh numbers from the engine.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// The default time limit.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// What the wait observes; decides defaults and which flags apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `waitfor run`: a command run on every sample, whole output.
    Command,
    /// `waitfor file`: lines appended to a file.
    File,
    /// `waitfor pane`: rows a tmux pane writes.
    Pane,
}

impl Target {
    fn default_every(self) -> Duration {
        match self {
            Target::Command => Duration::from_secs(1),
            Target::File => Duration::from_millis(200),
            Target::Pane => Duration::from_millis(100),
        }
    }

    fn default_condition(self) -> Condition {
        match self {
            Target::Command => Condition::ExitCode(0),
            Target::File | Target::Pane => Condition::AnyOutput,
        }
    }
}

/// A flag the user got wrong, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// The flag, as typed (`--every`).
    pub flag: &'static str,
    /// What is wrong with it.
    pub message: String,
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.flag, self.message)
    }
}

fn usage(flag: &'static str, message: impl Into<String>) -> UsageError {
    UsageError {
        flag,
        message: message.into(),
    }
}

/// Where a spec's field comes from on the command line, by field prefix.
const ARGUMENT_OF_FIELD: [(&str, &str); 5] = [
    ("probe.file", "<PATH>"),
    ("probe.command", "<CMD>..."),
    ("probe.tmux.socket_name", "--socket-name"),
    ("probe.tmux", "<TARGET>"),
    ("stop", "--stop"),
];

impl From<waitfor::SpecError> for UsageError {
    /// The engine's refusal of a spec built from the flags, naming the
    /// argument its field comes from (`arguments` when no single one does).
    fn from(error: waitfor::SpecError) -> Self {
        let flag = ARGUMENT_OF_FIELD
            .iter()
            .find(|(prefix, _)| error.field.starts_with(prefix))
            .map_or("arguments", |(_, argument)| argument);
        usage(flag, error.to_string())
    }
}

/// Builds the spec for `probe` from the flags.
pub fn build_spec(
    probe: ProbeSpec,
    target: Target,
    conditions: &ConditionArgs,
    timing: &TimingArgs,
) -> Result<Spec, UsageError> {
    let timeout = timing.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let every = match timing.every {
        Some(every) => {
            if every < MIN_INTERVAL {
                return Err(usage(
                    "--every",
                    format!("must be at least {} ms", MIN_INTERVAL.as_millis()),
                ));
            }
            if every >= timeout {
                return Err(usage("--every", "must be shorter than --timeout"));
            }
            every
        }
        // An unset interval never makes a short --timeout invalid.
        None => target.default_every().min(timeout / 2).max(MIN_INTERVAL),
    };
    if every >= timeout {
        return Err(usage(
            "--timeout",
            "must be longer than the 10 ms minimum interval",
        ));
    }
    let until = until(conditions, target, timeout)?;
    let stop = conditions
        .stops
        .iter()
        .map(|text| pattern(conditions, "--stop", text))
        .collect::<Result<Vec<_>, _>>()?;
    // The pane probe keeps its own anchor and returns only fresh rows.
    let view = match target {
        Target::Command | Target::Pane => ViewKind::Whole,
        Target::File => ViewKind::Fresh,
    };
    let mut spec = Spec::new(until)
        .probe(probe)
        .view(view)
        .stop(stop)
        .interval(every)
        .max_wait(timeout);
    spec.progress_every = PROGRESS_EVERY;
    spec.validate()?;
    Ok(spec)
}

/// The success condition: the flags given, as "any of them".
fn until(args: &ConditionArgs, target: Target, timeout: Duration) -> Result<Condition, UsageError> {
    let mut all = Vec::new();
    if let Some(text) = &args.matches {
        all.push(Condition::Matches(pattern(args, "--match", text)?));
    }
    if let Some(text) = &args.not_matches {
        all.push(Condition::NotMatches(pattern(args, "--not-match", text)?));
    }
    if !args.patterns.is_empty() {
        let list = args
            .patterns
            .iter()
            .map(|text| pattern(args, "--pattern", text))
            .collect::<Result<Vec<_>, _>>()?;
        all.push(Condition::Patterns(list));
    }
    if let Some(quiet) = args.quiet {
        if quiet > timeout {
            return Err(usage("--quiet", "must not be longer than --timeout"));
        }
        all.push(Condition::QuietFor(quiet));
    }
    if let Some(code) = args.exit_code {
        if target != Target::Command {
            return Err(usage("--exit", "applies only to `waitfor run`"));
        }
        all.push(Condition::ExitCode(code));
    }
    Ok(match all.len() {
        0 => target.default_condition(),
        1 => all.remove(0),
        _ => Condition::Any(all),
    })
}

/// One pattern with the --regex and case flags applied, checked on its own
/// so an error names the flag it came from.
fn pattern(args: &ConditionArgs, flag: &'static str, text: &str) -> Result<Pattern, UsageError> {
    let mut pattern = if args.regex {
        Pattern::regex(text)
    } else {
        Pattern::literal(text)
    };
    if args.ignore_case {
        pattern = pattern.case_insensitive();
    }
    // Checked as typed, so the error quotes the user's text.
    Spec::new(Condition::Matches(pattern.clone()))
        .validate()
        .map_err(|e| usage(flag, format!("{:?}: {}", text, e.message)))?;
    Ok(pattern)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> ProbeSpec {
        ProbeSpec::Command {
            argv: vec!["true".into()],
            cwd: None,
            stderr: true,
        }
    }

    fn build(target: Target, c: ConditionArgs, t: TimingArgs) -> Result<Spec, UsageError> {
        let probe = match target {
            Target::Command => command(),
            Target::File => ProbeSpec::File { path: "x".into() },
            Target::Pane => ProbeSpec::Tmux {
                pane: Default::default(),
                socket_name: None,
                push: true,
                pick: Default::default(),
                freshness: Default::default(),
            },
        };
        build_spec(probe, target, &c, &t)
    }

    #[test]
    fn defaults_per_target() {
        let spec = build(
            Target::Command,
            ConditionArgs::default(),
            TimingArgs::default(),
        )
        .unwrap();
        assert_eq!(spec.until, Condition::ExitCode(0));
        assert_eq!(spec.view, ViewKind::Whole);
        assert_eq!(spec.max_wait, DEFAULT_TIMEOUT);
        let spec = build(
            Target::File,
            ConditionArgs::default(),
            TimingArgs::default(),
        )
        .unwrap();
        assert_eq!(spec.until, Condition::AnyOutput);
        assert_eq!(spec.view, ViewKind::Fresh);
    }

    #[test]
    fn several_conditions_mean_any() {
        let c = ConditionArgs {
            matches: Some("ok".into()),
            patterns: vec!["a".into(), "b".into()],
            exit_code: Some(3),
            ignore_case: true,
            ..Default::default()
        };
        let spec = build(Target::Command, c, TimingArgs::default()).unwrap();
        let Condition::Any(children) = &spec.until else {
            panic!("{:?}", spec.until)
        };
        assert_eq!(children.len(), 3);
        assert_eq!(
            children[0],
            Condition::Matches(Pattern::literal("ok").case_insensitive())
        );
    }

    #[test]
    fn errors_name_the_flag() {
        let c = ConditionArgs {
            stops: vec!["(".into()],
            regex: true,
            ..Default::default()
        };
        assert_eq!(
            build(Target::File, c, TimingArgs::default())
                .unwrap_err()
                .flag,
            "--stop"
        );
        let c = ConditionArgs {
            exit_code: Some(0),
            ..Default::default()
        };
        assert_eq!(
            build(Target::File, c, TimingArgs::default())
                .unwrap_err()
                .flag,
            "--exit"
        );
        let t = TimingArgs {
            every: Some(Duration::from_secs(5)),
            timeout: Some(Duration::from_secs(5)),
        };
        assert_eq!(
            build(Target::File, ConditionArgs::default(), t)
                .unwrap_err()
                .flag,
            "--every"
        );
        let c = ConditionArgs {
            quiet: Some(Duration::from_secs(20)),
            ..Default::default()
        };
        let t = TimingArgs {
            every: None,
            timeout: Some(Duration::from_secs(10)),
        };
        assert_eq!(build(Target::File, c, t).unwrap_err().flag, "--quiet");
    }

    #[test]
    fn a_short_timeout_shrinks_the_default_interval() {
        let t = TimingArgs {
            every: None,
            timeout: Some(Duration::from_millis(300)),
        };
        let spec = build(Target::Command, ConditionArgs::default(), t).unwrap();
        assert_eq!(spec.interval, Duration::from_millis(150));
    }
}
