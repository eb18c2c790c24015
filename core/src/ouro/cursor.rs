//! The JSONL source's cursor: a position in a file plus keyed hashes of
//! what the file looked like there, so that the process that made it can
//! tell whether it still points into the same file, while the cursor
//! itself tells its holder nothing about the file.

use crate::keyed::{window, CursorKey};
use std::fmt;

const FILE_DOMAIN: &str = "waitfor jsonl cursor file";
const TAG_DOMAIN: &str = "waitfor jsonl cursor tag";

/// A position in an append-only JSON Lines file, as text:
/// `j2.{offset}.{line}.{file}.{tag}`.
///
/// - `offset`: bytes consumed (decimal); the next read starts there.
/// - `line`: lines consumed (decimal), so reported line numbers stay absolute.
/// - `file`: a keyed hash of the file's identity (device and inode; none
///   at offset 0, where any file fits) and the offset and line, 16 hex
///   digits. It changes when another file is moved into place; two
///   cursors at different places do not show whether they are in one file.
/// - `tag`: a keyed hash of all of the above and the (up to) 64 bytes just
///   before `offset`, 32 hex digits. It changes when the file is
///   truncated or rewritten in place, and when the cursor is altered.
///
/// Both hashes are HMAC-SHA256 under a [`CursorKey`], by default a secret
/// of the process: the cursor reveals nothing but its offset and line, no
/// one without the key can make one or test a guess about the file's
/// bytes with one, and a cursor from another process (a restarted server)
/// does not fit.
///
/// The text uses only `[a-z0-9.]`, so it is one shell word and needs no
/// quoting.
///
/// ```
/// use waitfor::ouro::{CursorKey, JsonlCursor};
/// let c = JsonlCursor::file_start(&CursorKey::public());
/// let text = c.to_string();
/// assert!(text.starts_with("j2.0.0."));
/// assert_eq!(JsonlCursor::parse(&text), Ok(c));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonlCursor {
    /// Bytes consumed.
    pub offset: u64,
    /// Lines consumed.
    pub line: u64,
    /// Keyed hash of the file's identity.
    pub file: u64,
    /// Keyed hash of the cursor and the bytes just before `offset`.
    pub tag: u128,
}

impl JsonlCursor {
    /// The cursor at the start of any file: nothing consumed yet.
    ///
    /// ```
    /// use waitfor::ouro::{CursorKey, JsonlCursor};
    /// assert_eq!(JsonlCursor::file_start(&CursorKey::process()).offset, 0);
    /// ```
    pub fn file_start(key: &CursorKey) -> JsonlCursor {
        JsonlCursor::at(key, 0, 0, (0, 0), &[])
    }

    /// The cursor at `offset` (after `line` lines) in the file with
    /// `identity` (device, inode), whose bytes just before `offset` end
    /// with `before` (only the last [`crate::keyed::WINDOW`] count).
    pub(crate) fn at(
        key: &CursorKey,
        offset: u64,
        line: u64,
        identity: (u64, u64),
        before: &[u8],
    ) -> JsonlCursor {
        let identity = identity_at(offset, identity);
        let file = key.mac(FILE_DOMAIN, &[&file_part(offset, line, &identity)]);
        let tag = with_tag_parts(offset, line, &identity, window(before), |parts| {
            key.mac(TAG_DOMAIN, parts)
        });
        JsonlCursor {
            offset,
            line,
            file: u64::from_be_bytes(file[..8].try_into().expect("8 bytes")),
            tag: u128::from_be_bytes(tag[..16].try_into().expect("16 bytes")),
        }
    }

    /// Whether the cursor was made for the file with `identity`.
    pub(crate) fn fits_file(&self, key: &CursorKey, identity: (u64, u64)) -> bool {
        let identity = identity_at(self.offset, identity);
        let part = file_part(self.offset, self.line, &identity);
        key.verify(FILE_DOMAIN, &[&part], &self.file.to_be_bytes())
    }

    /// Whether the cursor was made for the file with `identity` whose bytes
    /// just before the offset end with `before`.
    pub(crate) fn fits_bytes(&self, key: &CursorKey, identity: (u64, u64), before: &[u8]) -> bool {
        let identity = identity_at(self.offset, identity);
        with_tag_parts(self.offset, self.line, &identity, window(before), |parts| {
            key.verify(TAG_DOMAIN, parts, &self.tag.to_be_bytes())
        })
    }

    /// Reads a cursor written by [`JsonlCursor`]'s `Display` (its form
    /// only; whether it fits a file is the source's check); the error says
    /// what is wrong with it.
    ///
    /// ```
    /// use waitfor::ouro::JsonlCursor;
    /// assert!(JsonlCursor::parse("j2.0.0.0000000000000000.00000000000000000000000000000000").is_ok());
    /// assert!(JsonlCursor::parse("j2.00.0.0000000000000000.00000000000000000000000000000000").is_err());
    /// assert!(JsonlCursor::parse("42").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<JsonlCursor, String> {
        let parts: Vec<&str> = text.split('.').collect();
        let [tag, offset, line, file, mac] = parts[..] else {
            return Err("expected j2.<offset>.<line>.<file>.<tag>".into());
        };
        if tag != "j2" {
            return Err(format!(
                "unknown cursor version {} (expected j2; cursors of earlier versions are no longer read)",
                crate::error::echo(tag)
            ));
        }
        let dec = |name: &str, s: &str| {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("{name} must be a decimal number"));
            }
            s.parse::<u64>().map_err(|_| format!("{name} is too large"))
        };
        let hex = |name: &str, s: &str| {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!("{name} must be a hex number"));
            }
            u128::from_str_radix(s, 16).map_err(|_| format!("{name} is too large"))
        };
        let cursor = JsonlCursor {
            offset: dec("offset", offset)?,
            line: dec("line", line)?,
            file: u64::try_from(hex("file", file)?).map_err(|_| "file is too large".to_string())?,
            tag: hex("tag", mac)?,
        };
        // One spelling per cursor: another (leading zeros, upper-case hex)
        // was edited, and an edited cursor is refused.
        if cursor.to_string() != text {
            return Err("not written as cursors are (it was edited)".into());
        }
        Ok(cursor)
    }
}

impl fmt::Display for JsonlCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "j2.{}.{}.{:016x}.{:032x}",
            self.offset, self.line, self.file, self.tag
        )
    }
}

/// At offset 0 no byte of any file was consumed, so every file fits.
fn identity_at(offset: u64, identity: (u64, u64)) -> [u8; 16] {
    let (dev, ino) = if offset == 0 { (0, 0) } else { identity };
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&dev.to_le_bytes());
    bytes[8..].copy_from_slice(&ino.to_le_bytes());
    bytes
}

/// What the file hash covers: the identity, and where the cursor is.
fn file_part(offset: u64, line: u64, identity: &[u8; 16]) -> [u8; 32] {
    let mut part = [0u8; 32];
    part[..8].copy_from_slice(&offset.to_le_bytes());
    part[8..16].copy_from_slice(&line.to_le_bytes());
    part[16..].copy_from_slice(identity);
    part
}

/// Calls `f` with the parts the tag covers.
fn with_tag_parts<R>(
    offset: u64,
    line: u64,
    identity: &[u8; 16],
    window: &[u8],
    f: impl FnOnce(&[&[u8]]) -> R,
) -> R {
    let (offset, line) = (offset.to_le_bytes(), line.to_le_bytes());
    f(&[&offset, &line, identity, window])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_cursors() {
        for bad in [
            "",
            "j2",
            "j1.0.0.0.0.0",
            "j2.x.0.0.0",
            "j2.0.0.0",
            "j2.0.0.0.0.0",
            "j2.-1.0.0.0",
            "j2.0.0.zz.0",
            "j2.99999999999999999999.0.0.0",
            "j2.0.0.11111111111111111.0",
            "j2.0.0.0.111111111111111111111111111111111",
            "j2.+1.0.0.0",
        ] {
            assert!(JsonlCursor::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_cursor_fits_only_its_file_bytes_and_key() {
        let key = CursorKey::from_secret(b"test");
        let c = JsonlCursor::at(&key, 10, 1, (8, 9), b"0123456789");
        assert!(c.fits_file(&key, (8, 9)));
        assert!(c.fits_bytes(&key, (8, 9), b"0123456789"));
        assert!(!c.fits_file(&key, (8, 10)));
        assert!(!c.fits_bytes(&key, (8, 9), b"0123456788"));
        assert!(!c.fits_file(&CursorKey::public(), (8, 9)));
        let moved = JsonlCursor { offset: 11, ..c };
        assert!(!moved.fits_bytes(&key, (8, 9), b"0123456789"));
        // At offset 0 any file fits.
        let start = JsonlCursor::file_start(&key);
        assert!(start.fits_file(&key, (1, 2)) && start.fits_bytes(&key, (1, 2), b""));
    }
}
