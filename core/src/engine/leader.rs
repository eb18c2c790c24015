//! The scheduler thread's loop, and its hand-over when an inline call
//! hangs (see [`super::watchdog`]).
//!
//! The scheduler's state sits behind a lock that its thread holds except
//! while it makes a probe call itself. When the watchdog finds such a call
//! stuck, it starts a new scheduler thread, which takes the lock and goes
//! on; the stuck thread posts its answer like a worker when the call
//! returns, and ends.

use super::queue::Queue;
use super::scheduler::{Msg, Scheduler};
use super::watchdog::Watchdog;
use crate::sync::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most time one turn spends making calls itself.
const INLINE_BUDGET: Duration = Duration::from_millis(2);

struct Leadership {
    scheduler: Mutex<Scheduler>,
    watchdog: Option<Watchdog>,
    /// Where a stuck thread posts its answer.
    inbox: Arc<Queue<Msg>>,
}

/// Starts the scheduler thread (and its watchdog) for an engine whose
/// probe calls run on at most `worker_cap` workers.
pub(crate) fn start(inbox: Arc<Queue<Msg>>, epoch: Instant, worker_cap: usize) {
    let watchdog = Watchdog::new(epoch);
    let scheduler = Scheduler::new(inbox.clone(), epoch, watchdog.is_some(), worker_cap);
    let leadership = Arc::new(Leadership {
        scheduler: Mutex::new(scheduler),
        watchdog,
        inbox,
    });
    spawn_leader(leadership.clone(), false);
    if leadership.watchdog.is_some() {
        std::thread::Builder::new()
            .name("waitfor-watchdog".into())
            .spawn(move || {
                if let Some(watchdog) = &leadership.watchdog {
                    watchdog.watch(|| spawn_leader(leadership.clone(), true));
                }
            })
            .expect("cannot start the waitfor watchdog thread");
    }
}

fn spawn_leader(leadership: Arc<Leadership>, took_over: bool) {
    std::thread::Builder::new()
        .name("waitfor-scheduler".into())
        .spawn(move || lead(&leadership, took_over))
        .expect("cannot start the waitfor scheduler thread");
}

/// The scheduler loop; returns when a stuck inline call lost the
/// scheduler to another thread.
fn lead(leadership: &Leadership, took_over: bool) {
    let mut scheduler = leadership.scheduler.lock();
    if let Some(watchdog) = &leadership.watchdog {
        watchdog.calls_from_this_thread();
    }
    if took_over {
        // What the stuck thread's turn decided (calls, results) goes out
        // now, not at some later turn.
        scheduler.after_take_over();
        scheduler.flush();
    }
    loop {
        scheduler.gather();
        if let Some(watchdog) = &leadership.watchdog {
            // Two clock reads a call: its start (also the turn's budget
            // check and the watchdog's) and its end (also the answer's time).
            let turn = Instant::now();
            while let Some(job) = scheduler.next_inline() {
                let started = Instant::now();
                if started - turn >= INLINE_BUDGET {
                    // More quick calls than one thread makes in time: the
                    // rest go to workers, so every core takes a share.
                    scheduler.defer_inline(job);
                    scheduler.hand_inline_to_workers();
                    break;
                }
                let ticket = watchdog.enter(started);
                drop(scheduler);
                let answer = job.call();
                let ended = Instant::now();
                let took = ended - started;
                let (id, call) = (job.id, job.call.sample);
                // Let go of the probe before answering (see `ProbeJob::run`).
                drop(job);
                if !watchdog.leave(ticket) {
                    leadership.inbox.push(Msg::ProbeDone {
                        id,
                        call,
                        result: answer,
                        took: Some(took),
                    });
                    return;
                }
                scheduler = leadership.scheduler.lock();
                scheduler.answer(id, call, answer, took, ended);
            }
            watchdog.disarm();
        }
        scheduler.flush();
    }
}
