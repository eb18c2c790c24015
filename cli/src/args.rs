//! The command line, as clap derive types.
//!
//! [`ConditionArgs`] and [`TimingArgs`] are flattened into every
//! subcommand, so a new probe (a tmux pane, ...) gets the same condition
//! flags by flattening them too.

use clap::{Args, Parser, Subcommand};
use std::time::Duration;
use waitfor::duration::parse_duration;

/// Printed after the top-level `--help`.
const TOP_AFTER_HELP: &str = "\
Conditions:
  Several conditions together mean \"any of them\": the wait ends at the first
  sample where one holds. --stop markers end it as a failure and win a tie.
  With no condition (--stop alone is none), `run` waits for exit status 0
  and `file` for any new output. Patterns are literal text unless --regex;
  matching is case-sensitive unless -i/--ignore-case.

Durations: 500ms, 90s, 2m, 1h, or a bare number of seconds (whole numbers).

Exit codes:
  0    condition met (matched, settled, any_output)
  1    timeout
  2    usage error (bad flag, bad duration, bad pattern)
  3    stopped: a --stop marker appeared
  4    gone: the target can no longer change
  5    probe error: the probe failed (e.g. the program does not exist)
  6    error: the wait could not go on (e.g. output over the 256 KiB cap)
  130  cancelled (Ctrl-C)

Examples:
  waitfor run --match Running -- kubectl get pod web
  waitfor file build.log --match 'BUILD SUCCESSFUL' --stop 'BUILD FAILED' --timeout 10m
  waitfor run --exit 0 --every 2s --timeout 2m -- curl -fsS http://localhost:8080/health";

const RUN_AFTER_HELP: &str = "\
CMD runs once per sample (every --every, default 1s), directly, never through
a shell; the conditions see its stdout followed by its stderr, whole. With no
condition the wait ends when CMD exits with status 0. A sample that outlives
the time left is killed with its whole process group.

Examples:
  waitfor run -- test -f /tmp/ready
  waitfor run --match Running --stop CrashLoopBackOff -- kubectl get pod web
  waitfor run --regex --pattern '^ok' --pattern '^done' -- ./status.sh
  waitfor run --quiet 30s --every 5s -- ls -l downloads/
  waitfor run --exit 7 --json -- sh -c 'exit 7'

Exit codes: 0 met, 1 timeout, 2 usage, 3 stopped, 4 gone, 5 probe error,
6 error, 130 cancelled (see `waitfor --help`).";

const FILE_AFTER_HELP: &str = "\
Only lines appended after the wait starts count (the file need not exist
yet; truncation and rotation are followed). With no condition the wait ends
at the first new output. --exit does not apply to files.

Examples:
  waitfor file server.log --match 'listening on'
  waitfor file build.log --pattern 'BUILD OK' --pattern 'UP-TO-DATE' --stop FAILED
  waitfor file app.log --quiet 10s --timeout 5m
  waitfor file app.log --regex -i --match 'ready|started' --json

Exit codes: 0 met, 1 timeout, 2 usage, 3 stopped, 4 gone, 5 probe error,
6 error, 130 cancelled (see `waitfor --help`).";

const PANE_AFTER_HELP: &str = "\
Only rows the pane writes after the wait starts count: scrollback and the
text already on the cursor row never match, and neither does what this
host typed into the pane (echo recorded through the library). A tmux
control-mode client wakes the wait on the pane's output (falls back to
polling); --no-push polls only. With no condition the wait ends at the
first new output. A pane that dies ends it with exit 4 (gone). tmux
runs on Unix: on Windows the command answers that (exit 2).

TARGET is a pane id (%3) or any tmux target (build:1.0).

Examples:
  waitfor pane %3 --match '$ ' --stop 'command not found'
  waitfor pane build:0.0 --socket-name ci --pattern PASSED --pattern FAILED
  waitfor pane %1 --quiet 5s --timeout 2m

Exit codes: 0 met, 1 timeout, 2 usage, 3 stopped, 4 gone, 5 probe error,
6 error, 130 cancelled (see `waitfor --help`).";

const TOOL_AFTER_HELP: &str = "\
Runs one of the library's tool profiles with the agent's JSON arguments and
prints the tool's exact output JSON, as an MCP server would return it.
Profiles: libtmux-mcp/wait_for_text, libtmux-cxx/wait_for_text, ouro/wait
and aura/wait_for (its built-in tools run_command and read_file). --list
prints every profile's MCP tool definition.

The command runs as you, so it grants the tool everything you can reach:
any command, file and tmux socket path. An MCP server that hands agents
these tools grants less (SECURITY.md: what an agent can reach).

Examples:
  waitfor tool libtmux-mcp/wait_for_text '{\"pane_id\": \"%1\", \"patterns\": [\"ready\"]}'
  waitfor tool aura/wait_for '{\"probe\": {\"tool\": \"run_command\", \"args\": {\"argv\": [\"date\"]}}, \"until\": {\"matches\": \"20\"}}'
  waitfor tool --list

Exit codes: 0 the tool answered (its output is on stdout), 2 bad arguments or
unknown profile, 6 the tool failed (its error is on stderr), 130 cancelled.";

/// Wait for a condition on a command's output or a file, then exit.
#[derive(Parser, Debug)]
#[command(name = "waitfor", version, after_help = TOP_AFTER_HELP)]
pub struct Cli {
    /// Print the engine's result JSON on stdout instead of the text summary.
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands: one per probe.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run CMD on every sample until its output or exit status meets the condition.
    #[command(after_help = RUN_AFTER_HELP)]
    Run(RunArgs),
    /// Follow a file until the lines appended to it meet the condition.
    #[command(after_help = FILE_AFTER_HELP)]
    File(FileArgs),
    /// Watch a tmux pane until what it prints after the start meets the condition.
    #[command(after_help = PANE_AFTER_HELP)]
    Pane(PaneArgs),
    /// Run a tool profile with JSON arguments and print its output JSON.
    #[command(after_help = TOOL_AFTER_HELP)]
    Tool(ToolArgs),
    /// Wait for a typed event in a JSON Lines file (Ouro AX wait/1: satisfied, timed-out with a resume command, gone).
    #[command(after_help = crate::events::EVENTS_AFTER_HELP)]
    Events(crate::events::EventsArgs),
}

/// `waitfor pane`.
#[derive(Args, Debug)]
pub struct PaneArgs {
    /// The pane: an id such as %3, or a tmux target such as build:1.0.
    pub target: String,

    /// The tmux server's socket name (tmux -L); empty: the default socket.
    #[arg(long, value_name = "NAME")]
    pub socket_name: Option<String>,

    /// Poll only: no control-mode client.
    #[arg(long)]
    pub no_push: bool,

    #[command(flatten)]
    pub conditions: ConditionArgs,

    #[command(flatten)]
    pub timing: TimingArgs,
}

/// `waitfor tool`.
#[derive(Args, Debug)]
pub struct ToolArgs {
    /// The profile, e.g. libtmux-mcp/wait_for_text.
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,

    /// The tool's arguments as a JSON object.
    #[arg(required_unless_present = "list")]
    pub arguments: Option<String>,

    /// Print every profile's MCP tool definition instead.
    #[arg(long, conflicts_with_all = ["name", "arguments"])]
    pub list: bool,
}

/// `waitfor run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub argv: Vec<String>,

    #[command(flatten)]
    pub conditions: ConditionArgs,

    #[command(flatten)]
    pub timing: TimingArgs,
}

/// `waitfor file`.
#[derive(Args, Debug)]
pub struct FileArgs {
    /// The file to follow; it need not exist yet.
    pub path: String,

    #[command(flatten)]
    pub conditions: ConditionArgs,

    #[command(flatten)]
    pub timing: TimingArgs,
}

/// The condition flags every subcommand shares. Several mean "any of
/// them"; none means the subcommand's default.
#[derive(Args, Debug, Default, Clone)]
#[command(next_help_heading = "Conditions (several: any of them)")]
pub struct ConditionArgs {
    /// Succeed when P appears.
    #[arg(long = "match", value_name = "P")]
    pub matches: Option<String>,

    /// Succeed when P is no longer in the output.
    #[arg(long = "not-match", value_name = "P")]
    pub not_matches: Option<String>,

    /// Succeed when the output has not changed for D.
    #[arg(long, value_name = "D", value_parser = positive_duration)]
    pub quiet: Option<Duration>,

    /// Succeed when any of these appears (repeatable); the result names its index (0-based).
    #[arg(long = "pattern", value_name = "P")]
    pub patterns: Vec<String>,

    /// Fail (exit 3) as soon as P appears (repeatable); wins over a success in the same sample.
    #[arg(long = "stop", value_name = "P")]
    pub stops: Vec<String>,

    /// Succeed when CMD exits with status N (`run` only).
    #[arg(long = "exit", value_name = "N", allow_negative_numbers = true)]
    pub exit_code: Option<i32>,

    /// Patterns are regular expressions (Rust `regex` syntax; `^` and `$` match at line ends) instead of literal text.
    #[arg(long)]
    pub regex: bool,

    /// Match case exactly (the default); overrides an earlier -i.
    #[arg(long, overrides_with = "ignore_case")]
    pub case: bool,

    /// Ignore case in every pattern; overrides an earlier --case.
    #[arg(short = 'i', long, overrides_with = "case")]
    pub ignore_case: bool,
}

/// How often and how long.
#[derive(Args, Debug, Default, Clone)]
#[command(next_help_heading = "Timing")]
pub struct TimingArgs {
    /// Time between samples [default: 1s for run, 200ms for file, 100ms for pane, or half of
    /// --timeout when that is less; at least 10ms].
    #[arg(long, value_name = "D", value_parser = positive_duration)]
    pub every: Option<Duration>,

    /// Give up after D (exit 1) [default: 10m].
    #[arg(long, value_name = "D", value_parser = positive_duration)]
    pub timeout: Option<Duration>,
}

/// A duration flag's value: `500ms`, `90s`, `2m`, `1h` or bare seconds,
/// above zero. clap names the flag in the error.
pub fn positive_duration(text: &str) -> Result<Duration, String> {
    match parse_duration(text) {
        Some(0) => Err("the duration must be greater than zero".to_string()),
        Some(ms) => Ok(Duration::from_millis(ms)),
        None => Err(
            "expected a duration such as 500ms, 90s, 2m, 1h or a whole number of seconds"
                .to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations() {
        assert_eq!(positive_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(positive_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(positive_duration("3"), Ok(Duration::from_secs(3)));
        assert!(positive_duration("0s").is_err());
        assert!(positive_duration("1.5s").is_err());
        assert!(positive_duration("").is_err());
    }

    #[test]
    fn last_of_case_and_ignore_case_wins() {
        let cli = Cli::try_parse_from(["waitfor", "file", "x", "-i", "--case"]).unwrap();
        let Command::File(args) = cli.command else {
            panic!()
        };
        assert!(args.conditions.case && !args.conditions.ignore_case);
        let cli = Cli::try_parse_from(["waitfor", "file", "x", "--case", "-i"]).unwrap();
        let Command::File(args) = cli.command else {
            panic!()
        };
        assert!(!args.conditions.case && args.conditions.ignore_case);
    }
}
