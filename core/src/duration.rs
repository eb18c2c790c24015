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
