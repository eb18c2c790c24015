//! The secret that keys cursors and resume tokens. A cursor carries a
//! keyed hash (HMAC-SHA256) of the file's identity and of the bytes before
//! its offset instead of the facts themselves, so the server can tell
//! whether a cursor still fits its file while an agent holding the cursor
//! learns nothing it was not shown, and cannot test guesses about the
//! file's content.
//!
//! Both a JSONL cursor and a file resume token cover the same bytes before
//! their offset ([`WINDOW`], [`window`], [`read_before`]): kept here, below
//! both `resume` and `ouro`, so the two read and cut them alike.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::OnceLock;

/// How many bytes just before its offset a cursor's or a file resume
/// token's keyed hash covers. A file replaced by another that got its
/// device and inode (a freed inode handed to the next file), or rewritten
/// in place, differs there unless its last 64 bytes before the offset are
/// the same; a file only appended to never does.
pub(crate) const WINDOW: usize = 64;

/// The part of `before` (the bytes before an offset, oldest first) that a
/// keyed hash of them covers: its last [`WINDOW`] bytes, fewer near the
/// file's start (none at offset 0, where every file fits).
pub(crate) fn window(before: &[u8]) -> &[u8] {
    &before[before.len().saturating_sub(WINDOW)..]
}

/// Reads the (up to) `most` bytes of `file` just before `offset`: fewer
/// near its start, and fewer when the file now ends before `offset` (so a
/// truncated file does not fit a hash of what was there). Leaves the
/// file's position after what it read.
pub(crate) fn read_before(mut file: &File, offset: u64, most: usize) -> io::Result<Vec<u8>> {
    let start = offset.saturating_sub(most as u64);
    let mut bytes = Vec::with_capacity(usize::try_from(offset - start).unwrap_or(most));
    file.seek(SeekFrom::Start(start))?;
    file.take(offset - start).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The key of cursors and resume tokens.
///
/// The default, [`CursorKey::process`], is random per process: a cursor
/// made by one process is refused by another (a restarted server's agents
/// start again from `"end"` or the file's start). A host that wants cursors
/// to outlive a restart keys them with its own secret
/// ([`CursorKey::from_secret`]).
///
/// ```
/// use waitfor::ouro::CursorKey;
/// let a = CursorKey::from_secret(b"the host's own secret, kept safe");
/// let b = CursorKey::from_secret(b"the host's own secret, kept safe");
/// assert_eq!(a, b);
/// assert_ne!(a, CursorKey::process());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct CursorKey([u8; 32]);

impl CursorKey {
    /// This process's key: 32 bytes from the operating system's random
    /// source, drawn once.
    pub fn process() -> CursorKey {
        static KEY: OnceLock<CursorKey> = OnceLock::new();
        KEY.get_or_init(|| {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).expect("the operating system's random source works");
            CursorKey(bytes)
        })
        .clone()
    }

    /// A key derived from the host's own secret: cursors keyed by it fit
    /// in every process that knows the secret.
    pub fn from_secret(secret: &[u8]) -> CursorKey {
        CursorKey(mac_with(secret, "waitfor cursor key", &[]))
    }

    /// A key everyone knows, for a caller who may read every file the
    /// process can anyway (a user at their own shell, as with the
    /// `waitfor events` command), whose cursors must work in the next
    /// process. Never for an agent's tool.
    ///
    /// ```
    /// assert_eq!(waitfor::ouro::CursorKey::public(), waitfor::ouro::CursorKey::public());
    /// ```
    pub fn public() -> CursorKey {
        CursorKey::from_secret(b"waitfor: a public key, for callers who may read every file")
    }

    /// HMAC-SHA256 of `parts` under `domain` (each part length-prefixed,
    /// so no two lists of parts hash alike).
    pub(crate) fn mac(&self, domain: &str, parts: &[&[u8]]) -> [u8; 32] {
        keyed(&self.0, domain, parts).finalize().into_bytes().into()
    }

    /// Whether `tag` is the start of [`CursorKey::mac`] of the same input,
    /// compared in constant time.
    pub(crate) fn verify(&self, domain: &str, parts: &[&[u8]], tag: &[u8]) -> bool {
        keyed(&self.0, domain, parts)
            .verify_truncated_left(tag)
            .is_ok()
    }
}

impl Default for CursorKey {
    /// [`CursorKey::process`].
    fn default() -> Self {
        CursorKey::process()
    }
}

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

fn mac_with(key: &[u8], domain: &str, parts: &[&[u8]]) -> [u8; 32] {
    keyed(key, domain, parts).finalize().into_bytes().into()
}

fn keyed(key: &[u8], domain: &str, parts: &[&[u8]]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    for part in std::iter::once(domain.as_bytes()).chain(parts.iter().copied()) {
        mac.update(&(part.len() as u64).to_le_bytes());
        mac.update(part);
    }
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_not_ambiguous() {
        let key = CursorKey::public();
        assert_ne!(key.mac("d", &[b"ab", b"c"]), key.mac("d", &[b"a", b"bc"]));
        assert_ne!(key.mac("d", &[b"x"]), key.mac("e", &[b"x"]));
    }

    #[test]
    fn the_window_is_the_last_bytes_before_the_offset() {
        let bytes: Vec<u8> = (0..100).collect();
        assert_eq!(window(&bytes), &bytes[36..]);
        assert_eq!(window(&bytes[..10]), &bytes[..10]);
        assert!(window(&[]).is_empty());
    }

    #[test]
    fn read_before_reads_up_to_the_offset_and_no_further() {
        let path = std::env::temp_dir().join(format!("waitfor-keyed-{}", std::process::id()));
        std::fs::write(&path, b"0123456789").unwrap();
        let file = File::open(&path).unwrap();
        assert_eq!(read_before(&file, 7, 4).unwrap(), b"3456");
        assert_eq!(read_before(&file, 3, 64).unwrap(), b"012");
        assert!(read_before(&file, 0, 64).unwrap().is_empty());
        // Past the end (truncated since): only what is still there.
        assert_eq!(read_before(&file, 12, 4).unwrap(), b"89");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn the_process_key_is_drawn_once_and_is_not_public() {
        assert_eq!(CursorKey::process(), CursorKey::process());
        assert_ne!(CursorKey::process(), CursorKey::public());
        assert_eq!(format!("{:?}", CursorKey::process()), "CursorKey(..)");
    }
}
