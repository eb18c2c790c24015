//! parse_duration / format_duration: round trips and every rejected form.

use proptest::prelude::*;
use waitfor::duration::{format_duration, parse_duration};

#[test]
fn seed_examples() {
    assert_eq!(parse_duration("90s"), Some(90_000));
    assert_eq!(parse_duration("2m"), Some(120_000));
    assert_eq!(parse_duration("1h"), Some(3_600_000));
    assert_eq!(parse_duration("500ms"), Some(500));
    assert_eq!(parse_duration("45"), Some(45_000));
    assert_eq!(format_duration(120_000), "2m");
    assert_eq!(format_duration(90_000), "90s");
    assert_eq!(format_duration(500), "500ms");
    assert_eq!(format_duration(0), "0s");
}

#[test]
fn rejected_forms() {
    let rejected = [
        ("", "empty"),
        (" ", "whitespace only"),
        ("\t\n", "whitespace only"),
        (" 90s", "leading whitespace"),
        ("90s ", "trailing whitespace"),
        ("90 s", "space before the unit"),
        ("-5s", "negative"),
        ("-5", "negative bare"),
        ("+5s", "explicit sign"),
        ("1.5", "decimal bare"),
        ("1.5s", "decimal with unit"),
        (".5s", "decimal without integer part"),
        ("1e3", "exponent"),
        ("s", "unit without number"),
        ("ms", "unit without number"),
        ("5d", "unknown unit"),
        ("5us", "unknown unit"),
        ("5sec", "unknown unit"),
        ("5S", "upper-case unit"),
        ("5MS", "upper-case unit"),
        ("5H", "upper-case unit"),
        ("1m30s", "compound"),
        ("5ss", "doubled unit"),
        ("0x10", "hex"),
        ("１s", "non-ASCII digit"),
        ("18446744073709551616ms", "overflows u64"),
        ("18446744073709552s", "overflows once scaled to ms"),
        ("5124095576030432h", "overflows once scaled to ms"),
        (
            "99999999999999999999999999",
            "overflows while reading digits",
        ),
    ];
    for (text, why) in rejected {
        assert_eq!(parse_duration(text), None, "{text:?} ({why}) was accepted");
    }
}

#[test]
fn largest_values_still_fit() {
    assert_eq!(parse_duration("18446744073709551615ms"), Some(u64::MAX));
    assert_eq!(
        parse_duration("18446744073709551s"),
        Some(18_446_744_073_709_551_000)
    );
}

proptest! {
    #[test]
    fn format_then_parse_is_identity(ms in any::<u64>()) {
        prop_assert_eq!(parse_duration(&format_duration(ms)), Some(ms));
    }

    #[test]
    fn format_then_parse_small_range(ms in 0u64..100_000_000) {
        prop_assert_eq!(parse_duration(&format_duration(ms)), Some(ms));
    }

    #[test]
    fn format_is_shortest_unit_form(ms in 0u64..1_000_000_000_000) {
        let best = format_duration(ms);
        for (factor, unit) in [(1u64, "ms"), (1_000, "s"), (60_000, "m"), (3_600_000, "h")] {
            if ms % factor == 0 {
                let other = format!("{}{unit}", ms / factor);
                prop_assert!(best.len() <= other.len(), "{} longer than {}", best, other);
            }
        }
    }

    #[test]
    fn parse_scales_each_unit(n in 0u64..1_000_000_000, unit in 0usize..5) {
        let (suffix, factor) = [("ms", 1u64), ("s", 1_000), ("", 1_000), ("m", 60_000), ("h", 3_600_000)][unit];
        prop_assert_eq!(parse_duration(&format!("{n}{suffix}")), Some(n * factor));
    }

    #[test]
    fn anything_outside_the_grammar_is_rejected(text in "\\PC{0,12}") {
        let grammar = regex::Regex::new(r"^[0-9]+(ms|s|m|h)?$").unwrap();
        if !grammar.is_match(&text) {
            prop_assert_eq!(parse_duration(&text), None);
        }
    }
}
