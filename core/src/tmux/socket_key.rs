//! How this process tells tmux servers apart (by their socket), and what
//! it keeps per server.

use crate::sync::Mutex;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Weak};

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

/// One `T` per server, shared while something holds it, made by the first
/// to ask. A forked child gets a `T` of its own each time: it may have
/// inherited the lock held, and the parent's values count the parent's
/// threads, which the child does not have.
pub(super) struct PerServer<T> {
    owner: u32,
    values: Mutex<HashMap<SocketKey, Weak<T>>>,
}

impl<T: Default> PerServer<T> {
    /// Values for this process.
    pub(super) fn new() -> Self {
        Self {
            owner: std::process::id(),
            values: Mutex::default(),
        }
    }

    /// The value of the server `key` names (compute the key before: it
    /// stats a file, which is never done under the lock).
    pub(super) fn get(&self, key: SocketKey) -> Arc<T> {
        if self.owner != std::process::id() {
            return Arc::default();
        }
        let mut values = self.values.lock();
        if let Some(value) = values.get(&key).and_then(Weak::upgrade) {
            return value;
        }
        values.retain(|_, value| value.strong_count() > 0);
        let value = Arc::new(T::default());
        values.insert(key, Arc::downgrade(&value));
        value
    }
}
