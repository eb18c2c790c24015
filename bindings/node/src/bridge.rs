//! Host tool calls from engine worker threads into JavaScript, and the
//! answers back (JavaScript probes go through `batch` instead).
//!
//! A worker that needs a host tool (AURA's synchronous `ToolCaller`) queues
//! the call, with a [`ToolReply`], on the tools' threadsafe function and
//! waits for the answer until it comes or the engine abandons the call (its
//! cancel token: at the deadline, on cancel). `lib/channel.js` runs the
//! host's function and settles the reply with its value or what it threw.
//! So a throwing or rejecting tool is a probe error, a hung one is
//! abandoned at the deadline, and no JavaScript exception ever reaches
//! `napi_fatal_exception`.

use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use napi::bindgen_prelude::{FnArgs, Function, JsValuesTupleIntoVec, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use serde_json::Value;
use waitfor::profiles::ToolCaller;
use waitfor::{ProbeContext, ProbeError};

use crate::answer::{self, Answer};

/// How often a waiting worker looks at the call's cancel token.
const CANCEL_CHECK: Duration = Duration::from_millis(20);

type Tsfn<Args> = ThreadsafeFunction<Args, Unknown<'static>, Args, Status, false, true>;

/// A weak, callee-unhandled threadsafe function: it never keeps the
/// process alive, and its JavaScript side never throws.
///
/// Engine threads drop it, sometimes while its environment is being torn
/// down (a Worker terminated with waits pending). napi-rs's own drop races
/// with that teardown: its finalizer can no longer see a handle whose last
/// reference is being dropped, so the drop may release a threadsafe
/// function Node has already freed (the process aborts). Dropping through
/// `abort`, which holds the handle until the release is done, serialises
/// the two; it also discards calls JavaScript has not run yet, which
/// nobody waits for once the last holder is gone.
pub struct Dispatch<Args: 'static + JsValuesTupleIntoVec>(Option<Tsfn<Args>>);

impl<Args: 'static + JsValuesTupleIntoVec> Dispatch<Args> {
    /// `f` as a [`Dispatch`].
    pub fn new(f: &Function<'_, Args, Unknown<'static>>) -> napi::Result<Self> {
        let tsfn = f
            .build_threadsafe_function()
            .weak::<true>()
            .callee_handled::<false>()
            .build()?;
        Ok(Self(Some(tsfn)))
    }

    /// Queues a call of the function with `args` without blocking;
    /// anything but `Status::Ok` means the environment is closing.
    pub fn call(&self, args: Args) -> Status {
        self.0.as_ref().map_or(Status::Closing, |tsfn| {
            tsfn.call(args, ThreadsafeFunctionCallMode::NonBlocking)
        })
    }
}

impl<Args: 'static + JsValuesTupleIntoVec> Drop for Dispatch<Args> {
    fn drop(&mut self) {
        if let Some(tsfn) = self.0.take() {
            // Deprecated in favour of the racy drop described above. It
            // fails only for a function already released: nothing to do.
            #[allow(deprecated)]
            let _ = tsfn.abort();
        }
    }
}

/// The host's tool function: `(reply, name, args, budgetMs, outputCap)`;
/// with the cap, `lib/answer.js` sends only the start of a longer answer.
pub type ToolArgs = FnArgs<(ToolReply, String, Value, f64, f64)>;

/// Where one host tool call answers (internal; see `lib/channel.js`).
#[napi]
pub struct ToolReply {
    to: Option<Sender<Answer>>,
}

#[napi]
impl ToolReply {
    /// Answers the call with `flags`, `text`, `json` (see `lib/answer.js`);
    /// returns whether the worker was still waiting for it.
    #[napi]
    pub fn settle(&mut self, flags: u8, text: String, json: Option<String>) -> bool {
        let answer = answer::observation(flags, text, json.as_deref(), 0);
        self.to.take().is_some_and(|to| to.send(answer).is_ok())
    }
}

/// The host's MCP tools, lent to profiles (AURA's `wait_for` probes them).
pub struct JsTools {
    pub dispatch: Dispatch<ToolArgs>,
}

impl ToolCaller for JsTools {
    fn call_tool(
        &self,
        name: &str,
        args: &Value,
        ctx: &ProbeContext,
    ) -> Result<String, ProbeError> {
        let (to, answer) = bounded(1);
        let reply = ToolReply { to: Some(to) };
        let budget_ms = ctx.budget.as_secs_f64() * 1e3;
        let cap = ctx.output_cap as f64;
        let call = FnArgs::from((reply, name.to_string(), args.clone(), budget_ms, cap));
        match self.dispatch.call(call) {
            Status::Ok => receive(&answer, ctx).map(|obs| obs.text),
            status => Err(ProbeError::new(format!(
                "cannot call into JavaScript ({status}): the environment is closing"
            ))),
        }
    }
}

/// The answer, once it comes or the engine abandons the call: the engine
/// cancels the call's token then (at the deadline, on cancel), so the
/// engine, not this loop, decides how the wait ends.
fn receive(answer: &Receiver<Answer>, ctx: &ProbeContext) -> Answer {
    loop {
        match answer.recv_timeout(CANCEL_CHECK) {
            Ok(answer) => return answer,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(ProbeError::new("the JavaScript call was dropped"))
            }
            Err(RecvTimeoutError::Timeout) if ctx.cancel.is_cancelled() => {
                return Err(ProbeError::new("the JavaScript call was abandoned"))
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}
