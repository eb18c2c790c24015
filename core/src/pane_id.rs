//! tmux pane ids (`%N`): the one parser every binding uses for them.

use crate::error::{Rule, SpecError};

/// Reads a tmux pane id, `%` and decimal digits (`%0`, `%12`), into its
/// number; anything else (no `%`, no digits, a sign, spaces, a number
/// above `u32::MAX`) is refused with rule `invalid_pane_id` on `field`.
///
/// ```
/// assert_eq!(waitfor::tmux::parse_pane_id("%12", "pane_id"), Ok(12));
/// let err = waitfor::tmux::parse_pane_id("12", "pane_id").unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("pane_id", waitfor::Rule::InvalidPaneId));
/// ```
pub fn parse_pane_id(text: &str, field: &str) -> Result<u32, SpecError> {
    let refuse = |why: &str| {
        SpecError::new(
            field,
            Rule::InvalidPaneId,
            format!(
                "must be a tmux pane id such as %3 (`%` then digits), not {}: {why}",
                crate::error::echo(text)
            ),
        )
    };
    let digits = text
        .strip_prefix('%')
        .ok_or_else(|| refuse("no leading `%`"))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refuse("not only digits after `%`"));
    }
    digits.parse().map_err(|_| refuse("too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_percent_and_digits_only() {
        assert_eq!(parse_pane_id("%0", "p"), Ok(0));
        assert_eq!(parse_pane_id("%007", "p"), Ok(7));
        assert_eq!(parse_pane_id("%4294967295", "p"), Ok(u32::MAX));
        for bad in [
            "",
            "%",
            "3",
            "%-1",
            "%+1",
            "% 1",
            "%1 ",
            "%1a",
            "%٣",
            "%4294967296",
        ] {
            let err = parse_pane_id(bad, "p").unwrap_err();
            assert_eq!(err.rule, Rule::InvalidPaneId, "{bad:?}");
        }
    }
}
