//! The `file` probe: bytes appended to a file since the wait began.

use super::file_watch::Watch;
use super::Waker;
use super::{Observation, Probe, ProbeContext, ProbeError, ProbeMode, Unchanged};
use crate::file_id;
use crate::grants::Grants;
use crate::keyed::{read_before, WINDOW};
use crate::resume::{FilePosition, ResumeToken};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The descriptors this process's table holds once a file probe has
/// opened one numbered [`MANY_DESCRIPTORS`] or above (see
/// [`make_descriptor_room`]).
#[cfg(target_os = "linux")]
const DESCRIPTOR_ROOM: usize = 1 << 14;

/// A process with this many descriptors open is likely to open many more
/// (thousands of file waits starting): see [`make_descriptor_room`].
#[cfg(target_os = "linux")]
const MANY_DESCRIPTORS: std::os::fd::RawFd = 128;

/// This process's open-files limit (the soft one).
#[cfg(target_os = "linux")]
fn open_files_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: an out-parameter of the right type.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0).then_some(limit.rlim_cur)
}

/// Once `file` is numbered [`MANY_DESCRIPTORS`] or above, grows the
/// process's descriptor table, once per process, to [`DESCRIPTOR_ROOM`]
/// (within its open-files limit). Each file wait keeps its file open, and
/// Linux grows the table of a threaded process by doubling, each time
/// holding the opener that grows it (and any opener needing the room)
/// back for an RCU grace period (about 10 ms here). 10,000 file waits
/// starting together met seven such stalls, which the engine read as hung
/// calls: it started hundreds to thousands of workers. Growing the table
/// to the room at once is one stall; a process with few files never pays
/// it. The table costs 8 bytes of kernel memory a descriptor.
#[cfg(target_os = "linux")]
fn make_descriptor_room(file: &File) {
    use std::os::fd::AsRawFd;
    use std::sync::atomic::AtomicU32;
    // The process that made room: a forked child's table is a new one.
    static MADE_BY: AtomicU32 = AtomicU32::new(0);
    if file.as_raw_fd() < MANY_DESCRIPTORS {
        return;
    }
    let here = std::process::id();
    if MADE_BY.swap(here, Ordering::Relaxed) == here {
        return;
    }
    let Some(limit) = open_files_limit() else {
        return;
    };
    let top = limit.min(DESCRIPTOR_ROOM as u64).saturating_sub(1);
    let top = libc::c_int::try_from(top).unwrap_or(libc::c_int::MAX);
    // SAFETY: duplicates an open descriptor at `top` or above (which grows
    // the table that far) and closes the copy, which is ours.
    unsafe {
        let copy = libc::fcntl(file.as_raw_fd(), libc::F_DUPFD_CLOEXEC, top);
        if copy >= 0 {
            libc::close(copy);
        }
    }
}

/// Reads what was appended to a file since the wait began, as a stream.
///
/// Copes with a file that does not exist yet (everything it gets is new),
/// truncation (reading starts again at the new end of what was kept),
/// rotation (the rest of the old file is read, then the new file from its
/// start) and a last line without a newline (it is returned as it is; the
/// rest of the line arrives with the next call). Bytes that end inside a
/// UTF-8 character wait for the next call.
///
/// In a wait, the probe is woken by a process-wide file watch (inotify on
/// Linux) as soon as its file changes, and a sample with nothing signalled
/// since the last read returns at once without touching the file (on
/// local filesystems; at least one real read a second even so): the
/// engine answers it without calling the probe (see
/// [`Probe::unchanged`]). Without a watch it reads at every sample.
///
/// Each probe keeps its file open. On Linux, in a process with 128
/// descriptors open, a file probe's open grows the process's descriptor
/// table to 16,384 entries (within the open-files limit) at once, rather
/// than doubling by steps as thousands of waits open theirs.
///
/// ```
/// use waitfor::probes::FileProbe;
/// use waitfor::Probe;
/// let probe = FileProbe::new("/tmp/does-not-exist-yet.log");
/// assert_eq!(probe.name(), "file");
/// ```
pub struct FileProbe {
    path: PathBuf,
    /// The file being followed, with its identity.
    open: Option<Followed>,
    /// Where reading starts when the path is first opened: `None` means the
    /// end (only appended bytes count); `Some` is a resume position, which
    /// must fit the file.
    start_at: Option<FilePosition>,
    /// Whether the first call happened (before it, an existing file's
    /// content is stale; after it, a newly created file is all new).
    started: bool,
    /// Bytes of an incomplete UTF-8 character from the last read.
    carry: Vec<u8>,
    /// The push source: wakes the wait and spares reads of an unchanged file.
    watch: Watch,
    /// Counts samples that read the file (a test hook).
    reads: Option<Arc<AtomicU64>>,
    /// Where the host lets it read (everywhere unless narrowed).
    grants: Grants,
    /// Whether the last sample moved [`Probe::resume_point`] (see
    /// [`Probe::moved_without_reading`]).
    moved: bool,
}

struct Followed {
    file: File,
    dev: u64,
    ino: u64,
    offset: u64,
    /// The last bytes before `offset` as they were read ([`KEPT`] at
    /// most): a resume token covers those before its own offset, so it
    /// fits only a file that still holds them (not another file that got
    /// this one's inode, nor this one rewritten in place).
    seen: Vec<u8>,
}

/// How many bytes before the offset [`Followed::seen`] keeps: the window a
/// token covers, and the start of a character carried to the next read
/// (at most 3 bytes), which lies after a token's offset.
const KEPT: usize = WINDOW + 4;

impl FileProbe {
    /// Follows `path` from its current end (or from its start if it does
    /// not exist yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            open: None,
            start_at: None,
            started: false,
            carry: Vec::new(),
            watch: Watch::default(),
            reads: None,
            grants: Grants::all(),
            moved: false,
        }
    }

    /// Reads only a regular file inside `grants`' file roots; anything
    /// else is a probe error saying why. A probe the host builds itself
    /// reads any regular file the process can.
    ///
    /// ```
    /// use waitfor::grants::Grants;
    /// let probe = waitfor::probes::FileProbe::new("/var/log/app.log").within(Grants::none().file_root("/var/log"));
    /// # let _ = probe;
    /// ```
    pub fn within(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }

    /// Counts in `reads` each sample that read the file, once its read is
    /// done (a test and benchmark hook).
    #[doc(hidden)]
    pub fn count_reads(mut self, reads: Arc<AtomicU64>) -> Self {
        self.reads = Some(reads);
        self
    }

    /// Continues from a resume token of an earlier wait on the same path
    /// in this process. A token that does not fit the file (another file
    /// is at the path, even one that reuses the old file's inode; the file
    /// was rewritten or is shorter than the token's position; or the token
    /// is from another process) fails every sample with a probe error
    /// saying so: nothing is replayed or skipped silently.
    pub fn resume_from(mut self, token: &ResumeToken) -> Self {
        if let ResumeToken::File(position) = token {
            self.start_at = Some(position.clone());
        }
        self
    }

    fn open_path(&mut self) -> Result<Option<Followed>, ProbeError> {
        let file = match self.grants.open_file(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            // Outside the roots, or not a regular file: no retry mends it.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::InvalidInput
                ) =>
            {
                return Err(ProbeError::refused(self.error("cannot open", e).message))
            }
            Err(e) => return Err(self.error("cannot open", e)),
        };
        #[cfg(target_os = "linux")]
        make_descriptor_room(&file);
        let meta = file.metadata().map_err(|e| self.error("cannot stat", e))?;
        let (dev, ino) = file_id::of_file(&file).map_err(|e| self.error("cannot stat", e))?;
        let offset = match (self.started, &self.start_at) {
            (_, Some(position)) => {
                // The device and inode first, then the bytes before the
                // offset: a file that took the inode of the token's file
                // (or the file rewritten in place) has the same identity.
                let found = match position
                    .offset_in(dev, ino)
                    .filter(|&offset| offset <= meta.len())
                {
                    Some(offset) => {
                        let seen = read_before(&file, offset, KEPT)
                            .map_err(|e| self.error("cannot read", e))?;
                        position.fits_before(&seen).then_some((offset, seen))
                    }
                    None => None,
                };
                let (offset, seen) = found.ok_or_else(|| {
                    ProbeError::refused(format!(
                        "the resume token does not fit {}: another file is there now (perhaps \
                         with the old one's inode), it was rewritten or is shorter than the \
                         token's position, or the token is from another process; wait again \
                         without it",
                        self.path.display()
                    ))
                })?;
                self.start_at = None;
                return Ok(Some(Followed {
                    file,
                    dev,
                    ino,
                    offset,
                    seen,
                }));
            }
            (false, None) => meta.len(),
            (true, None) => 0,
        };
        // Where a later token may be made before anything more is read.
        let seen = if offset == 0 {
            Vec::new()
        } else {
            read_before(&file, offset, KEPT).map_err(|e| self.error("cannot read", e))?
        };
        Ok(Some(Followed {
            file,
            dev,
            ino,
            offset,
            seen,
        }))
    }

    fn error(&self, what: &str, e: std::io::Error) -> ProbeError {
        ProbeError::new(format!("{what} {}: {e}", self.path.display()))
    }

    /// Reads from the followed file's offset to its end, until `out` holds
    /// `limit` bytes. The first `carried` bytes of `out` were carried over
    /// from this file's last read (the start of a character); they are
    /// dropped if the file was truncated since.
    fn read_new(
        &self,
        followed: &mut Followed,
        limit: usize,
        out: &mut Vec<u8>,
        carried: usize,
    ) -> Result<(), ProbeError> {
        let len = followed
            .file
            .metadata()
            .map_err(|e| self.error("cannot stat", e))?
            .len();
        if len < followed.offset {
            // Truncated: what is there now was written after the cut, and
            // what was carried belongs to the part cut off.
            followed.offset = 0;
            followed.seen.clear();
            out.drain(..carried.min(out.len()));
        }
        if len == followed.offset && len > 0 {
            // Nothing new: most samples stop here, spared a seek and a read.
            // (A size of 0 may be a file whose size says nothing, as in
            // /proc: that one is read.)
            return Ok(());
        }
        followed
            .file
            .seek(SeekFrom::Start(followed.offset))
            .map_err(|e| self.error("cannot seek", e))?;
        let before = out.len();
        (&mut followed.file)
            .take(limit.saturating_sub(out.len()) as u64)
            .read_to_end(out)
            .map_err(|e| self.error("cannot read", e))?;
        followed.offset += (out.len() - before) as u64;
        followed.seen.extend_from_slice(&out[before..]);
        let excess = followed.seen.len().saturating_sub(KEPT);
        followed.seen.drain(..excess);
        Ok(())
    }

    /// Where the probe stands: the followed file and the offset a token
    /// would take (before a carried character start).
    fn position(&self) -> Option<(u64, u64, u64)> {
        let followed = self.open.as_ref()?;
        let offset = followed.offset.saturating_sub(self.carry.len() as u64);
        Some((followed.dev, followed.ino, offset))
    }

    /// Whether the path now names another file than the one followed.
    fn rotated(&self, followed: &Followed) -> bool {
        file_id::of_path(&self.path).map_or(true, |id| id != (followed.dev, followed.ino))
    }
}

impl Probe for FileProbe {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        self.moved = false;
        if self.watch.nothing_new(&self.path) {
            return Ok(Observation::text(String::new()));
        }
        let before = self.position();
        // Read one byte past the cap so the engine sees the breach.
        let limit = ctx.output_cap.saturating_add(1);
        let mut bytes = std::mem::take(&mut self.carry);
        if self.open.is_none() {
            self.open = self.open_path()?;
        }
        if let Some(mut followed) = self.open.take() {
            let carried = bytes.len();
            self.read_new(&mut followed, limit, &mut bytes, carried)?;
            if self.rotated(&followed) {
                // The old file is drained; follow the new one from its start.
                self.open = self.open_path()?;
                if let Some(mut next) = self.open.take() {
                    next.offset = 0;
                    next.seen.clear();
                    self.read_new(&mut next, limit, &mut bytes, 0)?;
                    self.open = Some(next);
                }
            } else {
                self.open = Some(followed);
            }
        }
        self.started = true;
        if let Some(reads) = &self.reads {
            reads.fetch_add(1, Ordering::Relaxed);
        }
        match std::str::from_utf8(&bytes) {
            // Ends inside a character: keep its first bytes for later.
            Err(e) if e.error_len().is_none() => self.carry = bytes.split_off(e.valid_up_to()),
            _ => {}
        }
        self.moved = self.position() != before;
        Ok(Observation::bytes(&bytes))
    }

    fn moved_without_reading(&self) -> bool {
        self.moved
    }

    fn mode(&self) -> ProbeMode {
        ProbeMode::Stream
    }

    fn name(&self) -> &str {
        "file"
    }

    fn watch(&mut self, waker: Waker) {
        self.watch.set_waker(waker);
    }

    fn unchanged(&self) -> Option<Unchanged> {
        Some(Unchanged(self.watch.quiet()))
    }

    fn resume_point(&self) -> Option<ResumeToken> {
        let followed = self.open.as_ref()?;
        // The carried start of a character is the last bytes read: the
        // token's offset is before it, and so is the end of what it covers.
        let seen = &followed.seen[..followed.seen.len().saturating_sub(self.carry.len())];
        Some(ResumeToken::File(FilePosition::new(
            followed.dev,
            followed.ino,
            followed.offset.saturating_sub(self.carry.len() as u64),
            seen,
        )))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::CancelToken;
    use std::time::Duration;

    /// The size of this process's descriptor table (`FDSize`).
    fn table_size() -> usize {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("FDSize:")).unwrap();
        line["FDSize:".len()..].trim().parse().unwrap()
    }

    #[test]
    fn an_open_among_many_makes_room_for_thousands_of_descriptors() {
        let limit = open_files_limit().unwrap();
        if limit < DESCRIPTOR_ROOM as u64 {
            eprintln!("skipped: the open-files limit is {limit}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.log");
        std::fs::write(&path, "ready\n").unwrap();
        // More descriptors open than `MANY_DESCRIPTORS`, as file waits hold.
        let held: Vec<File> = (0..2 * MANY_DESCRIPTORS)
            .map(|_| File::open(&path).unwrap())
            .collect();
        // Doubled by steps these would need 256 entries; no "before" check:
        // another test in this process may have made the room already.
        let ctx = ProbeContext {
            sample: 1,
            elapsed: Duration::ZERO,
            budget: Duration::from_secs(5),
            cancel: CancelToken::new(),
            output_cap: 1 << 20,
        };
        FileProbe::new(&path).sample(&ctx).unwrap();
        assert!(table_size() >= DESCRIPTOR_ROOM, "FDSize {}", table_size());
        drop(held);
    }
}
