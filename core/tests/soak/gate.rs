//! Where hung probe calls block until the test releases them all, so the
//! process ends clean whatever the engine did with them.

use std::sync::{Condvar, Mutex};
use std::time::Duration;
use waitfor::CancelToken;

#[derive(Default)]
pub struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

/// How often a call blocked at the gate looks at its cancel token.
const CANCEL_CHECK: Duration = Duration::from_millis(10);

impl Gate {
    /// Releases every call blocked at the gate, and every later one.
    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    /// Blocks until the gate opens, or `cancel` (when given) is cancelled.
    pub fn block(&self, cancel: Option<&CancelToken>) {
        let mut open = self.open.lock().unwrap();
        while !*open && !cancel.is_some_and(CancelToken::is_cancelled) {
            open = self.opened.wait_timeout(open, CANCEL_CHECK).unwrap().0;
        }
    }
}
