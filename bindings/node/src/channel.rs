//! One JavaScript environment's way in from the engine: due probe calls,
//! finished waits and progress reports all queue in one [`Channel`], and
//! only the first arrival since JavaScript last looked calls `drain`
//! (`lib/channel.js`) through one weak threadsafe function, which takes
//! everything: one libuv wake-up per batch, and no threadsafe function
//! (libuv handle) per wait. Weak: the package keeps the process alive
//! while a wait is pending.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::{unbounded, Receiver, Sender};
use napi::bindgen_prelude::{Float64ArraySlice, Function, Unknown};
use napi::Status;
use napi_derive::napi;
use parking_lot::Mutex;
use waitfor::{Reply, WaitControl, WaitResult};

use crate::batch::Call;
use crate::bridge::Dispatch;
use crate::errors;
use crate::events::{Events, TakenEvents};
use crate::slots::Slots;

thread_local! {
    /// Where an engine thread writes an event before it appends it to the
    /// channel's: the channel's lock is held for a copy, not for the
    /// writing (reused, so writing allocates nothing once warm).
    static SCRATCH: RefCell<Events> = RefCell::default();
}

/// What the engine has for one JavaScript environment, and the way to
/// wake it. Probe calls come through a lock-free queue and the events lock
/// is held only to append or take, so the JavaScript thread never waits
/// long for an engine thread preempted with a lock.
pub struct Channel {
    /// A `drain` call is queued and has not taken the events yet.
    woken: AtomicBool,
    /// Probe calls JavaScript has not taken yet, in the order they began.
    calls: (Sender<Call>, Receiver<Call>),
    /// Finished waits and progress reports, in order.
    events: Mutex<Events>,
    wake: Dispatch<()>,
}

impl Channel {
    /// Queues a probe call, and wakes JavaScript unless a wake is queued
    /// already: the calls begun until JavaScript looks go in one batch.
    pub fn queue(&self, call: Call) {
        // The receiver lives as long as the channel: this cannot fail.
        let _ = self.calls.0.send(call);
        self.wake_unless_woken();
    }

    /// The next call JavaScript has not taken, if any.
    pub fn next_call(&self) -> Option<Call> {
        self.calls.1.try_recv().ok()
    }

    /// Writes an event with `write`, appends it, then wakes JavaScript
    /// unless a wake is already queued.
    fn push(&self, write: impl FnOnce(&mut Events)) {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            write(&mut scratch);
            self.events.lock().append(&mut scratch);
        });
        self.wake_unless_woken();
    }

    /// JavaScript is about to take everything: what arrives from now on
    /// wakes it again. Called before it takes, so nothing is left behind.
    fn looking(&self) {
        self.woken.store(false, Ordering::SeqCst);
    }

    fn wake_unless_woken(&self) {
        if !self.woken.swap(true, Ordering::SeqCst) {
            self.wake();
        }
    }

    fn wake(&self) {
        if self.wake.call(()) != Status::Ok {
            self.closing();
        }
    }

    /// The environment is closing: nobody will take what is queued. The
    /// replies of due calls, dropped, answer with a probe error.
    fn closing(&self) {
        self.looking();
        self.events.lock().clear();
        while self.next_call().is_some() {}
    }

    /// Queues an event of wait `key` in `slot` whose body is JSON text
    /// (`kind`: `events::PROGRESS` or `events::DONE`).
    pub fn event(&self, slot: u32, key: u64, kind: f64, json: &str) {
        self.push(|events| events.json(slot, key, kind, json));
    }

    /// Queues the end of wait `key` in `slot` with its result.
    pub fn result(&self, slot: u32, key: u64, result: &WaitResult) {
        self.push(|events| events.result(slot, key, result));
    }
}

/// The channel of one JavaScript environment (internal: made once by the
/// package's `lib/channel.js`, which every wait goes through).
#[napi]
pub struct WaitChannel {
    pub(crate) channel: Arc<Channel>,
    /// Where each wait's probe call in flight answers (only this thread
    /// touches it: calls bring their replies along, see `batch`).
    pub(crate) replies: RefCell<Slots<(u64, Reply)>>,
    /// Each wait's controls, by slot (a slot's next wait replaces them;
    /// the package only uses a slot's controls while its wait runs).
    controls: RefCell<Slots<WaitControl>>,
}

#[napi]
impl WaitChannel {
    /// A channel whose `drain` is called on the JavaScript thread when
    /// something arrives; `drain` must not throw.
    #[napi(constructor)]
    pub fn new(drain: Function<'static, (), Unknown<'static>>) -> napi::Result<Self> {
        let channel = Arc::new(Channel {
            woken: AtomicBool::new(false),
            calls: unbounded(),
            events: Mutex::default(),
            wake: Dispatch::new(&drain)?,
        });
        Ok(Self {
            channel,
            replies: RefCell::default(),
            controls: RefCell::default(),
        })
    }

    /// Keeps the controls of the wait in `slot`.
    pub(crate) fn control(&self, slot: u32, control: WaitControl) {
        self.controls.borrow_mut().put(slot, control);
    }

    /// Takes a sample of the wait in `slot` now instead of at the next
    /// poll (internal; see the package's `WaitHandle.wake`).
    #[napi]
    pub fn wake_wait(&self, slot: u32) {
        if let Some(control) = self.controls.borrow().get(slot) {
            control.wake();
        }
    }

    /// Ends the wait in `slot` with outcome `cancelled` (internal; see the
    /// package's `WaitHandle.cancel`).
    #[napi]
    pub fn cancel_wait(&self, slot: u32) {
        if let Some(control) = self.controls.borrow().get(slot) {
            control.cancel();
        }
    }

    /// Takes the finished waits and progress reports in order, their
    /// numbers written into `into` (see `events`), or null when there are
    /// none; when `into` is too short, only `count` is set.
    #[napi]
    pub fn take_events(&self, mut into: Float64ArraySlice<'_>) -> Option<TakenEvents> {
        // SAFETY: this runs on the JavaScript thread, which owns the array
        // and does nothing else until `take_events` returns; nothing else
        // refers to its memory.
        let into = unsafe { into.as_mut() };
        self.channel.looking();
        let mut events = self.channel.events.lock();
        (!events.is_empty()).then(|| events.take_into(into))
    }
}

impl Drop for WaitChannel {
    /// The environment is going away (a Worker terminated; Node finalizes
    /// its objects): nobody is left to hear its waits, so they end now
    /// instead of at their deadlines, and their commands with them.
    fn drop(&mut self) {
        for control in self.controls.get_mut().values() {
            control.cancel();
        }
    }
}

/// A wait key from JavaScript: a whole number below 2^53.
pub fn key(key: f64) -> napi::Result<u64> {
    crate::waits::whole_from(0.0, key)
        .ok_or_else(|| errors::other("internal", format!("wait key {key} is not a whole number")))
}
