//! Tools a probe can call when the host lends none, as far as the host's
//! grants reach: `run_command` runs only granted programs, `read_file`
//! reads only regular files inside granted roots. With no grants (the
//! default) both are refused before the wait starts.

use super::aura::invalid;
use super::tool::{ToolCaller, ToolError, UNKNOWN_TOOL};
use crate::error::{Rule, SpecError};
use crate::grants::Grants;
use crate::probe::{CommandProbe, Probe, ProbeContext, ProbeError};
use crate::process::{RunMark, StartLog};
use serde_json::Value;
use std::io::{ErrorKind, Read};
use std::path::PathBuf;
use std::sync::Arc;

/// A built-in tool call, checked against the host's grants, that the
/// wait makes on every sample.
pub(crate) struct Builtin {
    call: Call,
    grants: Grants,
    /// Marks every `run_command` run of the wait (see [`RunMark`]).
    mark: Arc<RunMark>,
    /// How the wait's `run_command` runs fared at the start gate: each
    /// call makes its probe anew, so the log is kept here.
    starts: StartLog,
}

enum Call {
    /// `run_command`: stdout then stderr of `argv`.
    RunCommand {
        argv: Vec<String>,
        cwd: Option<PathBuf>,
    },
    /// `read_file`: the file's text, at most one byte past the cap.
    ReadFile { path: String },
    /// Any other name: fails when called, as a probe error.
    Unknown,
}

/// The rule an argument broke: it is not there, or not of its type.
fn missing_or_wrong(value: Option<&Value>) -> Rule {
    match value {
        None => Rule::MissingField,
        Some(_) => Rule::WrongType,
    }
}

impl Builtin {
    /// Reads a call's arguments and checks them against `grants`, so that
    /// an agent learns before the wait starts what the host does not allow.
    pub(crate) fn prepare(name: &str, args: &Value, grants: &Grants) -> Result<Self, ToolError> {
        let call = match name {
            "run_command" => {
                let argv: Vec<String> = args
                    .get("argv")
                    .and_then(|v| serde_json::from_value(v.clone()).ok())
                    .filter(|argv: &Vec<String>| !argv.is_empty())
                    .ok_or_else(|| {
                        let rule = match args.get("argv") {
                            Some(Value::Array(items)) if items.is_empty() => Rule::Empty,
                            value => missing_or_wrong(value),
                        };
                        invalid(
                            "probe.args.argv",
                            rule,
                            "run_command needs `argv`, a non-empty list of strings",
                        )
                    })?;
                for (i, arg) in argv.iter().enumerate() {
                    SpecError::check_no_nul(&format!("probe.args.argv[{i}]"), arg)?;
                }
                // A cwd of another type is refused rather than taken for
                // none, which would run the command in the host's own
                // directory; `null` is none.
                let cwd =
                    match args.get("cwd") {
                        None | Some(Value::Null) => None,
                        Some(Value::String(cwd)) => Some(cwd.as_str()),
                        Some(_) => return Err(invalid(
                            "probe.args.cwd",
                            Rule::WrongType,
                            "run_command's `cwd` must be a directory path (a string), or left out",
                        )),
                    };
                if let Some(cwd) = cwd {
                    SpecError::check_no_nul("probe.args.cwd", cwd)?;
                }
                grants.check_command(&argv).map_err(|r| {
                    invalid(
                        "probe.args.argv",
                        Rule::NotGranted,
                        format!("the host has not granted run_command this program: {r}"),
                    )
                })?;
                let cwd = cwd
                    .map(|cwd| grants.resolve_command_dir(cwd))
                    .transpose()
                    .map_err(|r| invalid("probe.args.cwd", Rule::NotGranted, r.0))?;
                Call::RunCommand { argv, cwd }
            }
            "read_file" => {
                let path = args.get("path").and_then(Value::as_str).ok_or_else(|| {
                    invalid(
                        "probe.args.path",
                        missing_or_wrong(args.get("path")),
                        "read_file needs `path`, a string",
                    )
                })?;
                SpecError::check_no_nul("probe.args.path", path)?;
                match grants.open_file(path) {
                    // A granted file may appear later.
                    Ok(_) => {}
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    // The grants' own refusal, not the system's.
                    Err(e)
                        if e.kind() == ErrorKind::PermissionDenied
                            && e.raw_os_error().is_none() =>
                    {
                        return Err(invalid(
                            "probe.args.path",
                            Rule::NotGranted,
                            format!("the host has not granted read_file this path: {e}"),
                        ))
                    }
                    Err(e) => {
                        return Err(invalid(
                            "probe.args.path",
                            Rule::NotGranted,
                            format!("read_file cannot read {path}: {e}"),
                        ))
                    }
                }
                Call::ReadFile {
                    path: path.to_string(),
                }
            }
            _ => Call::Unknown,
        };
        Ok(Self {
            call,
            grants: grants.clone(),
            mark: RunMark::new(),
            starts: StartLog::default(),
        })
    }

    /// The start turns of the wait's runs, for a `run_command` call.
    pub(crate) fn start_log(&self) -> Option<StartLog> {
        matches!(self.call, Call::RunCommand { .. }).then(|| self.starts.clone())
    }

    /// Runs the call. The file is opened through the grants again (it may
    /// have been replaced since), and read at most one byte past the cap,
    /// so the engine reports a larger file without it being read whole.
    fn run(&self, ctx: &ProbeContext) -> Result<String, ProbeError> {
        match &self.call {
            Call::RunCommand { argv, cwd } => {
                // The directory is checked again at this run, on the
                // directory opened (see `CommandProbe::within`).
                CommandProbe::marked(argv.clone(), cwd.clone(), true, self.mark.clone())
                    .within(self.grants.clone())
                    .starts_in(self.starts.clone())
                    .sample(ctx)
            }
            .map(|o| o.text),
            Call::ReadFile { path } => {
                let cannot =
                    |e: std::io::Error| ProbeError::new(format!("cannot read {path}: {e}"));
                let file = self.grants.open_file(path).map_err(cannot)?;
                let limit = u64::try_from(ctx.output_cap.saturating_add(1)).unwrap_or(u64::MAX);
                let mut bytes = Vec::new();
                file.take(limit).read_to_end(&mut bytes).map_err(cannot)?;
                Ok(String::from_utf8_lossy(&bytes).into_owned())
            }
            // As AURA answers for a tool no server exposes.
            Call::Unknown => Err(ProbeError::new(UNKNOWN_TOOL)),
        }
    }
}

impl ToolCaller for Builtin {
    fn call_tool(
        &self,
        _name: &str,
        _args: &Value,
        ctx: &ProbeContext,
    ) -> Result<String, ProbeError> {
        self.run(ctx)
    }
}
