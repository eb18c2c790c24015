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
