//! Probes that answer later, from a thread of their own choosing.

use super::Reply;
use super::{ProbeContext, ProbeMode};

/// A probe that answers later: for hosts whose probe functions run on an
/// event loop (a JavaScript or asyncio loop), where a worker thread
/// blocked on each answer would be wasted. The engine calls
/// [`AsyncProbe::begin`] on its scheduler thread; the probe hands the call
/// to its loop and returns at once, and the answer comes back through the
/// [`Reply`], from any thread. Deadlines hold as for any probe: a call not
/// answered in time is abandoned, and its late answer ignored.
///
/// ```
/// use waitfor::{AsyncProbe, Condition, Engine, Observation, Outcome, Pattern, ProbeContext, Reply, Spec};
/// struct Threaded;
/// impl AsyncProbe for Threaded {
///     fn begin(&mut self, ctx: &ProbeContext, reply: Reply) {
///         let sample = ctx.sample;
///         // A real host queues the call on its loop; a thread stands in here.
///         std::thread::spawn(move || {
///             let text = if sample < 3 { "starting" } else { "ready" };
///             reply.send(Ok(Observation::text(text)));
///         });
///     }
/// }
/// let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
///     .interval(std::time::Duration::from_millis(10));
/// let handle = Engine::global().start_async(spec, Threaded, Default::default()).unwrap();
/// let result = handle.wait();
/// assert_eq!((result.outcome, result.samples), (Outcome::Matched, 3));
/// ```
pub trait AsyncProbe: Send + 'static {
    /// Starts one sample and returns at once: it runs on the scheduler
    /// thread, so it must never block. Answer through `reply`, once; a
    /// reply dropped unanswered is a probe error.
    fn begin(&mut self, ctx: &ProbeContext, reply: Reply);

    /// Snapshot or stream (default snapshot).
    fn mode(&self) -> ProbeMode {
        ProbeMode::Snapshot
    }

    /// A name for logs and the `probe_tool` span attribute.
    fn name(&self) -> &str {
        "callback"
    }
}

/// Told when the scheduler has begun a batch of [`AsyncProbe`] calls: a
/// host that queues calls for its event loop can hold its wake-up until
/// then, and wake the loop once for the batch instead of once per call
/// (with 10,000 waits, calls come due in every millisecond, and a loop
/// woken per call spends its time being woken). Register one with
/// [`crate::Engine::on_calls_begun`].
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use waitfor::{AsyncProbe, CallsBegun, Condition, Engine, Observation, Pattern, ProbeContext, Reply, Spec};
///
/// /// Calls wait here until the batch is over, then one thread answers them all.
/// #[derive(Default)]
/// struct Batches(Mutex<Vec<Reply>>);
/// impl CallsBegun for Batches {
///     fn calls_begun(&self) {
///         let batch = std::mem::take(&mut *self.0.lock().unwrap());
///         std::thread::spawn(move || {
///             Reply::send_all(batch.into_iter().map(|r| (r, Ok(Observation::text("ready")))));
///         });
///     }
/// }
/// struct Queued(Arc<Batches>);
/// impl AsyncProbe for Queued {
///     fn begin(&mut self, _: &ProbeContext, reply: Reply) {
///         self.0 .0.lock().unwrap().push(reply);
///     }
/// }
/// let batches = Arc::new(Batches::default());
/// let hook: Arc<dyn CallsBegun> = batches.clone();
/// Engine::global().on_calls_begun(Arc::downgrade(&hook));
/// let spec = Spec::new(Condition::Matches(Pattern::literal("ready")));
/// let handle = Engine::global().start_async(spec, Queued(batches), Default::default()).unwrap();
/// assert_eq!(handle.wait().samples, 1);
/// ```
pub trait CallsBegun: Send + Sync + 'static {
    /// The scheduler began calls of async probes: at the end of its turn,
    /// and in a long turn after each chunk of calls. Runs on the scheduler
    /// thread, so it must never block.
    fn calls_begun(&self);
}
