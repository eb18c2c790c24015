//! `waitFor` of `libwaitfor/ax`: core's `ouro::Stepper` says what to do
//! (`{do: "read", cursor, ms}`, `{do: "sleep", ms}`, `{do: "done",
//! resume, cursor, next}`) and `lib/ax.js` does it on the JavaScript clock.

use std::time::Duration;

use napi_derive::napi;
use serde_json::{json, Value};
use waitfor::ouro::{Action, AxRef, Stepper, WaitForError, WaitPlan, WaitRead};

use crate::errors;

/// What `waitFor` was given besides its functions.
#[napi(object)]
pub struct WaitForArgs {
    #[napi(js_name = "for")]
    pub awaited: String,
    pub target: Option<AxRef>,
    pub cursor: Option<String>,
    pub callback: Option<String>,
    pub timeout_ms: f64,
    pub interval_ms: Option<f64>,
}

#[napi]
pub struct OuroStepper {
    stepper: Stepper,
    first: Value,
}

#[napi]
impl OuroStepper {
    /// Starts the wait at `now` (ms since the epoch on the host's clock).
    #[napi(constructor)]
    pub fn new(args: WaitForArgs, now: f64) -> napi::Result<Self> {
        let mut plan = WaitPlan {
            target: args.target,
            cursor: args.cursor,
            callback: args.callback,
            ..WaitPlan::new(args.awaited, Some(millis("timeoutMs", args.timeout_ms)?))
        };
        if let Some(ms) = args.interval_ms {
            plan.interval = millis("intervalMs", ms)?;
        }
        let (stepper, first) = Stepper::new(plan, millis("now", now)?).map_err(refused)?;
        let first = action(first);
        Ok(OuroStepper { stepper, first })
    }

    /// The first action (a read).
    #[napi]
    pub fn first(&self) -> Value {
        self.first.clone()
    }

    /// What happened at `now` (`"tick"`, `"cancel"`, or `"read"` with the
    /// read's matched answer); the next action.
    #[napi]
    pub fn step(&mut self, now: f64, what: String, read: Option<Value>) -> napi::Result<Value> {
        let now = millis("now", now)?;
        let next = match what.as_str() {
            "cancel" => self.stepper.cancel(now),
            "read" => {
                // A read that resolved to null or undefined is refused too.
                let read = read.unwrap_or_default();
                let read: WaitRead =
                    errors::parse("read", read, "must resolve to {events, cursor}")?;
                self.stepper.feed(now, Ok(read))
            }
            _ => self.stepper.tick(now),
        };
        next.map(action).map_err(refused)
    }

    /// The envelope, with what `resume` and `next` returned, each as
    /// `[value]` (absent: not called).
    #[napi]
    pub fn finish(
        &mut self,
        resume: Option<Vec<Value>>,
        next: Option<Vec<Value>>,
    ) -> napi::Result<Value> {
        let steps = "must return steps {command, description?}";
        let returned = |v: Vec<Value>| v.into_iter().next().unwrap_or_default();
        let resume = resume
            .map(|v| errors::parse("resume", returned(v), steps))
            .transpose()?;
        let next = next
            .map(|v| errors::parse("next", returned(v), steps))
            .transpose()?;
        let waited = self
            .stepper
            .finish(resume, next.unwrap_or_default())
            .map_err(refused)?;
        serde_json::to_value(&waited.wait).map_err(|e| errors::other("internal", e))
    }
}

fn action(action: Action) -> Value {
    let ms = |d: Duration| d.as_nanos() as f64 / 1e6;
    match action {
        Action::Read { cursor, within } => {
            json!({"do": "read", "cursor": cursor, "ms": ms(within)})
        }
        Action::Sleep(d) => json!({"do": "sleep", "ms": ms(d)}),
        Action::Done(ended) => json!({"do": "done", "resume": ended.resume, "cursor": ended.cursor,
            "next": ended.wants_next().then_some(&ended.events)}),
    }
}

/// `ms` milliseconds, exact for whole ones; refused unless a number, 0 or more.
fn millis(field: &str, ms: f64) -> napi::Result<Duration> {
    if !(ms.is_finite() && ms >= 0.0) {
        let message = format!("{field}: must be a number of milliseconds, 0 or more (got {ms:?})");
        return Err(errors::invalid(field, "out_of_range", message));
    }
    let fraction = Duration::from_nanos((ms.fract() * 1e6).round() as u64);
    Ok(Duration::from_millis(ms.trunc() as u64) + fraction)
}

/// Core's refusal in the package's terms (its time limit is `timeoutMs`).
fn refused(e: WaitForError) -> napi::Error {
    match e {
        WaitForError::Options { field, message } => {
            let field = match field {
                "timeout" => "timeoutMs",
                field => field,
            };
            let message = format!("{field}: {message}");
            errors::typed(json!({"code": "invalid_arguments", "field": field, "message": message}))
        }
        WaitForError::Envelope(_) => errors::other("invalid_wait", e),
        _ => errors::other("runtime", e),
    }
}
