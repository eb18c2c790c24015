//! Threads for the engine's work that takes a core: compiles (`compile.rs`)
//! and costly readings (`evaluate.rs`), at most one per core, earliest
//! deadline first, each skipped once its wait has ended.
//!
//! At most one per core: a burst of costly patterns (`\w{150}` runs to the
//! size limit) on every worker at once would leave the scheduler thread no
//! CPU to end waits at their deadlines. On threads of their own, not the
//! workers': a compile waiting for a core would hold a worker (and grow
//! the pool for calls queued behind it); and glibc keeps what a large
//! compile freed in the allocator arena of the thread that compiled, so
//! compiles spread over many workers kept a little more memory with each
//! round of them (hostile bench: 120 distinct `\w{150}N`, run twice).

use super::queue::{Queue, Urgent};
use super::scheduler::Msg;
use super::workers::{Task, Tasks, IDLE_EXIT};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The threads, started as tasks come (one per core at most), each
/// leaving after [`IDLE_EXIT`] with nothing to do.
pub(crate) struct CpuThreads {
    jobs: Arc<Tasks>,
    /// Threads started and not left.
    running: Arc<AtomicUsize>,
    limit: usize,
    /// Where the tasks post their outcome: the scheduler's inbox.
    inbox: Arc<Queue<Msg>>,
}

impl CpuThreads {
    pub fn new(inbox: Arc<Queue<Msg>>) -> Self {
        Self {
            jobs: Arc::new(Queue::new()),
            running: Arc::default(),
            limit: std::thread::available_parallelism().map_or(1, |n| n.get()),
            inbox,
        }
    }

    /// Queues `tasks`, and starts a thread for each, up to one per core
    /// in all: no more, for a thread with no task idles [`IDLE_EXIT`].
    pub fn push_all(&self, tasks: impl IntoIterator<Item = Urgent<Task>>) {
        let mut count = 0;
        self.jobs
            .push_all(tasks.into_iter().inspect(|_| count += 1));
        for _ in 0..count {
            if !take_place(&self.running, self.limit) {
                return;
            }
            let (jobs, running, inbox) =
                (self.jobs.clone(), self.running.clone(), self.inbox.clone());
            let limit = self.limit;
            let spawned = std::thread::Builder::new()
                .name("waitfor-cpu".into())
                .spawn(move || work(&jobs, &running, limit, &inbox));
            if spawned.is_err() {
                // The threads already running take the tasks in turn.
                self.running.fetch_sub(1, Ordering::SeqCst);
                return;
            }
        }
    }

    /// Gives back the queue's room for more than `room` tasks.
    pub fn shrink_to(&self, room: usize) {
        self.jobs.shrink_to(room);
    }
}

/// Counts one more thread if fewer than `limit` run.
fn take_place(running: &AtomicUsize, limit: usize) -> bool {
    running
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < limit).then_some(n + 1)
        })
        .is_ok()
}

fn work(jobs: &Tasks, running: &AtomicUsize, limit: usize, inbox: &Queue<Msg>) {
    loop {
        match jobs.pop(Some(Instant::now() + IDLE_EXIT)) {
            Some(task) => task.item.run(inbox),
            None => {
                running.fetch_sub(1, Ordering::SeqCst);
                // A task queued as this thread was leaving may have found
                // it still counted, and started no thread for itself.
                if jobs.len() == 0 || !take_place(running, limit) {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
impl CpuThreads {
    /// Tasks its queue has room for without growing.
    pub fn room(&self) -> usize {
        self.jobs.room()
    }
}

/// A compile of a literal: it runs at once and posts its outcome.
#[cfg(test)]
pub(super) fn quick_compile(id: u64) -> Task {
    let ended = crate::CancelToken::new();
    Task::Compile(super::compile::CompileJob {
        id,
        spec: Box::new(crate::spec::Spec::new(crate::spec::Condition::Matches(
            crate::Pattern::literal("x"),
        ))),
        ended,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One task starts one thread, not one per core: a thread with no
    /// task would idle for [`IDLE_EXIT`].
    #[test]
    fn a_task_starts_one_thread_not_one_per_core() {
        let threads = CpuThreads {
            limit: 4,
            ..CpuThreads::new(Arc::new(Queue::new()))
        };
        threads.push_all([Urgent {
            due: std::time::Duration::ZERO,
            seq: 0,
            item: quick_compile(1),
        }]);
        assert_eq!(threads.running.load(Ordering::SeqCst), 1);
    }
}
