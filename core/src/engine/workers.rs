//! The worker threads probe calls run on.
//!
//! A small pool serves quick probes; when queued calls stop being taken
//! (every worker is stuck in a slow or hung probe) the scheduler notices
//! and adds a worker, so a hung probe never holds up another wait by more
//! than one starvation check. Extra workers leave after a while idle.

use super::call::ProbeJob;
use super::queue::Queue;
use super::scheduler::Msg;
use std::collections::VecDeque;
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
#[derive(Default)]
pub(crate) struct StarvationWatch {
    completed: u64,
    /// Since when calls have been seen queued with none finishing.
    stalled_since: Option<Instant>,
}

pub(crate) struct Workers {
    jobs: Arc<Queue<ProbeJob>>,
    shared: Arc<Counters>,
    /// Where the workers post their answers: the scheduler's inbox.
    inbox: Arc<Queue<Msg>>,
}

#[derive(Default)]
struct Counters {
    threads: AtomicUsize,
    completed: AtomicU64,
}

impl Workers {
    pub fn new(inbox: Arc<Queue<Msg>>) -> Self {
        let workers = Self {
            jobs: Arc::new(Queue::new()),
            shared: Arc::default(),
            inbox,
        };
        for _ in 0..MIN_WORKERS {
            workers.spawn();
        }
        workers
    }

    /// Queues probe calls, all at once: one lock and no more wake-ups
    /// than there are calls for sleeping workers.
    pub fn submit_all(&self, jobs: &mut Vec<ProbeJob>) {
        if !jobs.is_empty() {
            self.jobs.push_all(jobs.drain(..));
        }
    }

    /// Calls waiting for a worker.
    pub fn queued(&self) -> usize {
        self.jobs.len()
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
            watch.stalled_since = None;
            return;
        }
        // The clock starts when a queued call is first seen, not at the
        // last check: a call queued a moment ago is not a stall.
        match watch.stalled_since {
            None => watch.stalled_since = Some(now),
            Some(since) if now.duration_since(since) >= STARVATION_WINDOW => {
                self.spawn();
                watch.stalled_since = Some(now);
            }
            Some(_) => {}
        }
    }

    fn spawn(&self) {
        let threads = &self.shared.threads;
        if threads.fetch_add(1, Ordering::SeqCst) >= MAX_WORKERS {
            threads.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        let jobs = self.jobs.clone();
        let shared = self.shared.clone();
        let inbox = self.inbox.clone();
        let spawned = std::thread::Builder::new()
            .name("waitfor-worker".into())
            .spawn(move || work(&jobs, &shared, &inbox));
        if spawned.is_err() {
            threads.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn work(jobs: &Queue<ProbeJob>, shared: &Counters, inbox: &Queue<Msg>) {
    loop {
        match jobs.pop(Some(Instant::now() + IDLE_EXIT)) {
            Some(job) => {
                job.run(inbox);
                shared.completed.fetch_add(1, Ordering::Relaxed);
            }
            None => {
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
        }
    }
}

/// Threads that hand results and progress to the host, each serving the
/// waits whose ids fall to it: one wait's reports and result stay in
/// order, a host callback that blocks delays only its lane, and thousands
/// of waits ending together are delivered on more than one core.
pub(crate) struct Delivery {
    lanes: Vec<Arc<Queue<Job>>>,
    /// Deliveries decided but not handed over yet, by lane.
    pending: Vec<Vec<Job>>,
}

/// Delivery threads.
const DELIVERY_LANES: usize = 2;

/// A delivery thread's loop: takes every job queued at once (one lock per
/// batch, not per job: the scheduler hands out thousands of results in a
/// burst), and runs them in order.
fn deliver(queue: &Queue<Job>) -> ! {
    let mut batch = VecDeque::new();
    loop {
        batch.extend(queue.pop(None));
        queue.drain(&mut batch);
        for job in batch.drain(..) {
            // A host callback that panics loses its own delivery, not the
            // thread later results need.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        }
    }
}

impl Delivery {
    pub fn new() -> Self {
        let lanes: Vec<Arc<Queue<Job>>> = (0..DELIVERY_LANES)
            .map(|_| {
                let jobs: Arc<Queue<Job>> = Arc::new(Queue::new());
                let queue = jobs.clone();
                std::thread::Builder::new()
                    .name("waitfor-delivery".into())
                    .spawn(move || deliver(&queue))
                    .expect("cannot start a waitfor delivery thread");
                jobs
            })
            .collect();
        Self {
            pending: lanes.iter().map(|_| Vec::new()).collect(),
            lanes,
        }
    }

    /// Adds a delivery for wait `id`, handed over at the next submit.
    pub fn add(&mut self, id: u64, job: Job) {
        let lane = (id % self.lanes.len() as u64) as usize;
        self.pending[lane].push(job);
    }

    /// Deliveries added and not handed over yet.
    pub fn pending(&self) -> usize {
        self.pending.iter().map(Vec::len).sum()
    }

    /// Hands every pending delivery to its lane, all of a lane at once.
    pub fn submit_all(&mut self) {
        for (lane, jobs) in self.lanes.iter().zip(&mut self.pending) {
            if !jobs.is_empty() {
                lane.push_all(jobs.drain(..));
            }
        }
    }
}
