//! Real files for the file-probe tests: a fresh directory per test, and
//! appends as a log writer makes them.
#![allow(dead_code)] // each test binary uses part of it

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// An empty directory of the calling test's own, named after `name`,
/// removed with all it holds when dropped (a failing test's too).
pub fn temp_dir(name: &str) -> TempDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("waitfor-{name}-"))
        .tempdir()
        .unwrap();
    TempDir(dir)
}

/// See [`temp_dir`]: a path, while it lives.
pub struct TempDir(tempfile::TempDir);

impl std::ops::Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl From<&TempDir> for PathBuf {
    fn from(dir: &TempDir) -> PathBuf {
        dir.0.path().to_path_buf()
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

/// Appends `bytes` to `path`, creating it if needed.
pub fn append(path: &Path, bytes: &[u8]) {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}
