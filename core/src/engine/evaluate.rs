//! Reading a costly sample on a CPU thread (`cpu.rs`). A search is linear in the text, but
//! each byte can cost up to the size of the automata searching it: 150 KB
//! of Unicode words under eight case-insensitive `\w{38}X\w{2}` took over a
//! second, which on the scheduler thread held every other wait's timers
//! and deadlines. So a sample whose text times its wait's program size is
//! large (`Machine::costly_to_read`) is read here, by the wait's machine
//! itself, while a clone of it, as it was before the answer came, stands
//! in on the scheduler: should the wait's deadline pass (or the host
//! cancel it) first, the stand-in ends it as for a call still running,
//! and this reading's outcome is dropped when it comes.

use super::call::panic_message;
use super::queue::Queue;
use super::scheduler::{Answer, Msg};
use crate::cancel::CancelToken;
use crate::machine::{Machine, Step};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

/// Wait `id`'s answer to its call `call`, to read with its machine.
pub(crate) struct EvaluateJob {
    pub id: u64,
    pub call: u64,
    pub machine: Box<Machine>,
    pub answer: Answer,
    /// When the answer came.
    pub now: Duration,
    /// Cancelled when the wait ends: a reading not begun by then is skipped.
    pub ended: CancelToken,
}

impl EvaluateJob {
    /// Reads the answer, and queues the machine and its step (or what
    /// panicked) in the scheduler's `inbox`; also when the wait ended
    /// first and it is not read, so the scheduler counts it as back.
    pub fn run(self, inbox: &Queue<Msg>) {
        let Self {
            id,
            call,
            mut machine,
            answer,
            now,
            ended,
        } = self;
        let step = if ended.is_cancelled() {
            // The stand-in ended the wait: nothing will take this step.
            Err("the wait ended before its sample was read".to_string())
        } else {
            catch_unwind(AssertUnwindSafe(|| machine.on_probe(now, answer)))
                .map_err(|panic| panic_message(panic.as_ref()))
        };
        inbox.push(Msg::Evaluated {
            id,
            call,
            machine,
            step,
        });
    }
}

/// A machine read a sample on a CPU thread: the step it took, or what panicked.
pub(crate) type Evaluated = Result<Step, String>;
