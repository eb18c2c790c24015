//! `waitfor`: wait for a condition on a command's output or a file, then
//! exit with a code that says how the wait ended.
//!
//! ```text
//! waitfor run  [conditions] [--every D] [--timeout D] -- CMD ARGS...
//! waitfor file PATH [conditions] [--every D] [--timeout D]
//! waitfor pane TARGET [--socket-name NAME] [conditions] [--every D] [--timeout D]
//! waitfor tool NAME JSON
//! waitfor events FILE [--type T] [--by B] [--summary P] [--cursor C] [--timeout D] [--follow]
//! ```
//!
//! `events` waits for a typed event in a JSON Lines file and answers with
//! the `wait/1` envelope; its exit codes are the envelope's (see
//! [`events`]).
//!
//! Conditions (`--match`, `--not-match`, `--quiet`, `--pattern`..., `--exit`)
//! together mean "any of them"; `--stop` markers fail the wait. With none,
//! `run` waits for exit status 0 and `file` for any new output. Patterns
//! are literal and case-sensitive unless `--regex` / `-i`.
//!
//! Exit codes (see [`exit`]): 0 condition met, 1 timeout, 2 usage error,
//! 3 stopped, 4 gone, 5 probe error, 6 error, 130 cancelled.

mod args;
mod conditions;
mod controls;
mod events;
mod exit;
mod render;
mod sigint;
mod status_line;
mod tool;

use args::{Cli, Command};
use clap::{CommandFactory, Parser};
use conditions::{build_spec, Target, UsageError};
use render::Names;
use status_line::StatusLine;
use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use waitfor::grants::Grants;
use waitfor::{Engine, Policy, ProbeSpec, Progress, Spec, WaitOptions};

/// A person chose the timeout: the engine's ceiling is only a backstop.
const CEILING: Duration = Duration::from_secs(24 * 3600);

/// How often the main thread looks at Ctrl-C and the clock.
const TICK: Duration = Duration::from_millis(50);

/// After a probe call was abandoned (deadline, Ctrl-C) and the result
/// printed, how long to wait for the call to return before we exit: an
/// abandoned command call kills its process group within a few
/// milliseconds (it looks at its cancel token every 5 ms), while a call
/// that cannot be ended (the open of a FIFO nobody writes to) must not
/// keep the process past its deadline for longer than this.
pub(crate) const RELEASE_GRACE: Duration = Duration::from_millis(500);

fn main() -> ExitCode {
    let cli = Cli::try_parse().unwrap_or_else(|error| clap_exit(error));
    if let Command::Tool(args) = &cli.command {
        sigint::install();
        return tool::run(args);
    }
    if let Command::Events(events) = &cli.command {
        return events::run(events, cli.json);
    }
    let (subcommand, spec, names) = match spec_of(&cli) {
        Ok(built) => built,
        Err((subcommand, error)) => usage_exit(subcommand, &error),
    };
    sigint::install();

    let latest: Arc<Mutex<Option<Progress>>> = Arc::default();
    let sink = Arc::clone(&latest);
    let options = WaitOptions::default()
        .policy(
            // The user at their own shell: every reach of theirs is granted.
            Policy::default()
                .max_wait_ceiling(CEILING)
                .grants(Grants::all()),
        )
        .on_progress(move |p| {
            if let Ok(mut slot) = sink.lock() {
                *slot = Some(p.clone());
            }
        });
    let handle = match Engine::global().start_with(spec, None, options) {
        Ok(handle) => handle,
        Err(error) => usage_exit(subcommand, &UsageError::from(error)),
    };

    let started = Instant::now();
    let mut status = StatusLine::new();
    let mut last_draw: Option<Instant> = None;
    let mut cancelling = false;
    let result = loop {
        if let Some(result) = handle.wait_timeout(TICK) {
            break result;
        }
        if !cancelling && sigint::interrupted() {
            handle.control().cancel();
            cancelling = true;
        }
        if last_draw.is_none_or(|at| at.elapsed() >= conditions::PROGRESS_EVERY) {
            let progress = latest.lock().ok().and_then(|p| p.clone());
            status.draw(millis(started.elapsed()), progress.as_ref());
            last_draw = Some(Instant::now());
        }
    };
    status.clear();

    let mut stdout = std::io::stdout().lock();
    let _ = if cli.json {
        writeln!(
            stdout,
            "{}",
            controls::escaped_json(result.to_json().to_string())
        )
    } else {
        write!(stdout, "{}", render::text(&result, &names))
    };
    let _ = stdout.flush();
    if result.probe.abandoned > 0 {
        // Leave no process behind: the abandoned call kills its command.
        // A call still running after the grace is ended with the process.
        handle.wait_released(RELEASE_GRACE);
    }
    ExitCode::from(exit::exit_code(result.outcome))
}

/// The spec and pattern names for the chosen subcommand.
fn spec_of(cli: &Cli) -> Result<(&'static str, Spec, Names), (&'static str, UsageError)> {
    let (name, probe, target, conditions, timing) = match &cli.command {
        Command::Run(run) => (
            "run",
            ProbeSpec::Command {
                argv: run.argv.clone(),
                cwd: None,
                stderr: true,
            },
            Target::Command,
            &run.conditions,
            &run.timing,
        ),
        Command::File(file) => (
            "file",
            ProbeSpec::File {
                path: file.path.clone(),
            },
            Target::File,
            &file.conditions,
            &file.timing,
        ),
        Command::Pane(pane) => (
            "pane",
            ProbeSpec::Tmux {
                pane: pane_target(&pane.target),
                socket_name: pane.socket_name.clone(),
                push: !pane.no_push,
                pick: Default::default(),
                freshness: Default::default(),
            },
            Target::Pane,
            &pane.conditions,
            &pane.timing,
        ),
        Command::Tool(_) => unreachable!("`waitfor tool` returns before building a spec"),
        Command::Events(_) => unreachable!("main runs `events` before building a spec"),
    };
    let spec = build_spec(probe, target, conditions, timing).map_err(|e| (name, e))?;
    let names = Names {
        patterns: conditions.patterns.clone(),
        stops: conditions.stops.clone(),
    };
    Ok((name, spec, names))
}

/// A pane id (`%3`) is matched exactly; anything else is a tmux target.
fn pane_target(text: &str) -> waitfor::tmux::PaneTarget {
    let mut target = waitfor::tmux::PaneTarget::default();
    if text.starts_with('%') {
        target.pane_id = Some(text.to_string());
    } else {
        target.target = Some(text.to_string());
    }
    target
}

/// Reports a usage error the way clap does (same format, exit code 2).
fn usage_exit(subcommand: &str, error: &UsageError) -> ! {
    let mut command = unstyled();
    command.build();
    // The message quotes the agent's value: escaped whole, it stays on
    // clap's `error:` line.
    let message = format!(
        "invalid value for '{}': {}",
        error.flag,
        controls::escaped(&error.message)
    );
    clap_exit(match command.find_subcommand_mut(subcommand) {
        Some(sub) => sub.error(clap::error::ErrorKind::ValueValidation, message),
        None => command.error(clap::error::ErrorKind::ValueValidation, message),
    })
}

/// The command line's definition with no styles: its refusals hold no
/// escape sequence but those of the arguments they quote.
fn unstyled() -> clap::Command {
    Cli::command().styles(clap::builder::Styles::plain())
}

/// Exits as [`clap::Error::exit`] does, with a refusal's text escaped:
/// clap quotes the argument it refuses raw (on a terminal; elsewhere it
/// drops escape sequences and keeps the rest, a `\r` or a line break among
/// them). What it quotes is escaped whole ([`escape_quoted`]), so a line
/// break in an argument cannot start a line of its own; the rest, clap's
/// lines, is rendered unstyled and passed through
/// [`controls::escaped_lines`], so that every control character left shows
/// escaped. Help and the version, our own text, go out as clap writes them.
fn clap_exit(error: clap::Error) -> ! {
    if !error.use_stderr() {
        error.exit()
    }
    // The same refusal from the same arguments, unstyled.
    let mut error = match unstyled().try_get_matches() {
        Err(plain) if plain.kind() == error.kind() => plain,
        _ => error.format(&mut unstyled()),
    };
    escape_quoted(&mut error);
    let text = error.render().ansi().to_string();
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "{}", controls::escaped_lines(&text));
    let _ = stderr.flush();
    std::process::exit(error.exit_code())
}

/// Escapes ([`controls::escaped`]) what a refusal quotes: the argument or
/// value refused, and the tips that repeat it. The usage line is clap's
/// own, from our definitions.
fn escape_quoted(error: &mut clap::Error) {
    use clap::error::{ContextKind, ContextValue};
    let one = |text: &str| controls::escaped(text).into_owned();
    let quoted: Vec<(ContextKind, ContextValue)> = error
        .context()
        .filter(|(kind, _)| *kind != ContextKind::Usage)
        .filter_map(|(kind, value)| {
            let value = match value {
                ContextValue::String(s) => ContextValue::String(one(s)),
                ContextValue::Strings(list) => {
                    ContextValue::Strings(list.iter().map(|s| one(s)).collect())
                }
                ContextValue::StyledStr(s) => {
                    ContextValue::StyledStr(one(&s.ansi().to_string()).into())
                }
                ContextValue::StyledStrs(list) => ContextValue::StyledStrs(
                    list.iter()
                        .map(|s| one(&s.ansi().to_string()).into())
                        .collect(),
                ),
                _ => return None,
            };
            Some((kind, value))
        })
        .collect();
    for (kind, value) in quoted {
        error.insert(kind, value);
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
