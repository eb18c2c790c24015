//! What tmux prints, parsed: a pane snapshot's output (facts line, then the
//! row capture and the joined capture) and control-mode `%output`
//! payloads. The first byte picks the door: 0 raw snapshot output, 1 a
//! raw `%output` payload, 2 bytes escaped as tmux does and decoded back,
//! else a well-formed pane (rows with soft wraps) whose joined lines and
//! their start rows are known.
#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use waitfor::tmux::snapshot::parse_capture;
use waitfor::tmux::{decode_output, PaneSnapshot};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&door, rest)) = data.split_first() else {
        return;
    };
    match door {
        0 => raw_capture(rest),
        1 => {
            let text = String::from_utf8_lossy(rest);
            let bytes = decode_output(&text);
            assert!(bytes.len() <= text.len());
            if !text.contains('\\') {
                assert_eq!(bytes, text.as_bytes());
            }
        }
        2 => assert_eq!(decode_output(&escape(rest)), rest),
        _ => {
            let _ = known_pane(&mut Unstructured::new(rest));
        }
    }
});

/// tmux's escaping of `%output`: `\\` and octal for every byte outside
/// printable ASCII.
fn escape(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            b'\\' => "\\\\".to_string(),
            b' '..=b'~' => char::from(b).to_string(),
            _ => format!("\\{b:03o}"),
        })
        .collect()
}

fn raw_capture(rest: &[u8]) {
    let mut u = Unstructured::new(rest);
    // Rows as tmux numbers them: far below 2^63 (the anchor arithmetic
    // does not guard against more).
    let (Ok(start), Ok(from_row)) = (
        Option::<i32>::arbitrary(&mut u),
        Option::<u32>::arbitrary(&mut u),
    ) else {
        return;
    };
    let out = String::from_utf8_lossy(u.take_rest());
    if let Ok(snap) = parse_capture(&out, start.map(i64::from), from_row.map(u64::from)) {
        consistent(&snap);
    }
}

/// What holds for every snapshot, whatever tmux printed.
fn consistent(snap: &PaneSnapshot) {
    assert_eq!(snap.lines.len(), snap.line_rows.len());
    assert!(snap.line_rows.windows(2).all(|w| w[0] <= w[1]), "{snap:?}");
    assert!(
        snap.line_rows.iter().all(|&r| r >= snap.first_row),
        "{snap:?}"
    );
    assert!(snap.lines.iter().all(|l| !l.ends_with(' ')), "{snap:?}");
}

/// A pane of short rows, each starting a line or continuing the one above
/// (a continuation is never empty, so the two captures line up exactly).
fn known_pane(u: &mut Unstructured) -> Result<()> {
    let height = u.int_in_range(1..=6u32)?;
    let count = u.int_in_range(height..=height + 12)? as usize;
    let mut rows: Vec<String> = Vec::with_capacity(count);
    let mut starts: Vec<usize> = Vec::new();
    for i in 0..count {
        let continues = i > 0 && u.arbitrary()?;
        let len = u.int_in_range(usize::from(continues)..=8)?;
        let row: String = (0..len)
            .map(|_| Ok(*u.choose(&['a', 'b', ' ', '$', '\t'])?))
            .collect::<Result<_>>()?;
        if !continues {
            starts.push(i);
        }
        rows.push(row);
    }
    let from_row = if u.arbitrary()? {
        Some(u.int_in_range(0..=count as u64 + 2)?)
    } else {
        None
    };
    let ends: Vec<usize> = starts.iter().skip(1).copied().chain([count]).collect();
    let joined: Vec<String> = starts
        .iter()
        .zip(&ends)
        .map(|(&s, &e)| rows[s..e].concat())
        .collect();
    let history = count as u32 - height;
    let out = format!(
        "%7\t{history}\t2000\t0\t0\t{height}\t8\t0\t0\t4242\t0\t\t77\t1700000000\t/tmp/tmux-0/default\n{}\n{}\n",
        rows.join("\n"),
        joined.join("\n")
    );
    let snap = parse_capture(&out, None, from_row).expect("a well-formed capture parses");
    consistent(&snap);
    assert!(snap.rows_exact, "{out:?}");
    let want = from_row.unwrap_or(0) as usize;
    let mut lines = Vec::new();
    let mut line_rows = Vec::new();
    for (&s, &e) in starts.iter().zip(&ends) {
        if e <= want {
            continue;
        }
        lines.push(
            rows[s.max(want)..e]
                .concat()
                .trim_end_matches(' ')
                .to_string(),
        );
        line_rows.push(s.max(want) as u64);
    }
    assert_eq!((snap.lines, snap.line_rows), (lines, line_rows), "{out:?}");
    Ok(())
}
