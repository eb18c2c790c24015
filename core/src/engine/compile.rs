//! A wait's first job on a worker: compiling its conditions, in its own
//! time rather than on the host's thread (large patterns take seconds).

use super::call::panic_message;
use super::queue::Queue;
use super::scheduler::Msg;
use crate::machine::Conditions;
use crate::spec::Spec;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The conditions of wait `id` to compile.
pub(crate) struct CompileJob {
    pub id: u64,
    pub spec: Box<Spec>,
}

/// What compiling gave: the conditions, or why the wait cannot go on.
pub(crate) type Compiled = Result<Conditions, String>;

impl CompileJob {
    /// Compiles, and queues the outcome in the scheduler's `inbox`.
    pub fn run(self, inbox: &Queue<Msg>) {
        let compiled = match catch_unwind(AssertUnwindSafe(|| Conditions::compile(&self.spec))) {
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
