//! The built-in probes a spec can name (`command`, `file`; the tmux pane
//! probe is [`crate::tmux::PaneProbe`]), and how a spec's `probe` becomes
//! one within what the host grants.

#[doc(hidden)]
pub use crate::probe::file_watch_hooks as file_watch;
pub use crate::probe::{CommandProbe, FileProbe, Unchanged};

use crate::error::{Rule, SpecError};
use crate::grants::{Grants, Refused};
use crate::probe::Probe;
use crate::resume::ResumeToken;
use crate::spec::{ProbeSpec, Spec};

/// The spec's built-in probe, if the host's grants let it reach its target.
pub(crate) fn builtin(
    builtin: &ProbeSpec,
    spec: &Spec,
    grants: &Grants,
) -> Result<Box<dyn Probe>, SpecError> {
    let refused = |field: &str, r: Refused| SpecError::new(field, Rule::NotGranted, r.0);
    let resume = spec
        .resume
        .as_deref()
        .map(ResumeToken::decode)
        .transpose()?;
    Ok(match builtin {
        ProbeSpec::Command { argv, cwd, stderr } => {
            grants
                .check_command(argv)
                .map_err(|r| refused("probe.command.argv", r))?;
            let cwd = cwd
                .as_deref()
                .map(|cwd| grants.resolve_command_dir(cwd))
                .transpose()
                .map_err(|r| refused("probe.command.cwd", r))?;
            // Checked again at every run, on the directory opened.
            Box::new(CommandProbe::new(argv.clone(), cwd, *stderr).within(grants.clone()))
        }
        #[cfg(not(unix))]
        ProbeSpec::Tmux { .. } => {
            return Err(SpecError::new(
                "probe.tmux",
                Rule::Unsupported,
                crate::tmux::NEEDS_UNIX_HOST,
            ))
        }
        #[cfg(unix)]
        ProbeSpec::Tmux {
            pane,
            socket_name,
            push,
            pick,
            freshness,
        } => {
            let tmux = match socket_name {
                Some(name) => {
                    grants.check_tmux_socket("probe.tmux.socket_name", name)?;
                    crate::tmux::Tmux::new().with_socket_name(name)
                }
                None => crate::tmux::Tmux::new(),
            };
            let probe = crate::tmux::PaneProbe::new(tmux, pane.clone())
                .push(*push)
                .pick(*pick)
                .freshness(*freshness);
            Box::new(probe)
        }
        ProbeSpec::File { path } => {
            grants
                .resolve_file(path)
                .map_err(|r| refused("probe.file.path", r))?;
            let probe = FileProbe::new(path).within(grants.clone());
            Box::new(match &resume {
                Some(token) => probe.resume_from(token),
                None => probe,
            })
        }
    })
}
