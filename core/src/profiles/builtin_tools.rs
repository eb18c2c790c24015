//! Tools a probe can call when the host lends none: enough for the
//! `waitfor` command and for trying a profile out.

use crate::probe::{CommandProbe, Probe, ProbeContext, ProbeError};
use serde_json::Value;

/// Names of the built-in tools, for error messages.
pub(crate) const NAMES: &str = "run_command ({argv, cwd?}), read_file ({path})";

/// Runs a built-in tool: `run_command` (stdout then stderr of `argv`) or
/// `read_file` (the file's whole text).
pub(crate) fn call(name: &str, args: &Value, ctx: &ProbeContext) -> Result<String, ProbeError> {
    match name {
        "run_command" => {
            let argv: Vec<String> = args
                .get("argv")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .filter(|argv: &Vec<String>| !argv.is_empty())
                .ok_or_else(|| {
                    ProbeError::new("run_command needs `argv`, a non-empty list of strings")
                })?;
            let cwd = args.get("cwd").and_then(Value::as_str).map(str::to_string);
            CommandProbe::new(argv, cwd, true)
                .sample(ctx)
                .map(|o| o.text)
        }
        "read_file" => {
            let path = args
                .get("path")
                .and_then(Value::as_str)
                .ok_or_else(|| ProbeError::new("read_file needs `path`, a string"))?;
            std::fs::read(path)
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .map_err(|e| ProbeError::new(format!("cannot read {path}: {e}")))
        }
        other => Err(ProbeError::new(format!(
            "unknown tool `{other}`; without host tools the built-in ones are {NAMES}"
        ))),
    }
}
