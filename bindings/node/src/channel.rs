//! One JavaScript environment's way in from the engine: due probe calls,
//! finished waits and progress reports all queue in one inbox, and one
//! weak threadsafe function tells JavaScript there is something to take.
//!
//! Whatever the engine has for JavaScript, from any thread, goes into the
//! [`Inbox`]; only the first arrival since JavaScript last looked queues a
//! call of the `drain` function. That one JavaScript turn takes everything
//! (`takeEvents`, then `take` for probe calls, see `batch`), so 10,000
//! waits cost one libuv wake-up per batch, not one per call or result,
//! and no wait owns a threadsafe function (each would be one more libuv
//! handle that every wake-up scans).
//!
//! The threadsafe function is weak: the package keeps the process alive
//! while a wait is pending (`lib/channel.js`), and lets it exit on its own
//! when none is.

use std::collections::VecDeque;
use std::sync::Arc;

use napi::bindgen_prelude::{Function, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use parking_lot::Mutex;
use waitfor::{CallsBegun, Engine, Reply, WaitResult};

use crate::batch::Call;
use crate::errors;
use crate::events::{EventBatch, Events};
use crate::replies::Replies;

/// What the engine has for one JavaScript environment.
#[derive(Default)]
pub struct Inbox {
    /// A `drain` call is queued and has not taken the events yet.
    woken: bool,
    /// Probe calls JavaScript has not taken yet, in the order they began.
    pub due: VecDeque<Call>,
    /// Where each wait's probe call in flight answers.
    pub replies: Replies,
    /// Finished waits and progress reports, in order.
    events: Events,
}

/// The inbox and the way to wake its JavaScript environment.
pub struct Channel {
    pub inbox: Mutex<Inbox>,
    wake: ThreadsafeFunction<(), Unknown<'static>, (), Status, false, true>,
}

impl Channel {
    /// Changes the inbox with `add`, then wakes JavaScript unless a wake
    /// is already queued.
    pub fn push(&self, add: impl FnOnce(&mut Inbox)) {
        let wake = {
            let mut inbox = self.inbox.lock();
            add(&mut inbox);
            !std::mem::replace(&mut inbox.woken, true)
        };
        if wake {
            self.wake();
        }
    }

    /// Changes the inbox with `add` without waking JavaScript: for probe
    /// calls, which the engine's scheduler begins in batches and then
    /// says so (see the `CallsBegun` impl below).
    pub fn queue(&self, add: impl FnOnce(&mut Inbox)) {
        add(&mut self.inbox.lock());
    }

    fn wake(&self) {
        if self.wake.call((), ThreadsafeFunctionCallMode::NonBlocking) != Status::Ok {
            self.closing();
        }
    }

    /// The environment is closing: nobody will take what is queued. The
    /// replies of due calls, dropped, answer with a probe error.
    fn closing(&self) {
        let lost: Vec<Reply> = {
            let mut inbox = self.inbox.lock();
            inbox.woken = false;
            inbox.events.clear();
            let due = std::mem::take(&mut inbox.due);
            due.iter()
                .filter_map(|call| {
                    let (slot, key) = call.wait();
                    inbox.replies.take(slot, key)
                })
                .collect()
        };
        // Dropped outside the lock: a reply answers as it goes.
        drop(lost);
    }

    /// Queues an event of wait `key` whose body is JSON text (`kind`:
    /// `events::PROGRESS` or `events::DONE`).
    pub fn event(&self, key: u64, kind: f64, json: &str) {
        self.push(|inbox| inbox.events.json(key, kind, json));
    }

    /// Queues the end of wait `key` with its result.
    pub fn result(&self, key: u64, result: &WaitResult) {
        self.push(|inbox| inbox.events.result(key, result));
    }
}

/// The scheduler has begun a batch of calls: JavaScript is woken once for
/// all the calls queued, unless a wake is queued already or JavaScript has
/// taken them all.
impl CallsBegun for Channel {
    fn calls_begun(&self) {
        let wake = {
            let mut inbox = self.inbox.lock();
            !inbox.due.is_empty() && !std::mem::replace(&mut inbox.woken, true)
        };
        if wake {
            self.wake();
        }
    }
}

/// The inbox of one JavaScript environment (internal: made once by the
/// package's `lib/channel.js`, which every wait goes through).
#[napi]
pub struct WaitChannel {
    pub(crate) channel: Arc<Channel>,
}

#[napi]
impl WaitChannel {
    /// A channel whose `drain` is called on the JavaScript thread when
    /// something arrives; `drain` must not throw.
    #[napi(constructor)]
    pub fn new(drain: Function<'static, (), Unknown<'static>>) -> napi::Result<Self> {
        let wake = drain
            .build_threadsafe_function()
            .weak::<true>()
            .callee_handled::<false>()
            .build()?;
        let channel = Arc::new(Channel {
            inbox: Mutex::default(),
            wake,
        });
        let hook: Arc<dyn CallsBegun> = channel.clone();
        Engine::global().on_calls_begun(Arc::downgrade(&hook));
        Ok(Self { channel })
    }

    /// Takes the finished waits and progress reports in the order they
    /// came (numbers and one text, read by `lib/events.js`), or null when
    /// there are none. Every drain calls it first.
    #[napi]
    pub fn take_events(&self) -> Option<EventBatch> {
        let mut inbox = self.channel.inbox.lock();
        inbox.woken = false;
        (!inbox.events.is_empty()).then(|| inbox.events.take())
    }
}

/// A wait key from JavaScript: a whole number below 2^53.
pub fn key(key: f64) -> napi::Result<u64> {
    if key.is_finite() && key >= 0.0 && key.fract() == 0.0 && key <= 9.007_199_254_740_991e15 {
        Ok(key as u64)
    } else {
        Err(errors::other(
            "internal",
            format!("wait key {key} is not a whole number"),
        ))
    }
}
