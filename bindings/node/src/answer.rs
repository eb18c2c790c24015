//! A JavaScript answer as the engine reads it: `lib/answer.js` turns what a
//! probe or tool returned (or threw) into flag bits, one text, the JSON
//! text of a structured value and an exit code; [`observation`] rebuilds
//! the engine's answer from them, for batched probe answers and tool calls
//! alike.

use serde_json::Value;
use waitfor::{Observation, ProbeError};

/// The answer is an error; the text is its message.
pub const ERROR: u8 = 1;
/// The text is the observation's text.
pub const TEXT: u8 = 2;
/// The JSON text is the observation's structured output.
pub const JSON: u8 = 4;
/// The exit code is set.
pub const EXIT: u8 = 8;
/// The observed thing is gone.
pub const GONE: u8 = 16;

/// What a probe or tool call answered.
pub type Answer = Result<Observation, ProbeError>;

/// The engine's answer from the parts `lib/answer.js` sends.
///
/// ```ignore
/// let obs = observation(TEXT | EXIT, "done".into(), None, 3).unwrap();
/// assert_eq!((obs.text.as_str(), obs.exit_code), ("done", Some(3)));
/// // A structured value without a text: its text is the compact JSON.
/// let obs = observation(JSON, String::new(), Some(r#"{"a": 1}"#), 0).unwrap();
/// assert_eq!(obs.text, r#"{"a":1}"#);
/// ```
pub fn observation(flags: u8, text: String, json: Option<&str>, exit_code: i32) -> Answer {
    if flags & ERROR != 0 {
        return Err(ProbeError::new(text));
    }
    let mut obs = match (flags & JSON != 0, json) {
        (true, Some(json)) => {
            let value: Value = serde_json::from_str(json)
                .map_err(|e| ProbeError::new(format!("the probe's value is not JSON: {e}")))?;
            Observation::json(value)
        }
        (true, None) => return Err(ProbeError::new("the probe's JSON value was lost")),
        (false, _) => Observation::default(),
    };
    if flags & TEXT != 0 {
        obs.text = text;
    }
    if flags & EXIT != 0 {
        obs.exit_code = Some(exit_code);
    }
    obs.gone = flags & GONE != 0;
    Ok(obs)
}
