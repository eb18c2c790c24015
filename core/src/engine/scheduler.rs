//! The scheduler thread: keeps every wait's next sample and deadline,
//! hands probe calls to workers, and delivers results.

use super::handle::{ProbeCell, Slot};
use super::workers::{StarvationWatch, Workers, STARVATION_WINDOW};
use crate::cancel::CancelToken;
use crate::machine::{Machine, ProbeCall, Progress, Step};
use crate::probe::{Observation, Probe, ProbeContext, ProbeError, ProbeMode};
use crate::result::WaitResult;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sample timers are rounded up to this grain so that thousands of waits
/// share wake-ups; deadlines are exact.
const TIMER_GRAIN: Duration = Duration::from_millis(1);

pub(crate) type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;
pub(crate) type DoneFn = Box<dyn FnOnce(&WaitResult) + Send>;

/// A wait as the scheduler keeps it.
pub(crate) struct Active {
    pub machine: Machine,
    pub probe: Arc<ProbeCell>,
    pub slot: Arc<Slot>,
    pub on_progress: Option<ProgressFn>,
    pub on_done: Option<DoneFn>,
    pub span: tracing::Span,
    /// Whether the result carries a resume token (fresh view).
    pub resumable: bool,
    /// The probe's mode, read once at start.
    pub mode: ProbeMode,
    /// The token of the probe call in flight.
    pub call_cancel: CancelToken,
    /// Number of the call in flight, so a late answer is recognised.
    pub call: u64,
    /// Sequence number of the valid sample timer.
    pub timer_seq: u64,
}

pub(crate) enum Msg {
    Start(u64, Box<Active>),
    ProbeDone {
        id: u64,
        call: u64,
        result: Result<Observation, ProbeError>,
    },
    Cancel(u64),
    Wake(u64),
}

/// A timer entry; `seq` 0 is the wait's deadline, valid while it runs.
type Timer = Reverse<(Duration, u64, u64)>;

pub(crate) struct Scheduler {
    rx: Receiver<Msg>,
    tx: Sender<Msg>,
    epoch: Instant,
    waits: HashMap<u64, Active>,
    timers: BinaryHeap<Timer>,
    next_seq: u64,
    workers: Workers,
}

impl Scheduler {
    pub fn new(rx: Receiver<Msg>, tx: Sender<Msg>, epoch: Instant) -> Self {
        Self {
            rx,
            tx,
            epoch,
            waits: HashMap::new(),
            timers: BinaryHeap::new(),
            next_seq: 1,
            workers: Workers::new(),
        }
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    pub fn run(mut self) {
        let mut starvation = StarvationWatch::new(Instant::now());
        loop {
            let mut wake_at = self.timers.peek().map(|Reverse((at, _, _))| *at);
            if self.workers.queued() > 0 {
                let check = self.now() + STARVATION_WINDOW;
                wake_at = Some(wake_at.map_or(check, |at| at.min(check)));
            }
            let received = match wake_at {
                Some(at) => self.rx.recv_deadline(self.epoch + at),
                None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match received {
                Ok(msg) => {
                    self.handle(msg);
                    while let Ok(msg) = self.rx.try_recv() {
                        self.handle(msg);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            self.fire_timers();
            self.workers
                .relieve_starvation(&mut starvation, Instant::now());
            self.compact_timers();
        }
    }

    fn handle(&mut self, msg: Msg) {
        let now = self.now();
        match msg {
            Msg::Start(id, active) => {
                let deadline = active.machine.deadline();
                self.waits.insert(id, *active);
                self.timers.push(Reverse((deadline, id, 0)));
                let step = self.waits.get_mut(&id).map(|a| a.machine.start(now));
                self.apply(id, step);
            }
            Msg::ProbeDone { id, call, result } => {
                let step = self.waits.get_mut(&id).and_then(|a| {
                    (a.call == call && a.machine.is_probing())
                        .then(|| a.machine.on_probe(now, result))
                });
                self.report_progress(id);
                self.apply(id, step);
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

    fn fire_timers(&mut self) {
        let now = self.now();
        while let Some(Reverse((at, id, seq))) = self.timers.peek().copied() {
            if at > now {
                break;
            }
            self.timers.pop();
            let step = self
                .waits
                .get_mut(&id)
                .filter(|a| seq == 0 || seq == a.timer_seq)
                .map(|a| a.machine.on_timer(now));
            self.apply(id, step);
        }
    }

    fn apply(&mut self, id: u64, step: Option<Step>) {
        match step {
            None => {}
            Some(Step::Probe(call)) => self.start_call(id, call),
            Some(Step::Idle) => self.arm_sample_timer(id),
            Some(Step::Done(result)) => self.finish(id, *result),
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
        let grain = TIMER_GRAIN.as_nanos();
        let rounded = Duration::from_nanos((until.as_nanos().div_ceil(grain) * grain) as u64);
        self.timers
            .push(Reverse((rounded.min(active.machine.deadline()), id, seq)));
    }

    fn start_call(&mut self, id: u64, call: ProbeCall) {
        let Some(active) = self.waits.get_mut(&id) else {
            return;
        };
        active.call = call.sample;
        active.timer_seq = 0;
        active.call_cancel = CancelToken::new();
        let ctx = ProbeContext {
            sample: call.sample,
            elapsed: call.elapsed,
            budget: call.budget,
            cancel: active.call_cancel.clone(),
            output_cap: active.machine.output_cap(),
        };
        let probe = active.probe.clone();
        let tx = self.tx.clone();
        self.workers.submit(Box::new(move || {
            let result = call_probe(&probe.probe, &ctx);
            let _ = tx.send(Msg::ProbeDone {
                id,
                call: ctx.sample,
                result,
            });
        }));
    }

    fn report_progress(&mut self, id: u64) {
        let Some(active) = self.waits.get_mut(&id) else {
            return;
        };
        if let (Some(progress), Some(report)) =
            (active.machine.take_progress(), &active.on_progress)
        {
            let report = report.clone();
            // Reported on a worker: a slow host callback never stalls others.
            self.workers.submit(Box::new(move || report(&progress)));
        }
    }

    fn finish(&mut self, id: u64, mut result: WaitResult) {
        let Some(mut active) = self.waits.remove(&id) else {
            return;
        };
        active.call_cancel.cancel();
        if active.resumable {
            let token = match active.mode {
                ProbeMode::Snapshot => active.machine.resume_lines(),
                // A probe stuck in an abandoned call keeps its lock and its
                // position is unknown: then no token is given.
                ProbeMode::Stream => active.probe.probe.try_lock().and_then(|p| p.resume_point()),
            };
            result.resume = token.map(|t| t.encode());
        }
        active.span.record("poll_count", result.samples);
        active.span.record("stop_reason", result.outcome.as_str());
        active.span.record("elapsed_ms", result.elapsed_ms);
        let on_done = active.on_done.take();
        let slot = active.slot;
        // The probe is dropped on the worker too, before the result is
        // delivered: closing a push source (a control-mode client, a
        // watch) may take a while, and must be done when the host hears.
        let probe = active.probe;
        // Delivered on a worker: a host callback that is slow (or waits for
        // an interpreter lock) never stalls the scheduler.
        self.workers.submit(Box::new(move || {
            drop(probe);
            if let Some(on_done) = on_done {
                on_done(&result);
            }
            slot.fill(result);
        }));
    }

    /// Finished waits leave their deadline entries behind; rebuild the heap
    /// when those outnumber the live ones.
    fn compact_timers(&mut self) {
        if self.timers.len() > 1024 && self.timers.len() > 4 * (self.waits.len() + 1) {
            let waits = &self.waits;
            self.timers.retain(|Reverse((_, id, seq))| {
                waits
                    .get(id)
                    .is_some_and(|a| *seq == 0 || *seq == a.timer_seq)
            });
        }
    }
}

/// Calls the probe, turning a panic into a probe error.
fn call_probe(
    probe: &Mutex<Box<dyn Probe>>,
    ctx: &ProbeContext,
) -> Result<Observation, ProbeError> {
    let mut probe = probe.lock();
    std::panic::catch_unwind(AssertUnwindSafe(|| probe.sample(ctx))).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        Err(ProbeError::new(format!("probe panicked: {what}")))
    })
}
