//! Resume tokens and Ouro cursors: what an agent hands back to continue a
//! wait. The first byte picks the door: 0 a token's text (alone and as a
//! spec's `resume`), 1 a cursor's text, else tokens and cursors built from
//! the bytes, which must survive their text form.
#![no_main]

use arbitrary::{Result, Unstructured};
use waitfor::ouro::JsonlCursor;
use waitfor::{ResumeToken, Rule, Spec};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&door, rest)) = data.split_first() else {
        return;
    };
    match door {
        0 => token_text(&String::from_utf8_lossy(rest)),
        1 => cursor_text(&String::from_utf8_lossy(rest)),
        _ => {
            let _ = built(&mut Unstructured::new(rest));
        }
    }
});

fn token_text(text: &str) {
    let spec = Spec::from_value(&serde_json::json!({"until": {"matches": "x"}, "resume": text}));
    match ResumeToken::decode(text) {
        Ok(token) => {
            assert_eq!(ResumeToken::decode(&token.encode()), Ok(token));
            spec.expect("a spec takes any token that decodes");
        }
        Err(err) => {
            assert_eq!(
                (err.field.as_str(), err.rule),
                ("resume", Rule::InvalidResume)
            );
            let spec_err = spec.expect_err("a spec refuses a token that does not decode");
            assert_eq!(spec_err, err);
        }
    }
}

fn cursor_text(text: &str) {
    if let Ok(cursor) = JsonlCursor::parse(text) {
        round_trip(cursor);
    }
}

fn round_trip(cursor: JsonlCursor) {
    let text = cursor.to_string();
    assert!(
        text.bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.')),
        "{text:?} is not one shell word"
    );
    assert_eq!(JsonlCursor::parse(&text), Ok(cursor));
}

fn built(u: &mut Unstructured) -> Result<()> {
    // A file token is sealed by the process key (its position is opaque),
    // so only its text form (door 0) can be fuzzed; a lines token is built.
    let token = ResumeToken::Lines {
        lines: u.arbitrary()?,
    };
    let text = token.encode();
    assert!(text.is_ascii() && !text.contains(char::is_whitespace));
    assert_eq!(ResumeToken::decode(&text), Ok(token));
    round_trip(JsonlCursor {
        offset: u.arbitrary()?,
        line: u.arbitrary()?,
        file: u.arbitrary()?,
        tag: u.arbitrary()?,
    });
    Ok(())
}
