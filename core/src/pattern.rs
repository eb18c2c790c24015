//! Patterns: literal text or a regular expression, case-sensitive or not.

use crate::error::{Rule, SpecError};
use crate::sync::Mutex;
use regex::{Regex, RegexBuilder};
use regex_syntax::hir::{Class, Hir, HirKind};
use std::collections::HashMap;
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

    /// Checks what [`Pattern::compile`] would but the size of the compiled
    /// regex: its length and its syntax. Parsing takes time linear in the
    /// text (at most [`MAX_PATTERN_BYTES`]), where compiling can take
    /// seconds, so a host's thread may check and a wait's time compile.
    pub(crate) fn check(&self, field: &str) -> Result<(), SpecError> {
        self.check_length(field)?;
        if self.regex {
            regex_syntax::ast::parse::ParserBuilder::new()
                .build()
                .parse(&self.text)
                .map_err(|e| invalid_regex(field, &e))?;
        }
        Ok(())
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
        if let Some(compiled) = key
            .as_ref()
            .and_then(|key| COMPILED.lock().get(key).cloned())
        {
            return Ok(compiled);
        }
        let source = if self.regex {
            self.text.clone()
        } else {
            regex::escape(&self.text)
        };
        // Observations are lines of output: `^` and `$` match at line
        // boundaries, as in grep, not only at the ends of the whole text.
        let regex = RegexBuilder::new(&source)
            .multi_line(true)
            .case_insensitive(!self.case_sensitive)
            .size_limit(16 * 1024 * 1024)
            .build()
            .map_err(|e| invalid_regex(field, &e))?;
        let spans_lines = can_match_newline(&source, !self.case_sensitive);
        let compiled = CompiledPattern {
            regex: Arc::new(regex),
            spans_lines,
        };
        if let Some(key) = key {
            let mut cache = COMPILED.lock();
            if cache.len() >= COMPILED_KEPT {
                cache.clear();
            }
            cache.insert(key, compiled.clone());
        }
        Ok(compiled)
    }
}

/// Patterns compiled lately, by text and flags: hosts start many waits on
/// the same few patterns, and compiling one costs far more than a wait's
/// whole start otherwise. Waits on one pattern share its regex, scratch
/// space included (see [`CompiledPattern::regex`]).
static COMPILED: LazyLock<Mutex<HashMap<CacheKey, CompiledPattern>>> =
    LazyLock::new(Default::default);

/// A pattern's text, whether it is a regex, and whether case matters.
type CacheKey = (String, bool, bool);

/// Compiled patterns kept at most (the cache starts afresh when full).
const COMPILED_KEPT: usize = 1024;

/// Only patterns this short are cached: the few a host reuses, never a
/// long one whose compiled form could be large.
const CACHED_PATTERN_BYTES: usize = 256;

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

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A pattern ready to search with.
#[derive(Debug, Clone)]
pub(crate) struct CompiledPattern {
    /// Shared, not cloned: a cloned `Regex` gets a scratch pool of its own,
    /// whose caches (kilobytes each) every wait would build at its first
    /// scan and free at its end; shared, the waits scanned on the
    /// scheduler thread use one (its owner's fast path).
    pub regex: Arc<Regex>,
    /// Whether a match can contain a newline, so incremental scanning must
    /// look back further than the start of the line holding the new bytes.
    pub spans_lines: bool,
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
        Ok(Self { patterns })
    }

    pub fn from_one(pattern: CompiledPattern) -> Self {
        Self {
            patterns: vec![pattern],
        }
    }

    pub fn spans_lines(&self) -> bool {
        self.patterns.iter().any(|p| p.spans_lines)
    }

    /// The lowest-indexed pattern with a match starting at or after `from`.
    pub fn first_hit(&self, text: &str, from: usize) -> Option<PatternHit> {
        self.patterns.iter().enumerate().find_map(|(index, p)| {
            p.regex.find_at(text, from).map(|m| PatternHit {
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
        let err = Pattern::literal("").compile("until.matches").unwrap_err();
        assert_eq!(err.rule, Rule::Empty);
    }
}
