//! The JSONL source's cursor: a position in a file plus what the file looked
//! like there, so that a cursor from another process or an earlier run can
//! tell whether it still points into the same file.

use std::fmt;

/// How many bytes before the cursor's offset its hash covers.
pub(crate) const WINDOW: usize = 64;

/// A position in an append-only JSON Lines file, as text:
/// `j1.{offset}.{line}.{dev}.{ino}.{hash}`.
///
/// - `offset`: bytes consumed (decimal); the next read starts there.
/// - `line`: lines consumed (decimal), so reported line numbers stay absolute.
/// - `dev`, `ino`: the file's device and inode (hex; 0 off Unix), which
///   change when another file is moved into place.
/// - `hash`: FNV-1a 64 of the (up to) 64 bytes just before `offset` (16 hex
///   digits), which changes when the file is truncated and rewritten in place.
///
/// The text uses only `[a-z0-9.]`, so it is one shell word and needs no
/// quoting.
///
/// ```
/// use waitfor::ouro::JsonlCursor;
/// let c = JsonlCursor { offset: 120, line: 3, dev: 0x801, ino: 0x1a2b, hash: 0xfeed };
/// let text = c.to_string();
/// assert_eq!(text, "j1.120.3.801.1a2b.000000000000feed");
/// assert_eq!(JsonlCursor::parse(&text), Ok(c));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonlCursor {
    /// Bytes consumed.
    pub offset: u64,
    /// Lines consumed.
    pub line: u64,
    /// Device of the file.
    pub dev: u64,
    /// Inode of the file.
    pub ino: u64,
    /// FNV-1a 64 of the bytes just before `offset`.
    pub hash: u64,
}

impl JsonlCursor {
    /// The cursor at the start of any file: nothing consumed yet.
    ///
    /// ```
    /// use waitfor::ouro::JsonlCursor;
    /// assert_eq!(JsonlCursor::file_start().offset, 0);
    /// ```
    pub fn file_start() -> JsonlCursor {
        JsonlCursor {
            offset: 0,
            line: 0,
            dev: 0,
            ino: 0,
            hash: fnv1a(b""),
        }
    }

    /// Reads a cursor written by [`JsonlCursor`]'s `Display`; the error says
    /// what is wrong with it.
    ///
    /// ```
    /// use waitfor::ouro::JsonlCursor;
    /// assert!(JsonlCursor::parse("j1.0.0.0.0.0").is_ok());
    /// assert!(JsonlCursor::parse("42").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<JsonlCursor, String> {
        let parts: Vec<&str> = text.split('.').collect();
        let [tag, offset, line, dev, ino, hash] = parts[..] else {
            return Err("expected j1.<offset>.<line>.<dev>.<ino>.<hash>".into());
        };
        if tag != "j1" {
            return Err(format!("unknown cursor version {tag:?} (expected j1)"));
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
            u64::from_str_radix(s, 16).map_err(|_| format!("{name} is too large"))
        };
        Ok(JsonlCursor {
            offset: dec("offset", offset)?,
            line: dec("line", line)?,
            dev: hex("dev", dev)?,
            ino: hex("ino", ino)?,
            hash: hex("hash", hash)?,
        })
    }
}

impl fmt::Display for JsonlCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "j1.{}.{}.{:x}.{:x}.{:016x}",
            self.offset, self.line, self.dev, self.ino, self.hash
        )
    }
}

/// FNV-1a, 64 bits: small, stable across processes and Rust versions.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The hash of the window that ends at `end` in `bytes`.
pub(crate) fn window_hash(bytes: &[u8], end: usize) -> u64 {
    fnv1a(&bytes[end.saturating_sub(WINDOW)..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_cursors() {
        for bad in [
            "",
            "j1",
            "j2.0.0.0.0.0",
            "j1.x.0.0.0.0",
            "j1.0.0.0.0",
            "j1.0.0.0.0.0.0",
            "j1.-1.0.0.0.0",
            "j1.0.0.zz.0.0",
            "j1.99999999999999999999.0.0.0.0",
            "j1.0.0.0.0.11111111111111111",
            "j1.+1.0.0.0.0",
        ] {
            assert!(JsonlCursor::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn fnv_known_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
