//! Durations as agents and command lines write them: `"90s"`, `"2m"`, `"1h"`,
//! `"500ms"`, or a bare number of seconds such as `"30"`.
//!
//! The grammar is strict, so that a value always means one thing:
//!
//! ```text
//! duration = digits [ "ms" | "s" | "m" | "h" ]      (no unit: seconds)
//! digits   = one or more ASCII digits 0-9
//! ```
//!
//! - Whole numbers only: `"1.5"`, `"1.5s"` and `"1e3"` are rejected. Every
//!   duration is a whole number of milliseconds, and `"1500ms"` says 1.5 s
//!   exactly, so decimals would only add a second spelling (and rounding).
//! - Units are lower case and come straight after the digits: `"90 s"`,
//!   `"90S"`, `" 90s"` and `"90s "` are rejected (no trimming).
//! - No sign: `"-5s"` and `"+5s"` are rejected.
//! - No compound forms: `"1m30s"` is rejected.
//! - A value whose milliseconds do not fit in a `u64` is rejected.
//!
//! [`format_duration`] writes the shortest exact form that
//! [`parse_duration`] reads back, always with a unit: the largest unit that
//! divides the value (`h`, `m`, `s`, else `ms`). Zero is written `"0s"`.
//!
//! # The functions every binding exposes
//!
//! Hosts hand durations over as their own numbers: a JavaScript number, a
//! Python `int`, `float` or `timedelta`, a C `double`. So that every
//! language gives the same answer for the same value, the bindings'
//! `parseDuration` / `formatDuration` (Ouro AX's names) and their Python
//! and C counterparts are [`parse_millis`] and [`format_millis`], one rule
//! for all of them:
//!
//! - Durations go up to [`MAX_EXACT_MS`] (2^53 - 1 ms, about 285,000
//!   years), the largest whole number a JavaScript number holds exactly:
//!   what one language formats, every language reads back.
//! - A fraction is rounded to the nearest millisecond, a half upwards (as
//!   JavaScript's `Math.round` does): `1.5` is `"2ms"`, `-0.4` is `"0s"`.
//!   The Ouro AX seed promises "the shortest exact duration parseDuration
//!   reads back", and its `parseDuration` reads whole milliseconds only, so
//!   the nearest whole one is the answer rather than an error.
//! - No text reads back as a negative duration, NaN, an infinity or a value
//!   above [`MAX_EXACT_MS`]: those are refused with a [`SpecError`] on field
//!   `duration` (rule `wrong_type` for NaN and non-numbers, `out_of_range`
//!   for the others), which every binding raises as its `invalid_arguments`
//!   error.

use crate::error::{Rule, SpecError};

/// The longest duration [`parse_millis`] and [`format_millis`] take and
/// give, in milliseconds: 2^53 - 1, JavaScript's `Number.MAX_SAFE_INTEGER`,
/// the largest whole number every binding's number type holds exactly.
///
/// ```
/// use waitfor::duration::{format_millis, MAX_EXACT_MS};
/// assert_eq!(MAX_EXACT_MS, 9_007_199_254_740_991);
/// assert!(format_millis(MAX_EXACT_MS as f64).is_ok());
/// assert!(format_millis(MAX_EXACT_MS as f64 + 1.0).is_err());
/// ```
pub const MAX_EXACT_MS: u64 = (1 << 53) - 1;

/// The field every duration refusal names.
const FIELD: &str = "duration";

/// Parses a duration into milliseconds; `None` when the text is not one.
///
/// ```
/// use waitfor::duration::parse_duration;
/// assert_eq!(parse_duration("90s"), Some(90_000));
/// assert_eq!(parse_duration("2m"), Some(120_000));
/// assert_eq!(parse_duration("1h"), Some(3_600_000));
/// assert_eq!(parse_duration("500ms"), Some(500));
/// assert_eq!(parse_duration("30"), Some(30_000)); // bare number: seconds
/// assert_eq!(parse_duration("1.5s"), None);
/// assert_eq!(parse_duration("-1s"), None);
/// ```
pub fn parse_duration(text: &str) -> Option<u64> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() {
        return None;
    }
    let factor: u64 = match unit {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    let mut value: u64 = 0;
    for b in digits.bytes() {
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    value.checked_mul(factor)
}

/// Writes milliseconds as the shortest exact duration [`parse_duration`]
/// reads back: `"2m"`, `"90s"`, `"500ms"`, `"1h"`; zero is `"0s"`.
///
/// ```
/// use waitfor::duration::{format_duration, parse_duration};
/// assert_eq!(format_duration(120_000), "2m");
/// assert_eq!(format_duration(90_000), "90s");
/// assert_eq!(format_duration(500), "500ms");
/// assert_eq!(format_duration(3_600_000), "1h");
/// assert_eq!(format_duration(0), "0s");
/// assert_eq!(parse_duration(&format_duration(1_234)), Some(1_234));
/// ```
pub fn format_duration(ms: u64) -> String {
    if ms == 0 {
        return "0s".to_string();
    }
    for (factor, unit) in [(3_600_000, "h"), (60_000, "m"), (1_000, "s")] {
        if ms % factor == 0 {
            return format!("{}{unit}", ms / factor);
        }
    }
    format!("{ms}ms")
}

/// [`parse_duration`] as every binding exposes it: the milliseconds, or
/// why `text` is none (field `duration`; rule `wrong_type` when it is not
/// a duration at all, `out_of_range` when it is longer than
/// [`MAX_EXACT_MS`]).
///
/// ```
/// use waitfor::duration::parse_millis;
/// use waitfor::Rule;
/// assert_eq!(parse_millis("90s"), Ok(90_000));
/// let err = parse_millis("soon").unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("duration", Rule::WrongType));
/// assert_eq!(err.to_string(), r#"duration: "soon" is not a duration: digits, then ms, s, m or h ("90s", "2m", "500ms")"#);
/// assert_eq!(parse_millis("9007199254740992ms").unwrap_err().rule, Rule::OutOfRange);
/// ```
pub fn parse_millis(text: &str) -> Result<u64, SpecError> {
    match parse_duration(text) {
        Some(ms) if ms <= MAX_EXACT_MS => Ok(ms),
        Some(_) => Err(SpecError::new(FIELD, Rule::OutOfRange, too_long())),
        // Digits and a unit whose value overflows u64 are too long too.
        None if grammatical(text) => Err(SpecError::new(FIELD, Rule::OutOfRange, too_long())),
        None => Err(SpecError::new(
            FIELD,
            Rule::WrongType,
            format!(
                "{} is not a duration: digits, then ms, s, m or h (\"90s\", \"2m\", \"500ms\")",
                crate::error::echo(text)
            ),
        )),
    }
}

/// Writes a host's number of milliseconds (a JavaScript number, a Python
/// `float`, `int` or `timedelta`, a C `double`) as the shortest exact
/// duration [`parse_millis`] reads back, by the rule in the [module
/// documentation](self): a fraction rounds to the nearest millisecond (a
/// half upwards); NaN (`wrong_type`), a value below zero once rounded, an
/// infinity or one above [`MAX_EXACT_MS`] (`out_of_range`) are refused on
/// field `duration`.
///
/// ```
/// use waitfor::duration::format_millis;
/// use waitfor::Rule;
/// assert_eq!(format_millis(90_000.0).as_deref(), Ok("90s"));
/// assert_eq!(format_millis(1.5).as_deref(), Ok("2ms"));
/// assert_eq!(format_millis(89_999.6).as_deref(), Ok("90s"));
/// assert_eq!(format_millis(-0.4).as_deref(), Ok("0s"));
/// assert_eq!(format_millis(-1.0).unwrap_err().rule, Rule::OutOfRange);
/// assert_eq!(format_millis(f64::NAN).unwrap_err().rule, Rule::WrongType);
/// assert_eq!(format_millis(f64::INFINITY).unwrap_err().rule, Rule::OutOfRange);
/// ```
pub fn format_millis(ms: f64) -> Result<String, SpecError> {
    if ms.is_nan() {
        return Err(SpecError::new(
            FIELD,
            Rule::WrongType,
            "must be a number of milliseconds, not NaN",
        ));
    }
    let whole = round_half_up(ms);
    if whole < 0.0 {
        return Err(SpecError::new(
            FIELD,
            Rule::OutOfRange,
            "must not be negative: no duration is below 0 ms",
        ));
    }
    if whole > MAX_EXACT_MS as f64 {
        return Err(SpecError::new(FIELD, Rule::OutOfRange, too_long()));
    }
    // Whole, in 0..=2^53 - 1: the conversion is exact.
    Ok(format_duration(whole as u64))
}

/// The refusal of a value that is no number at all (a string, a boolean,
/// `None`) where a binding takes a number of milliseconds: field
/// `duration`, rule `wrong_type`.
///
/// ```
/// let err = waitfor::duration::not_a_number();
/// assert_eq!(err.to_string(), "duration: must be a number of milliseconds");
/// ```
pub fn not_a_number() -> SpecError {
    SpecError::new(FIELD, Rule::WrongType, "must be a number of milliseconds")
}

/// The refusal of a value that is no text where a binding takes a
/// duration text (a number, `None`): field `duration`, rule `wrong_type`.
///
/// ```
/// let err = waitfor::duration::not_a_text();
/// assert_eq!(err.to_string(), r#"duration: must be a text such as "90s""#);
/// ```
pub fn not_a_text() -> SpecError {
    SpecError::new(FIELD, Rule::WrongType, "must be a text such as \"90s\"")
}

fn too_long() -> String {
    format!(
        "must be at most {MAX_EXACT_MS} ms (2^53 - 1, the longest duration every language holds exactly)"
    )
}

/// Digits and a unit, however many digits: [`parse_duration`]'s grammar
/// without its u64 bound.
fn grammatical(text: &str) -> bool {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && matches!(&text[digits..], "" | "ms" | "s" | "m" | "h")
}

/// The nearest whole number, a half upwards: JavaScript's `Math.round`
/// (`-0.5` is `-0`, `2.5` is `3`). `x - floor(x)` is exact for every
/// finite double, so no tie is lost to rounding; infinities stay.
fn round_half_up(x: f64) -> f64 {
    let floor = x.floor();
    if x - floor >= 0.5 {
        floor + 1.0
    } else {
        floor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_unit_wins() {
        assert_eq!(format_duration(7_200_000), "2h");
        assert_eq!(format_duration(5_400_000), "90m");
        assert_eq!(format_duration(61_000), "61s");
        assert_eq!(format_duration(1_001), "1001ms");
        assert_eq!(format_duration(u64::MAX), format!("{}ms", u64::MAX));
    }

    #[test]
    fn leading_zeros_are_digits() {
        assert_eq!(parse_duration("007s"), Some(7_000));
        assert_eq!(parse_duration("0"), Some(0));
        assert_eq!(parse_duration("0ms"), Some(0));
    }
}
