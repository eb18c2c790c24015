//! What a snapshot shows that the previous snapshot did not.

/// The part of a new snapshot that is new against the previous one.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Change<'a> {
    /// Text that continues the previous snapshot: it may continue its last
    /// line, or start with `\n` for new lines.
    Appended(&'a str),
    /// Text appended after dropping lines that scrolled away; same form.
    Scrolled(String),
    /// No overlap at all (a cleared screen): the whole snapshot is new.
    Replaced(&'a str),
}

/// Trailing blank lines are layout (an empty screen below the cursor), not
/// content, so both snapshots are compared without them.
pub(crate) fn trim_blank_end(text: &str) -> &str {
    text.trim_end_matches(['\n', '\r', ' ', '\t'])
}

/// Compares two snapshots by lines: the new one continues the old one when
/// the old one's last lines (the very last one possibly grown, as a partial
/// line) open the new one. The largest such overlap wins, so a new line
/// identical to an old one still counts as new once.
pub(crate) fn diff<'a>(prev: &str, cur: &'a str) -> Change<'a> {
    let prev = trim_blank_end(prev);
    let cur = trim_blank_end(cur);
    if let Some(rest) = cur.strip_prefix(prev) {
        return Change::Appended(rest);
    }
    if prev.is_empty() {
        return Change::Appended(cur);
    }
    let old: Vec<&str> = prev.split('\n').collect();
    let new: Vec<&str> = cur.split('\n').collect();
    let last = old[old.len() - 1];
    let most = old.len().min(new.len());
    for overlap in (1..=most).rev() {
        let joint = new[overlap - 1];
        if !joint.starts_with(last) {
            continue;
        }
        let before_old = &old[old.len() - overlap..old.len() - 1];
        if before_old == &new[..overlap - 1] {
            let mut text = joint[last.len()..].to_string();
            for line in &new[overlap..] {
                text.push('\n');
                text.push_str(line);
            }
            return Change::Scrolled(text);
        }
    }
    Change::Replaced(cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appended_lines() {
        assert_eq!(diff("a\nb", "a\nb\nc"), Change::Appended("\nc"));
    }

    #[test]
    fn partial_last_line_grows() {
        assert_eq!(diff("a\nbu", "a\nbuild ok\n"), Change::Appended("ild ok"));
    }

    #[test]
    fn scrolling_window_keeps_only_new_lines() {
        assert_eq!(diff("1\n2\n3", "2\n3\n4"), Change::Scrolled("\n4".into()));
        assert_eq!(
            diff("1\n2\n3", "3\n4\n5"),
            Change::Scrolled("\n4\n5".into())
        );
    }

    #[test]
    fn scrolled_partial_line() {
        assert_eq!(
            diff("1\n2\n$ ", "2\n$ ls\nfile"),
            Change::Scrolled(" ls\nfile".into())
        );
    }

    #[test]
    fn cleared_screen_is_all_new() {
        assert_eq!(diff("old\nstuff", "fresh"), Change::Replaced("fresh"));
    }

    #[test]
    fn repeated_identical_line_counts_as_new() {
        assert_eq!(
            diff("x\nready", "x\nready\nready"),
            Change::Appended("\nready")
        );
        // A scrolling window of height 2 showing the same line again.
        assert_eq!(
            diff("x\nready", "ready\nready"),
            Change::Scrolled("\nready".into())
        );
    }

    #[test]
    fn blank_rows_below_do_not_count() {
        assert_eq!(diff("a\n\n\n", "a\nb\n\n"), Change::Appended("\nb"));
        assert_eq!(diff("a\n\n", "a\n\n\n"), Change::Appended(""));
    }
}
