//! What a probe call gives: an [`Observation`], and whether each one is
//! the whole state or only what is new ([`ProbeMode`]). The conditions and
//! views read these; the probes make them.

use serde_json::Value;

/// One observation: text, optionally structured output, and facts.
///
/// ```
/// use waitfor::Observation;
/// let obs = Observation::text("ready\n").with_exit_code(0);
/// assert_eq!(obs.exit_code, Some(0));
/// let obs = Observation::json(serde_json::json!({"status": "ok"}));
/// assert!(obs.text.contains("ok"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    /// The text the conditions read.
    pub text: String,
    /// Structured output, for JSON pointer conditions.
    pub json: Option<Value>,
    /// Exit status of a process the probe ran.
    pub exit_code: Option<i32>,
    /// The target can no longer change (process gone, pane dead, ...).
    pub gone: bool,
    /// The target is on an alternate screen (a pager, an editor, a
    /// full-screen program repainting everything): this observation is not
    /// output, so it is neither matched nor compared, and the result
    /// reports `alternate_screen`.
    pub alternate_screen: bool,
    /// What the target showed when the wait began, for a probe that keeps
    /// its own entry anchor and observes only what is new: never read by
    /// the conditions, but a success pattern that matches it sets the
    /// result's `matched_at_entry`. Only the first observation's counts.
    pub at_entry: Option<String>,
    /// The bytes read, when [`Observation::bytes`] replaced invalid UTF-8
    /// in them (the text is then longer).
    read_len: Option<usize>,
}

impl Observation {
    /// A text observation.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// A text observation of bytes a probe read: invalid UTF-8 in them
    /// becomes U+FFFD (three bytes for each bad byte), and the output cap
    /// counts the bytes read, not the longer text.
    ///
    /// ```
    /// let obs = waitfor::Observation::bytes(b"ok\xff");
    /// assert_eq!(obs.text, "ok\u{fffd}");
    /// assert_eq!((obs.text.len(), obs.len_read()), (5, 3));
    /// ```
    pub fn bytes(bytes: &[u8]) -> Self {
        let text = String::from_utf8_lossy(bytes).into_owned();
        Self {
            read_len: (text.len() != bytes.len()).then_some(bytes.len()),
            text,
            ..Self::default()
        }
    }

    /// How many bytes the probe read for this observation, which the
    /// output cap counts: the text's length, or for [`Observation::bytes`]
    /// the bytes it was given.
    ///
    /// ```
    /// assert_eq!(waitfor::Observation::text("ready").len_read(), 5);
    /// ```
    pub fn len_read(&self) -> usize {
        self.read_len.unwrap_or(self.text.len())
    }

    /// A structured observation; its text is the compact JSON.
    pub fn json(value: Value) -> Self {
        Self {
            text: value.to_string(),
            json: Some(value),
            ..Self::default()
        }
    }

    /// Adds an exit status.
    pub fn with_exit_code(mut self, code: i32) -> Self {
        self.exit_code = Some(code);
        self
    }

    /// Marks the target as gone.
    pub fn with_gone(mut self) -> Self {
        self.gone = true;
        self
    }

    /// Marks the target as on an alternate screen (see
    /// [`Observation::alternate_screen`]).
    ///
    /// ```
    /// assert!(waitfor::Observation::text("").with_alternate_screen().alternate_screen);
    /// ```
    pub fn with_alternate_screen(mut self) -> Self {
        self.alternate_screen = true;
        self
    }

    /// Adds what the target showed at entry (see [`Observation::at_entry`]).
    ///
    /// ```
    /// let obs = waitfor::Observation::text("").with_at_entry("$ make\nready");
    /// assert_eq!(obs.at_entry.as_deref(), Some("$ make\nready"));
    /// ```
    pub fn with_at_entry(mut self, text: impl Into<String>) -> Self {
        self.at_entry = Some(text.into());
        self
    }
}

/// Whether each observation is the whole state or only what is new.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProbeMode {
    /// Each observation is the full current state (a command's output, a
    /// screen). The fresh view diffs it against what it saw before.
    #[default]
    Snapshot,
    /// Each observation holds only what was added since the last call (a
    /// file's appended bytes). The fresh view appends it.
    Stream,
}
