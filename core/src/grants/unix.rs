//! Opening a granted file on Unix: non-blocking, so a FIFO cannot hold the
//! open; the open file's real path read back from the kernel.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// Where [`super::Grants::all`] lets files be read: everywhere.
pub(super) fn filesystem_roots() -> Vec<PathBuf> {
    vec![PathBuf::from("/")]
}

/// Opens `path` for reading with `O_NONBLOCK`: opening a FIFO with no
/// writer returns at once instead of waiting for one.
pub(super) fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// Opens the directory `path` (links followed) for a command to run in:
/// `O_DIRECTORY`, so anything else is refused, and close-on-exec (the
/// standard library's default), so no command inherits it. On Linux
/// `O_PATH`, which `fchdir` accepts, so a directory the host may enter but
/// not list is opened too.
pub(super) fn open_dir(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    #[cfg(target_os = "linux")]
    let flags = libc::O_DIRECTORY | libc::O_PATH;
    #[cfg(not(target_os = "linux"))]
    let flags = libc::O_DIRECTORY;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
}

/// Where an open file really is: its `/proc/self/fd` link.
#[cfg(target_os = "linux")]
pub(super) fn opened_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

/// Where an open file really is: `fcntl(F_GETPATH)`.
#[cfg(target_vendor = "apple")]
pub(super) fn opened_path(file: &File) -> Option<PathBuf> {
    use std::ffi::OsString;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStringExt;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: F_GETPATH writes at most PATH_MAX bytes, NUL included, to a
    // buffer of that size; the descriptor is open.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETPATH, buf.as_mut_ptr()) } == -1 {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0)?;
    buf.truncate(len);
    Some(PathBuf::from(OsString::from_vec(buf)))
}

/// Other Unix systems: only the check of the resolved path before the open.
#[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
pub(super) fn opened_path(_file: &File) -> Option<PathBuf> {
    None
}

/// The name of a kind of file that is neither regular nor a directory.
pub(super) fn special_kind(kind: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        None
    }
}
