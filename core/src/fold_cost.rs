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
/// assert_eq!(waitfor::MAX_FOLDED_CHARS, 8_000_000);
/// ```
pub const MAX_FOLDED_CHARS: usize = 8_000_000;

/// Every Unicode scalar value's count: what a negated class spans at most.
const ALL_CHARS: usize = 0x11_0000 - 0x800;

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
         [^\\W\\d], repeated, are the usual cause; a repetition such as {{50}} is free)",
        chars as f64 / 1e6,
        MAX_FOLDED_CHARS / 1_000_000
    ))
}

/// Counts the characters folded in patterns, looking up each Unicode or
/// Perl class's size once however often they name it.
#[derive(Default)]
pub(crate) struct FoldCounter {
    /// Characters in each class, by its text.
    sizes: HashMap<String, usize>,
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
    sizes: &'a mut HashMap<String, usize>,
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
    /// (characters folded within, characters spanned) of a class set: a
    /// set operation folds both its sides first; a bracketed class, what
    /// it holds.
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
                let span = u32::from(range.end.c).saturating_sub(u32::from(range.start.c));
                (0, span as usize + 1)
            }
            ClassSetItem::Ascii(_) => (0, 128),
            ClassSetItem::Unicode(class) => {
                let spans = self.unicode(class);
                (spans, if class.negated { ALL_CHARS } else { spans })
            }
            ClassSetItem::Perl(class) if class.negated => (0, ALL_CHARS),
            ClassSetItem::Perl(class) => {
                let name = match class.kind {
                    ast::ClassPerlKind::Digit => r"\d",
                    ast::ClassPerlKind::Space => r"\s",
                    ast::ClassPerlKind::Word => r"\w",
                };
                (0, self.size(name))
            }
            ClassSetItem::Bracketed(class) => {
                let (folded, spans) = self.set(&class.kind);
                let folded = folded.saturating_add(spans);
                (folded, if class.negated { ALL_CHARS } else { spans })
            }
            ClassSetItem::Union(union) => union.items.iter().fold((0, 0), |(f, s), item| {
                let (folded, spans) = self.item(item);
                (
                    f.saturating_add(folded),
                    s.saturating_add(spans).min(ALL_CHARS),
                )
            }),
        }
    }

    /// What a Unicode class spans before it is negated: it is folded first.
    fn unicode(&mut self, class: &ast::ClassUnicode) -> usize {
        let name = match &class.kind {
            ast::ClassUnicodeKind::OneLetter(letter) => letter.to_string(),
            ast::ClassUnicodeKind::Named(name) => name.clone(),
            ast::ClassUnicodeKind::NamedValue { name, value, .. } => format!("{name}={value}"),
        };
        self.size(&format!("\\p{{{name}}}"))
    }

    /// The characters in the class `text` names, looked up once; a class
    /// that does not resolve (its pattern's syntax check says so) as all.
    fn size(&mut self, text: &str) -> usize {
        if let Some(&size) = self.sizes.get(text) {
            return size;
        }
        let size = match regex_syntax::Parser::new()
            .parse(text)
            .map(|h| h.into_kind())
        {
            Ok(regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(class))) => {
                class
                    .ranges()
                    .iter()
                    .map(|r| (u32::from(r.end()) - u32::from(r.start())) as usize + 1)
                    .sum()
            }
            _ => ALL_CHARS,
        };
        self.sizes.insert(text.to_string(), size);
        size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_case_insensitive_patterns_pass() {
        for text in [
            r"(?i)error: [a-z]+ at line \d+",
            r"\w+[^\n]*done",
            r"[\p{L}\p{N}_-]+",
            r"(?i)[^\W\d]+ (\P{L}){50}",
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
        assert!(check(&r"[^\W\d]".repeat(8), true).is_err());
        assert!(check(&r"[[^a]b]".repeat(8), true).is_err());
        assert!(check(&r"[\p{Any}--\p{L}]".repeat(4), true).is_err());
    }

    #[test]
    fn what_does_not_parse_is_left_to_the_syntax_check() {
        assert_eq!(check(r"(\p{Any}", true), Ok(()));
        assert_eq!(check(r"\p{NoSuchClass}", true), Ok(()));
    }
}
