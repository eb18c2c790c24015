//! One process-wide file watch: the `file` probe's push source.
//!
//! A single `notify` watcher (inotify on Linux, one thread) watches the
//! parent directory of every followed file, non-recursively, so writes,
//! creation, rotation by rename and deletion of the file are all seen. A
//! directory is watched once, however many probes follow files in it, and
//! unwatched when its last probe goes.
//!
//! A probe's [`Watch`] registers its path at its first sample (once the
//! engine gave it a [`Waker`]). An event for the path marks the probe
//! dirty and wakes its wait; a sample with nothing signalled since the
//! last real read may then skip reading (see [`Watch::nothing_new`]), and
//! the engine answers it without a call (the probe's [`Quiet`], shared as
//! [`super::Unchanged`]).
//! Whatever goes wrong (no watcher, inotify limits, no such directory, a
//! filesystem whose events are not trusted, a forked child, which has
//! none of its parent's threads and maybe its locks held for good), the
//! probe reads at every sample as it would without a watch.

use super::Waker;
use crate::sync::Mutex;
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A registered probe reads for real at least this often, even with
/// nothing signalled: a safety net against a lost event (a hard link
/// written through another directory, a file written through `mmap`).
const SAFETY_READ: Duration = Duration::from_secs(1);

/// A probe whose registration failed tries again after this long.
const RETRY: Duration = Duration::from_secs(1);

/// What a probe's watch shares, for the probe's life, with the watcher's
/// thread and with the engine running its wait (see [`Unchanged`]).
pub(crate) struct Quiet {
    /// Something happened to the path since the probe's last real read.
    dirty: AtomicBool,
    /// The watch of the directory is gone (the directory was deleted or
    /// moved): the registration no longer hears anything.
    lost: AtomicBool,
    /// Until when ([`ticks`]) nothing new can be there while nothing is
    /// signalled: a [`SAFETY_READ`] after the last real read by a trusted
    /// registration; 0 otherwise.
    until: AtomicU64,
}

impl Quiet {
    fn new() -> Self {
        Self {
            dirty: AtomicBool::new(false),
            lost: AtomicBool::new(false),
            until: AtomicU64::new(0),
        }
    }

    /// Whether a sample now would read nothing new: registered where
    /// events are trusted, nothing signalled since the last real read,
    /// and that read less than [`SAFETY_READ`] ago.
    pub(crate) fn holds(&self, now: Instant) -> bool {
        !self.dirty.load(Ordering::SeqCst)
            && !self.lost.load(Ordering::SeqCst)
            && ticks(now) < self.until.load(Ordering::SeqCst)
    }
}

/// `at` as nanoseconds since the first call (0 then and before).
fn ticks(at: Instant) -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let nanos = at.saturating_duration_since(*EPOCH.get_or_init(Instant::now));
    u64::try_from(nanos.as_nanos()).unwrap_or(u64::MAX)
}

/// One registration as the watcher's thread holds it.
struct Signal {
    quiet: Arc<Quiet>,
    waker: Waker,
}

impl Signal {
    /// Marks the probe dirty; returns the waker to wake, once per real
    /// read: a wake already sent and not yet answered by a read covers
    /// this event.
    fn mark(&self) -> Option<&Waker> {
        (!self.quiet.dirty.swap(true, Ordering::SeqCst)).then_some(&self.waker)
    }
}

/// Probes following files in one watched directory.
struct Dir {
    /// Whether the directory's filesystem reports every change (see
    /// [`events_are_complete`]).
    trusted: bool,
    /// By file name, the registrations on that name by id.
    files: HashMap<OsString, HashMap<u64, Arc<Signal>>>,
}

impl Dir {
    fn signals(&self) -> impl Iterator<Item = &Arc<Signal>> {
        self.files.values().flat_map(|by_id| by_id.values())
    }
}

#[derive(Default)]
struct Table {
    dirs: HashMap<PathBuf, Dir>,
    /// Directories whose watch was lost: unwatched later, off the
    /// watcher's thread (which cannot call its own watcher).
    stale: Vec<PathBuf>,
}

struct Registry {
    /// Taken for every watch and unwatch, which wait for the watcher's
    /// thread: never while `table` is held, and never by that thread.
    watcher: Mutex<Option<RecommendedWatcher>>,
    /// What the watcher's thread reads on each event.
    table: Mutex<Table>,
    enabled: AtomicBool,
    next_id: AtomicU64,
    /// The process whose watcher's thread this is: a forked child leaves
    /// the registry alone.
    pid: u32,
}

impl Registry {
    fn ours(&self) -> bool {
        self.pid == std::process::id()
    }
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry {
        watcher: Mutex::new(None),
        table: Mutex::new(Table::default()),
        enabled: AtomicBool::new(true),
        next_id: AtomicU64::new(1),
        pid: std::process::id(),
    })
}

/// Runs on the watcher's thread for every event: wakes the waits of the
/// probes it concerns, all in one hand-off.
fn on_event(event: notify::Result<Event>) {
    let mut table = registry().table.lock();
    let event = match event {
        // An error or a queue overflow: any probe may have missed something.
        Ok(event) if !event.need_rescan() => event,
        _ => {
            let all = table.dirs.values().flat_map(Dir::signals);
            Waker::wake_all(all.filter_map(|s| s.mark()));
            return;
        }
    };
    if matches!(event.kind, EventKind::Access(_)) {
        // Opening or closing a file changes nothing in it.
        return;
    }
    let gone = matches!(
        event.kind,
        EventKind::Remove(_) | EventKind::Modify(notify::event::ModifyKind::Name(_))
    );
    let mut lost = Vec::new();
    for path in &event.paths {
        if let Some(dir) = gone.then(|| table.dirs.remove(path)).flatten() {
            // A watched directory itself was deleted or moved.
            for signal in dir.signals() {
                signal.quiet.lost.store(true, Ordering::SeqCst);
                lost.push(signal.clone());
            }
            table.stale.push(path.clone());
        }
    }
    let concerned = event.paths.iter().filter_map(|path| {
        let dir = table.dirs.get(path.parent()?)?;
        dir.files.get(path.file_name()?)
    });
    let signals = concerned.flat_map(|by_id| by_id.values()).chain(&lost);
    Waker::wake_all(signals.filter_map(|s| s.mark()));
}

/// One probe's entry in the watch; dropping it unregisters.
struct Registration {
    dir: PathBuf,
    name: OsString,
    id: u64,
    trusted: bool,
}

impl Registration {
    /// Registers `path` (watching its directory if no probe does yet) for
    /// `quiet`, whose marks it resets, or `None` if that cannot be done
    /// now.
    fn new(path: &Path, waker: Waker, quiet: &Arc<Quiet>) -> Option<Self> {
        let registry = registry();
        if !registry.enabled.load(Ordering::Relaxed) || !registry.ours() {
            return None;
        }
        let name = path.file_name()?.to_os_string();
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        // Events name the directory as it was watched: one spelling each.
        let dir = std::fs::canonicalize(parent).ok()?;
        // A symbolic link's target changes elsewhere, unseen here: its
        // events wake, but every sample reads.
        let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        quiet.dirty.store(false, Ordering::SeqCst);
        quiet.lost.store(false, Ordering::SeqCst);
        let signal = Arc::new(Signal {
            quiet: quiet.clone(),
            waker,
        });
        let id = registry.next_id.fetch_add(1, Ordering::Relaxed);
        let mut watcher = registry.watcher.lock();
        unwatch_stale(&mut watcher);
        let known = registry.table.lock().dirs.get(&dir).map(|d| d.trusted);
        let dir_trusted = match known {
            Some(trusted) => trusted,
            None => {
                if watcher.is_none() {
                    *watcher = RecommendedWatcher::new(on_event, notify::Config::default()).ok();
                }
                watcher
                    .as_mut()?
                    .watch(&dir, RecursiveMode::NonRecursive)
                    .ok()?;
                events_are_complete(&dir)
            }
        };
        registry
            .table
            .lock()
            .dirs
            .entry(dir.clone())
            .or_insert_with(|| Dir {
                trusted: dir_trusted,
                files: HashMap::new(),
            })
            .files
            .entry(name.clone())
            .or_default()
            .insert(id, signal);
        Some(Self {
            dir,
            name,
            id,
            trusted: dir_trusted && !link,
        })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let registry = registry();
        if !registry.ours() {
            return; // Made by the parent of this forked child.
        }
        let mut watcher = registry.watcher.lock();
        unwatch_stale(&mut watcher);
        let emptied = {
            let mut table = registry.table.lock();
            let Some(dir) = table.dirs.get_mut(&self.dir) else {
                return; // Lost: the entry went with its directory.
            };
            if let Some(by_id) = dir.files.get_mut(&self.name) {
                by_id.remove(&self.id);
                if by_id.is_empty() {
                    dir.files.remove(&self.name);
                }
            }
            let emptied = dir.files.is_empty();
            if emptied {
                table.dirs.remove(&self.dir);
            }
            emptied
        };
        if emptied {
            if let Some(watcher) = watcher.as_mut() {
                let _ = watcher.unwatch(&self.dir);
            }
        }
    }
}

/// Unwatches directories whose watch was lost (the caller holds the
/// watcher's lock, so no new watch of the same path races this).
fn unwatch_stale(watcher: &mut Option<RecommendedWatcher>) {
    let stale = std::mem::take(&mut registry().table.lock().stale);
    if let Some(watcher) = watcher.as_mut() {
        for dir in stale {
            let _ = watcher.unwatch(&dir);
        }
    }
}

/// A probe's side of the watch: its waker, its registration, and what it
/// shares with the watcher's thread and the engine.
pub(crate) struct Watch {
    waker: Option<Waker>,
    registration: Option<Registration>,
    quiet: Arc<Quiet>,
    retry_at: Option<Instant>,
}

impl Default for Watch {
    fn default() -> Self {
        Self {
            waker: None,
            registration: None,
            quiet: Arc::new(Quiet::new()),
            retry_at: None,
        }
    }
}

impl Watch {
    /// Keeps the wait's waker; registration waits for the first sample.
    pub fn set_waker(&mut self, waker: Waker) {
        self.waker = Some(waker);
    }

    /// What tells, without the probe, whether a sample would read nothing
    /// new (see [`Watch::nothing_new`]).
    pub fn quiet(&self) -> Arc<Quiet> {
        self.quiet.clone()
    }

    /// Called at the start of every sample of `path`: true when nothing
    /// can have changed since the last real read, so the sample may
    /// return nothing new without a system call. Otherwise the caller
    /// reads for real, and any event from now on is heard (the dirty mark
    /// is cleared before the read, never after).
    pub fn nothing_new(&mut self, path: &Path) -> bool {
        let now = Instant::now();
        if self.registration.is_some() {
            if self.quiet.lost.load(Ordering::SeqCst) {
                self.registration = None;
                self.retry_at = None;
            } else if self.quiet.holds(now) {
                return true;
            }
        }
        if self.registration.is_none() && self.retry_at.is_none_or(|at| now >= at) {
            if let Some(waker) = &self.waker {
                self.registration = Registration::new(path, waker.clone(), &self.quiet);
                self.retry_at = Some(now + RETRY);
            }
        }
        self.quiet.dirty.store(false, Ordering::SeqCst);
        // Trusted, the watch answers for the file until the safety read.
        let until = match &self.registration {
            Some(registration) if registration.trusted => ticks(now + SAFETY_READ),
            _ => 0,
        };
        self.quiet.until.store(until, Ordering::SeqCst);
        false
    }
}

/// Whether a filesystem reports every change to inotify: local ones do;
/// network, FUSE and pseudo filesystems (NFS, CIFS, FUSE, procfs, sysfs)
/// may change without an event, so their files are read at every sample.
#[cfg(target_os = "linux")]
fn events_are_complete(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const LOCAL: [u32; 8] = [
        0xEF53,      // ext2, ext3, ext4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0x0102_1994, // tmpfs
        0x794C_7630, // overlayfs
        0x2FC1_2FC1, // zfs
        0xF2F5_2010, // f2fs
        0x8584_58F6, // ramfs
    ];
    let Ok(cpath) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut stat = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: a valid NUL-terminated path and a buffer of the right type.
    if unsafe { libc::statfs(cpath.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: statfs returned 0, so it filled the buffer.
    let magic = unsafe { stat.assume_init() }.f_type as u32;
    LOCAL.contains(&magic)
}

#[cfg(not(target_os = "linux"))]
fn events_are_complete(_dir: &Path) -> bool {
    false
}

/// Test and benchmark hooks; not part of the API.
pub mod hooks {
    use super::*;

    /// Turns the watch on or off for probes that register from now on
    /// (off: every file probe polls, as a benchmark's baseline).
    pub fn set_enabled(enabled: bool) {
        registry().enabled.store(enabled, Ordering::Relaxed);
    }

    /// Probes registered on files in `dir` now (0 also means `dir` is no
    /// longer watched).
    pub fn registrations(dir: &Path) -> usize {
        let Ok(dir) = std::fs::canonicalize(dir) else {
            return 0;
        };
        registry()
            .table
            .lock()
            .dirs
            .get(&dir)
            .map_or(0, |d| d.signals().count())
    }

    /// Whether samples of files in `dir` may skip reading (its filesystem
    /// reports every change).
    pub fn skips_reads_in(dir: &Path) -> bool {
        events_are_complete(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{probe_fn, Condition, Engine, Observation, Pattern, Spec, WaitHandle};

    /// A wait that never samples again on its own, for its waker.
    fn idle_wait() -> WaitHandle {
        let spec = Spec::new(Condition::Matches(Pattern::literal("never")))
            .interval(Duration::from_secs(600))
            .max_wait(Duration::from_secs(1200));
        Engine::global()
            .start(spec, probe_fn(|_| Ok(Observation::text(""))))
            .unwrap()
    }

    /// An empty directory of the test's own, removed when dropped.
    fn temp_dir(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("waitfor-unit-{name}-"))
            .tempdir()
            .unwrap()
    }

    fn until(what: &str, cond: impl Fn() -> bool) {
        let end = Instant::now() + Duration::from_secs(60);
        while !cond() {
            assert!(Instant::now() < end, "never happened: {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_queue_overflow_marks_every_probe_dirty() {
        let wait = idle_wait();
        let dir = temp_dir("overflow");
        let dir = dir.path();
        let quiet = Arc::new(Quiet::new());
        let _registration =
            Registration::new(&dir.join("a.log"), wait.control().waker(), &quiet).unwrap();
        assert!(!quiet.dirty.load(Ordering::SeqCst));
        on_event(Ok(
            Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan)
        ));
        assert!(quiet.dirty.load(Ordering::SeqCst));
        wait.control().cancel();
    }

    #[test]
    fn a_deleted_directory_loses_its_registrations_and_they_read_again() {
        let wait = idle_wait();
        let dir = temp_dir("deleted");
        let dir = dir.path();
        let path = dir.join("a.log");
        let mut watch = Watch::default();
        watch.set_waker(wait.control().waker());
        assert!(!watch.nothing_new(&path), "the first sample reads");
        assert!(hooks::registrations(dir) == 1);
        std::fs::remove_dir(dir).unwrap();
        let quiet = watch.quiet();
        until("lost", || quiet.lost.load(Ordering::SeqCst));
        assert!(!watch.nothing_new(&path));
        assert!(watch.registration.is_none(), "no directory to watch yet");
        wait.control().cancel();
    }

    /// With nothing signalled since a recent read, the engine answers a
    /// watched file's samples itself: they go on, counted and reported,
    /// while another wait's call holds every worker.
    #[test]
    fn samples_of_an_unchanged_file_need_no_worker() {
        let dir = temp_dir("no-worker");
        if !events_are_complete(dir.path()) {
            eprintln!(
                "skipped: {} is not trusted for events",
                dir.path().display()
            );
            return;
        }
        let path = dir.path().join("quiet.log");
        std::fs::write(&path, "before\n").unwrap();
        let engine = Engine::with_worker_cap(1);
        let (reads, samples) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut spec = Spec::new(Condition::Matches(Pattern::literal("never")))
            .interval(Duration::from_millis(10))
            .max_wait(Duration::from_secs(600));
        spec.progress_every = Duration::from_millis(1);
        let reported = samples.clone();
        let options = crate::WaitOptions::default().on_progress(move |progress| {
            reported.fetch_max(progress.samples, Ordering::SeqCst);
        });
        let probe = crate::probes::FileProbe::new(&path).count_reads(reads.clone());
        let file = engine
            .start_with(spec, Some(Box::new(probe)), options)
            .unwrap();
        until("the first read", || reads.load(Ordering::SeqCst) == 1);
        // The one worker is held by a call that waits for the test.
        let (entered_tx, entered) = std::sync::mpsc::channel();
        let (release_tx, release) = std::sync::mpsc::channel::<()>();
        let holder = engine
            .start(
                Spec::new(Condition::Matches(Pattern::literal("never"))),
                probe_fn(move |_| {
                    let _ = entered_tx.send(());
                    let _ = release.recv_timeout(Duration::from_secs(60));
                    Ok(Observation::text(""))
                }),
            )
            .unwrap();
        entered.recv_timeout(Duration::from_secs(60)).unwrap();
        let before = samples.load(Ordering::SeqCst);
        until("samples while the worker is held", || {
            samples.load(Ordering::SeqCst) >= before + 3
        });
        let _ = release_tx.send(());
        file.control().cancel();
        holder.control().cancel();
        assert_eq!(file.wait().outcome, crate::Outcome::Cancelled);
    }

    #[test]
    fn only_local_filesystems_are_trusted() {
        assert!(!events_are_complete(Path::new("/proc")));
        assert!(!events_are_complete(Path::new("/no/such/dir")));
    }
}
