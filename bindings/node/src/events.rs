//! Finished waits and progress reports on their way to JavaScript, as a
//! stream of numbers and one text, which `lib/events.js` reads into
//! objects more cheaply than it would parse JSON.
//!
//! Every event is `slot, key, kind` (the wait's slot and key, see
//! `lib/channel.js`) and then its body, in this order:
//! - [`PROGRESS`] and [`DONE`]: one string, the JSON text of the report or
//!   of the end (`{"output": ...}` or `{"error": ...}` of a profile call);
//! - [`RESULT`]: a wait's result, field by field in the order of its JSON
//!   form (see [`Events::result`]).
//!
//! A string is its length in UTF-16 code units (a JavaScript string's
//! length; -1 for null) in the numbers, and its text appended to the text.
//! A list of strings is its count, then each string. A number that may be
//! null is NaN for null; a boolean is 0 or 1.

use napi_derive::napi;
use waitfor::{ProbeAccounting, Tail, WaitResult};

/// A progress report; its body is the report's JSON text.
pub const PROGRESS: f64 = 0.0;
/// The end of a profile call; its body is JSON text.
pub const DONE: f64 = 1.0;
/// The end of a wait; its body is the result, field by field.
pub const RESULT: f64 = 2.0;

/// Events being written, in the order they came.
#[derive(Default)]
pub struct Events {
    numbers: Vec<f64>,
    text: String,
}

/// What `WaitChannel.takeEvents` took: `count` numbers and the text;
/// without `text` nothing was taken (the array is shorter than `count`).
#[napi(object)]
pub struct TakenEvents {
    pub count: u32,
    pub text: Option<String>,
}

impl Events {
    /// Whether no event has been written since the last take.
    pub fn is_empty(&self) -> bool {
        self.numbers.is_empty()
    }

    /// Forgets every event written.
    pub fn clear(&mut self) {
        self.numbers.clear();
        self.text.clear();
    }

    /// Moves the events written in `other` to the end of these.
    pub fn append(&mut self, other: &mut Events) {
        self.numbers.extend_from_slice(&other.numbers);
        self.text.push_str(&other.text);
        other.clear();
    }

    /// Copies the numbers written so far into `into` and hands the text
    /// over, then starts over; takes nothing when `into` is too short. (An
    /// external typed array instead would make V8 throw away the compiled
    /// code of every function reading typed arrays.)
    pub fn take_into(&mut self, into: &mut [f64]) -> TakenEvents {
        let count = u32::try_from(self.numbers.len()).unwrap_or(u32::MAX);
        let Some(into) = into.get_mut(..self.numbers.len()) else {
            return TakenEvents { count, text: None };
        };
        into.copy_from_slice(&self.numbers);
        self.numbers.clear();
        TakenEvents {
            count,
            text: Some(std::mem::take(&mut self.text)),
        }
    }

    /// Writes an event whose body is JSON text (`PROGRESS` or `DONE`).
    pub fn json(&mut self, slot: u32, key: u64, kind: f64, json: &str) {
        self.numbers.extend([f64::from(slot), key as f64, kind]);
        self.string(json);
    }

    /// Writes the end of wait `key` in `slot` with its result. The fields are
    /// named one by one, so a field added to the result does not compile
    /// until it is written here (and read in `lib/events.js`).
    pub fn result(&mut self, slot: u32, key: u64, result: &WaitResult) {
        let WaitResult {
            outcome,
            matched_index,
            matched_lines,
            matched_at_entry,
            saw_new_output,
            tail: Tail { lines, truncated },
            exit_code,
            samples,
            elapsed_ms,
            effective_max_wait_ms,
            clamped,
            probe:
                ProbeAccounting {
                    errors,
                    abandoned,
                    last_error,
                },
            error,
            resume,
            woken,
            alternate_screen,
            notices,
            last_observation: _,
        } = result;
        self.numbers.extend([f64::from(slot), key as f64, RESULT]);
        self.string(outcome.as_str());
        self.optional_number(matched_index.map(|i| i as f64));
        self.strings(matched_lines);
        self.bool(*matched_at_entry);
        self.bool(*saw_new_output);
        self.strings(lines);
        self.bool(*truncated);
        self.optional_number(exit_code.map(f64::from));
        self.number(*samples as f64);
        self.number(*elapsed_ms as f64);
        self.number(*effective_max_wait_ms as f64);
        self.bool(*clamped);
        self.number(*errors as f64);
        self.number(*abandoned as f64);
        self.optional_string(last_error.as_deref());
        self.optional_string(error.as_deref());
        self.optional_string(resume.as_deref());
        self.bool(*woken);
        self.bool(*alternate_screen);
        self.strings(notices);
    }

    fn number(&mut self, value: f64) {
        self.numbers.push(value);
    }

    fn optional_number(&mut self, value: Option<f64>) {
        self.numbers.push(value.unwrap_or(f64::NAN));
    }

    fn bool(&mut self, value: bool) {
        self.numbers.push(f64::from(u8::from(value)));
    }

    fn string(&mut self, text: &str) {
        let units = if text.is_ascii() {
            text.len()
        } else {
            text.encode_utf16().count()
        };
        self.numbers.push(units as f64);
        self.text.push_str(text);
    }

    fn optional_string(&mut self, text: Option<&str>) {
        match text {
            Some(text) => self.string(text),
            None => self.numbers.push(-1.0),
        }
    }

    fn strings(&mut self, texts: &[String]) {
        self.numbers.push(texts.len() as f64);
        for text in texts {
            self.string(text);
        }
    }
}
