//! Resume tokens: where a later wait continues from.

use crate::error::{Rule, SpecError};
use crate::keyed::CursorKey;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// Where a wait stopped, so the next wait sees everything after it once:
/// nothing lost between two calls, nothing seen twice. Hosts treat the
/// encoded form as opaque text.
///
/// A file position is sealed with the process's secret key (HMAC-SHA256):
/// it shows neither the offset nor the file's identity, cannot be forged,
/// and does not fit in another process (a restarted host's tokens are
/// refused as `invalid_resume`).
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
    /// A byte offset in a file, with the file's identity, sealed.
    File(FilePosition),
    /// The last lines a snapshot probe showed: the next wait's fresh view
    /// counts only what comes after them.
    Lines {
        /// The lines, oldest first.
        lines: Vec<String>,
    },
}

/// A sealed position in a file: its offset, encrypted with a pad drawn
/// from the process key and a random nonce, a keyed hash of the nonce and
/// the file's device and inode (two tokens of one file do not show it),
/// and a tag over both. Only this process can read it.
///
/// ```
/// use base64::Engine as _;
/// let forged = r#"{"kind":"file","nonce":"00","at":"00","file":"00","tag":"00"}"#;
/// let text = format!("wf1.{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged));
/// assert!(waitfor::ResumeToken::decode(&text).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilePosition {
    nonce: String,
    at: String,
    file: String,
    tag: String,
}

const PAD: &str = "waitfor file token pad";
const FILE: &str = "waitfor file token file";
const TAG: &str = "waitfor file token tag";

impl FilePosition {
    /// Seals `offset` in the file with identity (`dev`, `ino`).
    pub(crate) fn new(dev: u64, ino: u64, offset: u64) -> FilePosition {
        let key = CursorKey::process();
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).expect("the operating system's random source works");
        let at = offset ^ first_u64(&key.mac(PAD, &[&nonce]));
        // With the nonce: two tokens of one file do not show it.
        let file = first_u64(&key.mac(FILE, &[&nonce, &identity(dev, ino)]));
        let tag = key.mac(TAG, &[&nonce, &at.to_be_bytes(), &file.to_be_bytes()]);
        FilePosition {
            nonce: hex(&nonce),
            at: format!("{at:016x}"),
            file: format!("{file:016x}"),
            tag: hex(&tag[..16]),
        }
    }

    /// The offset, if this process sealed the position.
    fn offset(&self) -> Option<u64> {
        let key = CursorKey::process();
        let nonce = unhex(&self.nonce).filter(|n| n.len() == 16)?;
        let at = u64_hex(&self.at)?;
        let file = u64_hex(&self.file)?;
        let tag = unhex(&self.tag).filter(|t| t.len() == 16)?;
        if !key.verify(TAG, &[&nonce, &at.to_be_bytes(), &file.to_be_bytes()], &tag) {
            return None;
        }
        Some(at ^ first_u64(&key.mac(PAD, &[&nonce])))
    }

    /// The offset, if the position was sealed by this process for the
    /// file with identity (`dev`, `ino`).
    pub(crate) fn offset_in(&self, dev: u64, ino: u64) -> Option<u64> {
        let offset = self.offset()?;
        let nonce = unhex(&self.nonce)?;
        let file = unhex(&self.file)?;
        CursorKey::process()
            .verify(FILE, &[&nonce, &identity(dev, ino)], &file)
            .then_some(offset)
    }
}

fn identity(dev: u64, ino: u64) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&dev.to_le_bytes());
    bytes[8..].copy_from_slice(&ino.to_le_bytes());
    bytes
}

fn first_u64(mac: &[u8; 32]) -> u64 {
    u64::from_be_bytes(mac[..8].try_into().expect("8 bytes"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

fn u64_hex(text: &str) -> Option<u64> {
    let bytes: [u8; 8] = unhex(text)?.try_into().ok()?;
    Some(u64::from_be_bytes(bytes))
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
        let token: Self = serde_json::from_slice(&json).map_err(|_| bad("damaged content"))?;
        if let ResumeToken::File(position) = &token {
            position.offset().ok_or_else(|| {
                bad("made by another process, or altered (a file position does not outlive the process that made it)")
            })?;
        }
        Ok(token)
    }
}
