//! `waitfor events FILE`: wait for a typed event in a JSON Lines file and
//! answer with Ouro AX's `wait/1` envelope (`satisfied`, `timed-out` with a
//! resume command, `gone`), or stream matching events with `--follow`.
//!
//! The wait itself is an [`EventsQuery`] on the engine; this module turns
//! flags into one, prints the wait as text or JSON lines, and gives the
//! exit code.

use crate::args::positive_duration;
use crate::conditions::UsageError;
use crate::controls::{escaped, escaped_json, escaped_lines};
use crate::{sigint, usage_exit};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use waitfor::duration::format_duration;
use waitfor::grants::Grants;
use waitfor::ouro::{
    default_exit_table, jsonl_error, match_error, shell_quote, start, start_follow, wait_exit,
    wait_text, CommandTemplate, CursorKey, EventsQuery, FollowLine, JsonlError, Malformed, Resume,
    Wait, WaitForError,
};

/// Printed after `waitfor events --help`.
pub const EVENTS_AFTER_HELP: &str = "\
FILE holds one event per line: a JSON object with string fields type, at, by
and summary, an optional target (any JSON) and an optional data object. Only
events after --cursor count: a cursor printed by an earlier wait, `end` (only
events written from now on), or none (the file's start). Every filter given
must hold. A missing file (removed, or never made) or a terminal event
(deleted, left, closed, gone) ends the wait as gone. Malformed lines are
reported on stderr and skipped.

Output: text by default (one line per event, then how to resume), the wait/1
envelope as JSON with --json. With --follow: a `waiting` envelope line first,
then each matching event as a JSON line as it comes, then the final envelope
(timed-out or gone); without --timeout it follows until gone or Ctrl-C.
The waiting line comes once the first read is back: a summary pattern or a
cursor refused as the wait begins is said alone (exit 2). `--cursor end` is
resolved by the first read, so the waiting line still says `end`.

Examples:
  waitfor events run.jsonl --type build.done --timeout 90s
  waitfor events run.jsonl --type build.done --cursor end --json
  waitfor events run.jsonl --by ci --summary 'fail|error' --regex --follow

Exit codes: 0 satisfied (or a stream's waiting), 1 timed-out or gone,
2 usage (bad flag, bad cursor, bad pattern), 5 the file cannot be read from
the cursor (replaced, truncated, rewritten), 130 cancelled (Ctrl-C; the
envelope with its resume command is still printed).";

/// Without --timeout, a one-shot wait gives up after this (as `run` and
/// `file` do); `--follow` has no limit.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Exit code when the input is wrong (a bad flag, a bad cursor, a bad
/// pattern).
const EXIT_USAGE: i32 = 2;

/// Exit code when the file cannot be read from the cursor (it was
/// replaced, truncated or rewritten, or an I/O error): the `waitfor`
/// command's "probe error".
const EXIT_SOURCE: i32 = 5;

/// Exit code when interrupted (Ctrl-C), as a shell reports SIGINT; the
/// envelope is still printed, with its resume.
const EXIT_CANCELLED: i32 = 130;

/// How often [`run_events`] prints streamed lines and asks `interrupted`.
const TICK: Duration = Duration::from_millis(50);

/// `waitfor events`.
#[derive(Args, Debug)]
pub struct EventsArgs {
    /// The JSON Lines event file.
    pub path: PathBuf,

    /// What you wait for, in words (the envelope's `for`) [default: a TYPE event in FILE].
    #[arg(long = "for", value_name = "WHAT")]
    pub what: Option<String>,

    /// Only events about this target (JSON; a bare word is a string); also the envelope's target.
    #[arg(long, value_name = "JSON")]
    pub target: Option<String>,

    /// Only events of this type.
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: Option<String>,

    /// Only events by this actor.
    #[arg(long, value_name = "WHO")]
    pub by: Option<String>,

    /// Only events whose summary contains PATTERN (literal unless --regex).
    #[arg(long, value_name = "PATTERN")]
    pub summary: Option<String>,

    /// --summary is a regular expression (Rust `regex` syntax).
    #[arg(long)]
    pub regex: bool,

    /// --summary ignores case.
    #[arg(short = 'i', long)]
    pub ignore_case: bool,

    /// Only events after this cursor count (`end`: only new events) [default: the file's start].
    #[arg(long, value_name = "C")]
    pub cursor: Option<String>,

    /// Give up after D (exit 1, with a resume command) [default: 10m; none with --follow].
    #[arg(long, value_name = "D", value_parser = positive_duration)]
    pub timeout: Option<Duration>,

    /// Time between reads of FILE [default: 250ms; at least 10ms].
    #[arg(long, value_name = "D", value_parser = positive_duration)]
    pub every: Option<Duration>,

    /// Stream: a waiting line, then each matching event as a JSON line.
    #[arg(long)]
    pub follow: bool,
}

impl EventsArgs {
    fn query(&self) -> EventsQuery {
        let mut query = EventsQuery::new(&self.path);
        // The user at their own shell reads what they can read, and a
        // cursor printed by one run must fit in the next: a public key
        // hides nothing from someone who can read the file.
        query.grants = Grants::all();
        query.key = CursorKey::public();
        query.for_ = self.what.clone();
        query.target = self.target.as_deref().map(|t| {
            serde_json::from_str(t).unwrap_or_else(|_| serde_json::Value::String(t.into()))
        });
        query.filter.kind = self.kind.clone();
        query.filter.by = self.by.clone();
        query.filter.target = query.target.clone();
        query.filter.summary = self.summary.clone();
        query.filter.summary_regex = self.regex;
        query.filter.ignore_case = self.ignore_case;
        query.cursor = self.cursor.clone();
        query.timeout = match (self.timeout, self.follow) {
            (Some(t), _) => Some(t),
            (None, false) => Some(DEFAULT_TIMEOUT),
            (None, true) => None,
        };
        query.interval = self.every;
        query
    }
}

/// Runs the subcommand; `json` is the global `--json`.
pub fn run(args: &EventsArgs, json: bool) -> ExitCode {
    if args.summary.as_deref() == Some("") {
        usage_exit(
            "events",
            &UsageError {
                flag: "--summary",
                message: "the pattern must not be empty".into(),
            },
        );
    }
    sigint::install();
    let output = EventsOutput {
        json,
        follow: args.follow,
    };
    let code = run_events(
        &args.query(),
        output,
        "waitfor",
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
        &sigint::interrupted,
    );
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// The command line that runs `query` again from `{cursor}`:
/// `{program} events FILE [--for F] [--target JSON] [--type T] [--by B]
/// [--summary S [--regex] [--ignore-case]] [--timeout D] [--follow]
/// --cursor {cursor}`, every value shell-quoted.
fn command_template(query: &EventsQuery, program: &str, follow: bool) -> CommandTemplate {
    let mut words = vec![
        shell_quote(program),
        "events".to_string(),
        shell_quote(&query.path.to_string_lossy()),
    ];
    let mut flag = |name: &str, value: &str| {
        words.push(name.to_string());
        words.push(shell_quote(value));
    };
    if let Some(f) = &query.for_ {
        flag("--for", f);
    }
    if let Some(t) = &query.target {
        flag("--target", &t.to_string());
    }
    let spec = &query.filter;
    if let Some(k) = &spec.kind {
        flag("--type", k);
    }
    if let Some(b) = &spec.by {
        flag("--by", b);
    }
    if let Some(s) = &spec.summary {
        flag("--summary", s);
    }
    if let Some(t) = query.timeout {
        flag("--timeout", &format_duration(t.as_millis() as u64));
    }
    if spec.summary_regex {
        words.push("--regex".into());
    }
    if spec.ignore_case {
        words.push("--ignore-case".into());
    }
    if follow {
        words.push("--follow".into());
    }
    words.push("--cursor".into());
    let escaped = words.join(" ").replace('{', "{{").replace('}', "}}");
    CommandTemplate::parse(&format!("{escaped} {{cursor}}"))
        .expect("escaped words and one {cursor} always parse")
}

/// How `waitfor events` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct EventsOutput {
    /// The envelope as one JSON line instead of text.
    json: bool,
    /// Stream: a `waiting` line, each matching event, then the final
    /// envelope, all as JSON lines.
    follow: bool,
}

/// Runs `waitfor events`: waits, prints to `out` (text from
/// [`wait_text`] with each line escaped, or JSON lines), reports malformed
/// lines and errors on `err` (each escaped whole), and returns the exit
/// code: [`wait_exit`] with the default table (0 for
/// `satisfied`/`waiting`, 1 for `timed-out`/`gone`), [`EXIT_USAGE`] for
/// bad input, [`EXIT_SOURCE`] when the file cannot be read from the
/// cursor, [`EXIT_CANCELLED`] once `interrupted` said so (it is asked every
/// 50 ms; the wait is cancelled and its envelope still printed). `program`
/// is how the resume command names the binary.
fn run_events(
    query: &EventsQuery,
    output: EventsOutput,
    program: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
    interrupted: &dyn Fn() -> bool,
) -> i32 {
    let resume = Resume::Template(command_template(query, program, output.follow));
    let started = query.options(resume).and_then(|options| {
        if output.follow {
            // Lines come from an engine worker; a channel brings them here.
            let (tx, rx) = std::sync::mpsc::channel::<String>();
            let running = start_follow(options, move |line| {
                let text = match line {
                    FollowLine::Waiting(w) => serde_json::to_string(w),
                    FollowLine::Event(e) => serde_json::to_string(e),
                };
                let _ = tx.send(text.map(escaped_json).unwrap_or_default());
            })?;
            Ok((running, Some(rx)))
        } else {
            Ok((start(options)?, None))
        }
    });
    let (running, lines) = match started {
        Ok(started) => started,
        Err(e) => return report_error(&e, err),
    };
    let print_lines = |out: &mut dyn Write| {
        for line in lines.iter().flat_map(|rx| rx.try_iter()) {
            let _ = writeln!(out, "{line}").and_then(|_| out.flush());
        }
    };
    let mut cancelled = false;
    let done = loop {
        print_lines(out);
        if !cancelled && interrupted() {
            running.cancel();
            cancelled = true;
        }
        if let Some(done) = running.wait_timeout(TICK) {
            print_lines(out);
            break done;
        }
    };
    let done = match done {
        Ok(done) => done,
        Err(e) => return report_error(&e, err),
    };
    for m in &done.malformed {
        let _ = writeln!(err, "{}", escaped(&malformed_line(query, m)));
    }
    let printed = if output.json || output.follow {
        serde_json::to_string(&done.wait)
            .map(escaped_json)
            .map_err(std::io::Error::other)
    } else {
        // The events are the product, but each is one line of the CLI's
        // text (`{at} {type} by {by}: {summary}`, as `gone:` and `resume:`
        // are), whose values other agents wrote: a control character or a
        // line separator in one must not rewrite or start a line.
        // `wait_text` keeps each item on one line; `--json` has the values
        // exact (and so the resume command, when the file's name holds
        // such a character).
        Ok(escaped_lines(&wait_text(&done.wait)))
    };
    let _ = printed.and_then(|text| writeln!(out, "{text}").and_then(|_| out.flush()));
    if cancelled {
        EXIT_CANCELLED
    } else {
        exit_code(&done.wait)
    }
}

fn exit_code(w: &Wait) -> i32 {
    wait_exit(w, &default_exit_table(), None)
}

fn malformed_line(query: &EventsQuery, m: &Malformed) -> String {
    format!(
        "waitfor events: {}: line {} (byte {}) skipped: {}",
        query.path.display(),
        m.line,
        m.offset,
        m.reason
    )
}

fn report_error(e: &WaitForError, err: &mut dyn Write) -> i32 {
    let message = match match_error(e) {
        // Said as a refusal before the wait is: the filter's, not a read's.
        Some(refused) => format!("waitfor events: filter: {refused}"),
        None => format!("waitfor events: {e}"),
    };
    let _ = writeln!(err, "{}", escaped(&message));
    match e {
        WaitForError::Read(_) => match jsonl_error(e) {
            Some(JsonlError::BadCursor { .. }) => EXIT_USAGE,
            // The summary pattern, checked before the wait, did not compile.
            None if match_error(e).is_some() => EXIT_USAGE,
            _ => EXIT_SOURCE,
        },
        WaitForError::Options { .. } | WaitForError::Resume(_) => EXIT_USAGE,
        WaitForError::Envelope(_) | WaitForError::Engine(_) => EXIT_SOURCE,
    }
}
