//! Opening a granted file on Windows: shared with the file's writer, the
//! open file's final path read back from its handle.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::windows::ffi::OsStringExt;
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};
use windows_sys::Win32::Storage::FileSystem::{
    GetFinalPathNameByHandleW, GetLogicalDrives, FILE_NAME_NORMALIZED, VOLUME_NAME_DOS,
};

/// Where [`super::Grants::all`] lets files be read: the root of every
/// drive letter present now.
pub(super) fn filesystem_roots() -> Vec<PathBuf> {
    // SAFETY: plain call; a bit per drive letter, A first.
    let drives = unsafe { GetLogicalDrives() };
    (b'A'..=b'Z')
        .enumerate()
        .filter(|(i, _)| drives & (1 << i) != 0)
        .map(|(_, letter)| PathBuf::from(format!("{}:\\", letter as char)))
        .collect()
}

/// Opens `path` for reading, sharing read, write and delete access (the
/// standard library's default), so the program writing a log can go on
/// appending to, renaming and deleting it. Opening a file does not block on
/// Windows. A directory cannot be opened for reading: that is reported
/// as `IsADirectory`, for the caller to refuse.
pub(super) fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path).map_err(|e| match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => io::Error::from(io::ErrorKind::IsADirectory),
        _ => e,
    })
}

/// Where an open file really is: `GetFinalPathNameByHandleW`, in the same
/// `\\?\C:\...` form `std::fs::canonicalize` gives the granted roots.
pub(super) fn opened_path(file: &File) -> Option<PathBuf> {
    let mut buf = vec![0u16; 512];
    loop {
        // SAFETY: an open handle and a buffer of `buf.len()` UTF-16 units.
        let n = unsafe {
            GetFinalPathNameByHandleW(
                file.as_raw_handle(),
                buf.as_mut_ptr(),
                buf.len() as u32,
                FILE_NAME_NORMALIZED | VOLUME_NAME_DOS,
            )
        } as usize;
        if n == 0 {
            return None;
        }
        // Below the buffer's size, `n` is the path's length; otherwise it
        // is the size the path needs.
        if n < buf.len() {
            buf.truncate(n);
            return Some(PathBuf::from(OsString::from_wide(&buf)));
        }
        buf.resize(n, 0);
    }
}

/// Windows has no kinds beyond files and directories to name here.
pub(super) fn special_kind(_kind: &std::fs::FileType) -> Option<&'static str> {
    None
}
