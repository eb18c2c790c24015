//! The one way from the engine's threads into a JavaScript environment: a
//! [`Bridge`] per environment holds one weak, callee-unhandled threadsafe
//! function, which calls `dispatch` in `lib/channel.js` with each probe
//! call, host tool call, progress report and end ([`ToJs`]). Node runs
//! every item queued when its loop wakes, so calls due together share a
//! wake-up. A probe's answer comes back through its wait's [`NativeWait`],
//! a tool's through its [`ToolReply`]; JavaScript never throws into the
//! threadsafe function, so nothing reaches `napi_fatal_exception`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use napi::bindgen_prelude::{Function, JsValuesTupleIntoVec, ToNapiValue};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{sys, Status};
use napi_derive::napi;
use parking_lot::Mutex;
use serde_json::Value;
use waitfor::profiles::ToolCaller;
use waitfor::{AsyncProbe, Observation, ProbeContext, ProbeError, Reply, WaitControl};

/// The kinds of [`ToJs::Event`], as `lib/channel.js` reads them.
pub const RESULT: u32 = 2;
pub const PROGRESS: u32 = 3;
pub const DONE: u32 = 4;

/// What reaches `dispatch(kind, key, ...)` in `lib/channel.js`.
pub enum ToJs {
    /// `(0, key, sample, elapsedMs, budgetMs, outputCap)`: call wait `key`'s probe.
    Probe { key: u32, ctx: [f64; 4] },
    /// `(1, key, name, args, budgetMs, outputCap, reply)`: call a host tool
    /// for profile call `key`.
    Tool {
        key: u32,
        name: String,
        args: Value,
        ctx: [f64; 2],
        reply: ToolReply,
    },
    /// `(kind, key, json)`: a `RESULT`, `PROGRESS` or `DONE` of wait `key`.
    Event { kind: u32, key: u32, json: String },
}

impl JsValuesTupleIntoVec for ToJs {
    fn into_vec(self, env: sys::napi_env) -> napi::Result<Vec<sys::napi_value>> {
        // SAFETY: called by napi-rs on the JavaScript thread with its env.
        unsafe {
            let num = |n: f64| f64::to_napi_value(env, n);
            let int = |n: u32| u32::to_napi_value(env, n);
            Ok(match self {
                ToJs::Probe { key, ctx } => {
                    let [a, b, c, d] = ctx;
                    vec![int(0)?, int(key)?, num(a)?, num(b)?, num(c)?, num(d)?]
                }
                ToJs::Tool {
                    key,
                    name,
                    args,
                    ctx,
                    reply,
                } => vec![
                    int(1)?,
                    int(key)?,
                    String::to_napi_value(env, name)?,
                    Value::to_napi_value(env, args)?,
                    num(ctx[0])?,
                    num(ctx[1])?,
                    ToolReply::to_napi_value(env, reply)?,
                ],
                ToJs::Event { kind, key, json } => {
                    vec![int(kind)?, int(key)?, String::to_napi_value(env, json)?]
                }
            })
        }
    }
}

/// `dispatch` returns a probe's answer when it is a string at once.
type Tsfn = ThreadsafeFunction<ToJs, Option<String>, ToJs, Status, false, true>;

/// One environment's threadsafe function, shared by the engine's threads.
///
/// Engine threads drop it, sometimes while its environment is being torn
/// down (a Worker terminated with waits pending). napi-rs's own drop races
/// with that teardown and may release a threadsafe function Node has
/// already freed (the process aborts); dropping through `abort`, which
/// holds the handle until the release is done, serialises the two.
pub struct Channel(Option<Tsfn>);

impl Channel {
    /// Queues `item` without blocking; false once the environment is closing.
    pub fn send(&self, item: ToJs) -> bool {
        let tsfn = self.0.as_ref();
        tsfn.is_some_and(|t| t.call(item, ThreadsafeFunctionCallMode::NonBlocking) == Status::Ok)
    }

    /// Queues a probe call whose answer, when `dispatch` returns a string,
    /// goes to `call` at once.
    fn probe(&self, item: ToJs, call: Arc<Call>) -> bool {
        let answered = move |text: napi::Result<Option<String>>, _| {
            if let Ok(Some(text)) = text {
                call.send(Ok(Observation::text(text)));
            }
            Ok(())
        };
        let tsfn = self.0.as_ref();
        tsfn.is_some_and(|t| {
            t.call_with_return_value(item, ThreadsafeFunctionCallMode::NonBlocking, answered)
                == Status::Ok
        })
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        if let Some(tsfn) = self.0.take() {
            // Deprecated in favour of the racy drop described above; it
            // fails only for a function already released: nothing to do.
            #[allow(deprecated)]
            let _ = tsfn.abort();
        }
    }
}

/// One JavaScript environment's bridge (internal: made once by
/// `lib/channel.js`, which starts every wait through it).
#[napi]
pub struct Bridge {
    pub(crate) channel: Arc<Channel>,
}

#[napi]
impl Bridge {
    /// A bridge calling `dispatch` on the JavaScript thread; it must not throw.
    #[napi(
        constructor,
        ts_args_type = "dispatch: (kind: number, key: number, ...args: any[]) => void"
    )]
    pub fn new(dispatch: Function<'static, ToJs, Option<String>>) -> napi::Result<Self> {
        let tsfn = dispatch
            .build_threadsafe_function()
            .weak::<true>()
            .callee_handled::<false>()
            .build()?;
        Ok(Self {
            channel: Arc::new(Channel(Some(tsfn))),
        })
    }
}

/// A wait's probe call out, if any, shared by its probe and its `NativeWait`.
#[derive(Default)]
pub struct Call {
    reply: Mutex<Option<Reply>>,
    ended: AtomicBool,
}

impl Call {
    fn send(&self, answer: Result<Observation, ProbeError>) {
        if let Some(reply) = self.reply.lock().take() {
            reply.send(answer);
        }
    }

    /// The wait has ended: a call still out is answered by nobody.
    pub fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
        drop(self.reply.lock().take());
    }
}

/// One running wait, as the package's `WaitHandle` holds it (internal).
#[napi]
pub struct NativeWait {
    pub(crate) control: WaitControl,
    pub(crate) call: Arc<Call>,
}

#[napi]
impl NativeWait {
    /// Answers the probe call out with the parts `answerOf` (`lib/answer.js`) gives.
    #[napi]
    pub fn answer(&self, flags: u8, text: String, json: Option<String>, exit_code: Option<i32>) {
        self.call
            .send(observation(flags, text, json.as_deref(), exit_code));
    }

    /// Takes a sample now instead of at the next poll.
    #[napi]
    pub fn wake(&self) {
        self.control.wake();
    }

    /// Ends the wait with outcome `cancelled`.
    #[napi]
    pub fn cancel(&self) {
        self.control.cancel();
    }
}

impl Drop for NativeWait {
    /// Finalized while running only when its environment goes away (a
    /// Worker terminated): nobody is left to hear the wait, so it ends now,
    /// and its command with it, instead of at its deadline.
    fn drop(&mut self) {
        if !self.call.ended.load(Ordering::SeqCst) {
            self.control.cancel();
        }
    }
}

/// A wait's JavaScript probe: `begin` queues the call on the bridge.
pub struct JsProbe {
    pub key: u32,
    pub call: Arc<Call>,
    pub channel: Arc<Channel>,
}

impl AsyncProbe for JsProbe {
    fn begin(&mut self, ctx: &ProbeContext, reply: Reply) {
        *self.call.reply.lock() = Some(reply);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let ctx = [
            ctx.sample as f64,
            ms(ctx.elapsed),
            ms(ctx.budget),
            ctx.output_cap as f64,
        ];
        if !self
            .channel
            .probe(ToJs::Probe { key: self.key, ctx }, self.call.clone())
        {
            // Dropped unanswered: a probe error ("the environment is closing").
            drop(self.call.reply.lock().take());
        }
    }

    fn name(&self) -> &str {
        "javascript"
    }
}

/// Flag bits of an answer, as `lib/answer.js` writes them.
const ERROR: u8 = 1;
const TEXT: u8 = 2;
const JSON: u8 = 4;
const GONE: u8 = 16;

/// The engine's answer from the parts `answerOf` sends: an error's
/// message, or a text, the JSON text of a structured value, an exit code.
fn observation(
    flags: u8,
    text: String,
    json: Option<&str>,
    exit_code: Option<i32>,
) -> Result<Observation, ProbeError> {
    if flags & ERROR != 0 {
        return Err(ProbeError::new(text));
    }
    let mut obs = match json {
        Some(json) if flags & JSON != 0 => Observation::json(
            serde_json::from_str(json)
                .map_err(|e| ProbeError::new(format!("the probe's value is not JSON: {e}")))?,
        ),
        _ => Observation::default(),
    };
    if flags & TEXT != 0 {
        obs.text = text;
    }
    obs.exit_code = exit_code;
    obs.gone = flags & GONE != 0;
    Ok(obs)
}

/// How often a worker waiting for a host tool looks at the call's cancel token.
const CANCEL_CHECK: Duration = Duration::from_millis(20);

/// Where one host tool call answers (internal; see `lib/channel.js`).
#[napi]
pub struct ToolReply {
    to: Option<Sender<Result<Observation, ProbeError>>>,
}

#[napi]
impl ToolReply {
    /// Answers the call with the parts `answerOf` gives; returns whether
    /// the worker was still waiting for it.
    #[napi]
    pub fn settle(&mut self, flags: u8, text: String, json: Option<String>) -> bool {
        let answer = observation(flags, text, json.as_deref(), None);
        self.to.take().is_some_and(|to| to.send(answer).is_ok())
    }
}

/// The host's MCP tools of profile call `key`, lent to its profile (AURA's
/// `wait_for` probes them): a worker queues the call on the bridge and
/// waits for the answer until it comes or the engine abandons the call (at
/// the deadline, on cancel), so a throwing tool is a probe error and a
/// hung one is abandoned at the deadline.
pub struct JsTools {
    pub key: u32,
    pub channel: Arc<Channel>,
}

impl ToolCaller for JsTools {
    fn call_tool(
        &self,
        name: &str,
        args: &Value,
        ctx: &ProbeContext,
    ) -> Result<String, ProbeError> {
        let (to, answer) = bounded(1);
        let ctx_ms = [ctx.budget.as_secs_f64() * 1e3, ctx.output_cap as f64];
        let reply = ToolReply { to: Some(to) };
        let call = ToJs::Tool {
            key: self.key,
            name: name.to_string(),
            args: args.clone(),
            ctx: ctx_ms,
            reply,
        };
        if !self.channel.send(call) {
            return Err(ProbeError::new(
                "cannot call into JavaScript: the environment is closing",
            ));
        }
        receive(&answer, ctx).map(|obs| obs.text)
    }
}

fn receive(
    answer: &Receiver<Result<Observation, ProbeError>>,
    ctx: &ProbeContext,
) -> Result<Observation, ProbeError> {
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
