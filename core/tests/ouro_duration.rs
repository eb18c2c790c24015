//! parse_duration / format_duration: round trips and every rejected form;
//! parse_millis / format_millis, the one rule every binding's durations
//! follow (fractions, negatives, NaN, infinities, the 2^53 - 1 bound).

use proptest::prelude::*;
use waitfor::duration::{
    format_duration, format_millis, not_a_number, parse_duration, parse_millis, MAX_EXACT_MS,
};
use waitfor::Rule;

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

/// The seed's `formatDuration` does not throw on a fraction: it gives the
/// nearest whole millisecond, the closest text `parseDuration` reads back,
/// a half upwards as JavaScript's `Math.round`.
#[test]
fn fractions_round_to_the_nearest_millisecond() {
    for (ms, text) in [
        (1.5, "2ms"),
        (1.4999999999999998, "1ms"),
        (0.49999999999999994, "0s"),
        (0.5, "1ms"),
        (2.5, "3ms"),
        (999.5, "1s"),
        (89_999.6, "90s"),
        (59_999.5, "1m"),
        (3_599_999.5, "1h"),
        (0.4, "0s"),
        (-0.0, "0s"),
        (-0.4, "0s"),
        (-0.5, "0s"),
        (1e-300, "0s"),
    ] {
        assert_eq!(format_millis(ms).as_deref(), Ok(text), "{ms}");
    }
}

#[test]
fn whole_numbers_format_as_format_duration_does() {
    for ms in [
        0u64,
        1,
        999,
        1_000,
        61_000,
        120_000,
        3_600_000,
        MAX_EXACT_MS,
    ] {
        assert_eq!(format_millis(ms as f64), Ok(format_duration(ms)), "{ms}");
    }
    assert_eq!(
        format_millis(MAX_EXACT_MS as f64).as_deref(),
        Ok("9007199254740991ms")
    );
}

#[test]
fn numbers_no_duration_reads_back_as_are_refused_on_one_field() {
    let refused = [
        (-0.5000000000000001, Rule::OutOfRange),
        (-1.0, Rule::OutOfRange),
        (-1e300, Rule::OutOfRange),
        (f64::NEG_INFINITY, Rule::OutOfRange),
        (f64::INFINITY, Rule::OutOfRange),
        (MAX_EXACT_MS as f64 + 1.0, Rule::OutOfRange),
        (1e300, Rule::OutOfRange),
        (f64::MAX, Rule::OutOfRange),
        (f64::NAN, Rule::WrongType),
        (-f64::NAN, Rule::WrongType),
    ];
    for (ms, rule) in refused {
        let err = format_millis(ms).unwrap_err();
        assert_eq!((err.field.as_str(), err.rule), ("duration", rule), "{ms}");
    }
    assert_eq!(
        format_millis(-1.0).unwrap_err().to_string(),
        "duration: must not be negative: no duration is below 0 ms"
    );
    assert_eq!(
        format_millis(1e20).unwrap_err().to_string(),
        "duration: must be at most 9007199254740991 ms (2^53 - 1, the longest duration every language holds exactly)"
    );
    assert_eq!(
        format_millis(f64::NAN).unwrap_err().to_string(),
        "duration: must be a number of milliseconds, not NaN"
    );
    let other = not_a_number();
    assert_eq!(
        (other.field.as_str(), other.rule),
        ("duration", Rule::WrongType)
    );
}

#[test]
fn parse_millis_reads_what_every_language_holds_exactly() {
    assert_eq!(parse_millis("9007199254740991ms"), Ok(MAX_EXACT_MS));
    assert_eq!(parse_millis("2m"), Ok(120_000));
    for text in [
        "9007199254740992ms",
        "9007199254741s",
        "18446744073709551615ms",
        "99999999999999999999999999h",
    ] {
        let err = parse_millis(text).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.rule),
            ("duration", Rule::OutOfRange),
            "{text}"
        );
    }
    for text in ["", "soon", "1.5s", "-1s", "1m30s", "90 s", "s"] {
        let err = parse_millis(text).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.rule),
            ("duration", Rule::WrongType),
            "{text:?}"
        );
    }
}

#[test]
fn a_refused_text_is_echoed_cut_short() {
    let long = "x".repeat(100_000);
    let message = parse_millis(&long).unwrap_err().to_string();
    assert!(message.len() < 200, "{message}");
    assert!(message.contains("100000 bytes in all"), "{message}");
}

proptest! {
    #[test]
    fn format_millis_reads_back_as_the_nearest_whole_millisecond(ms in 0.0f64..1e15) {
        let text = format_millis(ms).unwrap();
        let back = parse_millis(&text).unwrap() as f64;
        prop_assert!((back - ms).abs() <= 0.5, "{} gave {}", ms, text);
    }

    #[test]
    fn format_millis_of_a_whole_number_is_format_duration(ms in 0..=MAX_EXACT_MS) {
        prop_assert_eq!(format_millis(ms as f64), Ok(format_duration(ms)));
        prop_assert_eq!(parse_millis(&format_duration(ms)), Ok(ms));
    }

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
