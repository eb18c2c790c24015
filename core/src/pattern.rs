//! Patterns: literal text or a regular expression, case-sensitive or not.

use crate::cancel::CancelToken;
use crate::error::{Rule, SpecError};
use crate::sync::{Mutex, MutexGuard};
use regex_automata::meta;
use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::util::syntax;
use regex_automata::Input;
use regex_syntax::hir::{Class, Hir, HirKind};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

/// Patterns larger than this are refused: a pattern is a needle, not a file.
pub const MAX_PATTERN_BYTES: usize = 64 * 1024;

/// One pattern as the host wrote it.
///
/// ```
/// let p = waitfor::Pattern::literal("ready").case_insensitive();
/// assert!(!p.regex && !p.case_sensitive);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// The text of the pattern.
    pub text: String,
    /// Interpret `text` as a regular expression (the `regex` crate's syntax,
    /// linear-time, with `^` and `$` matching at line boundaries) instead
    /// of literal text.
    pub regex: bool,
    /// Match case exactly.
    pub case_sensitive: bool,
}

impl Pattern {
    /// Literal, case-sensitive text.
    pub fn literal(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            regex: false,
            case_sensitive: true,
        }
    }

    /// A case-sensitive regular expression.
    pub fn regex(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            regex: true,
            case_sensitive: true,
        }
    }

    /// The same pattern, ignoring case.
    pub fn case_insensitive(mut self) -> Self {
        self.case_sensitive = false;
        self
    }

    /// Checks what [`Pattern::compile`] would, in time linear in the text
    /// (at most [`MAX_PATTERN_BYTES`]), so that a host's thread may check
    /// and a wait's own time compile: its length, its syntax and the
    /// names of its Unicode classes. Not what only translating the whole
    /// pattern finds, which can take milliseconds a class (case folding a
    /// class set: `(?i)[\p{Any}--\p{L}]` takes 6 ms, so 64 KiB of them
    /// would hold the host's thread for seconds): a pattern that matches
    /// bytes outside UTF-8 under `(?-u)` fails its wait's compile instead.
    /// Ignoring case, it also bounds what folding the pattern's classes
    /// costs (see [`crate::limits::MAX_FOLDED_CHARS`]).
    pub(crate) fn check(&self, field: &str) -> Result<(), SpecError> {
        self.check_length(field)?;
        if self.regex {
            check_syntax(&self.text).map_err(|e| invalid_regex(field, &e))?;
            self.check_fold_cost(field)?;
        }
        Ok(())
    }

    /// Refuses a regex whose classes would take too long to fold.
    fn check_fold_cost(&self, field: &str) -> Result<(), SpecError> {
        crate::fold_cost::check(&self.text, !self.case_sensitive)
            .map_err(|message| SpecError::new(field, Rule::InvalidRegex, message))
    }

    /// Checks the pattern's length, as [`Pattern::compile`] does first.
    pub(crate) fn check_length(&self, field: &str) -> Result<(), SpecError> {
        if self.text.is_empty() {
            return Err(SpecError::new(
                field,
                Rule::Empty,
                "a pattern must not be empty",
            ));
        }
        if self.text.len() > MAX_PATTERN_BYTES {
            return Err(SpecError::new(
                field,
                Rule::OutOfRange,
                format!(
                    "a pattern may be at most {MAX_PATTERN_BYTES} bytes, this one is {}",
                    self.text.len()
                ),
            ));
        }
        Ok(())
    }

    /// Compiles the pattern; `field` names it in the error.
    pub(crate) fn compile(&self, field: &str) -> Result<CompiledPattern, SpecError> {
        self.check_length(field)?;
        let key = (self.text.len() <= CACHED_PATTERN_BYTES)
            .then(|| (self.text.clone(), self.regex, self.case_sensitive));
        if let Some(compiled) = key.as_ref().and_then(|key| compile_cache()?.get(key)) {
            return Ok(compiled);
        }
        if CACHE_ONLY.get() {
            return Err(SpecError::new(
                field,
                Rule::OutOfRange,
                "this pattern is not in the compile cache",
            ));
        }
        if WAIT_ENDED.with_borrow(|ended| ended.as_ref().is_some_and(CancelToken::is_cancelled)) {
            // The rule matters to no one: the wait is over.
            return Err(SpecError::new(
                field,
                Rule::OutOfRange,
                "the wait ended before this pattern was compiled",
            ));
        }
        if self.regex {
            // Validation checked it, unless the spec was made in code.
            self.check_fold_cost(field)?;
        }
        let (compiled, cacheable) = self.build(field, key.is_some())?;
        if let (Some(key), true, Some(mut cache)) = (key, cacheable, compile_cache()) {
            cache.insert(key, compiled.clone());
        }
        Ok(compiled)
    }

    /// Builds the pattern, and says whether it may be cached (only when
    /// `short`, that is short enough for a cache key).
    fn build(&self, field: &str, short: bool) -> Result<(CompiledPattern, bool), SpecError> {
        let source = if self.regex {
            self.text.clone()
        } else {
            regex::escape(&self.text)
        };
        let limit = WAIT_BYTES_LEFT.get().min(MAX_COMPILED_PATTERN_BYTES);
        let scratch_left = WAIT_SCRATCH_LEFT.get();
        let build_with = |engines| {
            build_regex(&source, !self.case_sensitive, engines, limit)
                .map_err(|message| SpecError::new(field, Rule::InvalidRegex, message))
        };
        // A short pattern is first built as a cache entry, with the small
        // scratch space an entry is accounted for; one whose program turns
        // out too big to cache is built again with room to search fast.
        let mut engines = Engines::Fast {
            lazy_dfa_bytes: if short {
                CACHED_LAZY_DFA_BYTES
            } else {
                LAZY_DFA_BYTES
            },
        };
        let mut regex = build_with(engines)?;
        let cacheable = short && regex.memory_usage() <= CACHED_PROGRAM_BYTES;
        if short && !cacheable {
            engines = Engines::Fast {
                lazy_dfa_bytes: LAZY_DFA_BYTES,
            };
            regex = build_with(engines)?;
        }
        let fitted = fit_scratch(regex, engines, scratch_left, || build_with(Engines::Lean))?;
        let regex = fitted.regex;
        // A lean program is no cache entry: other waits would search slowly.
        let cacheable = cacheable && !fitted.lean;
        WAIT_SCRATCH_LEFT.set(scratch_left - fitted.scratch);
        // Literal text too: a program's smallest size is several KiB,
        // however little its automata take (see `compiled_bytes`).
        let bytes = compiled_bytes(&regex);
        WAIT_BYTES_LEFT.set(WAIT_BYTES_LEFT.get().saturating_sub(bytes));
        WAIT_BUILT.with_borrow(|built| {
            if let Some(built) = built {
                built.bytes.fetch_add(bytes, Ordering::Relaxed);
            }
        });
        let compiled = CompiledPattern {
            regex: Arc::new(Program::new(regex)),
            spans_lines: can_match_newline(&source, !self.case_sensitive),
        };
        Ok((compiled, cacheable))
    }
}

/// The most memory one compiled pattern's program may take, in bytes: the
/// automata that search for it, or the searcher of a plain-text pattern,
/// with what the allocator and the regex's own bookkeeping add to them
/// (an estimate that errs high). Each thread searching with it adds scratch
/// space of at most about 2.25 MiB plus the program's size again. A pattern
/// over it, such as a long run of a repeated Unicode class (`\w{150}`), is
/// refused as `invalid_regex`.
///
/// Patterns compile in the wait's own time, so such a pattern ends its
/// wait with outcome `error`:
///
/// ```
/// use waitfor::{probe_fn, Engine, Observation, Outcome, Spec};
/// let spec = Spec::from_json(r#"{"until": {"matches": {"text": "\\w{150}", "regex": true}}}"#).unwrap();
/// let result = Engine::global().wait(spec, probe_fn(|_| Ok(Observation::text("x")))).unwrap();
/// assert_eq!(result.outcome, Outcome::Error);
/// assert!(result.error.unwrap().contains("4 MiB"));
/// assert_eq!(waitfor::limits::MAX_COMPILED_PATTERN_BYTES, 4 << 20);
/// ```
pub const MAX_COMPILED_PATTERN_BYTES: usize = 4 << 20;

/// The most memory the programs one wait builds may take in all (patterns
/// it shares from the compile cache are not counted): a spec of many
/// patterns, each within [`MAX_COMPILED_PATTERN_BYTES`], is refused past
/// it as `invalid_regex`, instead of holding gigabytes. Plain text counts
/// as regexes do, by what its searcher takes: about 4,000 patterns of
/// a few bytes fill it.
pub const MAX_COMPILED_WAIT_BYTES: usize = 32 << 20;

/// The most scratch space searching with one wait's fast programs may
/// take on one thread, as [`MAX_COMPILED_WAIT_BYTES`] bounds the programs:
/// the lazy DFAs that make a search fast keep up to a few MiB each.
/// Programs past it search with the PikeVM alone (slower, still linear in
/// the text), whose scratch is at most the program's size, so bounded
/// with the programs; no spec is refused for it. Without it, 400 patterns
/// such as `a[ab]{16}[^ab\n]` on 100 KB of `a`s and `b`s held 640 MiB.
/// Patterns it shares from the compile cache are not counted: the cache
/// accounts for them.
pub const MAX_WAIT_SCRATCH_BYTES: usize = 32 << 20;

/// The most patterns one spec may list in all (`until`, its `any` and
/// `all` included, and `stop`), refused past it as `out_of_range` before
/// any is checked (field `until`, or `stop` when `until` is within it):
/// every program takes at least 8 KiB, so more distinct patterns could
/// never compile within [`MAX_COMPILED_WAIT_BYTES`], and checking 200,000
/// of them took a host's thread a fifth of a second.
///
/// ```
/// let many: Vec<String> = (0..=waitfor::limits::MAX_PATTERNS).map(|i| format!("p{i}")).collect();
/// let spec = serde_json::json!({"until": {"patterns": many}});
/// let err = waitfor::Spec::from_json(&spec.to_string()).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("until", waitfor::Rule::OutOfRange));
/// ```
pub const MAX_PATTERNS: usize = 4096;

/// What a program takes beyond what [`meta::Regex::memory_usage`] reports,
/// at most: the regex's scratch pool (about 3 KiB before any search:
/// eight cache-line-sized stacks and an empty cache), its shared
/// information, and its capture groups' maps. Measured with glibc's
/// `mallinfo2` over 20,000 programs each: a literal of 8 bytes (which
/// reports 8 bytes: only its needle) takes 3.3 KiB, a small regex such as
/// `^a12$` or `s0000001\d` 6.9 KiB more than it reports.
const PROGRAM_OVERHEAD_BYTES: usize = 8 << 10;

/// What a compiled program takes on the heap, erring high: its reported
/// size, half as much again, and [`PROGRAM_OVERHEAD_BYTES`]. The reported
/// size counts the automata's states and transitions but not what the
/// allocator adds to each of their many small blocks (a case-insensitive
/// letter's two transitions, 16 bytes, take a 32-byte chunk): measured,
/// programs take up to 1.48 times their reported size plus the overhead
/// (case-insensitive text; `\w{40}`, 1.06; an alternation of 3,000
/// literals, 1.27; 60 KiB of case-insensitive text, 1.40).
pub(crate) fn compiled_bytes(regex: &meta::Regex) -> usize {
    let reported = regex.memory_usage();
    reported
        .saturating_add(reported / 2)
        .saturating_add(PROGRAM_OVERHEAD_BYTES)
}

/// The largest reported size (see [`compiled_bytes`]) a program may have
/// to take at most `limit`.
pub(crate) fn reported_limit(limit: usize) -> usize {
    limit.saturating_sub(PROGRAM_OVERHEAD_BYTES) / 3 * 2
}

thread_local! {
    /// What the wait whose patterns this thread compiles may still build
    /// (see [`within_wait_budget`]); unlimited outside one.
    static WAIT_BYTES_LEFT: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
    /// The scratch space its programs may still take (see
    /// [`MAX_WAIT_SCRATCH_BYTES`]); unlimited outside one.
    static WAIT_SCRATCH_LEFT: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// Runs `compile`, the compiling of one wait's patterns, within
/// [`MAX_COMPILED_WAIT_BYTES`] and [`MAX_WAIT_SCRATCH_BYTES`]. The pattern sets it makes share one
/// [`WaitBuilt`], which gives back what the wait's programs freed once the
/// last of them goes, if they were large together.
pub(crate) fn within_wait_budget<R>(compile: impl FnOnce() -> R) -> R {
    /// Ends the wait's budget, even when its compile panics.
    struct Ended;
    impl Drop for Ended {
        fn drop(&mut self) {
            WAIT_BYTES_LEFT.set(usize::MAX);
            WAIT_SCRATCH_LEFT.set(usize::MAX);
            // Its last holder when the compile failed (its sets are gone):
            // dropped after what it built was freed.
            WAIT_BUILT.set(None);
        }
    }
    WAIT_BYTES_LEFT.set(MAX_COMPILED_WAIT_BYTES);
    WAIT_SCRATCH_LEFT.set(MAX_WAIT_SCRATCH_BYTES);
    WAIT_BUILT.set(Some(Arc::default()));
    let _ended = Ended;
    compile()
}

thread_local! {
    /// What the wait whose patterns this thread compiles built so far (see
    /// [`within_wait_budget`]); none outside one.
    static WAIT_BUILT: std::cell::RefCell<Option<Arc<WaitBuilt>>> = const { std::cell::RefCell::new(None) };
}

/// The bytes one wait's compile built, as [`compiled_bytes`] counts them
/// (patterns shared from the compile cache are not counted), held by each
/// pattern set it made. Dropped with the last of them, that is when the
/// wait's conditions go, it gives back what they freed if they were more
/// than [`GIVE_BACK_BYTES`] together: thousands of small programs, each
/// too small to ask on its own, can hold tens of megabytes.
#[derive(Debug, Default)]
pub(crate) struct WaitBuilt {
    bytes: AtomicUsize,
}

impl WaitBuilt {
    /// The one of the wait this thread compiles, if any.
    fn current() -> Option<Arc<Self>> {
        WAIT_BUILT.with_borrow(Clone::clone)
    }
}

impl Drop for WaitBuilt {
    fn drop(&mut self) {
        if *self.bytes.get_mut() > GIVE_BACK_BYTES {
            crate::memory::give_back_freed_memory();
        }
    }
}

thread_local! {
    /// Cancelled once the wait whose patterns this thread compiles ended
    /// (see [`until_wait_ends`]).
    static WAIT_ENDED: std::cell::RefCell<Option<CancelToken>> = const { std::cell::RefCell::new(None) };
}

/// Runs `compile`, the compiling of one wait's patterns, which stops
/// before its next pattern to build once `ended` is cancelled: a wait past
/// its deadline has no use for the rest, which could take seconds and
/// tens of megabytes (60 patterns of 60 KiB) after it returned.
pub(crate) fn until_wait_ends<R>(ended: &CancelToken, compile: impl FnOnce() -> R) -> R {
    WAIT_ENDED.set(Some(ended.clone()));
    let compiled = compile();
    WAIT_ENDED.set(None);
    compiled
}

thread_local! {
    /// Set while this thread may take patterns only from the compile cache
    /// (see [`from_cache_only`]).
    static CACHE_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `compile`, the compiling of one wait's patterns, with patterns
/// taken from the compile cache only: one that is not there fails it
/// instead of being built, so it takes microseconds whatever the spec.
pub(crate) fn from_cache_only<R>(compile: impl FnOnce() -> R) -> R {
    CACHE_ONLY.set(true);
    let compiled = compile();
    CACHE_ONLY.set(false);
    compiled
}

/// The lazy DFA's cache, per search direction and searching thread, of a
/// pattern that is not kept in the compile cache.
const LAZY_DFA_BYTES: usize = 1 << 20;

/// The same for a pattern kept in the compile cache: entries keep their
/// scratch space while cached, so it is kept small; a pattern whose DFA
/// needs more falls back to slower (still linear-time) engines.
const CACHED_LAZY_DFA_BYTES: usize = 256 << 10;

/// Only patterns whose program is at most this big are cached.
const CACHED_PROGRAM_BYTES: usize = 256 << 10;

/// What the compile cache may hold in all, as [`PatternCache::entry_bytes`]
/// accounts it: at least 33 entries, each one of up to 1.9 MiB.
const CACHE_BUDGET_BYTES: usize = 64 << 20;

/// Only patterns this short are cached: the few a host reuses.
const CACHED_PATTERN_BYTES: usize = 256;

/// The regex-automata backtracker's largest visited set (its default), part
/// of a searching thread's scratch space.
const BACKTRACK_VISITED_BYTES: usize = 256 << 10;

/// The search engines a program is built with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Engines {
    /// All of them, each lazy DFA (up to three: forward, reverse, and the
    /// reverse one of an inner literal search) with a cache of
    /// `lazy_dfa_bytes`.
    Fast { lazy_dfa_bytes: usize },
    /// The PikeVM alone (and the one-pass DFA, whose scratch is small).
    Lean,
}

impl Engines {
    /// `config` with these engines.
    pub(crate) fn configure(self, config: meta::Config) -> meta::Config {
        match self {
            Self::Fast { lazy_dfa_bytes } => config.hybrid_cache_capacity(lazy_dfa_bytes),
            Self::Lean => config.hybrid(false).backtrack(false),
        }
    }
}

/// What searching with `regex`, built with `engines`, takes from its
/// wait's [`MAX_WAIT_SCRATCH_BYTES`], erring high: with fast engines, the
/// lazy DFAs' caches, the backtracker's visited set and the PikeVM's
/// scratch (unless the program only looks for literals: its cache is
/// empty, it searches with none of them). A lean program takes nothing
/// from it: its PikeVM's scratch is at most the program's reported size
/// (measured after searching: 0.86 of it for `\w{150}N`, 0.36 for
/// `a[ab]{16}[^ab\n]`), bounded with the program by
/// [`MAX_COMPILED_WAIT_BYTES`].
fn scratch_bytes(regex: &meta::Regex, engines: Engines) -> usize {
    match engines {
        Engines::Fast { .. } if regex.create_cache().memory_usage() == 0 => 0,
        Engines::Fast { lazy_dfa_bytes } => most_scratch(regex.memory_usage(), lazy_dfa_bytes),
        Engines::Lean => 0,
    }
}

/// A program whose search scratch fits a budget (see [`fit_scratch`]).
pub(crate) struct Fitted {
    pub regex: meta::Regex,
    /// What it takes from the budget, as [`scratch_bytes`] counts it.
    pub scratch: usize,
    /// Whether it was built again with [`Engines::Lean`].
    pub lean: bool,
}

/// `regex`, built with `engines`, if its search scratch fits in
/// `scratch_left`; else the same pattern built lean by `build_lean`
/// (slower, still linear), which takes nothing from the budget.
pub(crate) fn fit_scratch<E>(
    regex: meta::Regex,
    engines: Engines,
    scratch_left: usize,
    build_lean: impl FnOnce() -> Result<meta::Regex, E>,
) -> Result<Fitted, E> {
    let scratch = scratch_bytes(&regex, engines);
    if scratch <= scratch_left {
        let lean = false;
        return Ok(Fitted {
            regex,
            scratch,
            lean,
        });
    }
    drop(regex);
    Ok(Fitted {
        regex: build_lean()?,
        scratch: 0,
        lean: true,
    })
}

/// The scratch space of a program of `reported` bytes (see
/// [`scratch_bytes`]) searching with every engine, each lazy DFA's cache
/// of `lazy_dfa_bytes`.
fn most_scratch(reported: usize, lazy_dfa_bytes: usize) -> usize {
    lazy_dfa_bytes
        .saturating_mul(3)
        .saturating_add(BACKTRACK_VISITED_BYTES)
        .saturating_add(reported)
}

/// Builds the regex for `source` with `engines`, or says why it cannot be.
/// Observations are lines of output: `^` and `$` match at line boundaries,
/// as in grep, not only at the ends of the whole text. Only where a match
/// is, never its groups, is searched for.
fn build_regex(
    source: &str,
    case_insensitive: bool,
    engines: Engines,
    limit: usize,
) -> Result<meta::Regex, String> {
    let too_big = || {
        if limit < MAX_COMPILED_PATTERN_BYTES {
            return format!(
                "the spec's patterns would take more than {} MiB compiled, the limit for one \
                 wait: use fewer or simpler patterns",
                MAX_COMPILED_WAIT_BYTES >> 20
            );
        }
        format!(
            "the compiled pattern would take more than {} MiB, the limit for one pattern: \
             use a shorter or simpler pattern (large repetitions of Unicode classes such as \
             \\w{{150}} are the usual cause)",
            MAX_COMPILED_PATTERN_BYTES >> 20
        )
    };
    let regex = meta::Builder::new()
        .configure(
            engines.configure(
                meta::Config::new()
                    .which_captures(WhichCaptures::Implicit)
                    .nfa_size_limit(Some(reported_limit(limit))),
            ),
        )
        .syntax(
            syntax::Config::new()
                .multi_line(true)
                .case_insensitive(case_insensitive),
        )
        .build(source)
        .map_err(|e| match e.size_limit() {
            Some(_) => {
                // Megabytes were built, then freed, before the limit hit.
                crate::memory::give_back_freed_memory();
                too_big()
            }
            None => format!(
                "not a valid regular expression: {}",
                one_line(&e.syntax_error().map_or(e.to_string(), |s| s.to_string()))
            ),
        })?;
    // The size limit holds for each automaton; this one for all together,
    // and for plain text, which builds no automaton.
    if compiled_bytes(&regex) > limit {
        drop(regex);
        crate::memory::give_back_freed_memory();
        return Err(too_big());
    }
    Ok(regex)
}

/// Patterns compiled lately, by text and flags: hosts start many waits on
/// the same few patterns, and compiling one costs far more than a wait's
/// whole start otherwise. Waits on one pattern share its regex, scratch
/// space included (see [`CompiledPattern::regex`]).
///
/// Shared by every engine of the process that made it. A forked child
/// compiles without it: a parent's thread may have held its lock at the
/// fork, and then holds it in the child for good.
static COMPILED: LazyLock<(u32, Mutex<PatternCache>)> =
    LazyLock::new(|| (std::process::id(), Mutex::default()));

/// The compile cache, unless this is a forked child of its process.
fn compile_cache() -> Option<MutexGuard<'static, PatternCache>> {
    let (owner, cache) = &*COMPILED;
    (*owner == std::process::id()).then(|| cache.lock())
}

/// A pattern's text, whether it is a regex, and whether case matters.
type CacheKey = (String, bool, bool);

/// Compiled patterns by key, bounded by the bytes they are accounted for.
#[derive(Default)]
struct PatternCache {
    entries: HashMap<CacheKey, CompiledPattern>,
    bytes: usize,
}

impl PatternCache {
    fn get(&self, key: &CacheKey) -> Option<CompiledPattern> {
        self.entries.get(key).cloned()
    }

    /// Adds an entry; the cache starts afresh when it would go over budget.
    fn insert(&mut self, key: CacheKey, compiled: CompiledPattern) {
        let bytes = Self::entry_bytes(&key, &compiled);
        if self.bytes + bytes > CACHE_BUDGET_BYTES {
            self.entries.clear();
            self.bytes = 0;
        }
        if let Some(old) = self.entries.insert(key.clone(), compiled) {
            // Two threads compiled the same pattern at once.
            self.bytes -= Self::entry_bytes(&key, &old);
        }
        self.bytes += bytes;
    }

    /// What an entry may keep: its key, its program, and the scratch space
    /// of one searching thread with every engine (see [`most_scratch`]),
    /// counted even for a literal, which searches with none: its program
    /// takes a few KiB, and thousands of them would stay for good.
    fn entry_bytes(key: &CacheKey, compiled: &CompiledPattern) -> usize {
        let scratch = most_scratch(compiled.regex.memory_usage(), CACHED_LAZY_DFA_BYTES);
        key.0.len() + compiled_bytes(&compiled.regex) + scratch
    }

    /// The bytes accounted for, computed afresh from the entries.
    #[cfg(test)]
    fn accounted_bytes(&self) -> usize {
        self.entries
            .iter()
            .map(|(key, compiled)| Self::entry_bytes(key, compiled))
            .sum()
    }
}

/// Parses `text` (no translation) and looks up each Unicode class it
/// names, each distinct name once and on its own (no case folding, no set
/// operation), so the lookups take microseconds in all.
pub(crate) fn check_syntax(text: &str) -> Result<(), String> {
    use regex_syntax::ast::{self, Visitor};

    /// The distinct Unicode classes a pattern names, as patterns of their own.
    #[derive(Default)]
    struct UnicodeClasses(std::collections::BTreeSet<String>);

    impl UnicodeClasses {
        fn add(&mut self, class: &ast::ClassUnicode) {
            let name = match &class.kind {
                ast::ClassUnicodeKind::OneLetter(letter) => letter.to_string(),
                ast::ClassUnicodeKind::Named(name) => name.clone(),
                ast::ClassUnicodeKind::NamedValue { name, value, .. } => format!("{name}={value}"),
            };
            self.0.insert(format!("\\p{{{name}}}"));
        }
    }

    impl Visitor for UnicodeClasses {
        type Output = Self;
        type Err = std::convert::Infallible;
        fn finish(self) -> Result<Self, Self::Err> {
            Ok(self)
        }
        fn visit_pre(&mut self, ast: &ast::Ast) -> Result<(), Self::Err> {
            if let ast::Ast::ClassUnicode(class) = ast {
                self.add(class);
            }
            Ok(())
        }
        fn visit_class_set_item_pre(&mut self, item: &ast::ClassSetItem) -> Result<(), Self::Err> {
            if let ast::ClassSetItem::Unicode(class) = item {
                self.add(class);
            }
            Ok(())
        }
    }

    let parsed = ast::parse::Parser::new()
        .parse(text)
        .map_err(|e| e.to_string())?;
    let Ok(classes) = ast::visit(&parsed, UnicodeClasses::default());
    for class in &classes.0 {
        regex_syntax::Parser::new()
            .parse(class)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn invalid_regex(field: &str, error: &dyn std::fmt::Display) -> SpecError {
    SpecError::new(
        field,
        Rule::InvalidRegex,
        format!(
            "not a valid regular expression: {}",
            one_line(&error.to_string())
        ),
    )
}

pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A pattern ready to search with.
#[derive(Debug, Clone)]
pub(crate) struct CompiledPattern {
    /// Shared, not cloned: a cloned `Regex` gets a scratch pool of its own,
    /// whose caches (kilobytes each) every wait would build at its first
    /// scan and free at its end; shared, the waits scanned on the
    /// scheduler thread use one (its owner's fast path).
    pub regex: Arc<Program>,
    /// Whether a match can contain a newline, so incremental scanning must
    /// look back further than the start of the line holding the new bytes.
    pub spans_lines: bool,
}

/// A compiled regex. A large one gives the memory it freed back to the
/// system when it goes: glibc keeps what threads free in their arenas for
/// reuse, so megabytes of automata freed by a wait that ended would stay
/// in the process's resident size for good.
#[derive(Debug)]
pub(crate) struct Program {
    regex: meta::Regex,
    /// Dropped after `regex` (fields drop in order): gives back what it freed.
    _give_back: GiveBack,
}

/// Programs bigger than this give their memory back when dropped: those
/// too big for the compile cache, used by one wait at a time.
const GIVE_BACK_BYTES: usize = CACHED_PROGRAM_BYTES;

impl Program {
    fn new(regex: meta::Regex) -> Self {
        let large = compiled_bytes(&regex) > GIVE_BACK_BYTES;
        Self {
            regex,
            _give_back: GiveBack(large),
        }
    }
}

impl std::ops::Deref for Program {
    type Target = meta::Regex;
    fn deref(&self) -> &meta::Regex {
        &self.regex
    }
}

#[derive(Debug)]
struct GiveBack(bool);

impl Drop for GiveBack {
    fn drop(&mut self) {
        if self.0 {
            crate::memory::give_back_freed_memory();
        }
    }
}

/// Whether any match of the regex `source` could include a `\n`.
fn can_match_newline(source: &str, case_insensitive: bool) -> bool {
    let parsed = regex_syntax::ParserBuilder::new()
        .case_insensitive(case_insensitive)
        .build()
        .parse(source);
    match parsed {
        Ok(hir) => hir_has_newline(&hir),
        Err(_) => true,
    }
}

fn hir_has_newline(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Literal(lit) => lit.0.contains(&b'\n'),
        HirKind::Class(Class::Unicode(class)) => class
            .ranges()
            .iter()
            .any(|r| r.start() <= '\n' && '\n' <= r.end()),
        HirKind::Class(Class::Bytes(class)) => class
            .ranges()
            .iter()
            .any(|r| r.start() <= b'\n' && b'\n' <= r.end()),
        HirKind::Repetition(rep) => hir_has_newline(&rep.sub),
        HirKind::Capture(cap) => hir_has_newline(&cap.sub),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().any(hir_has_newline),
        HirKind::Empty | HirKind::Look(_) => false,
    }
}

/// An ordered list of patterns; a hit reports the lowest index that matched.
#[derive(Debug, Clone, Default)]
pub(crate) struct PatternSet {
    patterns: Vec<CompiledPattern>,
    /// What the wait that compiled the set built; dropped after `patterns`
    /// (fields drop in order), to give back what they freed.
    _built: Option<Arc<WaitBuilt>>,
}

/// Where a pattern of a set matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PatternHit {
    /// Index of the pattern in its list.
    pub index: usize,
    /// Byte range of the match in the searched text.
    pub start: usize,
    pub end: usize,
}

impl PatternSet {
    pub fn compile(patterns: &[Pattern], field: &str) -> Result<Self, SpecError> {
        let patterns = patterns
            .iter()
            .enumerate()
            .map(|(i, p)| p.compile(&format!("{field}[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            patterns,
            _built: WaitBuilt::current(),
        })
    }

    pub fn from_one(pattern: CompiledPattern) -> Self {
        Self {
            patterns: vec![pattern],
            _built: WaitBuilt::current(),
        }
    }

    /// What its programs report taking (see [`compiled_bytes`]).
    pub fn program_bytes(&self) -> usize {
        self.patterns.iter().map(|p| p.regex.memory_usage()).sum()
    }

    pub fn spans_lines(&self) -> bool {
        self.patterns.iter().any(|p| p.spans_lines)
    }

    /// The lowest-indexed pattern with a match starting at or after `from`.
    pub fn first_hit(&self, text: &str, from: usize) -> Option<PatternHit> {
        self.patterns.iter().enumerate().find_map(|(index, p)| {
            p.regex
                .find(Input::new(text).range(from..))
                .map(|m| PatternHit {
                    index,
                    start: m.start(),
                    end: m.end(),
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_patterns_escape_regex_syntax() {
        let set = PatternSet::compile(&[Pattern::literal("a.b (x)")], "p").unwrap();
        assert!(set.first_hit("a.b (x)", 0).is_some());
        assert!(set.first_hit("axb (x)", 0).is_none());
    }

    #[test]
    fn case_insensitive_matches_other_case() {
        let set =
            PatternSet::compile(&[Pattern::literal("Ready").case_insensitive()], "p").unwrap();
        assert_eq!(set.first_hit("all READY now", 0).unwrap().start, 4);
    }

    #[test]
    fn lowest_index_wins_within_a_set() {
        let set =
            PatternSet::compile(&[Pattern::literal("b"), Pattern::literal("a")], "p").unwrap();
        assert_eq!(set.first_hit("a b", 0).unwrap().index, 0);
    }

    #[test]
    fn the_compile_cache_keeps_text_and_flags_apart() {
        // One text under every flag, each compiled twice (the second time
        // from the cache): each keeps its own meaning.
        let text = "A.c";
        for _ in 0..2 {
            let hits = |p: Pattern| {
                let set = PatternSet::compile(&[p], "p").unwrap();
                ["A.c", "Abc", "a.c"].map(|t| set.first_hit(t, 0).is_some())
            };
            assert_eq!(hits(Pattern::literal(text)), [true, false, false]);
            assert_eq!(hits(Pattern::regex(text)), [true, true, false]);
            assert_eq!(
                hits(Pattern::literal(text).case_insensitive()),
                [true, false, true]
            );
            assert_eq!(
                hits(Pattern::regex(text).case_insensitive()),
                [true, true, true]
            );
        }
        // A bad pattern is refused every time, naming its own field.
        for field in ["until", "stop[0]"] {
            let err = PatternSet::compile(&[Pattern::regex("(")], field).unwrap_err();
            assert_eq!(err.rule, Rule::InvalidRegex);
        }
    }

    #[test]
    fn waits_on_one_pattern_share_its_regex() {
        // Shared, not cloned: one scratch pool for every wait on it.
        let compiled = || Pattern::literal("shared ready").compile("p").unwrap().regex;
        assert!(Arc::ptr_eq(&compiled(), &compiled()));
        let other = Pattern::literal("shared ready").case_insensitive();
        assert!(!Arc::ptr_eq(
            &compiled(),
            &other.compile("p").unwrap().regex
        ));
    }

    #[test]
    #[cfg(unix)]
    fn a_forked_child_compiles_without_the_cache_its_parent_held() {
        let held = compile_cache().unwrap();
        let compiled = crate::fork::in_forked_child(std::time::Duration::from_secs(20), || {
            Pattern::literal("compiled in a child").compile("p").is_ok()
        });
        drop(held);
        assert!(compiled, "the child's compile waited for the cache");
    }

    #[test]
    fn the_patterns_one_wait_builds_stay_within_its_budget() {
        // Each within the limit for one pattern, together far over the
        // limit for one wait: refused once the budget is spent.
        let patterns: Vec<Pattern> = (0..100)
            .map(|i| Pattern::regex(format!(r"\w{{40}}X{i}")))
            .collect();
        assert!(patterns[0].compile("p").is_ok());
        let err =
            within_wait_budget(|| PatternSet::compile(&patterns, "until.patterns")).unwrap_err();
        assert!(err.message.contains("limit for one wait"), "{err}");
        // Outside a wait's compile, no budget applies.
        assert!(patterns[1].compile("p").is_ok());
    }

    #[test]
    fn plain_text_counts_against_a_wait_s_budget() {
        // Thousands of short literals, whose automata report a few bytes
        // each but take kilobytes: refused as a wait's regexes are, given
        // as plain text or as regexes that are plain text.
        for regex in [false, true] {
            let patterns: Vec<Pattern> = (0..10_000)
                .map(|i| Pattern {
                    text: format!("plain budget {regex} {i:07}"),
                    regex,
                    case_sensitive: true,
                })
                .collect();
            let err = within_wait_budget(|| PatternSet::compile(&patterns, "stop")).unwrap_err();
            assert_eq!(err.rule, Rule::InvalidRegex);
            assert!(err.message.contains("limit for one wait"), "{err}");
            assert!(err.field.starts_with("stop["), "{err}");
            let refused: usize = err.field[5..err.field.len() - 1].parse().unwrap();
            // Each counted at its overhead at least, and at what a short
            // literal really takes (3.3 KiB) at most.
            assert!(refused <= MAX_COMPILED_WAIT_BYTES / PROGRAM_OVERHEAD_BYTES);
            assert!(refused >= MAX_COMPILED_WAIT_BYTES / (2 * PROGRAM_OVERHEAD_BYTES));
        }
        // A few hundred are fine.
        let few: Vec<Pattern> = (0..300)
            .map(|i| Pattern::literal(format!("plain budget few {i}")))
            .collect();
        assert!(within_wait_budget(|| PatternSet::compile(&few, "stop")).is_ok());
    }

    #[test]
    fn one_literal_is_counted_at_more_than_its_needle() {
        let compiled = Pattern::literal("counted literal").compile("p").unwrap();
        assert!(compiled.regex.memory_usage() < 64, "only its needle");
        assert!(compiled_bytes(&compiled.regex) >= PROGRAM_OVERHEAD_BYTES);
        // The per-pattern limit holds for what is counted.
        let err = Pattern::regex(r"\w{150}N").compile("p").unwrap_err();
        assert!(err.message.contains("4 MiB"), "{err}");
        assert_eq!(reported_limit(PROGRAM_OVERHEAD_BYTES), 0);
        let limit = reported_limit(MAX_COMPILED_PATTERN_BYTES);
        assert!(limit + limit / 2 + PROGRAM_OVERHEAD_BYTES <= MAX_COMPILED_PATTERN_BYTES);
    }

    #[test]
    fn a_wait_s_many_small_programs_give_their_memory_back_together() {
        // None large on its own; together far over what one large program
        // is: the wait's sets ask for a give-back once, when the last goes.
        let compile = |name: &str, count: usize| {
            let patterns: Vec<Pattern> = (0..count)
                .map(|i| Pattern::literal(format!("give back {name} {i}")))
                .collect();
            within_wait_budget(|| {
                let until = PatternSet::from_one(patterns[0].compile("until.matches")?);
                let stop = PatternSet::compile(&patterns[1..], "stop")?;
                Ok::<_, SpecError>((until, stop))
            })
            .unwrap()
        };
        let asked = || crate::memory::GIVE_BACKS_ASKED.get();
        let before = asked();
        let (until, stop) = compile("many", 200);
        assert!(stop.patterns.iter().all(|p| !p.regex._give_back.0));
        drop(stop);
        assert_eq!(asked(), before, "the until set still holds them");
        drop(until);
        assert_eq!(asked(), before + 1);
        // A few small ones ask for nothing.
        let (until, stop) = compile("few", 10);
        drop((until, stop));
        assert_eq!(asked(), before + 1);
        // Refused past the budget: what was built is given back.
        let patterns: Vec<Pattern> = (0..10_000)
            .map(|i| Pattern::literal(format!("give back refused {i}")))
            .collect();
        within_wait_budget(|| PatternSet::compile(&patterns, "stop")).unwrap_err();
        assert!(asked() > before + 1);
    }

    #[test]
    fn a_wait_that_ended_compiles_no_more_patterns() {
        let ended = CancelToken::new();
        let first = Pattern::regex(r"first of an ended wait \d+");
        let second = Pattern::regex(r"second of an ended wait \d+");
        let (first_compiled, second_compiled) = until_wait_ends(&ended, || {
            let compiled = first.compile("stop[0]");
            ended.cancel();
            (compiled, second.compile("stop[1]"))
        });
        assert!(first_compiled.is_ok());
        let err = second_compiled.unwrap_err();
        assert!(err.message.contains("wait ended"), "{err}");
        // Outside a wait's compile, nothing stops it.
        assert!(second.compile("p").is_ok());
    }

    #[test]
    fn the_compile_cache_stays_within_its_budget() {
        // Programs from a few bytes to hundreds of KiB, all short enough to
        // be cache candidates; together far over the budget if all were kept.
        // A cache of its own: the shared one serves the other tests.
        let mut cache = PatternCache::default();
        for i in 0..200 {
            let pattern = Pattern::regex(format!(r"\w{{{}}}N{i}", i % 12));
            let (compiled, cacheable) = pattern.build("p", true).unwrap();
            if cacheable {
                cache.insert((pattern.text, true, true), compiled);
            }
            assert!(cache.accounted_bytes() <= CACHE_BUDGET_BYTES);
            assert_eq!(cache.accounted_bytes(), cache.bytes);
        }
        assert!(!cache.entries.is_empty());
    }

    #[test]
    fn one_pattern_has_a_memory_limit() {
        let err = Pattern::regex(r"\w{150}N")
            .compile("until.matches")
            .unwrap_err();
        assert_eq!(err.rule, Rule::InvalidRegex);
        assert!(err.message.contains("4 MiB"), "{}", err.message);
        let fits = Pattern::regex(r"\w{40}N").compile("p").unwrap();
        assert!(fits.regex.memory_usage() <= MAX_COMPILED_PATTERN_BYTES);
    }

    #[test]
    fn a_cached_pattern_searches_within_its_accounted_scratch() {
        // A small program whose DFA has many states: searched over text that
        // visits them, its scratch space stays within what its entry counts.
        let text = "(a|b)*a(a|b){14}c";
        let (compiled, cacheable) = Pattern::regex(text).build("p", true).unwrap();
        assert!(cacheable);
        let key = (text.to_string(), true, true);
        let mut state = 1u32;
        let haystack: String = (0..200_000)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                if state >> 31 == 0 {
                    'a'
                } else {
                    'b'
                }
            })
            .collect();
        let mut scratch = compiled.regex.create_cache();
        for from in (0..haystack.len()).step_by(10_000) {
            let input = Input::new(&haystack).range(from..);
            compiled.regex.search_with(&mut scratch, &input);
        }
        let program = compiled.regex.memory_usage();
        let scratch_account = PatternCache::entry_bytes(&key, &compiled) - text.len() - program;
        assert!(scratch.memory_usage() <= scratch_account);
    }

    #[test]
    fn newline_detection() {
        assert!(!can_match_newline("ready", false));
        assert!(!can_match_newline("a.b", false));
        assert!(can_match_newline(r"a\sb", false));
        assert!(can_match_newline(r"(?s)a.b", false));
        assert!(can_match_newline(r"a[^x]b", false));
        assert!(can_match_newline("a\nb", false));
    }

    #[test]
    fn bad_patterns_name_the_field() {
        let err =
            PatternSet::compile(&[Pattern::regex("ok"), Pattern::regex("(")], "stop").unwrap_err();
        assert_eq!(err.field, "stop[1]");
        assert_eq!(err.rule, Rule::InvalidRegex);
        assert!(err.message.contains("unclosed group"), "{}", err.message);
        let err = Pattern::literal("").compile("until.matches").unwrap_err();
        assert_eq!(err.rule, Rule::Empty);
    }
}
