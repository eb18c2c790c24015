//! What case folding a pattern's classes costs, bounded before it compiles.
//!
//! Ignoring case, the regex parser folds each character class it
//! translates one character at a time over the class's ranges: `(?i)\p{Any}`
//! takes about 10 ms, and 64 KiB of them a minute of one core, which no
//! wait may spend (the compile runs on, past its wait's deadline, as no
//! compile can be stopped midway). This counts, from the parsed pattern
//! and in time linear in it, an upper bound on the characters folded; a
//! pattern over [`MAX_FOLDED_CHARS`] is refused before any compile.

use regex_syntax::ast::{self, Ast, ClassSet, ClassSetItem, Visitor};
use std::collections::HashMap;

/// The most characters the classes of one pattern may span together when
/// it ignores case: about 80 ms of folding. `(?i)\p{Any}` spans 1.1
/// million, `(?i)[^\W\d]` as much (a negated class inside one spans all
/// it leaves out), `(?i)[a-z]+` and `(?i)\w+` none worth counting.
///
/// ```
/// assert_eq!(waitfor::limits::MAX_FOLDED_CHARS, 8_000_000);
/// ```
pub const MAX_FOLDED_CHARS: usize = 8_000_000;

/// Every Unicode scalar value's count: what a negated class spans at most.
const ALL_CHARS: usize = 0x11_0000 - 0x800;

/// The first and last characters simple case folding maps (`A`, and
/// U+1E943, the last Adlam letter): folding goes one character at a time
/// through each range of a class that holds one of them, and skips the
/// others (`\W`'s range up to U+10FFFF starts past them).
const FOLDING: std::ops::RangeInclusive<u32> = 0x41..=0x1_E943;

/// The characters folding a class with these ranges goes through.
fn folded_in(ranges: impl Iterator<Item = (u32, u32)>) -> usize {
    ranges
        .filter(|&(start, end)| start <= *FOLDING.end() && end >= *FOLDING.start())
        .map(|(start, end)| (end - start) as usize + 1)
        .sum()
}

/// Refuses `text` when, ignoring case (`case_insensitive`, or an `i` flag
/// anywhere in it), folding its classes would span more than
/// [`MAX_FOLDED_CHARS`]. A pattern that does not parse passes: its syntax
/// is another check's.
pub(crate) fn check(text: &str, case_insensitive: bool) -> Result<(), String> {
    within_limit(FoldCounter::default().count(text, case_insensitive))
}

/// Refuses `chars` folded characters over [`MAX_FOLDED_CHARS`].
pub(crate) fn within_limit(chars: usize) -> Result<(), String> {
    if chars <= MAX_FOLDED_CHARS {
        return Ok(());
    }
    Err(format!(
        "ignoring case, its classes would take too long to compile: they span about {:.1} \
         million characters, the limit is {} million (large classes such as \\p{{Any}} or \
         [\\s\\S], repeated, are the usual cause: (?s:.) matches any character and costs \
         nothing; a repetition such as {{50}} is free)",
        chars as f64 / 1e6,
        MAX_FOLDED_CHARS / 1_000_000
    ))
}

/// Counts the characters folded in patterns, looking up each Unicode or
/// Perl class's size once however often they name it.
#[derive(Default)]
pub(crate) struct FoldCounter {
    /// What folding each class and its complement goes through, by its
    /// text.
    sizes: HashMap<String, (usize, usize)>,
}

impl FoldCounter {
    /// The characters folding `text`'s classes spans: none unless it
    /// ignores case (`case_insensitive`, or an `i` flag anywhere in it) and
    /// parses.
    pub(crate) fn count(&mut self, text: &str, case_insensitive: bool) -> usize {
        let Ok(parsed) = ast::parse::Parser::new().parse(text) else {
            return 0;
        };
        let visit = FoldCost {
            chars: 0,
            case_flag: false,
            sizes: &mut self.sizes,
        };
        let Ok(counted) = ast::visit(&parsed, visit);
        if case_insensitive || counted.case_flag {
            counted.chars
        } else {
            0
        }
    }
}

/// The characters folded, counted over one pattern's classes.
struct FoldCost<'a> {
    chars: usize,
    /// Whether an `i` flag occurs (whether it is turned on or off).
    case_flag: bool,
    sizes: &'a mut HashMap<String, (usize, usize)>,
}

impl Visitor for FoldCost<'_> {
    type Output = Self;
    type Err = std::convert::Infallible;

    fn finish(self) -> Result<Self, Self::Err> {
        Ok(self)
    }

    fn visit_pre(&mut self, ast: &Ast) -> Result<(), Self::Err> {
        let flags = match ast {
            Ast::Flags(set) => Some(&set.flags),
            Ast::Group(group) => match &group.kind {
                ast::GroupKind::NonCapturing(flags) => Some(flags),
                _ => None,
            },
            _ => None,
        };
        if flags.is_some_and(|f| f.flag_state(ast::Flag::CaseInsensitive).is_some()) {
            self.case_flag = true;
        }
        // Only the outermost classes are nodes; what they hold is counted
        // through them.
        let folded = match ast {
            Ast::ClassUnicode(class) => self.unicode(class),
            Ast::ClassBracketed(class) => {
                let (folded, spans) = self.set(&class.kind);
                folded.saturating_add(spans)
            }
            _ => 0,
        };
        self.chars = self.chars.saturating_add(folded);
        Ok(())
    }
}

impl FoldCost<'_> {
    /// (characters folded within, characters folding it goes through) of
    /// a class set: a set operation folds both its sides first; a
    /// bracketed class, what it holds.
    fn set(&mut self, set: &ClassSet) -> (usize, usize) {
        match set {
            ClassSet::Item(item) => self.item(item),
            ClassSet::BinaryOp(op) => {
                let (lhs_folded, lhs) = self.set(&op.lhs);
                let (rhs_folded, rhs) = self.set(&op.rhs);
                let folded = [lhs_folded, rhs_folded, lhs, rhs]
                    .into_iter()
                    .fold(0, usize::saturating_add);
                (folded, lhs.saturating_add(rhs).min(ALL_CHARS))
            }
        }
    }

    fn item(&mut self, item: &ClassSetItem) -> (usize, usize) {
        match item {
            ClassSetItem::Empty(_) => (0, 0),
            ClassSetItem::Literal(_) => (0, 1),
            ClassSetItem::Range(range) => {
                let range = (u32::from(range.start.c), u32::from(range.end.c));
                (0, folded_in(std::iter::once(range)))
            }
            ClassSetItem::Ascii(_) => (0, 128),
            ClassSetItem::Unicode(class) => {
                let (plain, complement) = self.sizes(&unicode_name(class));
                (plain, if class.negated { complement } else { plain })
            }
            ClassSetItem::Perl(class) => {
                let name = match class.kind {
                    ast::ClassPerlKind::Digit => r"\d",
                    ast::ClassPerlKind::Space => r"\s",
                    ast::ClassPerlKind::Word => r"\w",
                };
                let (plain, complement) = self.sizes(name);
                (0, if class.negated { complement } else { plain })
            }
            ClassSetItem::Bracketed(class) => {
                let (folded, within) = self.set(&class.kind);
                let folded = folded.saturating_add(within);
                (folded, if class.negated { ALL_CHARS } else { within })
            }
            ClassSetItem::Union(union) => union.items.iter().fold((0, 0), |(f, s), item| {
                let (folded, within) = self.item(item);
                (
                    f.saturating_add(folded),
                    s.saturating_add(within).min(ALL_CHARS),
                )
            }),
        }
    }

    /// What folding a Unicode class goes through: it is folded before it
    /// is negated.
    fn unicode(&mut self, class: &ast::ClassUnicode) -> usize {
        self.sizes(&unicode_name(class)).0
    }

    /// What folding the class `text` names, and its complement, goes
    /// through, looked up once; a class that does not resolve (its
    /// pattern's syntax check says so) as all.
    fn sizes(&mut self, text: &str) -> (usize, usize) {
        if let Some(&sizes) = self.sizes.get(text) {
            return sizes;
        }
        let sizes = match regex_syntax::Parser::new()
            .parse(text)
            .map(|h| h.into_kind())
        {
            Ok(regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(class))) => {
                let ranges: Vec<(u32, u32)> = class
                    .ranges()
                    .iter()
                    .map(|r| (u32::from(r.start()), u32::from(r.end())))
                    .collect();
                (folded_in(ranges.iter().copied()), folded_in(gaps(&ranges)))
            }
            _ => (ALL_CHARS, ALL_CHARS),
        };
        self.sizes.insert(text.to_string(), sizes);
        sizes
    }
}

/// The class's text as a pattern of its own, negation aside.
fn unicode_name(class: &ast::ClassUnicode) -> String {
    let name = match &class.kind {
        ast::ClassUnicodeKind::OneLetter(letter) => letter.to_string(),
        ast::ClassUnicodeKind::Named(name) => name.clone(),
        ast::ClassUnicodeKind::NamedValue { name, value, .. } => format!("{name}={value}"),
    };
    format!("\\p{{{name}}}")
}

/// The ranges between sorted `ranges`, up to U+10FFFF: their complement.
fn gaps(ranges: &[(u32, u32)]) -> impl Iterator<Item = (u32, u32)> + '_ {
    let starts = std::iter::once(0).chain(ranges.iter().map(|&(_, end)| end + 1));
    let ends = ranges
        .iter()
        .map(|&(start, _)| start.checked_sub(1))
        .chain(std::iter::once(Some(0x10_FFFF)));
    starts
        .zip(ends)
        .filter_map(|(start, end)| end.filter(|&end| end >= start).map(|end| (start, end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_case_insensitive_patterns_pass() {
        // Folding skips \W's ranges past the last cased letter.
        let letters = r"[^\W\d]+ ".repeat(16);
        for text in [
            r"(?i)error: [a-z]+ at line \d+",
            r"\w+[^\n]*done",
            r"[\p{L}\p{N}_-]+",
            r"(?i)[^\W\d]+ (\P{L}){50}",
            r"[\w.-]+@[\w.-]+",
            &letters,
        ] {
            assert_eq!(check(text, true), Ok(()), "{text}");
        }
    }

    #[test]
    fn many_large_classes_are_refused_only_when_ignoring_case() {
        let text = r"\p{Any}".repeat(8);
        let refused = check(&text, true).unwrap_err();
        assert!(refused.contains("about 8.9 million"), "{refused}");
        assert_eq!(check(&text, false), Ok(()));
        assert!(check(&format!("(?i){text}"), false).is_err());
        assert!(check(&format!("x(?i:{text})"), false).is_err());
        // Negated classes inside a class span what they leave out.
        assert!(check(&r"[\s\S]".repeat(8), true).is_err());
        assert!(check(&r"[[^a]b]".repeat(8), true).is_err());
        assert!(check(&r"[\p{Any}--\p{L}]".repeat(4), true).is_err());
    }

    #[test]
    fn what_does_not_parse_is_left_to_the_syntax_check() {
        assert_eq!(check(r"(\p{Any}", true), Ok(()));
        assert_eq!(check(r"\p{NoSuchClass}", true), Ok(()));
    }
}
