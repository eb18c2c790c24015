//! Scratch folders and JSON Lines events for the event-wait tests.
#![allow(dead_code)] // each test binary uses part of it

use serde_json::json;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A scratch folder, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("waitfor-events-{name}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// One event as a JSON line.
pub fn line(kind: &str, summary: &str) -> String {
    json!({"type": kind, "at": "2026-01-01T00:00:00Z", "by": "ci", "summary": summary}).to_string()
        + "\n"
}

/// Appends text to a file, creating it.
pub fn append(path: &Path, text: &str) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[cfg(unix)]
/// Makes a FIFO at `path`.
pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A host that lets the event tool read the files under `dir`.
pub fn host_for(dir: &Path) -> waitfor::profiles::Host {
    waitfor::profiles::Host {
        grants: waitfor::grants::Grants::none().file_root(dir),
        ..waitfor::profiles::Host::default()
    }
}
