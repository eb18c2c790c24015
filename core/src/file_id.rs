//! Which file a path or an open file is, as two numbers that stay the same
//! while the file exists and differ between files that exist at once: the
//! device and inode on Unix, the volume serial number and file index on
//! Windows. The file probe and the typed event reader use them to tell a
//! rotated or replaced file from the one they followed.

use std::fs::File;
use std::io;
use std::path::Path;

/// The identity of an open file: `(device, inode)` or `(volume, index)`.
#[cfg(unix)]
pub(crate) fn of_file(file: &File) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    Ok((meta.dev(), meta.ino()))
}

/// The identity of the file at `path` (links followed).
#[cfg(unix)]
pub(crate) fn of_path(path: &Path) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

/// The identity of an open file: `(volume serial number, file index)`.
#[cfg(windows)]
pub(crate) fn of_file(file: &File) -> io::Result<(u64, u64)> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{
        GetFileInformationByHandle, BY_HANDLE_FILE_INFORMATION,
    };
    let mut info = BY_HANDLE_FILE_INFORMATION::default();
    // SAFETY: an open handle and an out-parameter of the right type.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
    Ok((u64::from(info.dwVolumeSerialNumber), index))
}

/// The identity of the file at `path` (links followed), read through a
/// handle that asks for no access, so it neither conflicts with another
/// process's sharing mode nor keeps the file from being renamed or deleted.
#[cfg(windows)]
pub(crate) fn of_path(path: &Path) -> io::Result<(u64, u64)> {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_BACKUP_SEMANTICS;
    let file = std::fs::OpenOptions::new()
        .access_mode(0)
        // Needed to open a directory at all; with no access asked, it
        // reads nothing.
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    of_file(&file)
}
