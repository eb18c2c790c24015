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
///
/// Time linear in the snapshots (this runs on the scheduler thread): the
/// overlaps are found in one pass, not tried one by one, which for a
/// long run of one repeated line is quadratic.
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
    let (last, before) = old.split_last().expect("split gives a line");
    // An overlap of n lines: the n - 1 lines before the old last line open
    // the new snapshot, and its n-th line continues that last line.
    for opening in openings(before, &new[..new.len() - 1]) {
        let joint = new[opening];
        if let Some(grown) = joint.strip_prefix(last) {
            let mut text = grown.to_string();
            for line in &new[opening + 1..] {
                text.push('\n');
                text.push_str(line);
            }
            return Change::Scrolled(text);
        }
    }
    Change::Replaced(cur)
}

/// Every `n` (largest first, down to 0) such that the last `n` lines of
/// `text` are the first `n` lines of `pattern`: the borders that
/// Knuth-Morris-Pratt matching of `pattern` over `text` ends with, in time
/// linear in both. Lines are compared by number, each distinct line
/// numbered once.
fn openings(text: &[&str], pattern: &[&str]) -> impl Iterator<Item = usize> {
    let mut numbers = std::collections::HashMap::new();
    let mut number = |line| {
        let next = numbers.len();
        *numbers.entry(line).or_insert(next)
    };
    let pattern: Vec<usize> = pattern.iter().map(|&line| number(line)).collect();
    let text: Vec<usize> = text.iter().map(|&line| number(line)).collect();
    // fallback[i]: the longest proper border of pattern[..=i].
    let mut fallback = vec![0; pattern.len()];
    let mut k = 0;
    for i in 1..pattern.len() {
        while k > 0 && pattern[i] != pattern[k] {
            k = fallback[k - 1];
        }
        if pattern[i] == pattern[k] {
            k += 1;
        }
        fallback[i] = k;
    }
    let mut matched = 0;
    for &line in &text {
        if matched > 0 && matched == pattern.len() {
            matched = fallback[matched - 1];
        }
        while matched > 0 && line != pattern[matched] {
            matched = fallback[matched - 1];
        }
        if matched < pattern.len() && line == pattern[matched] {
            matched += 1;
        }
    }
    std::iter::successors(Some(matched), move |&n| (n > 0).then(|| fallback[n - 1]))
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

    /// The overlap as defined: every overlap tried, largest first, each
    /// compared line by line.
    fn diff_by_definition(prev: &str, cur: &str) -> Change<'static> {
        let (prev, cur) = (trim_blank_end(prev), trim_blank_end(cur));
        if let Some(rest) = cur.strip_prefix(prev) {
            return Change::Scrolled(rest.to_string());
        }
        if prev.is_empty() {
            return Change::Scrolled(cur.to_string());
        }
        let old: Vec<&str> = prev.split('\n').collect();
        let new: Vec<&str> = cur.split('\n').collect();
        let last = old[old.len() - 1];
        for overlap in (1..=old.len().min(new.len())).rev() {
            let joint = new[overlap - 1];
            if joint.starts_with(last)
                && old[old.len() - overlap..old.len() - 1] == new[..overlap - 1]
            {
                let mut text = joint[last.len()..].to_string();
                for line in &new[overlap..] {
                    text.push('\n');
                    text.push_str(line);
                }
                return Change::Scrolled(text);
            }
        }
        Change::Replaced("")
    }

    /// What a change says is new, whatever its kind.
    fn new_text(change: Change<'_>) -> Option<String> {
        match change {
            Change::Appended(text) => Some(text.to_string()),
            Change::Scrolled(text) => Some(text),
            Change::Replaced(_) => None,
        }
    }

    proptest::proptest! {
        #[test]
        fn finds_the_largest_overlap_as_defined(
            prev in proptest::collection::vec("(a|b|ab|)", 0..12),
            cur in proptest::collection::vec("(a|b|ab|ba|)", 0..12),
        ) {
            let (prev, cur) = (prev.join("\n"), cur.join("\n"));
            proptest::prop_assert_eq!(
                new_text(diff(&prev, &cur)),
                new_text(diff_by_definition(&prev, &cur))
            );
        }
    }

    /// Output an agent's command can print: the same line over and over,
    /// one different line in the middle. Tried overlap by overlap, each
    /// compared line by line, the 130,000 lines took seconds on the
    /// scheduler thread, holding up every other wait; found in one pass,
    /// milliseconds.
    #[test]
    fn a_long_run_of_repeated_lines_takes_one_pass() {
        let k = 65_000;
        let prev = "x\n".repeat(2 * k);
        let cur = format!("{}y\n{}", "x\n".repeat(k), "x\n".repeat(k));
        let started = std::time::Instant::now();
        let change = diff(&prev, &cur);
        // Generous: one pass takes milliseconds, the tries took minutes
        // in a debug build.
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        let expected = format!("{}\ny{}", "", "\nx".repeat(k));
        assert_eq!(new_text(change), Some(expected));
    }
}
