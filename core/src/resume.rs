//! Resume tokens: where a later wait continues from.

use crate::error::{Rule, SpecError};
use crate::keyed::{window, CursorKey};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Where a wait stopped, so the next wait sees everything after it once:
/// nothing lost between two calls, nothing seen twice. Hosts treat the
/// encoded form as opaque text.
///
/// A file position is sealed with the process's secret key (HMAC-SHA256):
/// it shows neither the offset nor the file's identity or content, cannot
/// be forged, and does not fit in another process (a restarted host's
/// tokens are refused as `invalid_resume`). It fits only the file it was
/// made in, holding the bytes the wait read before the offset: another
/// file at the path, even one that took the old file's inode, fails the
/// resumed wait instead of having its start skipped.
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

/// A position in a file, sealed: its offset, encrypted with a pad drawn
/// from the process key and a random nonce; a keyed hash of the nonce and
/// the file's device and inode; a keyed hash of the nonce, the offset and
/// the (up to) 64 bytes just before the offset; and a tag over all of it.
/// Only this process can read it.
///
/// A probe notes where it stands after every call that read something; a
/// position is sealed only once its token is encoded or compared (the
/// first time: later encodings give the same text), as most are never
/// shown (a sealing is a random nonce and four keyed hashes).
///
/// Device and inode alone do not name a file for good: once a file is
/// removed, the filesystem may give its inode to the next file created
/// (ext4 does at once), and a file rewritten in place keeps both. The hash
/// of the bytes before the offset tells such a file from the one the token
/// was made in, as the Ouro cursor's does (the same window, see
/// `crate::keyed::window`): resumed there, the wait would skip the new
/// file's first bytes. At offset 0 it covers no bytes: nothing is skipped.
///
/// Both hashes take the token's random nonce, so two tokens of one file, or
/// of one content, do not show it, and only this process's key computes
/// them: a token's holder cannot test a guess of the bytes with it.
///
/// ```
/// use base64::Engine as _;
/// let forged = r#"{"kind":"file","nonce":"00","at":"00","file":"00","before":"00","tag":"00"}"#;
/// let text = format!("wf1.{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged));
/// assert!(waitfor::ResumeToken::decode(&text).is_err());
/// ```
#[derive(Clone, Deserialize)]
#[serde(from = "Sealed")]
pub struct FilePosition {
    /// What a probe noted, not sealed yet; `None` in a decoded token.
    noted: Option<Noted>,
    sealed: OnceLock<Sealed>,
}

/// A file position as a probe notes it, in this process only.
#[derive(Clone)]
struct Noted {
    dev: u64,
    ino: u64,
    offset: u64,
    /// The window of the bytes before the offset.
    window: Vec<u8>,
}

/// A file position's text form (see [`FilePosition`]).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sealed {
    nonce: String,
    at: String,
    file: String,
    /// Required: a token of the earlier form, without it, is refused as
    /// damaged (`invalid_resume`), never taken for one at offset 0.
    before: String,
    tag: String,
}

const PAD: &str = "waitfor file token pad";
const FILE: &str = "waitfor file token file";
const BEFORE: &str = "waitfor file token before";
const TAG: &str = "waitfor file token tag";

impl From<Sealed> for FilePosition {
    fn from(sealed: Sealed) -> Self {
        FilePosition {
            noted: None,
            sealed: OnceLock::from(sealed),
        }
    }
}

impl Serialize for FilePosition {
    /// The sealed form, sealed now if it was not yet.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.sealed().serialize(serializer)
    }
}

impl PartialEq for FilePosition {
    /// Compares the sealed forms: a token and its decoded text are equal;
    /// two tokens sealed apart are not, even of one position.
    fn eq(&self, other: &Self) -> bool {
        self.sealed() == other.sealed()
    }
}

impl Eq for FilePosition {}

impl std::fmt::Debug for FilePosition {
    /// The sealed form: what a token's holder may see.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.sealed();
        f.debug_struct("FilePosition")
            .field("nonce", &s.nonce)
            .field("at", &s.at)
            .field("file", &s.file)
            .field("before", &s.before)
            .field("tag", &s.tag)
            .finish()
    }
}

impl FilePosition {
    /// Notes `offset` in the file with identity (`dev`, `ino`), whose
    /// bytes just before `offset` end with `before` (only the last
    /// [`crate::keyed::WINDOW`] count; at offset 0, none).
    pub(crate) fn new(dev: u64, ino: u64, offset: u64, before: &[u8]) -> FilePosition {
        FilePosition {
            noted: Some(Noted {
                dev,
                ino,
                offset,
                window: window(before).to_vec(),
            }),
            sealed: OnceLock::new(),
        }
    }

    /// The sealed form, sealed now if it was not yet.
    fn sealed(&self) -> &Sealed {
        self.sealed.get_or_init(|| {
            let noted = self
                .noted
                .as_ref()
                .expect("a position without a sealed form was noted by a probe");
            noted.seal()
        })
    }

    /// The offset, if this process sealed the position.
    fn offset(&self) -> Option<u64> {
        let key = CursorKey::process();
        let sealed = self.sealed();
        let nonce = unhex(&sealed.nonce).filter(|n| n.len() == 16)?;
        let at = u64_hex(&sealed.at)?;
        let file = u64_hex(&sealed.file)?;
        let before = unhex(&sealed.before).filter(|b| b.len() == 16)?;
        let tag = unhex(&sealed.tag).filter(|t| t.len() == 16)?;
        let parts: [&[u8]; 4] = [&nonce, &at.to_be_bytes(), &file.to_be_bytes(), &before];
        if !key.verify(TAG, &parts, &tag) {
            return None;
        }
        Some(at ^ first_u64(&key.mac(PAD, &[&nonce])))
    }

    /// The offset, if the position was sealed by this process for the
    /// file with identity (`dev`, `ino`). Whether the file still holds the
    /// bytes it was sealed after is [`FilePosition::fits_before`]'s check:
    /// the identity alone does not show that another file took the inode.
    pub(crate) fn offset_in(&self, dev: u64, ino: u64) -> Option<u64> {
        let offset = self.offset()?;
        let sealed = self.sealed();
        let nonce = unhex(&sealed.nonce)?;
        let file = unhex(&sealed.file)?;
        CursorKey::process()
            .verify(FILE, &[&nonce, &identity(dev, ino)], &file)
            .then_some(offset)
    }

    /// Whether the bytes just before the position's offset end with
    /// `before` (read from the file now, see `crate::keyed::read_before`),
    /// as they did when it was sealed: not the case in another file that
    /// reuses the inode, or this one rewritten or truncated below the
    /// offset. At offset 0 every file fits.
    pub(crate) fn fits_before(&self, before: &[u8]) -> bool {
        let (Some(offset), Some(nonce), Some(sealed)) = (
            self.offset(),
            unhex(&self.sealed().nonce),
            unhex(&self.sealed().before),
        ) else {
            return false;
        };
        let offset = offset.to_le_bytes();
        CursorKey::process().verify(BEFORE, &before_parts(&nonce, &offset, before), &sealed)
    }
}

impl Noted {
    /// Seals the position with this process's key and a fresh nonce.
    fn seal(&self) -> Sealed {
        let key = CursorKey::process();
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).expect("the operating system's random source works");
        let at = self.offset ^ first_u64(&key.mac(PAD, &[&nonce]));
        // With the nonce: two tokens of one file do not show it.
        let file = first_u64(&key.mac(FILE, &[&nonce, &identity(self.dev, self.ino)]));
        let offset = self.offset.to_le_bytes();
        let before = key.mac(BEFORE, &before_parts(&nonce, &offset, &self.window));
        let tag = key.mac(
            TAG,
            &[
                &nonce,
                &at.to_be_bytes(),
                &file.to_be_bytes(),
                &before[..16],
            ],
        );
        Sealed {
            nonce: hex(&nonce),
            at: format!("{at:016x}"),
            file: format!("{file:016x}"),
            before: hex(&before[..16]),
            tag: hex(&tag[..16]),
        }
    }
}

/// What the hash of the bytes before the offset covers: the nonce (so it
/// is never the same twice), the offset, and the window of `before`.
fn before_parts<'a>(nonce: &'a [u8], offset: &'a [u8; 8], before: &'a [u8]) -> [&'a [u8]; 3] {
    [nonce, offset, window(before)]
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
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        text.push(char::from(DIGITS[usize::from(b >> 4)]));
        text.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    text
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(token: &ResumeToken) -> serde_json::Map<String, serde_json::Value> {
        let body = token.encode();
        let json = URL_SAFE_NO_PAD.decode(&body[PREFIX.len()..]).unwrap();
        serde_json::from_slice(&json).unwrap()
    }

    fn encode(fields: &serde_json::Map<String, serde_json::Value>) -> String {
        format!(
            "{PREFIX}{}",
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(fields).unwrap())
        )
    }

    #[test]
    fn a_position_fits_only_the_bytes_before_its_offset() {
        let position = FilePosition::new(8, 9, 22, b"old-line-1\nold-line-2\n");
        assert_eq!(position.offset_in(8, 9), Some(22));
        assert!(position.fits_before(b"old-line-1\nold-line-2\n"));
        // Another file with the same device and inode.
        assert!(!position.fits_before(b"SECRET-NEW-FILE-HEADER"));
        assert!(!position.fits_before(b"old-line-1\nold-line-X\n"));
        // Truncated below the offset: fewer bytes before it.
        assert!(!position.fits_before(b"old-line-1\nold-line-2"));
        // Only the last 64 bytes count.
        let long: Vec<u8> = (0..200).collect();
        let position = FilePosition::new(8, 9, 200, &long);
        let mut other = long.clone();
        other[0] = 255;
        assert!(position.fits_before(&other) && position.fits_before(&long[136..]));
        other[199] = 0;
        assert!(!position.fits_before(&other));
        // At offset 0 nothing is before it: any file fits.
        assert!(FilePosition::new(8, 9, 0, b"").fits_before(b""));
    }

    #[test]
    fn a_noted_position_is_sealed_once_when_first_shown() {
        let position = FilePosition::new(1, 2, 5, b"hello");
        assert!(position.sealed.get().is_none());
        let token = ResumeToken::File(position);
        let text = token.encode();
        assert_eq!(token.encode(), text);
        // A clone of a sealed token keeps its seal.
        assert_eq!(token.clone().encode(), text);
        assert_eq!(ResumeToken::decode(&text).unwrap(), token);
    }

    #[test]
    fn two_tokens_of_one_place_and_content_do_not_show_it() {
        let token = |bytes: &[u8]| ResumeToken::File(FilePosition::new(1, 2, 5, bytes));
        let (a, b) = (fields(&token(b"hello")), fields(&token(b"hello")));
        for name in ["nonce", "at", "file", "before", "tag"] {
            assert_ne!(a[name], b[name], "{name}");
        }
        // 32 hex digits each for the nonce, the hash of the bytes and the tag.
        assert_eq!(a["before"].as_str().unwrap().len(), 32);
    }

    #[test]
    fn a_token_of_the_earlier_form_or_altered_is_refused() {
        let token = ResumeToken::File(FilePosition::new(1, 2, 5, b"hello"));
        let text = token.encode();
        assert_eq!(ResumeToken::decode(&text).unwrap(), token);
        // Well under the 4 MiB a caller's JSON may hold; a few hundred bytes.
        assert!(text.len() < 300, "{}", text.len());
        let good = fields(&token);
        // The form before the hash of the bytes: no `before`.
        let mut old = good.clone();
        old.remove("before");
        let err = ResumeToken::decode(&encode(&old)).unwrap_err();
        assert_eq!(err.rule, Rule::InvalidResume, "{err}");
        // Another token's hash of the bytes: the tag covers it.
        let mut swapped = good.clone();
        let other = fields(&ResumeToken::File(FilePosition::new(1, 2, 5, b"world")));
        swapped.insert("before".into(), other["before"].clone());
        let err = ResumeToken::decode(&encode(&swapped)).unwrap_err();
        assert_eq!(err.rule, Rule::InvalidResume, "{err}");
    }
}
