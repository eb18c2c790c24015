//! Probe calls that need a host lock ([`HostLock`]: Python's interpreter
//! lock), made in runs.
//!
//! While a Python host's own thread runs Python code, taking the
//! interpreter lock costs milliseconds: the interpreter hands it over at
//! its switch interval (5 ms). A worker per call, each waiting for the
//! lock, looks stuck to the pool, which then grows by a thread per
//! waiting call. Instead, the calls that need one lock queue in its lane,
//! and a drainer (a worker's task) takes the lock once and makes every
//! queued call before it lets go.
//!
//! Calls coming while no drainer waits for the lock start one: it takes
//! over once the drainer holding the lock lets go, or when that one hangs
//! in a call. While a drainer waits for the lock, the lane adds none:
//! another would only wait beside it. When no call was begun for a
//! starvation window although calls wait and no drainer waits for the
//! lock, every drainer is inside a slow or hung call (a probe in
//! `time.sleep`): the lane doubles its drainers, so hung calls hold a
//! thread each and delay the others by a window at most, as in the pool.

use super::call::ProbeJob;
use super::queue::Queue;
use super::scheduler::Msg;
use super::workers::STARVATION_WINDOW;
use crate::probe::HostLock;
use crate::sync::Mutex;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// The queued calls that need one host lock, and their drainers.
pub(crate) struct Lane {
    lock: Arc<dyn HostLock>,
    state: Mutex<LaneState>,
}

struct LaneState {
    calls: VecDeque<ProbeJob>,
    /// Drainers started and not finished.
    drainers: usize,
    /// Drainers started and not holding the lock yet.
    waiting: usize,
    /// When a call was last begun, or calls began to wait if that is later.
    moved: Instant,
}

impl Lane {
    pub fn new(lock: Arc<dyn HostLock>) -> Self {
        Self {
            lock,
            state: Mutex::new(LaneState {
                calls: VecDeque::new(),
                drainers: 0,
                waiting: 0,
                moved: Instant::now(),
            }),
        }
    }

    /// Whether this lane's calls need `lock`.
    pub fn serves(&self, lock: &Arc<dyn HostLock>) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.lock), Arc::as_ptr(lock))
    }

    /// Queues a call; true when a drainer is to be started for it (none
    /// waits for the lock).
    pub fn push(&self, call: ProbeJob, now: Instant) -> bool {
        let mut state = self.state.lock();
        if state.calls.is_empty() {
            state.moved = now;
        }
        state.calls.push_back(call);
        let start = state.waiting == 0;
        if start {
            state.drainers += 1;
            state.waiting += 1;
        }
        start
    }

    /// How many drainers to start now: as many as run, when every one is
    /// inside a call and none was begun for a window while calls waited.
    pub fn stuck_drainers(&self, now: Instant) -> usize {
        let mut state = self.state.lock();
        if state.calls.is_empty()
            || state.waiting > 0
            || now.duration_since(state.moved) < STARVATION_WINDOW
        {
            return 0;
        }
        let more = state.drainers.max(1).min(state.calls.len());
        state.drainers += more;
        state.waiting += more;
        // The next look is a window from now.
        state.moved = now;
        more
    }

    /// Calls waiting for a drainer.
    pub fn queued(&self) -> usize {
        self.state.lock().calls.len()
    }

    /// Whether nothing is queued and no drainer runs.
    pub fn idle(&self) -> bool {
        let state = self.state.lock();
        state.calls.is_empty() && state.drainers == 0
    }

    /// A drainer's work: takes the lock, then makes queued calls until
    /// none is left.
    pub fn drain(&self, inbox: &Queue<Msg>) {
        let held = Cell::new(false);
        let mut calls = || {
            if !held.replace(true) {
                self.state.lock().waiting -= 1;
            }
            while let Some(call) = self.next() {
                call.run(inbox);
            }
        };
        self.lock.hold(&mut calls);
        // A lock that did not call (against its contract) leaves no call
        // behind.
        if !held.get() {
            calls();
        }
    }

    /// The next call, or `None` when none is left and this drainer ends.
    fn next(&self) -> Option<ProbeJob> {
        let mut state = self.state.lock();
        state.moved = Instant::now();
        let call = state.calls.pop_front();
        if call.is_none() {
            state.drainers -= 1;
        }
        call
    }
}
