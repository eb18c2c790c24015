//! The scheduler: keeps every wait's next sample and deadline, decides
//! each probe call and hands it to the workers, and hands results to the
//! delivery threads. Host probe calls never run on its thread.

use super::call::{panic_message, panicked, ProbeJob, ANSWER_WAIT};
use super::compile::{self, CompileJob, Compiled};
use super::evaluate::{EvaluateJob, Evaluated};
use super::handle::{ProbeHolder, Slot};
use super::queue::Queue;
use super::timers::{Due, Timers};
use super::workers::{Delivery, Job, StarvationWatch, Task, Workers, STARVATION_WINDOW};
use crate::cancel::CancelToken;
use crate::machine::{Ending, Machine, ProbeCall, Progress, Step};
use crate::probe::{Observation, ProbeContext, ProbeError, ProbeMode, Reply, Unchanged};
use crate::result::{Outcome, WaitResult};
use crate::resume::ResumeToken;
use crate::spec::Spec;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) type Answer = Result<Observation, ProbeError>;
pub(crate) type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// A wait's progress callback, and the report waiting in the report lane
/// (at most one: a newer report replaces it). Why: with a report queued per
/// sample, a host callback slower than the samples (20 ms against 10 ms)
/// built a backlog. Results have lanes of their own, so a slow callback
/// (a 20 s one) holds no result past its deadline.
pub(crate) struct ProgressSink {
    report: ProgressFn,
    queued: Arc<crate::sync::Mutex<Option<Progress>>>,
}

impl ProgressSink {
    pub fn new(report: ProgressFn) -> Self {
        Self {
            report,
            queued: Arc::default(),
        }
    }

    /// Drops the report waiting in the lane, if any: its wait ended, and
    /// its result is not held for it (nor told after it).
    fn drop_queued(&self) {
        self.queued.lock().take();
    }

    /// Queues `progress` to be reported: a job for the report lane, or
    /// none when one already waits there (it reports this one instead).
    fn queue(&self, progress: Progress) -> Option<Job> {
        if self.queued.lock().replace(progress).is_some() {
            return None;
        }
        let (report, queued) = (self.report.clone(), self.queued.clone());
        Some(Box::new(move || {
            let latest = queued.lock().take();
            if let Some(progress) = latest {
                report(&progress);
            }
        }))
    }
}
pub(crate) type DoneFn = Box<dyn FnOnce(&WaitResult) + Send>;

/// A wait as the scheduler keeps it.
pub(crate) struct Active {
    pub machine: Machine,
    pub probe: ProbeHolder,
    /// What says a call of a blocking probe would read nothing new: the
    /// scheduler then answers it (see [`Unchanged`]).
    pub unchanged: Option<Unchanged>,
    pub slot: Arc<Slot>,
    pub on_progress: Option<ProgressSink>,
    pub on_done: Option<DoneFn>,
    /// What the host gave the wait to keep until it ends
    /// ([`super::WaitOptions::hold`]).
    pub _held: Vec<Box<dyn Send>>,
    pub span: tracing::Span,
    /// Whether the result carries a resume token (fresh view).
    pub resumable: bool,
    /// The probe's mode, read once at start.
    pub mode: ProbeMode,
    /// The token every probe call of this wait gets: calls are abandoned
    /// only when the wait ends, so one token serves them all.
    pub call_cancel: CancelToken,
    /// What an async probe's calls get: a child of `call_cancel`, which
    /// the probe may cancel without ending the wait (renewed if it did).
    pub probe_cancel: CancelToken,
    /// Number of the call in flight, so a late answer is recognised.
    pub call: u64,
    /// Whether the wait began a call whose answer it has not taken: the
    /// probe may stand past what the wait saw (an answer dropped for a
    /// cancel, or still on its way).
    pub answer_pending: bool,
    /// Sequence number of the valid sample timer.
    pub timer_seq: u64,
    /// Where a stream probe stood after the last call (the first, or one
    /// that read something) whose answer the wait took: the token when a
    /// call is in flight at the end. Boxed, as in the message: most waits
    /// never have one.
    pub resume_point: Option<Box<ResumeToken>>,
}

impl Active {
    /// Whether the wait takes the answer to `call`: an abandoned call, or
    /// a reading its stand-in ended, answers late.
    fn awaits(&self, call: u64) -> bool {
        self.call == call && self.machine.is_probing()
    }
}

/// Answers, and other messages, one turn handles at most of each; the rest
/// wait for the next turn.
const MESSAGES_PER_TURN: usize = 1024;

/// Calls or deliveries decided in one turn past this many are handed out
/// before the turn ends.
const HAND_OUT_CHUNK: usize = 128;

/// Items each of the scheduler's collections keeps room for once no wait
/// is left: a burst grows them (1,000 waits with hung calls: over half a
/// megabyte), and they would keep that room for good.
const ROOM_KEPT_IDLE: usize = 64;

pub(crate) enum Msg {
    /// A new wait, and its spec to compile.
    Start(u64, Box<Active>, Box<Spec>),
    /// A new wait's conditions, compiled (or why not).
    Compiled {
        id: u64,
        conditions: Compiled,
    },
    ProbeDone {
        id: u64,
        call: u64,
        result: Answer,
        /// Where the probe stands after this call (asked for a stream
        /// probe of a resumable wait only). Boxed: every answer carries the
        /// field, few a token.
        resume: Option<Box<ResumeToken>>,
    },
    /// A costly sample, read on a worker by the wait's machine (see
    /// `evaluate.rs`).
    Evaluated {
        id: u64,
        call: u64,
        machine: Box<Machine>,
        step: Evaluated,
    },
    Cancel(u64),
    Wake(u64),
}

pub(crate) struct Scheduler {
    inbox: Arc<Queue<Msg>>,
    epoch: Instant,
    /// Boxed: a wait is ~740 bytes, moved on every insert, removal and
    /// table growth otherwise (with 10,000 waits, a third of a burst of
    /// ends went to `memmove` and the allocator).
    waits: HashMap<u64, Box<Active>, BuildHasherDefault<IdHasher>>,
    /// Messages taken from the inbox and not handled yet, answers aside.
    inbox_batch: VecDeque<Msg>,
    /// Answers to calls taken from the inbox and not handled yet.
    answers: VecDeque<Msg>,
    /// What this turn took from the inbox (kept for its capacity).
    fresh: Vec<Msg>,
    timers: Timers,
    /// Timers due this turn (kept for its capacity).
    due: Vec<Due>,
    next_seq: u64,
    workers: Workers,
    delivery: Delivery,
    /// Compiles and probe calls decided during this turn of the loop,
    /// handed to the workers together at its end.
    calls: Vec<Task>,
    starvation: StarvationWatch,
    /// Probe calls handed out whose answer has not come in yet.
    calls_out: usize,
    /// Whether the last turn took in an answer.
    took_answer: bool,
    /// Tokens of the waits whose endings wait to be handed to delivery:
    /// marked cancelled, their sleepers woken and their hooks handed to
    /// the hook thread once the endings are handed over (see
    /// [`Scheduler::finish`]).
    ended_tokens: Vec<CancelToken>,
    /// The process this thread runs in, which alone reads the inbox.
    owner: u32,
}

impl Scheduler {
    /// A scheduler whose probe calls run on at most `worker_cap` workers.
    pub fn new(inbox: Arc<Queue<Msg>>, epoch: Instant, worker_cap: usize) -> Self {
        let delivery = Delivery::new(&inbox);
        Self {
            epoch,
            waits: HashMap::default(),
            inbox_batch: VecDeque::new(),
            answers: VecDeque::new(),
            fresh: Vec::new(),
            timers: Timers::default(),
            due: Vec::new(),
            next_seq: 1,
            workers: Workers::new(inbox.clone(), worker_cap),
            inbox,
            delivery,
            calls: Vec::new(),
            starvation: StarvationWatch::default(),
            calls_out: 0,
            took_answer: false,
            ended_tokens: Vec::new(),
            owner: std::process::id(),
        }
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// One turn's first half: sleeps until a message or the next timer,
    /// takes in every message waiting, and fires due timers.
    fn gather(&mut self) {
        let mut wake_at = self.timers.next();
        if self.workers.queued() > 0 {
            let check = self.now() + STARVATION_WINDOW;
            wake_at = Some(wake_at.map_or(check, |at| at.min(check)));
        }
        // Answers coming in while more calls are out: the next ones are
        // likely moments away (a lane making its queued calls one after
        // another). Up by an answer's wait anyway, this thread lets them
        // come in together (`ProbeJob::run` wakes no one awake by then):
        // one wake-up for the lot instead of one each.
        if self.took_answer && self.calls_out > 0 {
            let soon = self.now() + ANSWER_WAIT;
            wake_at = Some(wake_at.map_or(soon, |at| at.min(soon)));
        }
        self.took_answer = false;
        // With messages left from the last turn, this turn starts at once.
        if self.inbox_batch.is_empty() && self.answers.is_empty() {
            // No instant that far ahead (a limit of centuries): sleep
            // until a message.
            let wake_at = wake_at.and_then(|at| self.epoch.checked_add(at));
            if let Some(msg) = self.inbox.pop(wake_at) {
                self.fresh.push(msg);
            }
        }
        // Answers go first, the rest after what the last turns left: the
        // answers to calls a turn started are taken in the next, not after
        // every wake that came with them (10,000 waits woken by one file
        // event).
        self.inbox.drain(&mut self.fresh);
        for msg in self.fresh.drain(..) {
            match msg {
                Msg::ProbeDone { .. } | Msg::Evaluated { .. } => self.answers.push_back(msg),
                _ => self.inbox_batch.push_back(msg),
            }
        }
        // At most a turn's share of each: the calls it starts are made and
        // their results delivered before the next share is taken (10,000
        // waits woken by one file event do not all wait for the last one),
        // and the timers due fire after a share, not after every answer
        // of a burst (a host loop answering thousands of calls at once).
        let mut answers = std::mem::take(&mut self.answers);
        self.handle_share(&mut answers);
        self.answers = answers;
        let mut others = std::mem::take(&mut self.inbox_batch);
        self.handle_share(&mut others);
        self.inbox_batch = others;
        self.fire_timers();
    }

    /// Handles the first [`MESSAGES_PER_TURN`] messages of `queue` (taken
    /// out of `self` meanwhile, its capacity kept); the rest stay there.
    fn handle_share(&mut self, queue: &mut VecDeque<Msg>) {
        for msg in queue.drain(..queue.len().min(MESSAGES_PER_TURN)) {
            let now = self.now();
            self.handle(msg, now);
            self.hand_out_early();
        }
    }

    /// In a long turn (thousands of waits ending together), hands out what
    /// is decided so far, so workers and the delivery thread start on it
    /// while this thread goes on.
    fn hand_out_early(&mut self) {
        if self.calls.len() >= HAND_OUT_CHUNK {
            self.workers.submit_all(&mut self.calls);
        }
        if self.delivery.pending() >= HAND_OUT_CHUNK {
            self.hand_out_endings();
        }
    }

    /// Hands every ending decided so far to delivery, then wakes the calls
    /// of those waits (see [`Scheduler::finish`]) and hands their probes'
    /// cancel hooks to the hook thread: host code, which may block, never
    /// runs on this thread. The engine's own quick hooks (a command run's
    /// wake socket) run here.
    fn hand_out_endings(&mut self) {
        self.delivery.submit_all();
        for token in self.ended_tokens.drain(..) {
            let mut hooks = Vec::new();
            // A quick hook that panics (every hook has run by then) stops
            // neither this thread nor the other tokens.
            let _ = token.cancel_leaving_host_hooks(&mut hooks);
            if !hooks.is_empty() {
                self.delivery.add_hooks(hooks);
            }
        }
        self.delivery.submit_all();
    }

    /// One turn's second half: hands out the calls and deliveries the
    /// turn decided, and looks after the worker pool and the timers.
    fn flush(&mut self) {
        self.workers.submit_all(&mut self.calls);
        self.hand_out_endings();
        self.workers
            .relieve_starvation(&mut self.starvation, Instant::now());
        self.compact_timers();
        if self.waits.is_empty() {
            self.give_back_room();
        }
    }

    /// Shrinks every collection a burst of waits grew past
    /// [`ROOM_KEPT_IDLE`] (a comparison each when none did).
    fn give_back_room(&mut self) {
        self.waits.shrink_to(ROOM_KEPT_IDLE);
        self.inbox_batch.shrink_to(ROOM_KEPT_IDLE);
        self.answers.shrink_to(ROOM_KEPT_IDLE);
        self.fresh.shrink_to(ROOM_KEPT_IDLE);
        self.due.shrink_to(ROOM_KEPT_IDLE);
        self.calls.shrink_to(ROOM_KEPT_IDLE);
        self.ended_tokens.shrink_to(ROOM_KEPT_IDLE);
        self.timers.shrink_to(ROOM_KEPT_IDLE);
        self.inbox.shrink_to(ROOM_KEPT_IDLE);
        self.workers.shrink_to(ROOM_KEPT_IDLE);
        self.delivery.shrink_to(ROOM_KEPT_IDLE);
    }

    /// Runs the scheduler on the calling thread, for ever: each turn
    /// gathers messages and due timers, decides, and hands calls to the
    /// workers and results to delivery.
    pub fn run(mut self) -> ! {
        super::handle::mark_ending_thread(&self.inbox);
        loop {
            self.gather();
            self.flush();
        }
    }

    /// Handles `msg` at `now` (time since the epoch).
    fn handle(&mut self, msg: Msg, now: Duration) {
        let id = match msg {
            Msg::Start(id, ..)
            | Msg::Compiled { id, .. }
            | Msg::ProbeDone { id, .. }
            | Msg::Evaluated { id, .. }
            | Msg::Cancel(id)
            | Msg::Wake(id) => id,
        };
        if let Msg::ProbeDone { .. } | Msg::Evaluated { .. } = msg {
            self.calls_out = self.calls_out.saturating_sub(1);
            self.took_answer = true;
        }
        self.for_wait(id, |scheduler| scheduler.handle_for_wait(id, msg, now));
    }

    /// Runs `work` on wait `id`'s behalf. A panic in it (in the wait's
    /// machine, or in an async probe's `begin`) ends that
    /// wait with outcome `error`, and the scheduler goes on with the rest.
    fn for_wait(&mut self, id: u64, work: impl FnOnce(&mut Self)) {
        let Err(panic) = catch_unwind(AssertUnwindSafe(|| work(self))) else {
            return;
        };
        let now = self.now();
        let Some(active) = self.waits.get_mut(&id) else {
            return;
        };
        // Its probe is not asked where to resume: that may be what panicked.
        active.resumable = false;
        let message = format!(
            "the engine panicked while running this wait: {}",
            panic_message(panic.as_ref())
        );
        let ending = active.machine.fail(now, message);
        self.finish(id, ending);
    }

    fn handle_for_wait(&mut self, id: u64, msg: Msg, now: Duration) {
        // Cancelled by the host, whose `Msg::Cancel` may still be on its way
        // (`WaitControl::cancel` cancels the token first): whatever a
        // compile, call or reading answers now, the wait ends cancelled.
        if !matches!(msg, Msg::Start(..)) && self.end_if_host_cancelled(id, now) {
            return;
        }
        match msg {
            Msg::Start(id, active, spec) => {
                let deadline = active.machine.deadline();
                let ended = active.call_cancel.clone();
                self.waits.insert(id, active);
                self.timers.arm_deadline(deadline, id);
                if let Some(conditions) = compile::from_cache(&spec) {
                    let step = self
                        .waits
                        .get_mut(&id)
                        .map(|a| a.machine.start(now, conditions));
                    return self.apply(id, step);
                }
                self.calls
                    .push(Task::Compile(CompileJob { id, spec, ended }));
            }
            Msg::Compiled { id, conditions } => {
                let step = self.waits.get_mut(&id).map(|a| match conditions {
                    Ok(conditions) => a.machine.start(now, conditions),
                    Err(message) => Step::Done(a.machine.fail(now, message)),
                });
                self.apply(id, step);
            }
            Msg::ProbeDone {
                id,
                call,
                result,
                resume,
            } => {
                let Some(a) = self.waits.get_mut(&id).filter(|a| a.awaits(call)) else {
                    return;
                };
                a.answer_pending = false;
                if resume.is_some() {
                    a.resume_point = resume;
                }
                if a.machine.costly_to_read(&result) {
                    // The clone stands in here while the machine reads.
                    let mut stand_in = a.machine.clone();
                    stand_in.stands_in();
                    let machine = Box::new(std::mem::replace(&mut a.machine, stand_in));
                    self.calls_out += 1;
                    self.calls.push(Task::Evaluate(Box::new(EvaluateJob {
                        id,
                        call,
                        machine,
                        answer: result,
                        now,
                        ended: a.call_cancel.clone(),
                    })));
                    return;
                }
                let step = a.machine.on_probe(now, result);
                self.report_progress(id);
                self.apply(id, Some(step));
            }
            Msg::Evaluated {
                id,
                call,
                machine,
                step,
            } => {
                // Unless the stand-in ended the wait (or a later call is out).
                let Some(a) = self.waits.get_mut(&id).filter(|a| a.awaits(call)) else {
                    return;
                };
                let woken_meanwhile = a.machine.wake_pending();
                a.machine = *machine;
                let step = match step {
                    Ok(Step::Idle) if woken_meanwhile => a.machine.on_wake(now),
                    Ok(step) => step,
                    Err(panic) => Step::Done(a.machine.fail(
                        now,
                        format!("the engine panicked while running this wait: {panic}"),
                    )),
                };
                self.report_progress(id);
                self.apply(id, Some(step));
            }
            Msg::Cancel(id) => {
                let step = self.waits.get_mut(&id).map(|a| a.machine.on_cancel(now));
                self.apply(id, step);
            }
            Msg::Wake(id) => {
                let step = self.waits.get_mut(&id).map(|a| a.machine.on_wake(now));
                self.apply(id, step);
            }
        }
    }

    /// Ends wait `id` `cancelled` if the host cancelled it (its token is
    /// cancelled while it runs: `WaitControl::cancel` cancels it before
    /// posting `Msg::Cancel`); says whether it did.
    fn end_if_host_cancelled(&mut self, id: u64, now: Duration) -> bool {
        let Some(active) = self.waits.get_mut(&id) else {
            return false;
        };
        if !active.call_cancel.is_cancelled() {
            return false;
        }
        let step = active.machine.on_cancel(now);
        self.apply(id, Some(step));
        true
    }

    fn fire_timers(&mut self) {
        let now = self.now();
        let mut due = std::mem::take(&mut self.due);
        self.timers.take_due(now, &mut due);
        for (id, seq) in due.drain(..) {
            self.for_wait(id, |scheduler| {
                // The host's cancel came before its message: it, not the
                // deadline (nor the worker cap), ends the wait.
                if scheduler.end_if_host_cancelled(id, now) {
                    return;
                }
                if seq == 0 {
                    scheduler.tell_of_worker_cap(id, now);
                }
                let step = scheduler
                    .waits
                    .get_mut(&id)
                    .filter(|a| seq == 0 || seq == a.timer_seq)
                    .map(|a| a.machine.on_timer(now));
                scheduler.apply(id, step);
            });
            self.hand_out_early();
        }
        self.due = due;
    }

    /// At its deadline, a wait whose probe call is still queued because
    /// every worker the cap allows is held by a call says so, rather than
    /// timing out unexplained: its queued call is answered with that error.
    fn tell_of_worker_cap(&mut self, id: u64, now: Duration) {
        if !self.workers.at_cap() {
            return;
        }
        let Some(active) = self.waits.get_mut(&id) else {
            return;
        };
        let cap_reached = format!(
            "the engine's cap of {} worker threads is reached, each one held by a \
             probe call that has not returned",
            self.workers.cap()
        );
        // A call that runs holds its probe's lock; a stand-in's call has
        // returned (its sample is being read).
        let call_queued = match &active.probe {
            ProbeHolder::Blocking(cell) => {
                active.machine.is_probing()
                    && !active.machine.is_standing_in()
                    && cell.probe.try_lock().is_some()
            }
            ProbeHolder::Deferred(_) => false,
        };
        if !call_queued {
            return;
        }
        let error = format!("no probe call could start: {cap_reached}");
        let step = active
            .machine
            .on_probe(now, Err(ProbeError::refused(error)));
        self.apply(id, Some(step));
    }

    fn apply(&mut self, id: u64, step: Option<Step>) {
        match step {
            None => {}
            Some(Step::Probe(call)) => self.start_call(id, call),
            Some(Step::Idle) => self.arm_sample_timer(id),
            Some(Step::Done(ending)) => self.finish(id, ending),
        }
    }

    fn arm_sample_timer(&mut self, id: u64) {
        let Some(active) = self.waits.get_mut(&id) else {
            return;
        };
        let Some(until) = active.machine.sleeping_until() else {
            return;
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        active.timer_seq = seq;
        self.timers
            .arm_sample(until, active.machine.deadline(), id, seq);
    }

    fn start_call(&mut self, id: u64, call: ProbeCall) {
        let at = Instant::now();
        let now = at.saturating_duration_since(self.epoch);
        // The host cancelled (its `Msg::Cancel` is on its way): no call.
        if self.end_if_host_cancelled(id, now) {
            return;
        }
        let Some(active) = self.waits.get_mut(&id) else {
            return;
        };
        if active.unchanged.as_ref().is_some_and(|u| u.holds(at)) {
            // Answered here as the probe would answer it, sparing a
            // worker's round trip (see `Unchanged`).
            active.call = call.sample;
            let step = active
                .machine
                .on_probe(now, Ok(Observation::text(String::new())));
            self.report_progress(id);
            return self.apply(id, Some(step));
        }
        active.call = call.sample;
        active.answer_pending = true;
        active.timer_seq = 0;
        self.calls_out += 1;
        if call.at_deadline {
            // Begun by the deadline timer, which has fired: armed again, it
            // abandons this call at once unless its answer came first.
            self.timers.arm_deadline(active.machine.deadline(), id);
        }
        match &mut active.probe {
            ProbeHolder::Blocking(cell) => {
                let job = ProbeJob {
                    id,
                    cell: cell.clone(),
                    call,
                    ask_resume: active.resumable && active.mode == ProbeMode::Stream,
                };
                self.calls.push(Task::Call(job));
            }
            ProbeHolder::Deferred(cell) => {
                if active.probe_cancel.is_cancelled() {
                    active.probe_cancel = active.call_cancel.child();
                }
                let ctx = ProbeContext {
                    sample: call.sample,
                    elapsed: call.elapsed,
                    budget: call.budget,
                    cancel: active.probe_cancel.clone(),
                    output_cap: active.machine.output_cap(),
                };
                let reply = Reply::new(id, call.sample, self.inbox.clone(), self.owner);
                let begun = catch_unwind(AssertUnwindSafe(|| {
                    cell.probe.begin(&ctx, reply);
                }));
                if let Err(panic) = begun {
                    // The reply, dropped while unwinding, has already
                    // answered; this answer names the panic instead.
                    active.call = 0;
                    let now = self.epoch.elapsed();
                    let step = active.machine.on_probe(now, Err(panicked(panic.as_ref())));
                    self.apply(id, Some(step));
                }
            }
        }
    }

    fn report_progress(&mut self, id: u64) {
        let Some(active) = self.waits.get_mut(&id) else {
            return;
        };
        if let (Some(progress), Some(sink)) = (active.machine.take_progress(), &active.on_progress)
        {
            // Reported off the scheduler: a slow host callback never stalls it.
            if let Some(job) = sink.queue(progress) {
                self.delivery.add_report(job);
            }
        }
    }

    fn finish(&mut self, id: u64, ending: Ending) {
        let Some(active) = self.waits.get(&id) else {
            return;
        };
        // Cancelled now (a call queued and not begun is never made; the
        // host hears after this), but woken only once this ending is handed
        // to delivery with those decided beside it (`hand_out_endings`):
        // waking the calls' threads, or starting the tokens' hooks, first
        // would have those threads take the cores this thread and delivery
        // need.
        active.call_cancel.mark_cancelled();
        self.ended_tokens.push(active.call_cancel.clone());
        // Read before the wait leaves the table: should the probe's code
        // panic, `for_wait` finds the wait there and ends it. Sealed and
        // encoded on the delivery thread.
        let resume = active.resumable.then(|| resume_token(active)).flatten();
        let Some(mut active) = self.waits.remove(&id) else {
            return;
        };
        if let Some(sink) = &active.on_progress {
            sink.drop_queued();
        }
        let on_done = active.on_done.take();
        let slot = active.slot.clone();
        let end_notices = match &active.probe {
            ProbeHolder::Blocking(cell) => cell.end_notices.clone(),
            ProbeHolder::Deferred(_) => None,
        };
        // The result is built, the wait (its probe included) dropped, and
        // the host told on a delivery thread: thousands of waits ending
        // together are finished on more than one core while this thread
        // goes on sampling; closing a push source (a control-mode client,
        // a watch) may take a while and must be done when the host hears;
        // a slow host callback (or one waiting for an interpreter lock)
        // never stalls the scheduler, and hung probes holding every worker
        // never delay a result.
        let deliver = move || {
            let built = catch_unwind(AssertUnwindSafe(|| active.machine.result(ending)));
            let mut result = built.unwrap_or_else(|panic| unbuilt_result(panic.as_ref()));
            result.resume = resume.map(|token| token.encode());
            if let Some(notices) = end_notices {
                // A probe's code that panics adds nothing.
                let noted = catch_unwind(AssertUnwindSafe(|| notices(&result)));
                result.notices = noted.unwrap_or_default();
            }
            active.span.record("poll_count", result.samples);
            active.span.record("stop_reason", result.outcome.as_str());
            active.span.record("elapsed_ms", result.elapsed_ms);
            // A probe that panics as it is dropped, or a host callback
            // that panics, still lets the handle hear.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(active)));
            if let Some(on_done) = on_done {
                let _ = catch_unwind(AssertUnwindSafe(|| on_done(&result)));
            }
            // Held by nothing else (a host that dropped its handle and
            // hears through `on_done`, as the Node package does), the
            // slot would keep the result for nobody.
            if Arc::strong_count(&slot) > 1 {
                slot.fill(result);
            }
        };
        self.delivery.add(id, Box::new(deliver));
    }

    /// Finished waits leave their deadline entries behind; drop them when
    /// they outnumber the live ones.
    fn compact_timers(&mut self) {
        if self.timers.len() > 1024 && self.timers.len() > 4 * (self.waits.len() + 1) {
            let waits = &self.waits;
            self.timers.retain(|id, seq| {
                waits
                    .get(&id)
                    .is_some_and(|a| seq == 0 || seq == a.timer_seq)
            });
        }
    }
}

/// The result of a wait whose result could not be built (a panic).
fn unbuilt_result(panic: &(dyn std::any::Any + Send)) -> WaitResult {
    error_result(format!(
        "the engine panicked while ending this wait: {}",
        panic_message(panic)
    ))
}

/// A result that says only why the wait has no other.
pub(crate) fn error_result(error: String) -> WaitResult {
    WaitResult {
        outcome: Outcome::Error,
        matched_index: None,
        matched_lines: Vec::new(),
        matched_at_entry: false,
        saw_new_output: false,
        tail: Default::default(),
        exit_code: None,
        samples: 0,
        elapsed_ms: 0,
        effective_max_wait_ms: 0,
        clamped: false,
        probe: Default::default(),
        error: Some(error),
        resume: None,
        woken: false,
        alternate_screen: false,
        notices: Vec::new(),
        last_observation: String::new(),
    }
}

/// The token a resumable wait's result carries.
fn resume_token(active: &Active) -> Option<ResumeToken> {
    match active.mode {
        ProbeMode::Snapshot => active.machine.resume_lines(),
        // Where the probe stands, unless it may stand past what the wait
        // saw: a call in flight holds it, or one returned whose answer the
        // wait did not take. Then where it stood after the last answer the
        // wait took that read something (or after its first call).
        ProbeMode::Stream => match &active.probe {
            ProbeHolder::Blocking(cell) => match cell.probe.try_lock() {
                Some(idle) if !active.answer_pending => idle.probe.resume_point(),
                _ => active.resume_point.as_deref().cloned(),
            },
            ProbeHolder::Deferred(_) => None,
        },
    }
}

/// Hashes wait ids (small sequential numbers) keeping their order (see
/// `write_u64`): SipHash's protection against chosen keys buys nothing
/// here.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        // The table picks a bucket by the low bits and tags it with the top
        // seven. Ids keep their order across buckets: waits started
        // together sample together, so their lookups share cache lines
        // (spread by a multiplication, they missed the cache: the scheduler
        // used a quarter more CPU time while 10,000 waits polled).
        // Neighbours get different tags. Any hash is correct; this one is
        // quick with the standard table's layout.
        self.0 = id ^ (id << 57);
    }
}
