//! The hosts told when a turn has begun async probe calls (see
//! [`CallsBegun`]).

use std::panic::AssertUnwindSafe;
use std::sync::Weak;

use crate::probe::CallsBegun;

/// The registered hosts and the calls begun since they were last told.
#[derive(Default)]
pub struct BegunHooks {
    hooks: Vec<Weak<dyn CallsBegun>>,
    begun: usize,
}

impl BegunHooks {
    /// Tells `hook` from now on, while anything else holds it.
    pub fn add(&mut self, hook: Weak<dyn CallsBegun>) {
        self.hooks.push(hook);
    }

    /// An async probe call was begun.
    pub fn count(&mut self) {
        self.begun += 1;
    }

    /// Tells every live host if at least `at_least` calls (and any) were
    /// begun since the last time, and forgets the hosts that are gone. A
    /// host that panics is told again next time: the scheduler goes on.
    pub fn tell(&mut self, at_least: usize) {
        if self.begun < at_least.max(1) {
            return;
        }
        self.begun = 0;
        self.hooks.retain(|hook| match hook.upgrade() {
            Some(hook) => {
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| hook.calls_begun()));
                true
            }
            None => false,
        });
    }
}
