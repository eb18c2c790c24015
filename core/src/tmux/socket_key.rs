//! How this process tells tmux servers apart: by their socket.

use std::path::PathBuf;

/// A tmux server's socket: the file (device and inode) when it exists,
/// so that every name reaching one server is one key; else its path (no
/// server listens there, and a call fails).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum SocketKey {
    File(u64, u64),
    Path(PathBuf),
}

impl SocketKey {
    /// The key of the socket at `path`.
    pub(super) fn of(path: PathBuf) -> Self {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(&path) {
            Ok(meta) => Self::File(meta.dev(), meta.ino()),
            Err(_) => Self::Path(path),
        }
    }
}
