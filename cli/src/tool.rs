//! `waitfor tool NAME JSON`: run a tool profile as an MCP server would and
//! print its output JSON.

use crate::args::ToolArgs;
use crate::controls::escaped_json;
use crate::sigint;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;
use waitfor::grants::Grants;
use waitfor::profiles::{self, Host, ToolError};
use waitfor::Engine;

/// The tool answered; its output is on stdout.
const ANSWERED: u8 = 0;
/// Bad arguments or an unknown profile.
const USAGE: u8 = 2;
/// The tool failed at run time (MCP `isError`).
const FAILED: u8 = 6;
/// Ctrl-C.
const CANCELLED: u8 = 130;

/// How often the main thread looks at Ctrl-C.
const TICK: Duration = Duration::from_millis(50);

/// Runs the subcommand.
pub fn run(args: &ToolArgs) -> ExitCode {
    if args.list {
        let definitions = serde_json::to_value(profiles::definitions()).unwrap_or_default();
        // A reader that stops early (`| head`) is no error of ours.
        let definitions = escaped_json(format!("{definitions:#}"));
        let _ = writeln!(std::io::stdout().lock(), "{definitions}");
        return ExitCode::from(ANSWERED);
    }
    let (Some(name), Some(arguments)) = (&args.name, &args.arguments) else {
        return fail(USAGE, "waitfor tool needs NAME and JSON (or --list)");
    };
    let arguments = match waitfor::input::parse(arguments) {
        Ok(value) => value,
        Err(e) => return fail(USAGE, &format!("the arguments: {e}")),
    };
    // The user at their own shell grants the built-in tools all they can reach.
    let host = Host {
        grants: Grants::all(),
        ..Host::default()
    };
    let prepared = match profiles::prepare(name, &arguments, &host) {
        Ok(prepared) => prepared,
        Err(e) => return fail(USAGE, &e.to_string()),
    };
    let (spec, probe, options, render, _) = prepared.into_parts();
    let handle = match Engine::global().start_with(spec, Some(probe), options) {
        Ok(handle) => handle,
        Err(e) => return fail(USAGE, &e.to_string()),
    };
    let mut cancelled = false;
    let result = loop {
        if let Some(result) = handle.wait_timeout(TICK) {
            break result;
        }
        if !cancelled && sigint::interrupted() {
            handle.control().cancel();
            cancelled = true;
        }
    };
    // The answer goes out at the deadline, before any grace below.
    let code = match render(&result) {
        _ if cancelled => fail(CANCELLED, "cancelled"),
        Ok(output) => {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{}", escaped_json(output.to_string()));
            let _ = stdout.flush();
            ExitCode::from(ANSWERED)
        }
        Err(ToolError::Runtime(message)) => fail(FAILED, &message),
        Err(other) => fail(USAGE, &other.to_string()),
    };
    if result.probe.abandoned > 0 {
        // Leave no process behind: the abandoned call kills its command.
        handle.wait_released(crate::RELEASE_GRACE);
    }
    code
}

fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("waitfor tool: {}", crate::controls::escaped(message));
    ExitCode::from(code)
}
