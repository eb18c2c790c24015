//! `waitfor events FILE`: wait for a typed event in a JSON Lines file and
//! answer with Ouro AX's `wait/1` envelope (`satisfied`, `timed-out` with a
//! resume command, `gone`), or stream matching events with `--follow`.
//!
//! The wait itself is [`waitfor::ouro::run_events`]; this module only turns
//! flags into an [`EventsQuery`].

use crate::args::positive_duration;
use crate::conditions::UsageError;
use crate::{sigint, usage_exit};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use waitfor::grants::Grants;
use waitfor::ouro::{run_events, CursorKey, EventsOutput, EventsQuery};

/// Printed after `waitfor events --help`.
pub const EVENTS_AFTER_HELP: &str = "\
FILE holds one event per line: a JSON object with string fields type, at, by
and summary, an optional target (any JSON) and an optional data object. Only
events after --cursor count: a cursor printed by an earlier wait, `end` (only
events written from now on), or none (the file's start). Every filter given
must hold. A removed file or a terminal event (deleted, left, closed, gone)
ends the wait as gone. Malformed lines are reported on stderr and skipped.

Output: text by default (one line per event, then how to resume), the wait/1
envelope as JSON with --json. With --follow: a `waiting` envelope line first,
then each matching event as a JSON line as it comes, then the final envelope
(timed-out or gone); without --timeout it follows until gone or Ctrl-C.
`--cursor end` is resolved by the first read, so the waiting line still
says `end`.

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
