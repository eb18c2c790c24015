//! A wait's first job on a worker: compiling its conditions, in its own
//! time rather than on the host's thread (large patterns take seconds).

use super::call::panic_message;
use super::queue::Queue;
use super::scheduler::Msg;
use crate::cancel::CancelToken;
use crate::machine::Conditions;
use crate::spec::Spec;
use crate::sync::{Condvar, Mutex};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::LazyLock;
use std::time::Duration;

/// The conditions of wait `id` to compile.
pub(crate) struct CompileJob {
    pub id: u64,
    pub spec: Box<Spec>,
    /// Cancelled when the wait ends: a compile not begun by then is skipped.
    pub ended: CancelToken,
}

/// Compiles running at once, at most one per core (cached patterns pass
/// in microseconds). Why: a burst of costly patterns (`\w{150}` runs to
/// the size limit) on every worker at once would leave the scheduler
/// thread no CPU to end waits at their deadlines.
struct Gate {
    running: Mutex<usize>,
    freed: Condvar,
    limit: usize,
}

static GATE: LazyLock<Gate> = LazyLock::new(|| Gate {
    running: Mutex::new(0),
    freed: Condvar::new(),
    limit: std::thread::available_parallelism().map_or(1, |n| n.get()),
});

/// How often a compile waiting for the gate looks whether its wait ended.
const GATE_CHECK: Duration = Duration::from_millis(10);

impl Gate {
    /// Waits for a place, or gives up (`false`) once `ended` is cancelled.
    fn enter(&self, ended: &CancelToken) -> bool {
        let mut running = self.running.lock();
        while *running >= self.limit {
            if ended.is_cancelled() {
                return false;
            }
            self.freed.wait_for(&mut running, GATE_CHECK);
        }
        *running += 1;
        true
    }

    fn leave(&self) {
        *self.running.lock() -= 1;
        self.freed.notify_one();
    }
}

/// What compiling gave: the conditions, or why the wait cannot go on.
pub(crate) type Compiled = Result<Conditions, String>;

impl CompileJob {
    /// Compiles, and queues the outcome in the scheduler's `inbox`.
    pub fn run(self, inbox: &Queue<Msg>) {
        // A wait that ended before its compile began has no use for it.
        if self.ended.is_cancelled() || !GATE.enter(&self.ended) {
            return;
        }
        let compiled = catch_unwind(AssertUnwindSafe(|| {
            crate::pattern::until_wait_ends(&self.ended, || Conditions::compile(&self.spec))
        }));
        GATE.leave();
        let compiled = match compiled {
            Ok(Ok(conditions)) => Ok(conditions),
            Ok(Err(error)) => Err(format!(
                "the spec's patterns could not be compiled: {error}"
            )),
            Err(panic) => Err(format!(
                "compiling the spec's patterns panicked: {}",
                panic_message(panic.as_ref())
            )),
        };
        inbox.push(Msg::Compiled {
            id: self.id,
            conditions: compiled,
        });
    }
}
