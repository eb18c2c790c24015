//! The `command` probe: run a program, observe its output and exit status.

use super::{Observation, Probe, ProbeContext, ProbeError};
use crate::grants::{Commands, Grants};
use crate::process::{run_bounded, OverCap, RunError, RunMark, RunOptions};
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
        let output = run_bounded(&self.argv, &self.options, ctx.budget, &ctx.cancel);
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
}
