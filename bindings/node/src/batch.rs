//! JavaScript probes, called in batches: one JavaScript turn runs every
//! probe call that is due, and one native call hands all their answers
//! back.
//!
//! A wait's probe is a [`JsProbe`], an [`AsyncProbe`]: on the engine's
//! scheduler thread, `begin` only pushes the call onto the batch of its
//! [`ProbeChannel`] (one per JavaScript environment) and keeps the call's
//! [`Reply`]; when the batch was empty it queues one call of the channel's
//! weak, callee-unhandled threadsafe function. No thread waits for
//! JavaScript. On the JavaScript thread, `lib/probe.js` takes the whole
//! batch ([`ProbeChannel::take`]), runs each wait's probe function (it
//! keeps them by key), and sends the answers back together
//! ([`ProbeChannel::settle`], one engine wake for the lot); answers of
//! probes that return a Promise follow in later batches.
//!
//! A wait has at most one call in flight, and the engine abandons a call
//! only when the wait ends, so calls are known by their wait's key. Keys
//! are never reused (JavaScript counts them up to 2^53), so a late answer
//! never reaches another wait.

use std::collections::HashMap;
use std::sync::Arc;

use napi::bindgen_prelude::{Float64Array, Function, Int32Array, Uint8Array, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use parking_lot::Mutex;
use serde_json::json;
use waitfor::{AsyncProbe, CancelToken, Engine, ProbeContext, Reply, Spec, WaitOptions};

use crate::answer;
use crate::errors;
use crate::waits::{self, done_fn, progress_fn, start, NativePolicy, NativeWait};

/// Numbers per call in the batch [`ProbeChannel::take`] returns.
const CALL_FIELDS: usize = 4;

/// One probe call waiting for JavaScript to take it.
struct Call {
    key: f64,
    sample: f64,
    elapsed_ms: f64,
    budget_ms: f64,
    /// The wait's token: cancelled once the wait has ended.
    cancel: CancelToken,
}

#[derive(Default)]
struct Calls {
    /// Calls JavaScript has not taken yet, in the order they began.
    due: Vec<Call>,
    /// Where each wait's call in flight answers, by wait key.
    replies: HashMap<u64, Reply>,
}

/// The state one JavaScript environment's probes share.
struct Channel {
    calls: Mutex<Calls>,
    /// Tells JavaScript that calls are due. Weak: it never keeps the
    /// process alive (a pending wait does, through its result).
    wake: ThreadsafeFunction<(), Unknown<'static>, (), Status, false, true>,
}

impl Channel {
    fn begin(&self, key: u64, ctx: &ProbeContext, reply: Reply) {
        let call = Call {
            key: key as f64,
            sample: ctx.sample as f64,
            elapsed_ms: ctx.elapsed.as_secs_f64() * 1e3,
            budget_ms: ctx.budget.as_secs_f64() * 1e3,
            cancel: ctx.cancel.clone(),
        };
        let first = {
            let mut calls = self.calls.lock();
            calls.replies.insert(key, reply);
            calls.due.push(call);
            calls.due.len() == 1
        };
        if first && self.wake.call((), ThreadsafeFunctionCallMode::NonBlocking) != Status::Ok {
            // The environment is closing: nobody will take these calls.
            // Their replies, dropped, answer with a probe error.
            let lost = {
                let mut calls = self.calls.lock();
                let due = std::mem::take(&mut calls.due);
                due.iter()
                    .filter_map(|call| calls.replies.remove(&(call.key as u64)))
                    .collect::<Vec<_>>()
            };
            drop(lost);
        }
    }

    /// Forgets the call in flight of a wait that has ended.
    fn forget(&self, key: u64) {
        let reply = self.calls.lock().replies.remove(&key);
        // Dropped outside the lock: a reply answers as it goes.
        drop(reply);
    }
}

/// The batch of probe calls of one JavaScript environment (internal: made
/// once by the package's probe layer, `lib/probe.js`).
#[napi]
pub struct ProbeChannel {
    channel: Arc<Channel>,
}

#[napi]
impl ProbeChannel {
    /// A channel whose `drain` is called (on the JavaScript thread, never
    /// with an exception let through: it must not throw) when calls become
    /// due.
    #[napi(constructor)]
    pub fn new(drain: Function<'static, (), Unknown<'static>>) -> napi::Result<Self> {
        let wake = drain
            .build_threadsafe_function()
            .weak::<true>()
            .callee_handled::<false>()
            .build()?;
        Ok(Self {
            channel: Arc::new(Channel {
                calls: Mutex::default(),
                wake,
            }),
        })
    }

    /// Takes every due call: `[key, sample, elapsedMs, budgetMs]` per
    /// call, one after another. Calls of waits that have ended are left
    /// out.
    #[napi]
    pub fn take(&self) -> Float64Array {
        let due = std::mem::take(&mut self.channel.calls.lock().due);
        let mut out = Vec::with_capacity(due.len() * CALL_FIELDS);
        for call in due.iter().filter(|call| !call.cancel.is_cancelled()) {
            out.extend([call.key, call.sample, call.elapsed_ms, call.budget_ms]);
        }
        Float64Array::new(out)
    }

    /// Answers calls in flight, all at once: per call its wait's `key`,
    /// `flags` (see `lib/probe.js`), text (the error message for an
    /// error), exit code, and for each call flagged JSON, in order, its
    /// JSON text. Answers for waits that have ended are ignored. Throws
    /// only when the arrays do not fit together.
    #[napi]
    pub fn settle(
        &self,
        keys: Float64Array,
        flags: Uint8Array,
        texts: Vec<String>,
        exit_codes: Int32Array,
        jsons: Vec<String>,
    ) -> napi::Result<()> {
        let n = keys.len();
        if flags.len() != n || texts.len() != n || exit_codes.len() != n {
            return Err(errors::other(
                "internal",
                "settle: keys, flags, texts and exit codes differ in length",
            ));
        }
        let replies: Vec<Option<Reply>> = {
            let mut calls = self.channel.calls.lock();
            keys.iter()
                .map(|key| calls.replies.remove(&(*key as u64)))
                .collect()
        };
        let mut jsons = jsons.iter();
        let answers = replies
            .into_iter()
            .zip(flags.iter().zip(texts).zip(exit_codes.iter()))
            .filter_map(|(reply, ((&flags, text), &exit_code))| {
                let json = if flags & answer::JSON != 0 {
                    jsons.next().map(String::as_str)
                } else {
                    None
                };
                // An answer nobody waits for any more is not even read.
                reply.map(|reply| (reply, answer::observation(flags, text, json, exit_code)))
            });
        Reply::send_all(answers);
        Ok(())
    }

    /// Starts a wait whose probe is the JavaScript function registered
    /// under `key` (internal; see the package's `wait` and `start`).
    /// `spec` is JSON text; `onDone` gets `{result}` once.
    #[napi]
    pub fn start(
        &self,
        spec: String,
        key: f64,
        on_done: Function<'static, serde_json::Value, Unknown<'static>>,
        on_progress: Option<Function<'static, serde_json::Value, Unknown<'static>>>,
        policy: Option<NativePolicy>,
    ) -> napi::Result<NativeWait> {
        if !(key.is_finite() && key >= 0.0 && key.fract() == 0.0 && key <= 9.007_199_254_740_991e15)
        {
            return Err(errors::other(
                "internal",
                format!("probe key {key} is not a whole number"),
            ));
        }
        let spec = Spec::from_json(&spec).map_err(|e| errors::spec(&e))?;
        let policy = waits::policy(policy.as_ref())?;
        let probe = JsProbe {
            key: key as u64,
            channel: self.channel.clone(),
        };
        start(
            |options| Engine::global().start_async(spec, probe, options),
            WaitOptions::default().policy(policy),
            done_fn(&on_done)?,
            progress_fn(on_progress.as_ref())?,
            |result| json!({ "result": result.to_json() }),
        )
    }
}

/// A wait's JavaScript probe: its calls go through its channel's batch.
struct JsProbe {
    key: u64,
    channel: Arc<Channel>,
}

impl AsyncProbe for JsProbe {
    fn begin(&mut self, ctx: &ProbeContext, reply: Reply) {
        self.channel.begin(self.key, ctx, reply);
    }

    fn name(&self) -> &str {
        "javascript"
    }
}

impl Drop for JsProbe {
    /// The wait has ended: a call still in flight is abandoned.
    fn drop(&mut self) {
        self.channel.forget(self.key);
    }
}
