//! The `command` probe: run a program, observe its output and exit status.

use super::{EndNotices, Observation, Probe, ProbeContext, ProbeError};
use crate::grants::{Commands, Grants};
use crate::process::{
    run_bounded_in, start_turns, OverCap, Queue, RunError, RunMark, RunOptions, StartLog, Starts,
};
use crate::result::{Outcome, WaitResult};
use std::path::PathBuf;
use std::sync::Arc;

/// Runs `argv` (never through a shell) once per sample. The observation is
/// stdout followed by stderr (unless left out), the exit status is a fact
/// for `exit_code` conditions, and stdout is also parsed as JSON when it is
/// JSON, for pointer conditions. The process group is killed when the
/// call's budget runs out or the wait ends, so nothing is left behind, and
/// as soon as the observed output goes over the wait's cap (the wait then
/// ends with its over-cap error); what left the group ends with the probe,
/// or as the process exits if that comes first (see [`RunMark`]).
///
/// Commands start a few at a time, process-wide (`STARTS_PER_CORE`, 4 a
/// core): a wait whose runs spent a quarter of it or more waiting for a
/// turn while this process's other commands started, and that ended at its
/// deadline, says so in [`WaitResult::notices`].
///
/// ```
/// use waitfor::probes::CommandProbe;
/// use waitfor::Probe;
/// let probe = CommandProbe::new(vec!["kubectl".into(), "get".into(), "pods".into()], None, true);
/// assert_eq!(probe.name(), "kubectl");
/// ```
pub struct CommandProbe {
    argv: Vec<String>,
    options: RunOptions,
    stderr: bool,
    /// Held for the probe's life: dropped with the wait, it ends what
    /// escaped the runs' process groups.
    _mark: Arc<RunMark>,
    /// The grants the working directory must stay inside, checked again
    /// at every run (see [`CommandProbe::within`]).
    #[cfg_attr(not(unix), allow(dead_code))]
    within: Option<Grants>,
    /// Where the runs note how long they waited for their start turns.
    starts: StartLog,
}

impl CommandProbe {
    /// A probe running `argv` in `cwd` (the current directory if `None`);
    /// `stderr` says whether stderr is part of the observation.
    pub fn new(argv: Vec<String>, cwd: Option<PathBuf>, stderr: bool) -> Self {
        Self::marked(argv, cwd, stderr, RunMark::new())
    }

    /// The same, its runs marked with `mark` (shared with other runs of
    /// the same wait).
    pub fn marked(
        argv: Vec<String>,
        cwd: Option<PathBuf>,
        stderr: bool,
        mark: Arc<RunMark>,
    ) -> Self {
        Self {
            argv,
            options: RunOptions {
                cwd,
                env: vec![mark.env()],
                discard_stderr: !stderr,
                ..RunOptions::default()
            },
            stderr,
            _mark: mark,
            within: None,
            starts: StartLog::default(),
        }
    }

    /// Keeps the working directory inside `grants`' file roots at every
    /// run, not only when the wait starts, unless `grants` let any program
    /// run (a shell changes directory itself). The directory was checked
    /// when the spec was ([`Grants::resolve_command_dir`]), but a path can
    /// be renamed and replaced by a link out of the roots later; following
    /// it again at each run would run the program there. So each run opens
    /// the directory, checks the directory opened
    /// ([`Grants::open_command_dir`]) and has the child change into that
    /// very directory; one no longer inside is a probe error, and nothing
    /// runs. Unix only: on Windows a process starts in a directory named by
    /// path, so the check at the start is the only one.
    pub fn within(mut self, grants: Grants) -> Self {
        if grants.commands != Commands::Any {
            self.within = Some(grants);
        }
        self
    }

    /// Notes its runs' start turns in `log`, shared with its caller: a
    /// probe made anew for each sample (AURA's built-in `run_command`)
    /// keeps one log for the whole wait this way.
    pub(crate) fn starts_in(mut self, log: StartLog) -> Self {
        self.starts = log;
        self
    }

    /// The directory this run is to enter, opened and checked inside the
    /// grants; `None` when the path is followed as it is.
    #[cfg(unix)]
    fn checked_dir(&self) -> Result<Option<Arc<std::os::fd::OwnedFd>>, ProbeError> {
        let (Some(grants), Some(cwd)) = (&self.within, &self.options.cwd) else {
            return Ok(None);
        };
        let dir = grants.open_command_dir(cwd).map_err(|r| {
            // Named as the rule a refusal at the start names.
            ProbeError::new(format!("cwd refused (not_granted): {r}"))
        })?;
        Ok(Some(Arc::new(dir)))
    }
}

impl Probe for CommandProbe {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        // One byte past the cap is enough for the engine to see the breach
        // and end the wait with its over-cap error: the process is stopped
        // there, not left writing until the call's budget runs out.
        self.options.output_cap = ctx.output_cap.saturating_add(1);
        self.options.over_cap = OverCap::Stop;
        #[cfg(unix)]
        {
            self.options.cwd_dir = self.checked_dir()?;
        }
        let output = run_bounded_in(
            Queue::Commands,
            &self.argv,
            &self.options,
            ctx.budget,
            &ctx.cancel,
            Some(&self.starts),
        );
        #[cfg(unix)]
        {
            // Not held open between runs.
            self.options.cwd_dir = None;
        }
        let output = output.map_err(|e| match e {
            RunError::TimedOut { .. } | RunError::Cancelled { .. } => ProbeError::new(format!(
                "`{}` did not finish in time and was killed",
                self.name()
            )),
            other => ProbeError::new(other.to_string()),
        })?;
        let mut bytes = output.stdout;
        let json = serde_json::from_slice(&bytes).ok();
        if self.stderr {
            bytes.extend_from_slice(&output.stderr);
        }
        let mut observation = Observation::bytes(&bytes);
        observation.json = json;
        observation.exit_code = output.status.or(output.signal.map(|s| 128 + s));
        Ok(observation)
    }

    fn name(&self) -> &str {
        self.argv.first().map_or("command", String::as_str)
    }

    /// A wait this process's other commands starved of start turns says
    /// so.
    fn end_notices(&self) -> Option<EndNotices> {
        let starts = self.starts.clone();
        Some(Arc::new(move |result| {
            starved_notice(&starts.read(), start_turns(), result)
                .into_iter()
                .collect()
        }))
    }
}

/// Why a wait that ended with `result` at its deadline (a timeout, or no
/// sample by then) sampled less often than asked, or not at all, if its
/// runs spent at least a quarter of the wait waiting for a start turn
/// (`seen`) while this process's other commands held all `turns`. `None`
/// for a wait that ended for another reason (a match, a program not
/// found) or got its turns in time.
pub(crate) fn starved_notice(seen: &Starts, turns: usize, result: &WaitResult) -> Option<String> {
    let at_deadline = result.outcome == Outcome::Timeout
        || result.outcome == Outcome::ProbeError
            && result.elapsed_ms >= result.effective_max_wait_ms;
    let elapsed = result.elapsed_ms as f64 / 1000.0;
    // Read as the result is delivered, a little after the wait ended.
    let waited = seen.waited.as_secs_f64().min(elapsed);
    if !at_deadline || waited == 0.0 || waited < elapsed / 4.0 {
        return None;
    }
    let what = match (seen.started, result.samples) {
        (0, _) => "its command never started".to_string(),
        (_, 0) => "no command it started finished".to_string(),
        (_, 1) => "sampled once".to_string(),
        (_, n) => format!("sampled {n} times"),
    };
    let queued = match seen.ahead {
        0 => String::new(),
        n => format!(", {n} more queued ahead of it"),
    };
    Some(format!(
        "{what} in {elapsed:.1}s: it waited {waited:.1}s for a start turn while this \
         process's other commands held every turn (at most {turns} commands start at once{queued}); \
         run fewer command waits at once, or give them longer deadlines"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn starts(waited_ms: u64, started: u64) -> Starts {
        Starts {
            waited: Duration::from_millis(waited_ms),
            started,
            ..Starts::default()
        }
    }

    /// The notice is for a wait that ran out of time while its runs waited
    /// for turns, a quarter of it or more; not for one whose command failed
    /// before its deadline (a program not found), nor for one that got its
    /// turns in time.
    #[test]
    fn only_a_wait_starved_to_its_deadline_says_so() {
        let mut result = crate::engine::error_result("probe failed: cannot start".into());
        result.outcome = Outcome::ProbeError;
        result.elapsed_ms = 300;
        result.effective_max_wait_ms = 400;
        assert_eq!(starved_notice(&starts(300, 0), 8, &result), None);

        result.elapsed_ms = 400;
        let never = starved_notice(&starts(400, 0), 8, &result).unwrap();
        assert!(
            never.starts_with("its command never started in 0.4s"),
            "{never}"
        );
        assert!(
            never.contains("at most 8 commands start at once"),
            "{never}"
        );
        let late = starved_notice(&starts(350, 1), 8, &result).unwrap();
        assert!(
            late.starts_with("no command it started finished in 0.4s"),
            "{late}"
        );

        result.outcome = Outcome::Timeout;
        result.samples = 3;
        assert_eq!(starved_notice(&starts(99, 4), 8, &result), None);
        assert_eq!(starved_notice(&starts(0, 4), 8, &result), None);
        let ahead = Starts {
            ahead: 120,
            ..starts(100, 4)
        };
        let some = starved_notice(&ahead, 8, &result).unwrap();
        assert!(some.starts_with("sampled 3 times in 0.4s"), "{some}");
        assert!(some.contains("120 more queued ahead of it"), "{some}");

        result.outcome = Outcome::Matched;
        assert_eq!(starved_notice(&starts(400, 0), 8, &result), None);
    }
}
