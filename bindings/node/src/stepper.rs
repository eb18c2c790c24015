//! `waitFor` of `libwaitfor/ax`: core's `ouro::HostStepper` says what to
//! do next and `lib/ax.js` does it on the JavaScript clock.

use napi_derive::napi;
use serde_json::Value;
use waitfor::ouro::HostStepper;

use crate::errors;

#[napi]
pub struct OuroStepper {
    inner: HostStepper,
    first: Value,
}

#[napi]
impl OuroStepper {
    /// Starts the wait at `now` (ms since the epoch on the host's clock).
    #[napi(constructor)]
    pub fn new(args: Value, now: f64) -> napi::Result<Self> {
        let (inner, first) = HostStepper::new(&args, now).map_err(|e| errors::info(&e))?;
        Ok(OuroStepper { inner, first })
    }

    /// The first action (a read).
    #[napi]
    pub fn first(&self) -> Value {
        self.first.clone()
    }

    /// What happened at `now`; the next action.
    #[napi]
    pub fn step(&mut self, now: f64, what: String, read: Option<Value>) -> napi::Result<Value> {
        self.inner
            .step(now, &what, read)
            .map_err(|e| errors::info(&e))
    }

    /// The envelope, given `{resume?, next?}`: what those functions returned.
    #[napi]
    pub fn finish(&mut self, returned: Value) -> napi::Result<Value> {
        self.inner.finish(&returned).map_err(|e| errors::info(&e))
    }
}
