//! Conditions compiled for incremental evaluation, sample after sample.

use crate::error::SpecError;
use crate::observation::Observation;
use crate::pattern::{PatternHit, PatternSet};
use crate::result::Outcome;
use crate::spec::{Condition, JsonTest};
use std::time::Duration;

/// How far back before the new bytes a pattern that can span lines looks.
const MULTILINE_WINDOW: usize = 4096;

/// What one sample gives the conditions.
pub(crate) struct Sample<'a> {
    /// The view's text.
    pub text: &'a str,
    /// Where new content starts in `text`.
    pub new_from: usize,
    /// `text` does not continue the previous sample's text.
    pub reset: bool,
    /// How long the view has been unchanged.
    pub quiet: Duration,
    /// Anything new since entry.
    pub has_output: bool,
    /// The observation itself (structured output, exit status).
    pub observation: &'a Observation,
}

/// A condition that held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub outcome: Outcome,
    /// Index into the pattern list that hit, if a pattern list decided.
    pub index: Option<usize>,
    /// The lines holding the match.
    pub lines: Vec<String>,
}

/// A list of patterns scanned incrementally; a hit is remembered while
/// the text it was found in is still there.
#[derive(Debug, Clone)]
pub(crate) struct PatternScan {
    set: PatternSet,
    /// Whether the list has one pattern (`matches`): then no index is
    /// reported, like AURA.
    single: bool,
    hit: Option<Hit>,
}

impl PatternScan {
    pub fn new(set: PatternSet, single: bool) -> Self {
        Self {
            set,
            single,
            hit: None,
        }
    }

    /// Scans the new part of the sample's text (from the start of the line
    /// holding the first new byte, further back for multi-line patterns).
    pub fn scan(&mut self, sample: &Sample<'_>) -> Option<Hit> {
        if sample.reset {
            self.hit = None;
        }
        if self.hit.is_some() {
            return self.hit.clone();
        }
        if !sample.reset && sample.new_from >= sample.text.len() {
            return None;
        }
        let from = scan_start(sample.text, sample.new_from, self.set.spans_lines());
        let found = self.set.first_hit(sample.text, from)?;
        self.hit = Some(Hit {
            outcome: Outcome::Matched,
            index: (!self.single).then_some(found.index),
            lines: lines_of(sample.text, &found),
        });
        self.hit.clone()
    }

    /// What the programs of its patterns report taking.
    pub fn program_bytes(&self) -> usize {
        self.set.program_bytes()
    }

    /// Whether any pattern matches `text` (used for text already on screen
    /// at entry).
    pub fn matches(&self, text: &str) -> bool {
        self.set.first_hit(text, 0).is_some()
    }
}

/// Start of the line holding `new_from`, or further back for patterns that
/// can span lines; always on a character boundary.
fn scan_start(text: &str, new_from: usize, spans_lines: bool) -> usize {
    let new_from = new_from.min(text.len());
    let line_start = text[..new_from].rfind('\n').map_or(0, |i| i + 1);
    if !spans_lines {
        return line_start;
    }
    let mut start = line_start.saturating_sub(MULTILINE_WINDOW);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    start
}

/// The whole lines a match touches.
fn lines_of(text: &str, hit: &PatternHit) -> Vec<String> {
    let start = text[..hit.start].rfind('\n').map_or(0, |i| i + 1);
    let end = text[hit.end.max(hit.start)..]
        .find('\n')
        .map_or(text.len(), |i| hit.end.max(hit.start) + i);
    // A match that ends with its newline does not take in the next line.
    let end = if hit.end > hit.start && text.as_bytes()[hit.end - 1] == b'\n' {
        hit.end - 1
    } else {
        end
    };
    text[start..end.max(start)]
        .split('\n')
        .map(str::to_string)
        .collect()
}

/// A success condition ready to evaluate.
#[derive(Debug, Clone)]
pub(crate) enum CompiledCondition {
    Scan(PatternScan),
    NotMatches(PatternSet),
    QuietFor(Duration),
    AnyOutput,
    Json { pointer: String, test: JsonTest },
    ExitCode(i32),
    Any(Vec<CompiledCondition>),
    All(Vec<CompiledCondition>),
}

impl CompiledCondition {
    /// Compiles a condition; errors name fields under `field`.
    pub fn compile(condition: &Condition, field: &str) -> Result<Self, SpecError> {
        Ok(match condition {
            Condition::Matches(p) => Self::Scan(PatternScan::new(
                PatternSet::from_one(p.compile(&format!("{field}.matches"))?),
                true,
            )),
            Condition::NotMatches(p) => Self::NotMatches(PatternSet::from_one(
                p.compile(&format!("{field}.not_matches"))?,
            )),
            Condition::Patterns(list) => Self::Scan(PatternScan::new(
                PatternSet::compile(list, &format!("{field}.patterns"))?,
                false,
            )),
            Condition::QuietFor(d) => Self::QuietFor(*d),
            Condition::AnyOutput => Self::AnyOutput,
            Condition::Json { pointer, test } => Self::Json {
                pointer: pointer.clone(),
                test: test.clone(),
            },
            Condition::ExitCode(code) => Self::ExitCode(*code),
            Condition::Any(children) => Self::Any(compile_all(children, &format!("{field}.any"))?),
            Condition::All(children) => Self::All(compile_all(children, &format!("{field}.all"))?),
        })
    }

    /// What the programs of its patterns report taking.
    pub fn program_bytes(&self) -> usize {
        match self {
            Self::Scan(scan) => scan.program_bytes(),
            Self::NotMatches(set) => set.program_bytes(),
            Self::Any(children) | Self::All(children) => {
                children.iter().map(Self::program_bytes).sum()
            }
            Self::QuietFor(_) | Self::AnyOutput | Self::Json { .. } | Self::ExitCode(_) => 0,
        }
    }

    /// Evaluates one sample. Every child sees every sample, so incremental
    /// scans never skip bytes.
    pub fn evaluate(&mut self, sample: &Sample<'_>) -> Option<Hit> {
        match self {
            Self::Scan(scan) => scan.scan(sample),
            Self::NotMatches(set) => set
                .first_hit(sample.text, 0)
                .is_none()
                .then(|| plain(Outcome::Matched)),
            Self::QuietFor(window) => (sample.quiet >= *window).then(|| plain(Outcome::Settled)),
            Self::AnyOutput => sample.has_output.then(|| plain(Outcome::AnyOutput)),
            Self::Json { pointer, test } => {
                let value = sample.observation.json.as_ref()?;
                let found = value.pointer(pointer);
                let holds = match test {
                    JsonTest::Equals(expected) => found == Some(expected),
                    JsonTest::Exists(exists) => found.is_some() == *exists,
                };
                holds.then(|| plain(Outcome::Matched))
            }
            Self::ExitCode(code) => {
                (sample.observation.exit_code == Some(*code)).then(|| plain(Outcome::Matched))
            }
            Self::Any(children) => {
                let hits: Vec<Option<Hit>> =
                    children.iter_mut().map(|c| c.evaluate(sample)).collect();
                hits.into_iter().flatten().next()
            }
            Self::All(children) => {
                let hits: Vec<Option<Hit>> =
                    children.iter_mut().map(|c| c.evaluate(sample)).collect();
                if hits.iter().any(Option::is_none) {
                    return None;
                }
                let hits: Vec<Hit> = hits.into_iter().flatten().collect();
                let settled = hits.iter().all(|h| h.outcome == Outcome::Settled);
                let mut first = hits
                    .into_iter()
                    .find(|h| h.index.is_some() || !h.lines.is_empty())
                    .unwrap_or_else(|| plain(Outcome::Matched));
                first.outcome = if settled {
                    Outcome::Settled
                } else {
                    Outcome::Matched
                };
                Some(first)
            }
        }
    }

    /// Whether a pattern of this condition matches `text` (entry check).
    pub fn matches_text(&self, text: &str) -> bool {
        match self {
            Self::Scan(scan) => scan.matches(text),
            Self::Any(children) | Self::All(children) => {
                children.iter().any(|c| c.matches_text(text))
            }
            _ => false,
        }
    }
}

fn plain(outcome: Outcome) -> Hit {
    Hit {
        outcome,
        index: None,
        lines: Vec::new(),
    }
}

fn compile_all(children: &[Condition], field: &str) -> Result<Vec<CompiledCondition>, SpecError> {
    children
        .iter()
        .enumerate()
        .map(|(i, c)| CompiledCondition::compile(c, &format!("{field}[{i}]")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::Pattern;

    fn sample<'a>(text: &'a str, new_from: usize, obs: &'a Observation) -> Sample<'a> {
        Sample {
            text,
            new_from,
            reset: false,
            quiet: Duration::ZERO,
            has_output: true,
            observation: obs,
        }
    }

    #[test]
    fn scan_reports_index_and_whole_lines() {
        let obs = Observation::default();
        let mut c = CompiledCondition::compile(
            &Condition::Patterns(vec![Pattern::literal("FAIL"), Pattern::literal("done")]),
            "until",
        )
        .unwrap();
        let hit = c
            .evaluate(&sample("start\nall done now\n", 6, &obs))
            .unwrap();
        assert_eq!(hit.index, Some(1));
        assert_eq!(hit.lines, vec!["all done now"]);
    }

    #[test]
    fn scan_looks_only_at_new_lines() {
        let obs = Observation::default();
        let mut c =
            CompiledCondition::compile(&Condition::Matches(Pattern::literal("ready")), "until")
                .unwrap();
        assert!(c.evaluate(&sample("ready\nmore", 6, &obs)).is_none());
        // The line holding the new bytes is scanned from its start.
        assert!(c.evaluate(&sample("ready\nmore rea", 12, &obs)).is_none());
        assert!(c.evaluate(&sample("ready\nmore ready", 14, &obs)).is_some());
    }

    #[test]
    fn multiline_patterns_look_back() {
        let obs = Observation::default();
        let mut c =
            CompiledCondition::compile(&Condition::Matches(Pattern::regex(r"build\nok")), "until")
                .unwrap();
        assert!(c.evaluate(&sample("build\nok", 6, &obs)).is_some());
    }

    #[test]
    fn json_pointer_tests() {
        let obs = Observation::json(serde_json::json!({"status": {"phase": "Running"}, "n": null}));
        let mut eq = CompiledCondition::Json {
            pointer: "/status/phase".into(),
            test: JsonTest::Equals("Running".into()),
        };
        assert!(eq.evaluate(&sample("", 0, &obs)).is_some());
        let mut null = CompiledCondition::Json {
            pointer: "/n".into(),
            test: JsonTest::Equals(serde_json::Value::Null),
        };
        assert!(null.evaluate(&sample("", 0, &obs)).is_some());
        let mut missing = CompiledCondition::Json {
            pointer: "/status/ready".into(),
            test: JsonTest::Exists(false),
        };
        assert!(missing.evaluate(&sample("", 0, &obs)).is_some());
    }

    #[test]
    fn all_needs_every_child() {
        let obs = Observation::text("x").with_exit_code(0);
        let mut c = CompiledCondition::compile(
            &Condition::All(vec![
                Condition::ExitCode(0),
                Condition::Matches(Pattern::literal("ok")),
            ]),
            "until",
        )
        .unwrap();
        assert!(c.evaluate(&sample("x", 0, &obs)).is_none());
        let hit = c.evaluate(&sample("x ok", 0, &obs)).unwrap();
        assert_eq!(hit.lines, vec!["x ok"]);
    }
}
