//! Host tool calls from engine worker threads into JavaScript, and the
//! answers back (JavaScript probes go through `batch` instead).
//!
//! A worker that needs a host tool (AURA's synchronous `ToolCaller`) takes
//! a call id, queues the call on a weak, callee-unhandled threadsafe
//! function and waits on a channel for the answer until it comes or the
//! engine abandons the call (its cancel token: at the deadline, on cancel). The
//! JavaScript side (`lib/probe.js`) runs the user's function, awaits it if
//! it returns a Promise, turns the value or the thrown error into an
//! answer and hands it to [`settle_tool_call`], which never throws into
//! JavaScript and ignores answers nobody waits for any more. So a throwing
//! or rejecting tool is a probe error, a hung one is abandoned at the
//! deadline, and no JavaScript exception ever reaches
//! `napi_fatal_exception`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

use crossbeam_channel::{bounded, RecvTimeoutError, Sender};
use napi::bindgen_prelude::{FnArgs, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use parking_lot::Mutex;
use serde_json::Value;
use waitfor::profiles::ToolCaller;
use waitfor::{ProbeContext, ProbeError};

use crate::answer::{self, Answer};

/// How often a waiting worker looks at the call's cancel token.
const CANCEL_CHECK: Duration = Duration::from_millis(20);

/// Calls waiting for their answer, by call id.
static PENDING: LazyLock<Mutex<HashMap<u32, Sender<Answer>>>> = LazyLock::new(Default::default);
static NEXT_CALL: AtomicU32 = AtomicU32::new(1);

/// A weak, callee-unhandled threadsafe function: it never keeps the
/// process alive, and its JavaScript side never throws.
pub type Dispatch<Args> = ThreadsafeFunction<Args, Unknown<'static>, Args, Status, false, true>;

/// Tool call arguments: call id, tool name, arguments, budget ms.
pub type ToolArgs = FnArgs<(u32, String, Value, f64)>;

/// Queues one call with a fresh id and waits for its answer until the
/// engine abandons the call; the answer is an error when it was abandoned
/// or could not be queued.
fn call<Args: 'static + napi::bindgen_prelude::JsValuesTupleIntoVec>(
    dispatch: &Dispatch<Args>,
    ctx: &ProbeContext,
    args: impl FnOnce(u32) -> Args,
) -> Answer {
    let id = loop {
        let id = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
        if id != 0 {
            break id;
        }
    };
    let (tx, rx) = bounded(1);
    PENDING.lock().insert(id, tx);
    let status = dispatch.call(args(id), ThreadsafeFunctionCallMode::NonBlocking);
    let answer = if status == Status::Ok {
        receive(&rx, ctx)
    } else {
        Err(ProbeError::new(format!(
            "cannot call into JavaScript ({status}): the environment is closing"
        )))
    };
    PENDING.lock().remove(&id);
    answer
}

fn receive(rx: &crossbeam_channel::Receiver<Answer>, ctx: &ProbeContext) -> Answer {
    // The engine cancels the call's token when it abandons the call (at the
    // deadline, on cancel): only then does the worker stop waiting, so the
    // engine, not this loop, decides how the wait ends.
    loop {
        match rx.recv_timeout(CANCEL_CHECK) {
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

/// Delivers the answer of tool call `id` (internal: called by the
/// package's tool dispatcher) as `flags`, `text`, `json` (see
/// `lib/probe.js`). Returns whether a worker was still waiting for it.
#[napi]
pub fn settle_tool_call(id: u32, flags: u8, text: String, json: Option<String>) -> bool {
    let answer = answer::observation(flags, text, json.as_deref(), 0);
    match PENDING.lock().remove(&id) {
        Some(tx) => tx.send(answer).is_ok(),
        None => false,
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
        call(&self.dispatch, ctx, |id| {
            FnArgs::from((
                id,
                name.to_string(),
                args.clone(),
                ctx.budget.as_secs_f64() * 1e3,
            ))
        })
        .map(|obs| obs.text)
    }
}
