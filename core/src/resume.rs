//! Resume tokens: where a later wait continues from.

use crate::error::{Rule, SpecError};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// Where a wait stopped, so the next wait sees everything after it once:
/// nothing lost between two calls, nothing seen twice. Hosts treat the
/// encoded form as opaque text.
///
/// ```
/// use waitfor::ResumeToken;
/// let token = ResumeToken::Lines { lines: vec!["$ make".into()] };
/// let text = token.encode();
/// assert_eq!(ResumeToken::decode(&text).unwrap(), token);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ResumeToken {
    /// A byte offset in a file, with the file's identity.
    File {
        /// Device number of the file.
        dev: u64,
        /// Inode number of the file.
        ino: u64,
        /// Bytes already seen.
        offset: u64,
    },
    /// The last lines a snapshot probe showed: the next wait's fresh view
    /// counts only what comes after them.
    Lines {
        /// The lines, oldest first.
        lines: Vec<String>,
    },
}

const PREFIX: &str = "wf1.";

impl ResumeToken {
    /// The opaque text form.
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).expect("a resume token always serializes");
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(json))
    }

    /// Reads a token made by [`ResumeToken::encode`].
    pub fn decode(text: &str) -> Result<Self, SpecError> {
        let bad = |why: &str| {
            SpecError::new(
                "resume",
                Rule::InvalidResume,
                format!("not a resume token of this library: {why}"),
            )
        };
        let body = text
            .strip_prefix(PREFIX)
            .ok_or_else(|| bad("unknown prefix"))?;
        let json = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| bad("not base64"))?;
        serde_json::from_slice(&json).map_err(|_| bad("damaged content"))
    }
}
