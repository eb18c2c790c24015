//! `waitFor` of `libwaitfor/ax`: core's event wait ([`ouro::Stepper`])
//! driven by the package's loop on the JavaScript clock (the seed's `now`
//! and `sleep`, `Date.now` and timers by default). Core decides when to
//! read, how long to sleep, the state, `until`, and whether `resume` and
//! `next` are called; JavaScript tells the time, reads, sleeps and calls
//! them. Actions are plain objects: `{do: "read", cursor, ms}` (`ms`: the
//! time left), `{do: "sleep", ms}`, `{do: "done", resume, cursor, next}`
//! (`next`: the events to call `next` with, or null).

use std::time::Duration;

use napi_derive::napi;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use waitfor::ouro::{Action, AxRef, Stepper, WaitForError, WaitPlan, WaitRead};

use crate::errors;

/// What `waitFor` was given besides its functions (internal).
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

/// A `waitFor` in progress (internal; see `waitFor` in `lib/ax.js`).
#[napi]
pub struct OuroStepper {
    stepper: Stepper,
    first: Value,
}

#[napi]
impl OuroStepper {
    /// Starts the wait at `now` (ms since the epoch, the host's clock).
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
        let (stepper, first) =
            Stepper::new(plan, millis("now", now)?).map_err(|e| wait_for_error(&e))?;
        Ok(OuroStepper {
            stepper,
            first: action(first),
        })
    }

    /// The first action (a read).
    #[napi]
    pub fn first(&self) -> Value {
        self.first.clone()
    }

    /// What happened at `now`: `"tick"` (a sleep, or a read's time,
    /// ended), `"cancel"` (the signal aborted) or `"read"` (the read
    /// answered `read`, a `WaitRead` with its events already matched).
    /// Returns the next action.
    #[napi]
    pub fn step(&mut self, now: f64, what: String, read: Option<Value>) -> napi::Result<Value> {
        let now = millis("now", now)?;
        let next = match (what.as_str(), read) {
            ("cancel", _) => self.stepper.cancel(now),
            // A read that resolved to null or undefined is refused too.
            ("read", read) => {
                let read = read.unwrap_or_default();
                let read = parse::<WaitRead>("read", read, "must resolve to {events, cursor}")?;
                self.stepper.feed(now, Ok(read))
            }
            _ => self.stepper.tick(now),
        };
        next.map(action).map_err(|e| wait_for_error(&e))
    }

    /// The envelope, with what `resume` and `next` returned, each as
    /// `[value]` (undefined: not called).
    #[napi]
    pub fn finish(
        &mut self,
        resume: Option<Vec<Value>>,
        next: Option<Vec<Value>>,
    ) -> napi::Result<Value> {
        let steps = "must return steps {command, description?}";
        let returned = |v: Option<Vec<Value>>| v.map(|v| v.into_iter().next().unwrap_or_default());
        let resume = returned(resume)
            .map(|v| parse("resume", v, steps))
            .transpose()?;
        let next = returned(next)
            .map(|v| parse("next", v, steps))
            .transpose()?;
        let waited = self.stepper.finish(resume, next.unwrap_or_default());
        let waited = waited.map_err(|e| wait_for_error(&e))?;
        serde_json::to_value(&waited.wait).map_err(|e| errors::other("internal", e))
    }
}

/// The action as the package's loop reads it.
fn action(action: Action) -> Value {
    let ms = |d: Duration| d.as_nanos() as f64 / 1e6;
    match action {
        Action::Read { cursor, within } => {
            json!({"do": "read", "cursor": cursor, "ms": ms(within)})
        }
        Action::Sleep(d) => json!({"do": "sleep", "ms": ms(d)}),
        Action::Done(ended) => json!({
            "do": "done", "resume": ended.resume, "cursor": ended.cursor,
            "next": ended.wants_next().then_some(&ended.events),
        }),
    }
}

/// `ms` milliseconds (exact for whole ones), refused (naming `field`)
/// unless it is a number, 0 or more.
fn millis(field: &str, ms: f64) -> napi::Result<Duration> {
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(errors::invalid(
            field,
            "out_of_range",
            format!("{field}: must be a number of milliseconds, 0 or more (got {ms:?})"),
        ));
    }
    let fraction = Duration::from_nanos((ms.fract() * 1e6).round() as u64);
    Ok(Duration::from_millis(ms.trunc() as u64) + fraction)
}

/// `value` as a `T`, or an `invalid_arguments` error naming `field`.
fn parse<T: DeserializeOwned>(field: &str, value: Value, rule: &str) -> napi::Result<T> {
    serde_json::from_value(value)
        .map_err(|e| errors::invalid(field, "wrong_type", format!("{field}: {rule}: {e}")))
}

/// Core's refusal in the package's terms (the time limit is `timeoutMs`).
fn wait_for_error(e: &WaitForError) -> napi::Error {
    let (code, field, message) = match e {
        WaitForError::Options { field, message } => {
            let field = if *field == "timeout" {
                "timeoutMs"
            } else {
                field
            };
            (
                "invalid_arguments",
                Some(field),
                format!("{field}: {message}"),
            )
        }
        WaitForError::Envelope(_) => ("invalid_wait", None, e.to_string()),
        _ => ("runtime", None, e.to_string()),
    };
    errors::typed(json!({"code": code, "field": field, "rule": null, "message": message}))
}
