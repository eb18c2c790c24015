//! The worker threads probe calls run on.
//!
//! A small pool serves quick calls. When calls are queued and none has
//! finished for a starvation window, every worker is stuck in a slow or
//! hung probe: the pool then doubles, or grows by as many workers as calls
//! are queued if that is fewer (never past [`MAX_WORKERS`]), each new
//! worker starting the next (see [`Workers::grow`]). So 1,000 hung
//! calls hold 1,000 workers after ten windows, and a pool that merely
//! stalled (its threads waiting for a CPU on a loaded machine) grows by
//! little. A pool that has much to do keeps finishing calls and grows no
//! further. Extra workers leave after a while idle.
//!
//! Calls that need a host lock go to its lane instead (`lane.rs`), whose
//! drainers run here as tasks.

use super::call::ProbeJob;
use super::compile::CompileJob;
use super::cpu::CpuThreads;
use super::evaluate::EvaluateJob;
use super::lane::Lane;
use super::queue::{Queue, Urgent};
use super::scheduler::Msg;
use crate::cancel::{run_hooks, HookFn};
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// What a worker does, or a thread of [`CpuThreads`] (`Compile`,
/// `Evaluate`).
pub(crate) enum Task {
    /// Compiles a new wait's conditions.
    Compile(CompileJob),
    /// Makes a probe call.
    Call(ProbeJob),
    /// Makes the queued calls of a lane.
    Drain(Arc<Lane>),
    /// Reads a costly sample. Boxed: rare, and three times the size of a
    /// call, which every task in the queue would take otherwise.
    Evaluate(Box<EvaluateJob>),
}

/// The workers' queue: earliest deadline first. In order of arrival, a
/// quick call queued behind hung ones waits until the pool has grown a
/// worker for each of them; a hung call's wait can wait longer for its
/// turn than one whose deadline comes sooner.
pub(super) type Tasks = Queue<Urgent<Task>, BinaryHeap<Urgent<Task>>>;

/// How much later than its wait's deadline a probe call is placed in the
/// queue for each sample its wait has taken, up to [`SERVICE_STEPS`] of
/// them. By deadline alone, a wait started a moment before others always
/// came first: with more waits than the workers could keep up with (300
/// pane waits on one tmux server), the first ones started took every
/// sample and most of the others none, ending as "no sample completed".
pub(crate) const SERVICE_STEP: Duration = Duration::from_millis(10);
/// The most steps a call is placed back: past that, deadlines order the
/// calls again, so a wait never yields to ones whose deadlines come more
/// than 100 ms after its own (a quick call is not kept behind the first
/// calls of waits that will hang).
pub(crate) const SERVICE_STEPS: u64 = 10;

impl Task {
    /// The task's place in the queue, `now` being the time since the
    /// pool's start: when its wait ends, and a call a little later for
    /// each sample its wait has had ([`SERVICE_STEP`]), so that among
    /// waits ending about together the one served least goes first.
    /// Saturating: a deadline of centuries is last, not a panic.
    fn due(&self, now: Duration) -> Duration {
        match self {
            Task::Compile(job) => now.saturating_add(job.spec.max_wait),
            Task::Call(job) => {
                let served = job.call.sample.saturating_sub(1).min(SERVICE_STEPS);
                now.saturating_add(job.call.budget)
                    .saturating_add(SERVICE_STEP * served as u32)
            }
            Task::Drain(_) | Task::Evaluate(_) => now,
        }
    }

    pub(super) fn run(self, inbox: &Queue<Msg>) {
        match self {
            Task::Compile(job) => job.run(inbox),
            Task::Call(job) => job.run(inbox),
            Task::Drain(lane) => lane.drain(inbox),
            Task::Evaluate(job) => job.run(inbox),
        }
    }
}

/// Workers kept even when idle.
const MIN_WORKERS: usize = 2;
/// The most workers an engine runs, however many probe calls hang: each
/// hung call holds one. Past it, calls wait in the queue, and a wait
/// whose call is still queued at its deadline says the cap was reached.
pub(crate) const MAX_WORKERS: usize = 4096;
/// The most workers one starvation check adds. Doubling a pool of
/// thousands starts thousands of threads at once, whose starts (stack
/// mappings, under the process's memory-map lock) take the CPU the
/// quick calls need: `SOAK_WAITS=10000 scripts/soak.sh` peaked at 4,103
/// threads doubling all the way, 1,560 with this step, both for about
/// 1,000 calls hung at once.
const MAX_GROWTH_STEP: usize = 256;
/// Queued calls waiting this long with no call finishing add workers.
pub(crate) const STARVATION_WINDOW: Duration = Duration::from_millis(5);
/// An extra worker (or a CPU thread) idle this long leaves.
pub(super) const IDLE_EXIT: Duration = Duration::from_secs(10);

/// What the scheduler remembers between starvation checks.
#[derive(Default)]
pub(crate) struct StarvationWatch {
    completed: u64,
    /// Since when calls have been seen queued with none finishing.
    stalled_since: Option<Instant>,
}

pub(crate) struct Workers {
    jobs: Arc<Tasks>,
    shared: Arc<Counters>,
    /// Where the workers post their answers: the scheduler's inbox.
    inbox: Arc<Queue<Msg>>,
    /// The most workers this pool starts.
    cap: usize,
    /// A lane per host lock that calls need (see `lane.rs`).
    lanes: Vec<Arc<Lane>>,
    /// Tasks being handed to the workers (kept for its capacity).
    handing: Vec<Task>,
    /// Compiles and costly readings, on threads of their own.
    cpu: CpuThreads,
    /// Tasks queued so far: their order among those due together.
    queued_total: u64,
    /// When the pool started: tasks are due at times since then.
    epoch: Instant,
}

#[derive(Default)]
struct Counters {
    threads: AtomicUsize,
    /// Workers inside a call.
    busy: AtomicUsize,
    completed: AtomicU64,
}

impl Workers {
    /// A pool of at most `cap` workers.
    pub fn new(inbox: Arc<Queue<Msg>>, cap: usize) -> Self {
        let workers = Self {
            jobs: Arc::new(Queue::new()),
            shared: Arc::default(),
            cpu: CpuThreads::new(inbox.clone()),
            inbox,
            cap,
            lanes: Vec::new(),
            handing: Vec::new(),
            queued_total: 0,
            epoch: Instant::now(),
        };
        workers.grow(MIN_WORKERS);
        workers
    }

    /// Queues tasks, all at once: one lock and no more wake-ups than
    /// there are tasks for sleeping workers. A call that needs a host
    /// lock goes to its lane, with a drainer if none runs; compiles and
    /// costly readings go to the CPU threads.
    pub fn submit_all(&mut self, jobs: &mut Vec<Task>) {
        if jobs.is_empty() {
            return;
        }
        let now = Instant::now();
        // Rare: allocates only when one comes.
        let mut cpu_tasks = Vec::new();
        for task in jobs.drain(..) {
            let lock = match &task {
                Task::Call(call) => call.cell.host_lock.clone(),
                _ => None,
            };
            match (task, lock) {
                (Task::Call(call), Some(lock)) => {
                    let lane = self.lane(lock);
                    if lane.push(call, now) {
                        self.handing.push(Task::Drain(lane));
                    }
                }
                (task @ (Task::Compile(_) | Task::Evaluate(_)), _) => cpu_tasks.push(task),
                (task, _) => self.handing.push(task),
            }
        }
        if !cpu_tasks.is_empty() {
            let urgent = self.urgent(&mut cpu_tasks, now);
            self.cpu.push_all(urgent);
        }
        self.hand_over(now);
    }

    /// Queues the tasks being handed over, by their due time.
    fn hand_over(&mut self, now: Instant) {
        if self.handing.is_empty() {
            return;
        }
        let mut handing = std::mem::take(&mut self.handing);
        let urgent = self.urgent(&mut handing, now);
        self.jobs.push_all(urgent);
        self.handing = handing;
    }

    /// `tasks`, taken out, each with its place in a queue: when it is
    /// due, and its order of arrival.
    fn urgent<'a>(
        &mut self,
        tasks: &'a mut Vec<Task>,
        now: Instant,
    ) -> impl Iterator<Item = Urgent<Task>> + use<'a> {
        let first = self.queued_total;
        self.queued_total += tasks.len() as u64;
        let since_start = now.saturating_duration_since(self.epoch);
        tasks.drain(..).zip(first..).map(move |(item, seq)| Urgent {
            due: item.due(since_start),
            seq,
            item,
        })
    }

    /// Gives back the queues' room for more than `room` tasks.
    pub fn shrink_to(&self, room: usize) {
        self.jobs.shrink_to(room);
        self.cpu.shrink_to(room);
    }

    /// The lane of calls that need `lock`.
    fn lane(&mut self, lock: Arc<dyn crate::probe::HostLock>) -> Arc<Lane> {
        if let Some(lane) = self.lanes.iter().find(|lane| lane.serves(&lock)) {
            return lane.clone();
        }
        let lane = Arc::new(Lane::new(lock));
        self.lanes.push(lane.clone());
        lane
    }

    /// Calls and tasks waiting for a worker or a lane's drainer.
    pub fn queued(&self) -> usize {
        self.jobs.len() + self.lanes.iter().map(|lane| lane.queued()).sum::<usize>()
    }

    /// The most workers this pool starts.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Whether calls wait for a worker that the cap keeps from starting.
    pub fn at_cap(&self) -> bool {
        self.shared.threads.load(Ordering::SeqCst) >= self.cap && self.jobs.len() > 0
    }

    /// Grows the pool (see the module's doc) when calls are queued and
    /// none has finished for a whole starvation window: every worker is
    /// busy with a slow or hung call. Adds drainers to a lane whose
    /// drainers are all stuck in calls.
    pub fn relieve_starvation(&mut self, watch: &mut StarvationWatch, now: Instant) {
        self.lanes.retain(|lane| !lane.idle());
        for lane in &self.lanes {
            for _ in 0..lane.stuck_drainers(now) {
                self.handing.push(Task::Drain(lane.clone()));
            }
        }
        self.hand_over(now);
        let completed = self.shared.completed.load(Ordering::Relaxed);
        let queued = self.jobs.len();
        if completed != watch.completed || queued == 0 {
            watch.completed = completed;
            watch.stalled_since = None;
            return;
        }
        // The clock starts when a queued call is first seen, not at the
        // last check: a call queued a moment ago is not a stall.
        match watch.stalled_since {
            None => watch.stalled_since = Some(now),
            Some(since) if now.duration_since(since) >= STARVATION_WINDOW => {
                let threads = self.shared.threads.load(Ordering::SeqCst);
                let busy = self.shared.busy.load(Ordering::SeqCst);
                self.grow(workers_to_add(queued, threads, busy));
                watch.stalled_since = Some(now);
            }
            Some(_) => {}
        }
    }

    /// Counts up to `wanted` more workers under the cap, before they are
    /// started: counted workers not yet in a call are free ones, so the
    /// next starvation check does not grow the pool again for the calls
    /// they will take. Returns how many were counted.
    fn reserve(&self, wanted: usize) -> usize {
        let room = |n: usize| wanted.min(self.cap.saturating_sub(n));
        let threads = &self.shared.threads;
        threads
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (room(n) > 0).then(|| n + room(n))
            })
            .map_or(0, room)
    }

    /// Adds up to `wanted` workers. The scheduler starts the first; each
    /// new worker starts the next before it takes a call. Why a chain:
    /// a fresh thread gets a core soon, where one thread starting them all
    /// waits its turn among the hundreds already running (on a loaded
    /// 2-core machine it started about one a millisecond), and the
    /// scheduler, whose time every deadline depends on, starts only one.
    fn grow(&self, wanted: usize) {
        let count = self.reserve(wanted);
        if count > 0 {
            start_workers(count, &self.jobs, &self.shared, &self.inbox);
        }
    }
}

/// How many workers a starved pool adds: one per queued call that no
/// free worker (started, or counted and not yet in a call) will take,
/// at most as many as it has (it doubles) and at most
/// [`MAX_GROWTH_STEP`].
fn workers_to_add(queued: usize, threads: usize, busy: usize) -> usize {
    let free = threads.saturating_sub(busy);
    queued
        .saturating_sub(free)
        .min(threads.clamp(1, MAX_GROWTH_STEP))
}

/// Starts `count` workers counted by [`Workers::reserve`], one from
/// another; uncounts those no thread can be had for.
fn start_workers(count: usize, jobs: &Arc<Tasks>, shared: &Arc<Counters>, inbox: &Arc<Queue<Msg>>) {
    let (jobs, thread_shared, inbox) = (jobs.clone(), shared.clone(), inbox.clone());
    let spawned = std::thread::Builder::new()
        .name("waitfor-worker".into())
        .spawn(move || {
            if count > 1 {
                start_workers(count - 1, &jobs, &thread_shared, &inbox);
            }
            work(&jobs, &thread_shared, &inbox)
        });
    if spawned.is_err() {
        shared.threads.fetch_sub(count, Ordering::SeqCst);
    }
}

fn work(jobs: &Tasks, shared: &Counters, inbox: &Queue<Msg>) {
    loop {
        match jobs.pop(Some(Instant::now() + IDLE_EXIT)) {
            Some(job) => {
                shared.busy.fetch_add(1, Ordering::SeqCst);
                job.item.run(inbox);
                shared.busy.fetch_sub(1, Ordering::SeqCst);
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
                    // The last of a grown pool to leave (1,000 hung calls
                    // grew it to 1,000): what they freed goes back.
                    if threads - 1 == MIN_WORKERS {
                        crate::memory::give_back_freed_memory();
                    }
                    return;
                }
            }
        }
    }
}

/// Threads that run host code for the scheduler: results and progress
/// handed to the host, and the cancel hooks of ended waits. Results go to
/// lanes by their wait's id: thousands of waits ending together are
/// delivered on more than one core. Progress reports go to a lane of their
/// own, one at a time: a progress callback that blocks delays other
/// reports, never a result (a report of a wait that ended before it was
/// made is dropped, see `ProgressSink`). Cancel hooks have a lane of
/// their own too, not a worker: the call a hook wakes may hold the last
/// worker the cap allows; a hook that blocks delays the hooks of waits
/// ending after it, never a sample, a deadline or a result.
pub(crate) struct Delivery {
    lanes: Vec<Arc<Queue<Job>>>,
    /// Deliveries decided but not handed over yet, by lane.
    pending: Vec<Vec<Job>>,
    /// Whether the hook lane's thread runs: started with the first hooks,
    /// as most hosts register none.
    hook_thread: bool,
}

/// Threads that deliver results.
const RESULT_LANES: usize = 2;
/// The lane of progress reports, after the result lanes.
const REPORT_LANE: usize = RESULT_LANES;
/// The lane of cancel hooks, after the report lane.
const HOOK_LANE: usize = REPORT_LANE + 1;

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

/// Starts a thread running `lane`'s jobs; says whether it could. One that
/// ends waits is marked with its engine's `inbox` (see
/// `Engine::needs_this_thread`).
fn start_lane(name: &str, lane: &Arc<Queue<Job>>, ends_waits: Option<Arc<Queue<Msg>>>) -> bool {
    let queue = lane.clone();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            if let Some(inbox) = ends_waits {
                super::handle::mark_ending_thread(&inbox);
            }
            deliver(&queue)
        })
        .is_ok()
}

impl Delivery {
    /// The delivery threads of the engine whose inbox is `inbox`.
    pub fn new(inbox: &Arc<Queue<Msg>>) -> Self {
        let lanes: Vec<Arc<Queue<Job>>> = (0..=HOOK_LANE).map(|_| Arc::new(Queue::new())).collect();
        for (lane, jobs) in lanes[..HOOK_LANE].iter().enumerate() {
            // Reports end no wait: a host may block there for a result.
            let (name, ends_waits) = match lane {
                REPORT_LANE => ("waitfor-reports", None),
                _ => ("waitfor-delivery", Some(inbox.clone())),
            };
            assert!(
                start_lane(name, jobs, ends_waits),
                "cannot start a waitfor delivery thread"
            );
        }
        Self {
            pending: lanes.iter().map(|_| Vec::new()).collect(),
            lanes,
            hook_thread: false,
        }
    }

    /// Adds the delivery of wait `id`'s result, handed over at the next
    /// submit.
    pub fn add(&mut self, id: u64, job: Job) {
        let lane = (id % RESULT_LANES as u64) as usize;
        self.pending[lane].push(job);
    }

    /// Adds a progress report, handed over at the next submit.
    pub fn add_report(&mut self, job: Job) {
        self.pending[REPORT_LANE].push(job);
    }

    /// Adds the cancel hooks of one ended wait, run (each even if one
    /// before it panics) once handed over at the next submit.
    pub fn add_hooks(&mut self, hooks: Vec<HookFn>) {
        self.pending[HOOK_LANE].push(Box::new(move || drop(run_hooks(hooks))));
    }

    /// Gives back room for more than `room` deliveries, in each lane.
    pub fn shrink_to(&mut self, room: usize) {
        for (lane, pending) in self.lanes.iter().zip(&mut self.pending) {
            lane.shrink_to(room);
            pending.shrink_to(room);
        }
    }

    /// Deliveries added and not handed over yet.
    pub fn pending(&self) -> usize {
        self.pending.iter().map(Vec::len).sum()
    }

    /// Hands every pending delivery to its lane, all of a lane at once.
    pub fn submit_all(&mut self) {
        if !self.hook_thread && !self.pending[HOOK_LANE].is_empty() {
            // Without a thread to be had now, the hooks wait in the lane
            // for the next submit of hooks to start one.
            self.hook_thread = start_lane("waitfor-hooks", &self.lanes[HOOK_LANE], None);
        }
        for (lane, jobs) in self.lanes.iter().zip(&mut self.pending) {
            if !jobs.is_empty() {
                lane.push_all(jobs.drain(..));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_starved_pool_doubles_for_its_queued_calls_by_at_most_a_step() {
        // Two of four busy: two queued calls have a free worker each.
        assert_eq!(workers_to_add(2, 4, 2), 0);
        assert_eq!(workers_to_add(3, 4, 2), 1);
        // Doubles at most...
        assert_eq!(workers_to_add(1_000, 64, 64), 64);
        // ...and never by more than a step, however many calls wait.
        assert_eq!(workers_to_add(10_000, 2_048, 2_048), MAX_GROWTH_STEP);
        // A pool with no worker counted still gets one.
        assert_eq!(workers_to_add(5, 0, 0), 1);
    }

    #[test]
    fn workers_are_counted_before_they_start_and_never_past_the_cap() {
        let workers = Workers::new(Arc::new(Queue::new()), 5);
        assert_eq!(workers.shared.threads.load(Ordering::SeqCst), MIN_WORKERS);
        assert_eq!(workers.reserve(2), 2);
        // Counted at once, started or not: the next check sees them.
        assert_eq!(workers.shared.threads.load(Ordering::SeqCst), 4);
        assert_eq!(workers.reserve(10), 1, "one place left under the cap");
        assert_eq!(workers.reserve(1), 0);
    }

    /// A burst of compiles grows the CPU threads' queue; it gives that
    /// room back with the workers' queue, as the scheduler's collections do
    /// once no wait is left.
    #[test]
    fn the_cpu_queue_gives_back_its_room_with_the_workers_queue() {
        let inbox = Arc::new(Queue::new());
        let mut workers = Workers::new(inbox.clone(), 5);
        let burst = 1_000;
        let mut tasks: Vec<Task> = (0..burst).map(super::super::cpu::quick_compile).collect();
        workers.submit_all(&mut tasks);
        while inbox.len() < burst as usize {
            std::thread::yield_now();
        }
        workers.shrink_to(64);
        assert!(workers.cpu.room() <= 64, "{}", workers.cpu.room());
    }
}
