//! libtmux-mcp's `wait_for_text`: wait for new output in a tmux pane
//! (`seeds/tmux-python-wait_for_text.md`), as the original does it:
//!
//! - new rows are libtmux-mcp's ([`Freshness::ByContent`]): rows from the
//!   entry cursor row down, as `capture-pane -J` prints them, whose
//!   content was not on those rows at entry; they count whole, prompt
//!   included, and the host's echo is not discounted;
//! - each pattern is searched row by row (`re.search` per row): none
//!   spans two rows, `^`/`$` and `\A`/`\z` are a row's ends; Python
//!   patterns the linear-time engine refuses (lookaround, backreferences)
//!   are searched by backtracking, with a step bound per row and a search
//!   bound per sample; a class's `[`, `&`, `~` and `--`, and `\Z`, read as
//!   Python reads them ([`python_regex`]);
//! - `stop` markers win a tie; `patterns: null` waits for any new row;
//! - window and session targets take the first pane of the first window;
//! - `tail` is the rows from the entry cursor row down without the blank
//!   rows at the bottom, capped like the original (20 rows, 2000 bytes);
//! - the timeout is clamped by the ceiling ([`ceiling_from_env`]:
//!   `LIBTMUX_MCP_WAIT_MAX_SECONDS`, default 30 s, or the host's), kept
//!   within 1..=120 s;
//! - errors use the original's words (no tmux server, a target that
//!   names nothing, a lost baseline, a dead or respawned pane, an
//!   unresponsive tmux);
//! - notices as the original sends them: progress before every poll
//!   (seconds elapsed, the timeout as the total, "Waiting on pane %N: Xs
//!   elapsed, Ys left"), the poll that ends the wait and the ones under a
//!   full-screen program included; and warnings for an
//!   invalid regex, for a wait that ends without a match, and once for a
//!   pane whose history is in the last tenth of its `history-limit`; and,
//!   not the original's, the engine's notices at the end (a wait that
//!   this process's other waits starved of tmux turns says so: see
//!   [`crate::tmux::PaneReport::starved_notice`]) as warnings, since its
//!   output's fields are fixed.

use super::aura::{invalid, object, reject_unknown};
use super::notice::{Notice, Report, ToolProgress};
use super::tool::{Host, ToolError};
use super::{schema, CallSlot, Prepared};
use crate::error::Rule;
use crate::pattern::{
    compiled_bytes, fit_scratch, reported_limit, Engines, Pattern, MAX_COMPILED_PATTERN_BYTES,
    MAX_PATTERNS, MAX_PATTERN_BYTES,
};
use crate::policy::{Policy, DEFAULT_OUTPUT_CAP};
use crate::probe::ProbeError;
use crate::result::{Outcome, WaitResult};
use crate::spec::{Condition, Spec};
use crate::sync::Mutex;
use crate::tmux::{
    AnsweredSince, Freshness, PaneEnd, PanePick, PaneProbe, PaneReport, PaneReportHandle,
    PaneTarget, Tmux, Unresolved,
};
use regex_automata::meta;
use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::util::syntax;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub(crate) const PROFILE: &str = "libtmux-mcp/wait_for_text";

/// The environment variable libtmux-mcp reads its ceiling from.
pub const CEILING_ENV: &str = "LIBTMUX_MCP_WAIT_MAX_SECONDS";
const CEILING_DEFAULT: f64 = 30.0;
const CEILING_FLOOR: f64 = 1.0;
const CEILING_LIMIT: f64 = 120.0;
const TAIL_LINES: usize = 20;
const TAIL_BYTES: usize = 2_000;
/// Longest wait or interval a number may ask for, so that any finite
/// number converts to a duration (the ceiling is far below it anyway).
const LONGEST: f64 = 1e9;

/// The description FastMCP sends for libtmux-mcp's tool: its docstring's
/// text before the Parameters section, as written (markup and line breaks
/// kept).
const DESCRIPTION: &str = "Wait for NEW output in a tmux pane, then return.\n\n\
Polls until one of ``patterns`` appears on a line written *after*\n\
this call starts, one of ``stop`` appears (immediate failure exit),\n\
or the timeout expires. Pass ``patterns=null`` to wait for any new\n\
output at all. Use this instead of polling ``capture_pane`` in a\n\
loop.\n\n\
Pre-existing scrollback is never matched, and neither is paint left\n\
below the cursor at entry — only rows written after the call began\n\
count. If a pattern was already on screen the result says so via\n\
``matched_at_entry``.\n\n\
**Last resort: reserve for output you did not author.** Commands\n\
you send are AUTHORED — use ``run_command`` (returns exit status)\n\
or compose ``; tmux wait-for -S <channel>`` with ``wait_for_channel``\n\
instead, both cheaper and exact. For unattributable recurring\n\
prompts or background log lines, bracket your own command with a\n\
unique sentinel (``cmd; echo __WAIT_$RANDOM__``) and wait for that.\n\n\
``stop`` is the cheap way to avoid burning the whole budget: pass\n\
the failure markers you already know (``\"error:\"``, ``\"FAILED\"``,\n\
``\"Traceback\"``) and a failed run returns in milliseconds instead\n\
of at the ceiling.\n\n\
The server caps ``timeout``. An over-large value is not an error —\n\
the wait returns at the ceiling and reports ``effective_timeout``.";

pub(crate) fn definition() -> Value {
    json!({
        "name": "wait_for_text",
        "title": "Wait For Text",
        "description": DESCRIPTION,
        "inputSchema": schema(include_str!("schemas/libtmux_mcp_wait_for_text.input.json")),
        "outputSchema": schema(include_str!("schemas/libtmux_mcp_wait_for_text.output.json")),
        "annotations": schema(include_str!("schemas/libtmux_mcp_wait_for_text.annotations.json")),
    })
}

/// The ceiling as libtmux-mcp resolves `LIBTMUX_MCP_WAIT_MAX_SECONDS`:
/// unset, unparsable or not finite gives 30 s; anything else is kept
/// within 1..=120 s.
///
/// ```
/// use waitfor::profiles::libtmux_mcp_ceiling;
/// assert_eq!(libtmux_mcp_ceiling(None), 30.0);
/// assert_eq!(libtmux_mcp_ceiling(Some("5")), 5.0);
/// assert_eq!(libtmux_mcp_ceiling(Some("500")), 120.0);
/// assert_eq!(libtmux_mcp_ceiling(Some("0.1")), 1.0);
/// assert_eq!(libtmux_mcp_ceiling(Some("soon")), 30.0);
/// ```
pub fn ceiling_from_env(value: Option<&str>) -> f64 {
    match value.map(|v| v.trim().parse::<f64>()) {
        Some(Ok(v)) if v.is_finite() => v.clamp(CEILING_FLOOR, CEILING_LIMIT),
        _ => CEILING_DEFAULT,
    }
}

fn number(map: &Map<String, Value>, field: &str, default: f64) -> Result<f64, ToolError> {
    match map.get(field) {
        None => Ok(default),
        Some(v) => v.as_f64().ok_or_else(|| {
            invalid(
                field,
                Rule::WrongType,
                format!("{field} must be a number, got {v}"),
            )
        }),
    }
}

fn boolean(map: &Map<String, Value>, field: &str) -> Result<bool, ToolError> {
    match map.get(field) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(invalid(
            field,
            Rule::WrongType,
            format!("{field} must be a boolean, got {v}"),
        )),
    }
}

fn string(map: &Map<String, Value>, field: &str) -> Result<Option<String>, ToolError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(invalid(
            field,
            Rule::WrongType,
            format!("{field} must be a string or null, got {v}"),
        )),
    }
}

fn list(map: &Map<String, Value>, field: &str) -> Result<Option<Vec<String>>, ToolError> {
    let wrong = || {
        invalid(
            field,
            Rule::WrongType,
            format!("{field} must be a list of strings or null"),
        )
    };
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string).ok_or_else(wrong))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(wrong()),
    }
}

/// Most backtracking steps one search of one row may take with a pattern
/// the linear-time engine refuses; a search over it finds nothing.
const BACKTRACK_LIMIT: usize = 10_000;

/// Most backtracking searches one sample runs; rows left over are
/// searched at the next samples, so a sample's work stays bounded.
const BACKTRACKING_PER_SAMPLE: usize = 256;

/// Most rows whose findings a call remembers (rows repeat sample after
/// sample; a backtracking search is not run twice on the same row).
const REMEMBERED_ROWS: usize = 4096;

/// One pattern of a call, searched on one row at a time as libtmux-mcp
/// does (`re.search` on each row).
#[derive(Clone)]
enum RowSearch {
    /// Linear time (regex-automata, as the engine's patterns).
    Linear(Arc<meta::Regex>),
    /// Lookaround or backreferences, which Python's `re` takes and the
    /// linear engine refuses: backtracking, at most [`BACKTRACK_LIMIT`]
    /// steps per row.
    Backtracking(Arc<fancy_regex::Regex>),
}

/// What one call's compiled patterns may take in all, as for any wait:
/// each pattern at most [`MAX_COMPILED_PATTERN_BYTES`], and a backtracking
/// one counted at that much.
const CALL_COMPILED_BYTES: usize = crate::pattern::MAX_COMPILED_WAIT_BYTES;

/// What searching with one call's patterns may take, as for any wait (see
/// [`crate::limits::MAX_WAIT_SCRATCH_BYTES`]): past it, patterns search without
/// lazy DFAs.
const CALL_SCRATCH_BYTES: usize = crate::pattern::MAX_WAIT_SCRATCH_BYTES;

/// What one pattern takes: its program's bytes, and its search scratch.
#[derive(Clone, Copy)]
struct Cost {
    program: usize,
    scratch: usize,
}

impl RowSearch {
    /// Compiles `text` with at most `limit` bytes of automata, searching
    /// with at most `scratch_left`; gives the pattern and what it takes.
    fn new(
        text: &str,
        regex: bool,
        match_case: bool,
        limit: usize,
        scratch_left: usize,
    ) -> Result<(Self, Cost), String> {
        let source = source(text, regex);
        crate::fold_cost::within_limit(folded_chars(&source, match_case))?;
        // Fails with whether the program was too big.
        let build = |engines: Engines| {
            meta::Builder::new()
                .configure(
                    engines.configure(
                        meta::Config::new()
                            .which_captures(WhichCaptures::None)
                            .nfa_size_limit(Some(reported_limit(limit))),
                    ),
                )
                .syntax(syntax::Config::new().case_insensitive(!match_case))
                .build(&source)
                .map_err(|e| e.size_limit().is_some())
        };
        let fast = Engines::Fast {
            lazy_dfa_bytes: 1 << 20,
        };
        match build(fast) {
            Ok(re) if compiled_bytes(&re) <= limit => {
                let fitted = fit_scratch(re, fast, scratch_left, || build(Engines::Lean))
                    .map_err(|_| too_big())?;
                let cost = Cost {
                    program: compiled_bytes(&fitted.regex),
                    scratch: fitted.scratch,
                };
                return Ok((Self::Linear(Arc::new(fitted.regex)), cost));
            }
            Ok(_) => return Err(too_big()),
            Err(true) => return Err(too_big()),
            Err(false) => {}
        }
        fancy_regex::RegexBuilder::new(&source)
            .case_insensitive(!match_case)
            .backtrack_limit(BACKTRACK_LIMIT)
            .delegate_size_limit(reported_limit(limit))
            .build()
            .map(|re| {
                let cost = Cost {
                    program: MAX_COMPILED_PATTERN_BYTES,
                    scratch: 0,
                };
                (Self::Backtracking(Arc::new(re)), cost)
            })
            .map_err(|_| match check_syntax(text, regex) {
                // Past the syntax checked at the call (see `patterns`).
                Err(message) => format!("Invalid regex pattern: {message}"),
                Ok(()) => too_big(),
            })
    }

    /// Whether the pattern occurs in `row`.
    fn finds(&self, row: &str) -> bool {
        match self {
            Self::Linear(re) => re.is_match(row),
            Self::Backtracking(re) => re.is_match(row).unwrap_or(false),
        }
    }
}

/// What folding the classes of `source` spans (see
/// [`crate::limits::MAX_FOLDED_CHARS`]): over the parts the linear engine compiles
/// when only Python's `re` syntax takes it.
fn folded_chars(source: &str, match_case: bool) -> usize {
    use fancy_regex::Expr;
    let mut counter = crate::fold_cost::FoldCounter::default();
    if regex_syntax::ast::parse::Parser::new()
        .parse(source)
        .is_ok()
    {
        return counter.count(source, !match_case);
    }
    let Ok(tree) = Expr::parse_tree(source) else {
        return 0;
    };
    let mut chars = 0usize;
    let mut parts = vec![&tree.expr];
    while let Some(part) = parts.pop() {
        match part {
            Expr::Delegate { inner, casei, .. } => {
                chars = chars.saturating_add(counter.count(inner, *casei || !match_case));
            }
            Expr::Concat(all) | Expr::Alt(all) => parts.extend(all),
            Expr::Group(one) | Expr::LookAround(one, _) | Expr::AtomicGroup(one) => parts.push(one),
            Expr::Repeat { child, .. } => parts.push(child),
            Expr::Conditional {
                condition,
                true_branch,
                false_branch,
            } => parts.extend([&**condition, &**true_branch, &**false_branch]),
            _ => {}
        }
    }
    chars
}

/// The regex text of a pattern: Python's regex in this crate's syntax
/// (see [`python_regex`]), or the text escaped when it is literal.
fn source(text: &str, regex: bool) -> String {
    if regex {
        python_regex(text)
    } else {
        regex::escape(text)
    }
}

/// A Python `re` pattern written so that this crate's regex syntax reads
/// it as Python does where the two differ without an error: inside a
/// character class `[`, `&` and `~` are plain characters in Python (here
/// they start a nested class, a POSIX class such as `[:digit:]`, an
/// intersection `&&` or a symmetric difference `~~`), and so is a `-`
/// right after another (here `--` is a difference); `\Z` is the end of the
/// text (here `\z`). Everything else is kept as written.
///
/// ```text
/// [[:digit:]]  ->  [\[:digit:]]   (one of `[:digt`, then `]`)
/// done\Z       ->  done\z
/// ```
fn python_regex(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    let mut in_class = false;
    let mut previous = None;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let next = chars.next();
                match next {
                    Some('Z') if !in_class => out.push_str("\\z"),
                    Some(n) => {
                        out.push('\\');
                        out.push(n);
                    }
                    None => out.push('\\'),
                }
                previous = None;
                continue;
            }
            '[' if in_class => out.push_str("\\["),
            '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            '-' if in_class && previous == Some('-') => out.push_str("\\-"),
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            '[' => {
                in_class = true;
                out.push(c);
                // A `^`, then a `]` first in the class, are its own.
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push_str("\\]");
                    chars.next();
                }
            }
            _ => out.push(c),
        }
        previous = Some(c);
    }
    out
}

fn too_big() -> String {
    format!(
        "the patterns would take more than {} MiB compiled ({} MiB for one): use fewer or \
         simpler patterns (large repetitions of classes such as \\w{{250}} are the usual cause)",
        CALL_COMPILED_BYTES >> 20,
        MAX_COMPILED_PATTERN_BYTES >> 20
    )
}

/// Whether Python's `re` would take `text`: the linear engine's syntax, or
/// else lookaround and backreferences; the linear engine's message if
/// neither. Parses only, in time linear in the text (see
/// [`crate::pattern::check_syntax`]): compiling waits for the wait's first
/// sample.
fn check_syntax(text: &str, regex: bool) -> Result<(), String> {
    let source = source(text, regex);
    match crate::pattern::check_syntax(&source) {
        Ok(()) => Ok(()),
        Err(_) if fancy_regex::Expr::parse_tree(&source).is_ok() => Ok(()),
        Err(e) => Err(crate::pattern::one_line(&e)),
    }
}

/// A call's patterns and stop markers: checked when the call is made,
/// compiled in the wait's own time (at its first sample, on an engine
/// worker, within [`CALL_COMPILED_BYTES`]), never on the host's thread.
struct RowSearches {
    patterns: Vec<String>,
    stop: Vec<String>,
    regex: bool,
    match_case: bool,
    compiled: OnceLock<Result<Compiled, String>>,
}

/// The compiled patterns, then the compiled stop markers.
type Compiled = (Vec<RowSearch>, Vec<RowSearch>);

impl RowSearches {
    /// The compiled lists, compiling them at the first call.
    fn compiled(&self) -> Result<&Compiled, &String> {
        self.compiled
            .get_or_init(|| {
                let mut left = CALL_COMPILED_BYTES;
                let mut scratch_left = CALL_SCRATCH_BYTES;
                let mut build = |list: &[String]| {
                    list.iter()
                        .map(|text| {
                            let limit = left.min(MAX_COMPILED_PATTERN_BYTES);
                            let (search, cost) = RowSearch::new(
                                text,
                                self.regex,
                                self.match_case,
                                limit,
                                scratch_left,
                            )?;
                            left = left.saturating_sub(cost.program);
                            scratch_left -= cost.scratch;
                            Ok(search)
                        })
                        .collect::<Result<Vec<_>, String>>()
                };
                Ok((build(&self.patterns)?, build(&self.stop)?))
            })
            .as_ref()
    }

    /// The compiled lists if they were compiled (a wait that ended before
    /// its first sample has none: nothing was found).
    fn if_compiled(&self) -> (&[RowSearch], &[RowSearch]) {
        match self.compiled.get() {
            Some(Ok((patterns, stop))) => (patterns, stop),
            _ => (&[], &[]),
        }
    }
}

/// The engine's pattern for a finding line (see [`Findings`]).
fn finding(tag: char, index: usize) -> Pattern {
    Pattern::regex(format!("^{tag}{index}$"))
}

/// What the engine reads of the new rows: a line `rows` when there are
/// any, then `p<i>` for each pattern and `s<i>` for each stop marker that
/// finds a row. The engine's patterns are these lines, so it keeps the
/// order (lowest index, `stop` first), the timing and the deadline, while
/// the rows are searched here, row by row.
struct Findings {
    searches: Arc<RowSearches>,
    /// Per row (by a hash of its text): which patterns, then which stop
    /// markers, find it.
    seen: Mutex<HashMap<u64, Vec<bool>>>,
}

impl Findings {
    fn of(&self, rows: &[String]) -> Result<String, ProbeError> {
        let (patterns, stop) = self.searches.compiled().map_err(ProbeError::refused)?;
        let all = || patterns.iter().chain(stop);
        let per_row = all()
            .filter(|p| matches!(p, RowSearch::Backtracking(_)))
            .count();
        let mut budget = BACKTRACKING_PER_SAMPLE;
        let mut found = vec![false; patterns.len() + stop.len()];
        let mut seen = self.seen.lock();
        for row in rows {
            let key = {
                let mut hasher = DefaultHasher::new();
                row.hash(&mut hasher);
                hasher.finish()
            };
            if !seen.contains_key(&key) {
                if per_row > budget {
                    continue;
                }
                budget -= per_row;
                if seen.len() >= REMEMBERED_ROWS {
                    seen.clear();
                }
                seen.insert(key, all().map(|p| p.finds(row)).collect());
            }
            for (f, hit) in found.iter_mut().zip(&seen[&key]) {
                *f |= *hit;
            }
        }
        let mut text = if rows.is_empty() {
            String::new()
        } else {
            "rows\n".to_string()
        };
        let (found_patterns, found_stop) = found.split_at(patterns.len());
        for (tag, list) in [('p', found_patterns), ('s', found_stop)] {
            for (i, _) in list.iter().enumerate().filter(|(_, hit)| **hit) {
                text.push_str(&format!("{tag}{i}\n"));
            }
        }
        Ok(text)
    }
}

/// Regex text whose syntax a call checks at most (see [`patterns`]): as
/// much as one pattern of the longest kind, whose parse takes
/// milliseconds. Parsing every pattern of a 4 MiB argument list took half
/// a second on the host's thread.
const SYNTAX_CHECKED_BYTES: usize = MAX_PATTERN_BYTES;

/// Checks a list of patterns and gives it back: their length, and the
/// syntax of regexes (see [`check_syntax`]) while `syntax_budget` lasts;
/// a regex past it is checked as its wait compiles it, in the wait's time.
/// Plain text is escaped, so its syntax is always right.
fn patterns(
    values: &[String],
    field: &str,
    regex: bool,
    syntax_budget: &mut usize,
) -> Result<Vec<String>, ToolError> {
    for (i, text) in values.iter().enumerate() {
        let at = || format!("{field}[{i}]");
        if text.is_empty() {
            return Err(invalid(
                &at(),
                Rule::Empty,
                format!("{field} pattern must be a non-empty string"),
            ));
        }
        if text.len() > MAX_PATTERN_BYTES {
            return Err(invalid(
                &at(),
                Rule::OutOfRange,
                format!("{field} pattern may be at most {MAX_PATTERN_BYTES} bytes"),
            ));
        }
        if !regex || text.len() > *syntax_budget {
            continue;
        }
        *syntax_budget -= text.len();
        check_syntax(text, regex).map_err(|message| {
            invalid(
                &at(),
                Rule::InvalidRegex,
                format!("Invalid regex pattern: {message}"),
            )
        })?;
    }
    Ok(values.to_vec())
}

/// The pane a call names, in the seed's order (pane, window, session id,
/// session name, first session).
fn target(map: &Map<String, Value>) -> Result<PaneTarget, ToolError> {
    Ok(PaneTarget {
        pane_id: string(map, "pane_id")?,
        window_id: string(map, "window_id")?,
        session_id: string(map, "session_id")?,
        session_name: string(map, "session_name")?,
        target: None,
    })
}

pub(crate) fn prepare(args: &Value, host: &Host) -> Result<Prepared, ToolError> {
    prepare_on(args, host, Tmux::new())
}

/// [`prepare`], reaching the pane through `tmux` (the simulator's scripted
/// server, or a tmux program).
pub(crate) fn prepare_on(args: &Value, host: &Host, mut tmux: Tmux) -> Result<Prepared, ToolError> {
    let map = object(args, "")?;
    reject_unknown(
        map,
        "",
        &[
            "interval",
            "match_case",
            "pane_id",
            "patterns",
            "regex",
            "session_id",
            "session_name",
            "socket_name",
            "stop",
            "timeout",
            "window_id",
        ],
    )?;
    let interval = number(map, "interval", 0.05)?;
    let timeout = number(map, "timeout", 8.0)?;
    let match_case = boolean(map, "match_case")?;
    let regex = boolean(map, "regex")?;
    let wanted = list(map, "patterns")?;
    let stop = list(map, "stop")?.unwrap_or_default();
    let target = target(map)?;
    let socket_name = string(map, "socket_name")?;
    if interval < 0.01 {
        return Err(invalid(
            "interval",
            Rule::OutOfRange,
            format!(
                "interval must be at least 0.01 s (received {})",
                python_float(interval)
            ),
        ));
    }
    if timeout <= 0.0 {
        return Err(invalid(
            "timeout",
            Rule::NotPositive,
            format!(
                "timeout must be positive (received {})",
                python_float(timeout)
            ),
        ));
    }
    if wanted.as_ref().is_some_and(Vec::is_empty) {
        return Err(invalid(
            "patterns",
            Rule::Empty,
            "patterns must be a non-empty list, or null to wait for any new output",
        ));
    }
    let listed = wanted
        .as_ref()
        .map_or(0, Vec::len)
        .saturating_add(stop.len());
    if listed > MAX_PATTERNS {
        return Err(invalid(
            "patterns",
            Rule::OutOfRange,
            format!("patterns and stop may list at most {MAX_PATTERNS} patterns together"),
        ));
    }
    let mut syntax_budget = SYNTAX_CHECKED_BYTES;
    let listed = match &wanted {
        Some(list) => patterns(list, "patterns", regex, &mut syntax_budget)?,
        None => Vec::new(),
    };
    let stop_listed = patterns(&stop, "stop", regex, &mut syntax_budget)?;
    let until = match &wanted {
        Some(_) => Condition::Patterns((0..listed.len()).map(|i| finding('p', i)).collect()),
        None => Condition::AnyOutput,
    };
    let ceiling = match host.max_wait_ceiling {
        Some(d) => d.as_secs_f64().clamp(CEILING_FLOOR, CEILING_LIMIT),
        None => ceiling_from_env(std::env::var(CEILING_ENV).ok().as_deref()),
    };
    let effective = timeout.min(ceiling);
    let interval = Duration::from_secs_f64(interval.min(LONGEST));
    let mut spec = Spec::new(until)
        .stop((0..stop_listed.len()).map(|i| finding('s', i)))
        .interval(interval)
        .max_wait(longer_than(Duration::from_secs_f64(effective), interval));
    // The original reports progress at every poll.
    spec.progress_every = Duration::from_millis(1);
    spec.validate()?;
    if let Some(name) = socket_name {
        host.grants.check_tmux_socket("socket_name", &name)?;
        tmux = tmux.with_socket_name(name);
    }
    let searches = Arc::new(RowSearches {
        patterns: listed,
        stop: stop_listed,
        regex,
        match_case,
        compiled: OnceLock::new(),
    });
    let findings = Findings {
        searches: searches.clone(),
        seen: Mutex::default(),
    };
    let answered = tmux.answered_since_now();
    let named = target.clone();
    let probe = PaneProbe::new(tmux, target)
        .pick(PanePick::First)
        .freshness(Freshness::ByContent)
        .observe_rows(Arc::new(move |rows: &[String]| findings.of(rows)));
    let report = probe.report();
    let policy = Policy::default()
        .max_wait_ceiling(Duration::from_secs_f64(effective))
        .output_cap(DEFAULT_OUTPUT_CAP);
    Ok(Prepared {
        slot: CallSlot::uncounted(),
        spec,
        probe: Box::new(probe),
        policy,
        report: notices(report.clone(), effective, answered.clone()),
        render: Box::new(move |result| {
            let (patterns, stop) = searches.if_compiled();
            render(
                result, &report, &named, patterns, stop, effective, &answered,
            )
        }),
    })
}

/// libtmux-mcp's warning when it refuses a pattern.
pub(crate) fn refused(error: &ToolError) -> Vec<Notice> {
    match error {
        ToolError::InvalidArguments(e) if e.rule == Rule::InvalidRegex => {
            vec![Notice::warning(e.message.clone())]
        }
        _ => Vec::new(),
    }
}

/// libtmux-mcp's one-shot warning for a pane whose history is where tmux
/// trims it: sent at the first report after the probe saw it, or at the
/// end.
struct TrimRisk {
    seen: PaneReportHandle,
    warned: AtomicBool,
}

impl TrimRisk {
    /// The pane and the warning, if it is due now.
    fn check(&self) -> (String, Option<Notice>) {
        let (pane_id, near) = self
            .seen
            .read(|seen| (pane_of(seen), seen.history_near_limit));
        let warning = near.filter(|_| !self.warned.swap(true, Ordering::Relaxed));
        let warning = warning.map(|(limit, size)| {
            Notice::warning(format!(
                "pane {pane_id} is polling in the history-limit trim-risk band (history_size \
                 {size} / history_limit {limit}); wait_for_text correctness is best-effort here. \
                 For deterministic synchronization use wait_for_channel."
            ))
        });
        (pane_id, warning)
    }
}

/// libtmux-mcp's notices for a call whose probe reports to `seen`, on a
/// server where `answered` tells whether tmux kept answering.
fn notices(seen: PaneReportHandle, effective: f64, answered: AnsweredSince) -> Report {
    let risk = Arc::new(TrimRisk {
        seen,
        warned: AtomicBool::new(false),
    });
    let at_end = risk.clone();
    Report::new(
        move |progress| {
            let (pane_id, warning) = risk.check();
            let secs = progress.elapsed_ms as f64 / 1000.0;
            let progress = Notice::Progress(poll_progress(secs, effective, &pane_id));
            std::iter::once(progress).chain(warning).collect()
        },
        move |result| {
            let (pane_id, warning) = at_end.check();
            // The original reports progress before every poll, the one
            // that ends the wait (or the poll at its deadline) included;
            // the engine reports after each sample that decided nothing.
            // Polls start once the pane was captured at entry; a
            // cancelled wait sends nothing more.
            let polled = at_end.seen.read(|seen| seen.captures > 0);
            let last_poll = (polled && result.outcome != Outcome::Cancelled).then(|| {
                let secs = result.elapsed_ms as f64 / 1000.0;
                Notice::Progress(poll_progress(secs, effective, &pane_id))
            });
            let mut sent: Vec<Notice> = last_poll.into_iter().chain(warning).collect();
            let not_found = at_end
                .seen
                .read(|seen| ended(result, seen, answered.any()))
                .is_some_and(|o| !found(o));
            if not_found {
                sent.push(Notice::warning(format!(
                    "No match in pane {pane_id} before {}s timeout",
                    python_float(effective)
                )));
            }
            // Not the original's: why this wait sampled less often than
            // asked (this process's other waits held every tmux turn), as
            // one more warning, the only place the original's contract
            // has for it (its output's fields are fixed).
            sent.extend(result.notices.iter().cloned().map(Notice::warning));
            sent
        },
    )
}

/// The original's progress at a poll `secs` into a wait of `effective`
/// seconds on `pane_id`.
fn poll_progress(secs: f64, effective: f64, pane_id: &str) -> ToolProgress {
    ToolProgress {
        progress: secs,
        total: Some(effective),
        message: Some(format!(
            "Waiting on pane {pane_id}: {secs:.1}s elapsed, {:.1}s left",
            (effective - secs).max(0.0)
        )),
    }
}

/// The pane a call resolved, as the original names it (`%N`).
fn pane_of(seen: &PaneReport) -> String {
    seen.pane
        .as_ref()
        .map(|p| p.pane_id.clone())
        .unwrap_or_default()
}

/// A number as Python's `str(float)` writes it (`8.0`, `0.5`, `1e-05`).
fn python_float(value: f64) -> String {
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').expect("`e` format");
    let exponent: i32 = exponent.parse().expect("an exponent");
    if !(-4..16).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    let fixed = value.to_string();
    if fixed.contains('.') {
        fixed
    } else {
        format!("{fixed}.0")
    }
}

/// The engine wants the interval below the limit; a seed takes any pair
/// (one poll, then the deadline). The limit asked of the engine is then
/// just above the interval and the policy's ceiling enforces `limit`.
pub(super) fn longer_than(limit: Duration, interval: Duration) -> Duration {
    limit.max(interval + Duration::from_millis(1))
}

/// libtmux-mcp's cap on `tail` and `matched_lines`: the last
/// [`TAIL_LINES`] rows, then whole rows dropped from the front while the
/// rows joined by `\n` exceed [`TAIL_BYTES`]; a single row left over that
/// size keeps its last bytes (a character cut there is dropped).
fn capped(mut rows: Vec<String>) -> Vec<String> {
    let joined = |rows: &[String]| {
        rows.iter()
            .map(|r| r.len() + 1)
            .sum::<usize>()
            .saturating_sub(1)
    };
    rows.drain(..rows.len().saturating_sub(TAIL_LINES));
    while rows.len() > 1 && joined(&rows) > TAIL_BYTES {
        rows.remove(0);
    }
    if let Some(row) = rows.first_mut().filter(|r| r.len() > TAIL_BYTES) {
        let bytes = &row.as_bytes()[row.len() - TAIL_BYTES..];
        let skip = bytes.iter().take_while(|b| (**b & 0xC0) == 0x80).count();
        *row = String::from_utf8_lossy(&bytes[skip..]).into_owned();
    }
    rows
}

/// The rows the pattern at `index` finds, in the order they are on screen.
fn rows_matching(rows: &[String], list: &[RowSearch], index: Option<usize>) -> Vec<String> {
    let Some(pattern) = index.and_then(|i| list.get(i)) else {
        return Vec::new();
    };
    rows.iter().filter(|r| pattern.finds(r)).cloned().collect()
}

/// libtmux-mcp gives every tmux call at least this long, so a call cut
/// short by the deadline is the deadline, not an unresponsive server.
const CALL_FLOOR: Duration = Duration::from_millis(250);

/// Whether the wait's first tmux call was still out when the wait ended.
fn first_call_outlived(result: &WaitResult) -> bool {
    result.outcome == Outcome::ProbeError
        && result.samples == 0
        && result.probe.last_error.is_none()
}

/// The tmux call that did not come back in time and its budget: one the
/// probe saw run out, or the first, which never answered in the whole wait
/// while tmux answered no call of this process (`answered`: it did; then
/// the call was only waiting for its turn).
fn stuck_call(
    result: &WaitResult,
    seen: &PaneReport,
    answered: bool,
) -> Option<(String, Duration)> {
    seen.unresponsive.clone().or_else(|| {
        (first_call_outlived(result) && !answered).then(|| {
            let command = match seen.pane {
                Some(_) => "display-message",
                None => "list-panes",
            };
            let budget = Duration::from_millis(result.effective_max_wait_ms);
            (command.to_string(), budget)
        })
    })
}

/// Whether a wait that ended in a tmux call's failure ended at its
/// deadline: the call was cut short by it, or spent it waiting for its
/// turn while tmux answered this process's other calls.
fn ended_at_deadline(result: &WaitResult, seen: &PaneReport, answered: bool) -> bool {
    seen.failed_without_turn(result)
        || result.outcome == Outcome::ProbeError
            && ((first_call_outlived(result) && answered)
                || stuck_call(result, seen, answered)
                    .is_some_and(|(_, budget)| budget < CALL_FLOOR))
}

/// libtmux-mcp's error text for a wait that found no pane: for no tmux
/// server, the failed tmux command it resolves the deciding argument with
/// and tmux's own words; for a target that names nothing, libtmux's
/// exception for that argument (pane, window, session id, session name,
/// else any session), then the hint it gives the agent.
fn unresolved_text(unresolved: &Unresolved, named: &PaneTarget) -> String {
    let Unresolved::NoServer(stderr) = unresolved else {
        return not_found(named);
    };
    let command = if named.pane_id.is_some() {
        "list-panes"
    } else if named.window_id.is_some() {
        "list-windows"
    } else {
        "list-sessions"
    };
    format!("tmux {command} failed: {stderr}")
}

fn not_found(named: &PaneTarget) -> String {
    let object = |key: &str, id: &str, command: &str| {
        format!(
            "Object not found: Could not find {key}={id} for {command}\n\
             Call list_sessions / list_windows / list_panes to discover valid ids."
        )
    };
    if let Some(id) = &named.pane_id {
        format!("Pane not found: Pane not found: {id}\nCall list_panes to discover valid pane ids.")
    } else if let Some(id) = &named.window_id {
        object("window_id", id, "list-windows ('-a',)")
    } else if let Some(id) = &named.session_id {
        object("session_id", id, "list-sessions ()")
    } else if let Some(name) = &named.session_name {
        object("session_name", name, "list-sessions ()")
    } else {
        object("session", "(any)", "list-sessions ()")
    }
}

/// libtmux-mcp's error texts for a pane wait that cannot go on.
fn failure(result: &WaitResult, seen: &PaneReport, pane_id: &str, answered: bool) -> ToolError {
    let lost = "cursor/baseline anchor is no longer valid";
    let stuck = stuck_call(result, seen, answered);
    let text = match (&seen.end, seen.history_shrank, &stuck) {
        (_, _, Some((command, budget))) => format!(
            "tmux {command} did not return within {:.2}s; the tmux server is unresponsive",
            budget.as_secs_f64()
        ),
        (Some(PaneEnd::Died), ..) => format!("pane {pane_id} died; {lost}"),
        (Some(PaneEnd::Respawned { from, to }), ..) => {
            let pid = |p: &Option<u32>| p.map(|p| p.to_string()).unwrap_or_default();
            format!(
                "pane {pane_id} was respawned (pid {} -> {}); {lost}",
                pid(from),
                pid(to)
            )
        }
        (Some(PaneEnd::ServerGone(stderr)), ..) => {
            format!("tmux display-message failed: {stderr}")
        }
        (Some(PaneEnd::Vanished), ..) => {
            format!("tmux display-message failed: can't find pane: {pane_id}")
        }
        (None, Some((entry, now)), _) => format!(
            "pane {pane_id} history shrank below entry baseline (history_size {entry} -> {now}); \
             baseline anchor lost \u{2014} re-arm wait_for_text or use wait_for_channel for \
             deterministic synchronization"
        ),
        _ if result.outcome == Outcome::Cancelled => "wait_for_text was cancelled".to_string(),
        _ => result
            .error
            .clone()
            .unwrap_or_else(|| result.outcome.as_str().to_string()),
    };
    ToolError::Runtime(text)
}

/// The original's outcome for a wait that ended with a result; `None`
/// for one that ends with an error.
fn ended(result: &WaitResult, seen: &PaneReport, answered: bool) -> Option<&'static str> {
    let alternate = result.alternate_screen || seen.alternate_screen;
    let outcome = if ended_at_deadline(result, seen, answered) {
        Outcome::Timeout
    } else {
        result.outcome
    };
    match outcome {
        Outcome::Matched => Some("matched"),
        Outcome::Stopped => Some("stopped"),
        Outcome::AnyOutput => Some("any_output"),
        Outcome::Timeout if alternate => Some("alternate_screen"),
        Outcome::Timeout => Some("timeout"),
        _ => None,
    }
}

/// Whether the original's outcome counts as found.
fn found(outcome: &str) -> bool {
    matches!(outcome, "matched" | "any_output")
}

fn render(
    result: &WaitResult,
    report: &PaneReportHandle,
    named: &PaneTarget,
    patterns: &[RowSearch],
    stop: &[RowSearch],
    effective: f64,
    answered: &AnsweredSince,
) -> Result<Value, ToolError> {
    let seen = report.get();
    let pane_id = pane_of(&seen);
    let answered = answered.any();
    let Some(outcome) = ended(result, &seen, answered) else {
        if let Some(unresolved) = &seen.unresolved {
            return Err(ToolError::Runtime(unresolved_text(unresolved, named)));
        }
        return Err(failure(result, &seen, &pane_id, answered));
    };
    let lines = match outcome {
        "matched" => rows_matching(&seen.fresh_rows, patterns, result.matched_index),
        "stopped" => rows_matching(&seen.fresh_rows, stop, result.matched_index),
        "any_output" => seen.fresh_rows.clone(),
        _ => Vec::new(),
    };
    let found = found(outcome);
    let at_entry = seen_at_entry(&seen.entry.original, patterns);
    Ok(json!({
        "found": found,
        "outcome": outcome,
        "matched_index": result.matched_index,
        "matched_lines": capped(lines),
        "tail": capped(seen.region.original.clone()),
        "saw_new_output": seen.saw_fresh_rows,
        "matched_at_entry": at_entry && !found,
        "alternate_screen": result.alternate_screen || seen.alternate_screen,
        "pane_id": pane_id,
        "elapsed_seconds": result.elapsed_ms as f64 / 1000.0,
        "effective_timeout": effective,
    }))
}

/// Whether a pattern occurs on a row of the screen the wait began on.
/// Searched after the wait, on the host's thread (holding Python's lock,
/// in Python): linear patterns on every row, backtracking ones for as many
/// searches as one sample may run ([`BACKTRACKING_PER_SAMPLE`]); a row they
/// did not reach counts as no finding. 2,400 backtracking patterns over a
/// full screen took 3.4 s, past the deadline.
fn seen_at_entry(rows: &[String], patterns: &[RowSearch]) -> bool {
    let linear = |p: &&RowSearch| matches!(p, RowSearch::Linear(_));
    let (linear, backtracking): (Vec<&RowSearch>, Vec<&RowSearch>) =
        patterns.iter().partition(linear);
    rows.iter().any(|row| linear.iter().any(|p| p.finds(row)))
        || rows
            .iter()
            .flat_map(|row| backtracking.iter().map(move |p| (p, row)))
            .take(BACKTRACKING_PER_SAMPLE)
            .any(|(p, row)| p.finds(row))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's `re` reads `[`, `&`, `~` and a second `-` in a class as
    /// plain characters, and `\\Z` as the end of the text.
    #[test]
    fn python_regexes_read_as_python_reads_them() {
        for (python, here) in [
            (r"[[:digit:]]", r"[\[:digit:]]"),
            (r"[^]a[]", r"[^\]a\[]"),
            (r"[a&&b~~c]", r"[a\&\&b\~\~c]"),
            (r"[+--]", r"[+-\-]"),
            (r"done\Z", r"done\z"),
            (r"[\Z]", r"[\Z]"),
            (r"\\Z", r"\\Z"),
            (r"a[b]c[d]", r"a[b]c[d]"),
            (r"\[x", r"\[x"),
            ("trailing\\", "trailing\\"),
        ] {
            assert_eq!(python_regex(python), here, "{python}");
        }
    }

    fn rows(v: &[&str]) -> Vec<String> {
        v.iter().map(|r| r.to_string()).collect()
    }

    /// A wait that ended in its probe's `error` after `samples` samples.
    fn failed_after(samples: u64, error: Option<&str>) -> WaitResult {
        let mut result = crate::engine::error_result(String::new());
        result.outcome = Outcome::ProbeError;
        result.samples = samples;
        result.effective_max_wait_ms = 1000;
        result.probe.last_error = error.map(str::to_string);
        result
    }

    /// A call that got no turn before its budget ended, while tmux
    /// answered this process's other calls, is the deadline (the engine's
    /// deadline and the call's end race); another tmux error is not.
    #[test]
    fn a_call_without_a_turn_on_a_busy_server_is_the_deadline() {
        let no_turn = PaneReport {
            no_turn: true,
            ..PaneReport::default()
        };
        let busy = failed_after(2, Some("tmux display-message got no turn within 1.00s"));
        assert_eq!(ended(&busy, &no_turn, true), Some("timeout"));
        let gone = failed_after(2, Some("no such tmux pane: %1"));
        assert_eq!(ended(&gone, &PaneReport::default(), true), None);
        // The first call outlived the wait: busy when tmux answered
        // others meanwhile, else unresponsive.
        let outlived = failed_after(0, None);
        assert_eq!(
            ended(&outlived, &PaneReport::default(), true),
            Some("timeout")
        );
        assert_eq!(ended(&outlived, &PaneReport::default(), false), None);
        let text = failure(&outlived, &PaneReport::default(), "", false).to_string();
        assert!(text.ends_with("the tmux server is unresponsive"), "{text}");
    }

    /// The original writes its float timeout with Python's `str`.
    #[test]
    fn floats_read_as_python_writes_them() {
        for (value, text) in [
            (8.0, "8.0"),
            (0.5, "0.5"),
            (30.0, "30.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e16, "1e+16"),
        ] {
            assert_eq!(python_float(value), text);
        }
    }

    #[test]
    fn capped_keeps_the_last_rows_then_the_last_bytes() {
        let many: Vec<String> = (0..30).map(|i| i.to_string()).collect();
        assert_eq!(capped(many).first().map(String::as_str), Some("10"));
        let wide = rows(&[&"a".repeat(1500), &"b".repeat(600)]);
        assert_eq!(capped(wide), rows(&[&"b".repeat(600)]));
        let one = rows(&[&format!("é{}", "c".repeat(1999))]);
        assert_eq!(capped(one), rows(&[&"c".repeat(1999)]));
        assert_eq!(capped(rows(&[""])), rows(&[""]));
    }

    #[test]
    fn patterns_past_the_calls_scratch_budget_search_lean() {
        let dfa_heavy = "a[ab]{16}[^ab]";
        let new = |scratch_left| {
            RowSearch::new(
                dfa_heavy,
                true,
                true,
                MAX_COMPILED_PATTERN_BYTES,
                scratch_left,
            )
        };
        // With room: lazy DFAs, megabytes of scratch.
        let fast = new(CALL_SCRATCH_BYTES).unwrap().1.scratch;
        assert!(fast > 3 << 20, "{fast}");
        // Without: the PikeVM alone, bounded with the program.
        assert_eq!(new(fast - 1).unwrap().1.scratch, 0);
    }

    #[test]
    fn the_entry_search_after_the_wait_runs_one_samples_backtracking_searches() {
        // Each search backtracks to its step limit on these rows.
        let rows: Vec<String> = (0..60).map(|_| "a".repeat(150)).collect();
        let slow: Vec<RowSearch> = (0..2400)
            .map(|i| search(&format!(r"(?=(a+)+b)(a|aa)+\1c{i}"), true))
            .collect();
        // Timed by this thread's CPU time (the wall clock's where the system
        // keeps none): a loaded machine keeping the thread waiting for a
        // core adds nothing to it (the wall clock's went past 1 s so).
        let cpu = || {
            std::fs::read_to_string("/proc/thread-self/schedstat")
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse().ok())
                .map(std::time::Duration::from_nanos)
        };
        let (started, cpu_before) = (std::time::Instant::now(), cpu());
        assert!(!seen_at_entry(&rows, &slow));
        let took = match (cpu_before, cpu()) {
            (Some(before), Some(after)) => after.saturating_sub(before),
            _ => started.elapsed(),
        };
        // About 0.12 s in a test build; searching all took seconds.
        assert!(took < std::time::Duration::from_secs(1), "{took:?}");
        // Linear patterns search every row; a backtracking one finds too.
        let mut with_linear = slow.clone();
        with_linear.push(search("aaa", false));
        assert!(seen_at_entry(&rows, &with_linear));
        assert!(seen_at_entry(&rows, &[search(r"(?=a)(a)\1", true)]));
    }

    fn search(text: &str, regex: bool) -> RowSearch {
        RowSearch::new(
            text,
            regex,
            false,
            MAX_COMPILED_PATTERN_BYTES,
            CALL_SCRATCH_BYTES,
        )
        .unwrap()
        .0
    }

    fn findings(patterns: &[&str], stop: &[&str]) -> Findings {
        let texts = |list: &[&str]| list.iter().map(|t| t.to_string()).collect();
        Findings {
            searches: Arc::new(RowSearches {
                patterns: texts(patterns),
                stop: texts(stop),
                regex: true,
                match_case: false,
                compiled: OnceLock::new(),
            }),
            seen: Mutex::default(),
        }
    }

    #[test]
    fn findings_name_the_patterns_that_find_a_row() {
        let findings = findings(&[r"foo\s+bar", "ready"], &["(?<=BUILD )FAILED"]);
        assert_eq!(findings.of(&[]).unwrap(), "");
        assert_eq!(findings.of(&rows(&["foo", "bar"])).unwrap(), "rows\n");
        assert_eq!(findings.of(&rows(&["", "READY"])).unwrap(), "rows\np1\n");
        let both = rows(&["foo  bar", "BUILD FAILED"]);
        assert_eq!(findings.of(&both).unwrap(), "rows\np0\ns0\n");
    }

    #[test]
    fn a_sample_runs_a_bounded_number_of_backtracking_searches() {
        let findings = findings(&[r"(?<=x)(\d)\1"], &[]);
        let mut many: Vec<String> = (0..BACKTRACKING_PER_SAMPLE)
            .map(|i| format!("row {i}"))
            .collect();
        many.push("x77".into());
        assert_eq!(findings.of(&many).unwrap(), "rows\n", "the last row waits");
        assert_eq!(
            findings.of(&many).unwrap(),
            "rows\np0\n",
            "and is searched next"
        );
    }

    #[test]
    fn a_call_is_checked_at_once_and_compiled_only_at_its_first_sample() {
        // Megabytes of automata each: the call is accepted (Python's `re`
        // takes them), nothing is compiled on the host's thread, and the
        // first sample fails saying the patterns are too big, within the
        // call's bound instead of taking 16 MiB a pattern.
        let heavy: Vec<String> = (0..100).map(|i| format!(r"\w{{250}}N{i}")).collect();
        let refs: Vec<&str> = heavy.iter().map(String::as_str).collect();
        assert!(patterns(&heavy, "patterns", true, &mut SYNTAX_CHECKED_BYTES.clone()).is_ok());
        let huge = findings(&refs, &[]);
        assert!(huge.searches.compiled.get().is_none());
        let err = huge.of(&rows(&["x"])).unwrap_err();
        assert!(err.refused && err.message.contains("MiB"), "{err:?}");
        // Small ones fit, many of them.
        let small: Vec<String> = (0..100).map(|i| format!("ready {i}")).collect();
        let refs: Vec<&str> = small.iter().map(String::as_str).collect();
        assert_eq!(
            findings(&refs, &[]).of(&rows(&["ready 7"])).unwrap(),
            "rows\np7\n"
        );
    }

    #[test]
    fn patterns_whose_classes_take_long_to_fold_are_refused_at_the_first_sample() {
        // Ignoring case (the default), each folds a million characters:
        // 64 KiB of them would hold a worker for a minute past the wait.
        for costly in [
            r"\p{Any}".repeat(20),
            format!(r"(?<=x){}", r"\p{Any}".repeat(20)),
        ] {
            let err = findings(&[&costly], &[]).of(&rows(&["x"])).unwrap_err();
            assert!(err.refused && err.message.contains("million"), "{err:?}");
        }
        // Matching case, nothing is folded.
        let exact = RowSearch::new(
            &r"\p{Any}".repeat(20),
            true,
            true,
            MAX_COMPILED_PATTERN_BYTES,
            CALL_SCRATCH_BYTES,
        );
        assert!(exact.is_ok());
    }

    #[test]
    fn plain_text_counts_as_what_its_searcher_takes() {
        // Each needle reports a few bytes; its program takes kilobytes.
        let many: Vec<String> = (0..MAX_PATTERNS).map(|i| format!("ready {i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let err = findings(&refs, &[]).of(&rows(&["x"])).unwrap_err();
        assert!(err.refused && err.message.contains("MiB"), "{err:?}");
    }

    #[test]
    fn python_patterns_the_linear_engine_refuses_are_searched() {
        assert!(search(r"(?<=BUILD )OK", true).finds("BUILD OK"));
        assert!(!search(r"(?<=BUILD )OK", true).finds("TEST OK"));
        assert!(search(r"(\w+) \1", true).finds("go go"));
        assert!(search("x*", true).finds(""));
        assert!(check_syntax("(", true).is_err());
        assert!(check_syntax(r"(?<=BUILD )OK", true).is_ok());
        // A search over the step bound finds nothing.
        let heavy = search(r"(a*)*\1b", true);
        assert!(!heavy.finds(&"a".repeat(40)));
    }
}
