//! The worker threads probe calls run on.
//!
//! A small pool serves quick probes; when queued calls stop being taken
//! (every worker is stuck in a slow or hung probe) the scheduler notices
//! and adds a worker, so a hung probe never holds up another wait by more
//! than one starvation check. Extra workers leave after a while idle.

use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// Workers kept even when idle.
const MIN_WORKERS: usize = 2;
/// Workers never exceed this, however many probes hang.
const MAX_WORKERS: usize = 4096;
/// Queued calls waiting this long with no call finishing add a worker.
pub(crate) const STARVATION_WINDOW: Duration = Duration::from_millis(5);
/// An extra worker idle this long leaves.
const IDLE_EXIT: Duration = Duration::from_secs(10);

/// What the scheduler remembers between starvation checks.
pub(crate) struct StarvationWatch {
    completed: u64,
    since: Instant,
}

impl StarvationWatch {
    pub fn new(now: Instant) -> Self {
        Self {
            completed: 0,
            since: now,
        }
    }
}

pub(crate) struct Workers {
    tx: Sender<Job>,
    rx: Receiver<Job>,
    shared: Arc<Counters>,
}

#[derive(Default)]
struct Counters {
    threads: AtomicUsize,
    completed: AtomicU64,
}

impl Workers {
    pub fn new() -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        let workers = Self {
            tx,
            rx,
            shared: Arc::default(),
        };
        for _ in 0..MIN_WORKERS {
            workers.spawn();
        }
        workers
    }

    /// Queues a probe call.
    pub fn submit(&self, job: Job) {
        // The receiving side lives as long as `self`, so this cannot fail.
        let _ = self.tx.send(job);
    }

    /// Calls waiting for a worker.
    pub fn queued(&self) -> usize {
        self.rx.len()
    }

    /// Calls finished so far.
    pub fn completed(&self) -> u64 {
        self.shared.completed.load(Ordering::Relaxed)
    }

    /// Adds a worker when calls are queued and none has finished for a
    /// whole starvation window: every worker is busy with a slow call.
    /// At most one worker is added per window.
    pub fn relieve_starvation(&self, watch: &mut StarvationWatch, now: Instant) {
        let completed = self.completed();
        if completed != watch.completed || self.queued() == 0 {
            watch.completed = completed;
            watch.since = now;
        } else if now.duration_since(watch.since) >= STARVATION_WINDOW {
            self.spawn();
            watch.since = now;
        }
    }

    fn spawn(&self) {
        let threads = &self.shared.threads;
        if threads.fetch_add(1, Ordering::SeqCst) >= MAX_WORKERS {
            threads.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        let rx = self.rx.clone();
        let shared = self.shared.clone();
        let spawned = std::thread::Builder::new()
            .name("waitfor-worker".into())
            .spawn(move || work(&rx, &shared));
        if spawned.is_err() {
            threads.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn work(rx: &Receiver<Job>, shared: &Counters) {
    loop {
        match rx.recv_timeout(IDLE_EXIT) {
            Ok(job) => {
                job();
                shared.completed.fetch_add(1, Ordering::Relaxed);
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                let threads = shared.threads.load(Ordering::SeqCst);
                if threads > MIN_WORKERS
                    && shared
                        .threads
                        .compare_exchange(threads, threads - 1, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                {
                    return;
                }
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                shared.threads.fetch_sub(1, Ordering::SeqCst);
                return;
            }
        }
    }
}
