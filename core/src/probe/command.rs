//! The `command` probe: run a program, observe its output and exit status.

use super::{Observation, Probe, ProbeContext, ProbeError};
use crate::process::{run_bounded, OverCap, RunError, RunMark, RunOptions};
use std::path::PathBuf;
use std::sync::Arc;

/// Runs `argv` (never through a shell) once per sample. The observation is
/// stdout followed by stderr (unless left out), the exit status is a fact
/// for `exit_code` conditions, and stdout is also parsed as JSON when it is
/// JSON, for pointer conditions. The process group is killed when the
/// call's budget runs out or the wait ends, so nothing is left behind, and
/// as soon as the observed output goes over the wait's cap (the wait then
/// ends with its over-cap error); what left the group ends with the probe
/// (see [`RunMark`]).
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
        }
    }
}

impl Probe for CommandProbe {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        // One byte past the cap is enough for the engine to see the breach
        // and end the wait with its over-cap error: the process is stopped
        // there, not left writing until the call's budget runs out.
        self.options.output_cap = ctx.output_cap.saturating_add(1);
        self.options.over_cap = OverCap::Stop;
        let output = run_bounded(&self.argv, &self.options, ctx.budget, &ctx.cancel).map_err(
            |e| match e {
                RunError::TimedOut { .. } | RunError::Cancelled { .. } => ProbeError::new(format!(
                    "`{}` did not finish in time and was killed",
                    self.name()
                )),
                other => ProbeError::new(other.to_string()),
            },
        )?;
        let mut bytes = output.stdout;
        let json = serde_json::from_slice(&bytes).ok();
        if self.stderr {
            bytes.extend_from_slice(&output.stderr);
        }
        let mut observation = Observation::text(String::from_utf8_lossy(&bytes).into_owned());
        observation.json = json;
        observation.exit_code = output.status.or(output.signal.map(|s| 128 + s));
        Ok(observation)
    }

    fn name(&self) -> &str {
        self.argv.first().map_or("command", String::as_str)
    }
}
