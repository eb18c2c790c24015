//! Where hung probe calls block until the test releases them all, so the
//! process ends clean whatever the engine did with them.
//!
//! A blocked call sleeps on a cancel token and uses no CPU until it is
//! released, as a probe blocked in I/O does: a call that woke now and then
//! to look (thousands of them, on one lock) would take the cores the
//! engine is being measured on.

use std::sync::Mutex;
use waitfor::CancelToken;

#[derive(Default)]
pub struct Gate {
    /// Whether the gate is open, and the tokens of the calls blocked at it.
    state: Mutex<(bool, Vec<CancelToken>)>,
}

impl Gate {
    /// Releases every call blocked at the gate, and every later one.
    pub fn open(&self) {
        let mut state = self.state.lock().unwrap();
        state.0 = true;
        for token in state.1.drain(..) {
            token.cancel();
        }
    }

    /// Blocks until the gate opens, or `cancel` (when given) is cancelled.
    pub fn block(&self, cancel: Option<&CancelToken>) {
        // Opening the gate cancels the call's own token: the engine does
        // too once the call's wait has ended, so nothing new is told.
        let token = cancel.cloned().unwrap_or_default();
        {
            let mut state = self.state.lock().unwrap();
            if state.0 {
                return;
            }
            state.1.push(token.clone());
        }
        token.wait_timeout(std::time::Duration::MAX);
    }
}
