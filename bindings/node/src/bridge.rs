//! The one way from the engine's threads into a JavaScript environment: a
//! [`Bridge`] per environment holds one weak, callee-unhandled threadsafe
//! function calling `dispatch` (`lib/channel.js`) with each probe call,
//! host tool call, report and end ([`ToJs`]). Answers come back as
//! `dispatch`'s value (a string) or through the wait's [`NativeWait`].
//! JavaScript never throws into the function: nothing reaches
//! `napi_fatal_exception`.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::{FnArgs, Function, JsValuesTupleIntoVec};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode::NonBlocking};
use napi::{sys, Status};
use napi_derive::napi;
use parking_lot::Mutex;
use serde_json::Value;
use waitfor::profiles::ToolCaller;
use waitfor::{AsyncProbe, Observation, ProbeContext, ProbeError, Reply, WaitControl};

type Answer = Result<Observation, ProbeError>;
type AnswerTo = Box<dyn FnOnce(Answer) + Send>;

/// What reaches `dispatch(kind, key, ...)`; the kinds are `lib/channel.js`'s.
/// A call carries its wait's [`Call`]: one the wait ended behind (the event
/// loop was busy past its deadline) reaches `dispatch` with key 0, which no
/// wait has, so the probe or host tool is not called for nobody.
pub enum ToJs {
    /// `(0, key, sample, elapsedMs, budgetMs, outputCap)`: call wait `key`'s probe.
    Probe(u32, [f64; 4], Arc<Call>),
    /// `(1, key, outputCap, budgetMs, name, args)`: call profile call `key`'s
    /// host tool; `args` is JSON text, which `JSON.parse` reads whatever its
    /// size (napi's conversion of a value refuses over a million nodes, and
    /// a conversion that fails here is a fatal exception).
    Tool(u32, [f64; 2], String, String, Arc<Call>),
    /// `(2, key, json)`: wait `key`'s end; `(3, key, json)`: a report.
    Event(u32, u32, String),
    /// `(3, key, json)`: wait `key`'s newest report, read as it is handed over.
    Report(u32, Arc<Latest>),
}

pub const END: u32 = 2;
pub const PROGRESS: u32 = 3;

impl JsValuesTupleIntoVec for ToJs {
    fn into_vec(self, env: sys::napi_env) -> napi::Result<Vec<sys::napi_value>> {
        let live = |key, call: &Call| if call.ended.load(SeqCst) { 0 } else { key };
        match self {
            ToJs::Probe(key, [a, b, c, d], call) => {
                FnArgs::from((0, live(key, &call), a, b, c, d)).into_vec(env)
            }
            ToJs::Tool(key, [a, b], name, args, call) => {
                FnArgs::from((1, live(key, &call), a, b, name, args)).into_vec(env)
            }
            ToJs::Event(kind, key, json) => FnArgs::from((kind, key, json)).into_vec(env),
            ToJs::Report(key, latest) => match latest.0.lock().take() {
                Some(json) => FnArgs::from((PROGRESS, key, json)).into_vec(env),
                None => FnArgs::from((PROGRESS, 0)).into_vec(env),
            },
        }
    }
}

type Dispatch = ThreadsafeFunction<ToJs, Option<String>, ToJs, Status, false, true>;

/// One environment's threadsafe function, shared by the engine's threads.
/// They may drop it while a terminated Worker's environment is torn down;
/// napi-rs's own drop then races with Node's and may release a function
/// Node has freed (the process aborts). `abort` holds the handle until the
/// release is done, which serialises the two.
pub struct Channel(Option<Dispatch>);

impl Channel {
    /// Queues `item`; a string `dispatch` returns answers `call`. False
    /// once the environment is closing.
    pub fn send(&self, item: ToJs, call: Option<Arc<Call>>) -> bool {
        let answered = move |text: napi::Result<Option<String>>, _| {
            if let (Some(call), Ok(Some(text))) = (call, text) {
                call.answer(Ok(Observation::text(text)));
            }
            Ok(())
        };
        let sent = self
            .0
            .as_ref()
            .map(|f| f.call_with_return_value(item, NonBlocking, answered));
        sent == Some(Status::Ok)
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        #[allow(deprecated)]
        let _ = self.0.take().map(|f| f.abort());
    }
}

/// A wait's newest progress report not yet handed to JavaScript (JSON
/// text). One item per wait is queued at a time and reads the newest when
/// handed over: while the event loop is busy, reports replace each other
/// instead of piling up in the queue (200 waits sampling every 10 ms held
/// 44 MiB more after 8 s).
#[derive(Default)]
pub struct Latest(Mutex<Option<String>>);

impl Latest {
    /// Keeps `json` as wait `key`'s newest report, queuing an item for it
    /// unless one is queued already.
    pub fn send(self: &Arc<Self>, channel: &Channel, key: u32, json: String) {
        if self.0.lock().replace(json).is_none() {
            channel.send(ToJs::Report(key, self.clone()), None);
        }
    }
}

/// One JavaScript environment's bridge (internal: `lib/channel.js` makes it).
#[napi]
pub struct Bridge {
    pub(crate) channel: Arc<Channel>,
}

#[napi]
impl Bridge {
    /// A bridge calling `dispatch` on the JavaScript thread; it must not throw.
    #[napi(
        constructor,
        ts_args_type = "dispatch: (kind: number, key: number, ...args: any[]) => string | undefined"
    )]
    pub fn new(dispatch: Function<'static, ToJs, Option<String>>) -> napi::Result<Self> {
        let f = dispatch
            .build_threadsafe_function()
            .weak::<true>()
            .callee_handled::<false>();
        Ok(Self {
            channel: Arc::new(Channel(Some(f.build()?))),
        })
    }
}

/// Where the call a wait has out (a probe's or a host tool's) answers.
#[derive(Default)]
pub struct Call {
    to: Mutex<Option<AnswerTo>>,
    ended: AtomicBool,
}

impl Call {
    fn begin(&self, to: impl FnOnce(Answer) + Send + 'static) {
        *self.to.lock() = Some(Box::new(to));
    }

    fn answer(&self, answer: Answer) {
        let to = self.to.lock().take();
        if let Some(to) = to {
            to(answer);
        }
    }

    /// The wait has ended: a call still out is answered by nobody.
    pub fn end(&self) {
        self.ended.store(true, SeqCst);
        drop(self.to.lock().take());
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
    /// Answers the call out with `text`, or the error `text` (`error`),
    /// and the JSON text of a structured value, an exit code, `gone`.
    #[napi]
    pub fn answer(
        &self,
        error: bool,
        text: Option<String>,
        json: Option<String>,
        exit_code: Option<i32>,
        gone: Option<bool>,
    ) {
        let value = json.map(|json| serde_json::from_str(&json));
        self.call.answer(match (error, value) {
            (true, _) => Err(ProbeError::new(text.unwrap_or_default())),
            (_, Some(Err(e))) => Err(ProbeError::new(format!(
                "the probe's value is not JSON: {e}"
            ))),
            (_, value) => {
                let mut obs = value.map_or_else(Observation::default, |v| {
                    Observation::json(v.unwrap_or_default())
                });
                obs.text = text.unwrap_or(obs.text);
                (obs.exit_code, obs.gone) = (exit_code, gone.unwrap_or_default());
                Ok(obs)
            }
        });
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
    /// and its command with it, not at its deadline.
    fn drop(&mut self) {
        if !self.call.ended.load(SeqCst) {
            self.control.cancel();
        }
    }
}

/// Whole milliseconds: small integers, which V8 keeps without allocating (a
/// fraction is a new heap number each call).
fn ms(d: Duration) -> f64 {
    d.as_millis() as f64
}

/// A wait's JavaScript probe, or a profile call's host tools, `key` in `lib/channel.js`.
pub struct Js {
    pub key: u32,
    pub call: Arc<Call>,
    pub channel: Arc<Channel>,
}

const CLOSING: &str = "the JavaScript environment is closing";

impl AsyncProbe for Js {
    fn begin(&mut self, ctx: &ProbeContext, reply: Reply) {
        self.call.begin(|answer| reply.send(answer));
        let ctx = [
            ctx.sample as f64,
            ms(ctx.elapsed),
            ms(ctx.budget),
            ctx.output_cap as f64,
        ];
        if !self.channel.send(
            ToJs::Probe(self.key, ctx, self.call.clone()),
            Some(self.call.clone()),
        ) {
            self.call.answer(Err(ProbeError::new(CLOSING)));
        }
    }

    fn name(&self) -> &str {
        "javascript"
    }
}

impl ToolCaller for Js {
    /// Called on a worker, which waits for the answer until it comes or the
    /// engine abandons the call (its token, at the deadline or on cancel).
    fn call_tool(
        &self,
        name: &str,
        args: &Value,
        ctx: &ProbeContext,
    ) -> Result<String, ProbeError> {
        let (to, answer) = crossbeam_channel::bounded(1);
        self.call.begin(move |answer| drop(to.send(answer)));
        let ctx_ms = [ctx.output_cap as f64, ms(ctx.budget)];
        if !self.channel.send(
            ToJs::Tool(
                self.key,
                ctx_ms,
                name.into(),
                args.to_string(),
                self.call.clone(),
            ),
            None,
        ) {
            return Err(ProbeError::new(CLOSING));
        }
        while !ctx.cancel.is_cancelled() {
            match answer.recv_timeout(Duration::from_millis(20)) {
                Ok(answer) => return answer.map(|obs| obs.text),
                Err(e) if e.is_disconnected() => break,
                Err(_) => {}
            }
        }
        Err(ProbeError::new("the JavaScript call was abandoned"))
    }
}
