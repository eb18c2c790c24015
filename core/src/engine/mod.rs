//! The engine: one scheduler thread and a few workers run every wait.

mod call;
mod compile;
mod cpu;
mod evaluate;
mod handle;
mod lane;
mod queue;
mod scheduler;
mod timers;
mod workers;

pub use handle::{WaitControl, WaitHandle};
// Unit tests build results with it (the tmux profiles', the command
// probe's).
#[cfg(test)]
pub(crate) use scheduler::error_result;

use crate::cancel::CancelToken;
use crate::error::{Rule, SpecError};
use crate::machine::{Machine, Progress};
use crate::policy::Policy;
use crate::probe::ProbeContext;
use crate::probe::{AsyncProbe, Probe, ProbeMode, Unchanged};
use crate::result::WaitResult;
use crate::spec::{Spec, ViewKind};
use crate::sync::Mutex;
use handle::{Calling, DeferredCell, ProbeCell, ProbeHolder, Slot};
use queue::Queue;
use scheduler::{Active, Msg, Scheduler};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Options of one wait besides its spec and probe.
///
/// ```
/// use waitfor::{Policy, WaitOptions};
/// let options = WaitOptions::default()
///     .policy(Policy::default())
///     .on_progress(|p| eprintln!("{} samples", p.samples));
/// ```
#[derive(Default)]
pub struct WaitOptions {
    pub(crate) policy: Policy,
    pub(crate) on_progress: Option<scheduler::ProgressFn>,
    pub(crate) on_done: Option<scheduler::DoneFn>,
    pub(crate) cancelled: bool,
    pub(crate) held: Vec<Box<dyn Send>>,
}

impl WaitOptions {
    /// The host's limits (ceiling, output cap).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Called (on the engine's report thread, one report at a time;
    /// throttled by the spec's `progress_every`) after samples that
    /// decided nothing.
    pub fn on_progress(mut self, report: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(report));
        self
    }

    /// Called once with the result (on a delivery thread) before the
    /// handle sees it: for hosts that resolve a future or a promise.
    pub fn on_done(mut self, done: impl FnOnce(&WaitResult) + Send + 'static) -> Self {
        self.on_done = Some(Box::new(done));
        self
    }

    /// Starts the wait cancelled: it ends `cancelled` having made no probe
    /// call, for a host whose cancel fired before the wait began (an
    /// `AbortSignal` already aborted). Cancelling right after the start
    /// instead may let a first call begin in between.
    ///
    /// ```
    /// use waitfor::{probe_fn, Condition, Engine, Observation, Outcome, Pattern, Spec, WaitOptions};
    /// let spec = Spec::new(Condition::Matches(Pattern::literal("ready")));
    /// let probe = probe_fn(|_| -> Result<Observation, waitfor::ProbeError> { unreachable!() });
    /// let handle = Engine::global()
    ///     .start_with(spec, Some(Box::new(probe)), WaitOptions::default().cancelled())
    ///     .unwrap();
    /// assert_eq!(handle.wait().outcome, Outcome::Cancelled);
    /// ```
    pub fn cancelled(mut self) -> Self {
        self.cancelled = true;
        self
    }

    /// Keeps `value` while the wait runs and drops it when the wait ends,
    /// however it ends (a result, a cancel, a probe that panicked), before
    /// `on_done` runs and before the handle has the result; also when the
    /// wait is refused at its start. For what a host gives each wait, such
    /// as a profile call's place among the calls in flight
    /// ([`Prepared::into_parts`](crate::profiles::Prepared::into_parts)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use waitfor::{probe_fn, Condition, Engine, Observation, Pattern, Spec, WaitOptions};
    /// let token = Arc::new(());
    /// let spec = Spec::new(Condition::Matches(Pattern::literal("ready")));
    /// let probe = probe_fn(|_| Ok(Observation::text("ready")));
    /// let options = WaitOptions::default().hold(token.clone());
    /// let handle = Engine::global().start_with(spec, Some(Box::new(probe)), options).unwrap();
    /// handle.wait();
    /// assert_eq!(Arc::strong_count(&token), 1);
    /// ```
    pub fn hold(mut self, value: impl Send + 'static) -> Self {
        self.held.push(Box::new(value));
        self
    }
}

/// Runs waits: a wait costs a timer entry, not a thread.
///
/// ```
/// use waitfor::{probe_fn, Condition, Engine, Observation, Outcome, Pattern, Spec};
/// use std::time::Duration;
/// let mut n = 0;
/// let probe = probe_fn(move |_| {
///     n += 1;
///     Ok(Observation::text(if n < 3 { "starting" } else { "ready" }))
/// });
/// let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
///     .interval(Duration::from_millis(10));
/// let result = Engine::global().wait(spec, probe).unwrap();
/// assert_eq!(result.outcome, Outcome::Matched);
/// assert_eq!(result.samples, 3);
/// ```
pub struct Engine {
    tx: Arc<Queue<Msg>>,
    epoch: Instant,
    next_id: AtomicU64,
}

impl Engine {
    /// A new engine with threads of its own: a scheduler, two result
    /// delivery threads, a report thread and two workers. They run for the
    /// rest of the process, also once the engine is dropped (its handles,
    /// wakers and replies may still post to them): make one engine for the
    /// program's life, or use [`Engine::global`], never one per task.
    ///
    /// ```
    /// use waitfor::Engine;
    /// // Kept for the program's life: its threads are never given back.
    /// static OWN: std::sync::OnceLock<Engine> = std::sync::OnceLock::new();
    /// let engine = OWN.get_or_init(Engine::new);
    /// assert!(!engine.needs_this_thread());
    /// ```
    pub fn new() -> Self {
        Self::with_worker_cap(workers::MAX_WORKERS)
    }

    /// A new engine whose probe calls run on at most `cap` worker threads.
    pub(crate) fn with_worker_cap(cap: usize) -> Self {
        let tx = Arc::new(Queue::new());
        let epoch = Instant::now();
        let scheduler = Scheduler::new(tx.clone(), epoch, cap);
        std::thread::Builder::new()
            .name("waitfor-scheduler".into())
            .spawn(move || scheduler.run())
            .expect("cannot start the waitfor scheduler thread");
        Self {
            tx,
            epoch,
            next_id: AtomicU64::new(1),
        }
    }

    /// The process-wide engine, started on first use, and again in a
    /// forked child: a child has only the thread that forked, so a wait
    /// started on its parent's engine would never end. The parent's engine
    /// is left alone in the child (its threads are gone; it is never
    /// touched again).
    ///
    /// ```
    /// use waitfor::Engine;
    /// assert!(std::ptr::eq(Engine::global(), Engine::global()));
    /// ```
    pub fn global() -> &'static Engine {
        /// An engine and the process that started it, in one pointer so
        /// that a reader never pairs one engine with another's process.
        struct Started {
            engine: Engine,
            pid: u32,
        }
        static GLOBAL: AtomicPtr<Started> = AtomicPtr::new(std::ptr::null_mut());
        // Held only while an engine starts: a fork at that very moment is
        // the one case this does not cover.
        static STARTING: Mutex<()> = Mutex::new(());
        let pid = std::process::id();
        let ours = || {
            // SAFETY: engines are leaked, never freed.
            let started = unsafe { GLOBAL.load(Ordering::Acquire).as_ref()? };
            (started.pid == pid).then_some(&started.engine)
        };
        if let Some(engine) = ours() {
            return engine;
        }
        let _starting = STARTING.lock();
        if let Some(engine) = ours() {
            return engine;
        }
        let started = Box::leak(Box::new(Started {
            engine: Engine::new(),
            pid,
        }));
        GLOBAL.store(started, Ordering::Release);
        &started.engine
    }

    /// Starts a wait with a host probe; returns at once.
    pub fn start(&self, spec: Spec, probe: impl Probe) -> Result<WaitHandle, SpecError> {
        self.start_with(spec, Some(Box::new(probe)), WaitOptions::default())
    }

    /// Starts a wait. `probe` is the host's probe; `None` uses the spec's
    /// built-in probe.
    pub fn start_with(
        &self,
        spec: Spec,
        probe: Option<Box<dyn Probe>>,
        options: WaitOptions,
    ) -> Result<WaitHandle, SpecError> {
        let started = self.epoch.elapsed();
        let probe = match (probe, &spec.probe) {
            (Some(probe), None) => probe,
            (None, Some(builtin)) => {
                crate::probes::builtin(builtin, &spec, &options.policy.grants)?
            }
            (Some(_), Some(_)) => return Err(two_probes()),
            (None, None) => {
                return Err(SpecError::new(
                    "probe",
                    Rule::MissingField,
                    "the spec names no built-in probe and the host passed none",
                ))
            }
        };
        let mut probe = probe;
        let (mode, name) = (probe.mode(), probe.name().to_string());
        let unchanged = probe.unchanged();
        self.launch(
            started,
            spec,
            options,
            (mode, &name, unchanged),
            |slot, control, ctx| {
                probe.watch(control.waker());
                ProbeHolder::Blocking(Arc::new(ProbeCell {
                    host_lock: probe.host_lock(),
                    end_notices: probe.end_notices(),
                    probe: Mutex::new(Calling {
                        probe,
                        ctx,
                        ended: control.call_cancel.clone(),
                    }),
                    slot,
                }))
            },
        )
    }

    /// Starts a wait whose probe answers later, from its own loop (see
    /// [`AsyncProbe`]): no worker thread waits for its answers.
    ///
    /// ```
    /// use waitfor::{AsyncProbe, Condition, Engine, Observation, Outcome, Pattern, ProbeContext, Reply, Spec};
    /// struct Ready;
    /// impl AsyncProbe for Ready {
    ///     fn begin(&mut self, _ctx: &ProbeContext, reply: Reply) {
    ///         reply.send(Ok(Observation::text("ready")));
    ///     }
    /// }
    /// let spec = Spec::new(Condition::Matches(Pattern::literal("ready")));
    /// let result = Engine::global().start_async(spec, Ready, Default::default()).unwrap().wait();
    /// assert_eq!(result.outcome, Outcome::Matched);
    /// ```
    pub fn start_async(
        &self,
        spec: Spec,
        probe: impl AsyncProbe,
        options: WaitOptions,
    ) -> Result<WaitHandle, SpecError> {
        let started = self.epoch.elapsed();
        if spec.probe.is_some() {
            return Err(two_probes());
        }
        let (mode, name) = (probe.mode(), probe.name().to_string());
        let probe: Box<dyn AsyncProbe> = Box::new(probe);
        self.launch(started, spec, options, (mode, &name, None), |slot, _, _| {
            ProbeHolder::Deferred(DeferredCell { probe, slot })
        })
    }

    /// Hands a wait whose probe is ready to the scheduler. Its time runs
    /// from `started`, when the host called: what it does from then on,
    /// compiling its patterns (on a CPU thread) included, counts.
    fn launch(
        &self,
        started: Duration,
        spec: Spec,
        options: WaitOptions,
        (mode, probe_name, unchanged): (ProbeMode, &str, Option<Unchanged>),
        hold: impl FnOnce(Arc<Slot>, &WaitControl, ProbeContext) -> ProbeHolder,
    ) -> Result<WaitHandle, SpecError> {
        let machine = Machine::new(&spec, &options.policy, mode, started)?;
        let call_cancel = CancelToken::new();
        if options.cancelled {
            // Before the start is posted: the scheduler begins no call.
            call_cancel.cancel();
        }
        let control = WaitControl {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            tx: self.tx.clone(),
            call_cancel: call_cancel.clone(),
            owner: std::process::id(),
        };
        let span = tracing::info_span!(
            "wait_for",
            wait_condition = %crate::spec::describe(&spec.until),
            probe_tool = probe_name,
            poll_count = tracing::field::Empty,
            stop_reason = tracing::field::Empty,
            elapsed_ms = tracing::field::Empty,
        );
        let slot = Arc::new(Slot::new());
        // The probe's own: it sees the wait end, and cannot end it.
        let probe_cancel = call_cancel.child();
        let ctx = ProbeContext {
            sample: 0,
            elapsed: Duration::ZERO,
            budget: Duration::ZERO,
            cancel: probe_cancel.clone(),
            output_cap: machine.output_cap(),
        };
        let cancelled = options.cancelled;
        let active = Active {
            probe: hold(slot.clone(), &control, ctx),
            unchanged,
            machine,
            slot: slot.clone(),
            on_progress: options.on_progress.map(scheduler::ProgressSink::new),
            on_done: options.on_done,
            _held: options.held,
            span,
            resumable: spec.view == ViewKind::Fresh,
            mode,
            call_cancel,
            probe_cancel,
            call: 0,
            answer_pending: false,
            timer_seq: 0,
            resume_point: None,
        };
        self.tx
            .push(Msg::Start(control.id, Box::new(active), Box::new(spec)));
        if cancelled {
            control.cancel();
        }
        Ok(WaitHandle { slot, control })
    }

    /// Whether the calling thread is one this engine needs to end waits:
    /// its scheduler (where [`AsyncProbe::begin`] runs) or
    /// a delivery thread (where `on_done` runs and probes are dropped). A
    /// result of this engine waited for there could wait for ever, and
    /// every wait ending on that thread with it: [`WaitHandle::wait`] and
    /// [`WaitHandle::wait_timeout`] refuse to block there, and a host's own
    /// blocking calls should too. `on_progress` runs on a thread of its
    /// own, which is not one of these.
    ///
    /// ```
    /// use waitfor::Engine;
    /// assert!(!Engine::global().needs_this_thread());
    /// ```
    pub fn needs_this_thread(&self) -> bool {
        handle::needs_this_thread(&self.tx)
    }

    /// Runs a wait to its end, blocking only the calling thread.
    pub fn wait(&self, spec: Spec, probe: impl Probe) -> Result<WaitResult, SpecError> {
        Ok(self.start(spec, probe)?.wait())
    }

    /// Runs a wait on the spec's built-in probe to its end.
    ///
    /// ```
    /// let spec = waitfor::Spec::from_json(r#"{
    ///     "probe": {"command": {"argv": ["echo", "hello"]}},
    ///     "until": {"matches": "hello"}
    /// }"#).unwrap();
    /// let grants = waitfor::grants::Grants::none().commands(waitfor::grants::Commands::Any);
    /// let options = waitfor::WaitOptions::default().policy(waitfor::Policy::default().grants(grants));
    /// let result = waitfor::Engine::global().run(spec, options).unwrap();
    /// assert_eq!(result.outcome, waitfor::Outcome::Matched);
    /// ```
    pub fn run(&self, spec: Spec, options: WaitOptions) -> Result<WaitResult, SpecError> {
        Ok(self.start_with(spec, None, options)?.wait())
    }
}

impl Default for Engine {
    fn default() -> Self {
        Self::new()
    }
}

fn two_probes() -> SpecError {
    SpecError::new(
        "probe",
        Rule::Conflict,
        "the spec names a built-in probe and the host passed one too",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{probe_fn, Condition, Observation, Outcome, Pattern, ProbeError};
    use std::sync::{mpsc, Mutex};

    fn ready_spec(max_wait: Duration) -> Spec {
        Spec::new(Condition::Matches(Pattern::literal("ready")))
            .interval(Duration::from_millis(50))
            .max_wait(max_wait)
    }

    /// A probe that says "not yet" and counts its calls.
    struct Counted(Arc<AtomicU64>);

    impl Probe for Counted {
        fn sample(&mut self, _ctx: &ProbeContext) -> Result<Observation, ProbeError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(Observation::text("not yet"))
        }
    }

    /// A wait whose call holds a worker until `release` is cancelled (then
    /// it matches), once that call has begun.
    fn hang(engine: &Engine, release: &CancelToken) -> WaitHandle {
        let (entered, hung_in) = mpsc::channel();
        let release = release.clone();
        let probe = probe_fn(move |_| {
            let _ = entered.send(());
            release.wait_timeout(Duration::from_secs(60));
            Ok(Observation::text("ready"))
        });
        let handle = engine.start(ready_spec(Duration::from_secs(60)), probe);
        hung_in.recv_timeout(Duration::from_secs(20)).unwrap();
        handle.unwrap()
    }

    #[test]
    fn a_probe_cancelling_its_own_token_does_not_end_its_wait() {
        let probe = probe_fn(|ctx| {
            let seen = ctx.cancel.is_cancelled();
            ctx.cancel.cancel();
            Ok(Observation::text(match (ctx.sample, seen) {
                (1, _) => "not yet",
                (_, false) => "ready",
                (_, true) => "a call got a cancelled token",
            }))
        });
        let spec = ready_spec(Duration::from_secs(60)).interval(Duration::from_millis(10));
        let result = Engine::new().wait(spec, probe).unwrap();
        assert_eq!(result.outcome, Outcome::Matched, "{result:?}");
        assert_eq!(result.samples, 2);
    }

    #[test]
    fn a_cancel_hook_that_panics_as_its_wait_ends_harms_no_other_wait() {
        // The probe's hook runs when its wait's ending is handed out, on
        // the hook thread: its panic must not take that thread down.
        let probe = probe_fn(|ctx| {
            let hook = ctx.cancel.on_cancel(|| panic!("a cancel hook's bug"));
            // Kept for good, and its token with it: the hook runs.
            std::mem::forget((hook, ctx.cancel.clone()));
            Ok(Observation::text("ready"))
        });
        let engine = Engine::with_worker_cap(1);
        let first = engine.wait(ready_spec(Duration::from_secs(60)), probe);
        assert_eq!(first.unwrap().outcome, Outcome::Matched);
        let (done, heard) = mpsc::channel();
        let handle = engine
            .start(
                ready_spec(Duration::from_secs(60)),
                probe_fn(|_| Ok(Observation::text("ready"))),
            )
            .unwrap();
        std::thread::spawn(move || done.send(handle.wait().outcome));
        let outcome = heard.recv_timeout(Duration::from_secs(60));
        assert_eq!(outcome, Ok(Outcome::Matched), "the engine stopped");
    }

    /// Whether a call blocked until `register`'s hook on its token runs
    /// is released at its wait's end, holding the only worker there is.
    fn released_by_its_hook_with_every_worker_held(
        register: fn(&CancelToken, Box<dyn FnOnce() + Send>) -> crate::CancelHook,
    ) -> bool {
        let probe = probe_fn(move |ctx| {
            let (woken, asleep) = mpsc::channel::<()>();
            let _hook = register(
                &ctx.cancel,
                Box::new(move || {
                    let _ = woken.send(());
                }),
            );
            // Deaf to its token and its budget: only the hook ends it.
            let _ = asleep.recv_timeout(Duration::from_secs(60));
            Ok(Observation::text(""))
        });
        let engine = Engine::with_worker_cap(1);
        let handle = engine
            .start(ready_spec(Duration::from_millis(100)), probe)
            .unwrap();
        assert!(handle.wait_timeout(Duration::from_secs(20)).is_some());
        handle.wait_released(Duration::from_secs(20))
    }

    /// The engine's own hooks, which return at once (a command run's wake
    /// socket), run as the scheduler ends the wait: the call they release
    /// is released even while it holds the only worker there is.
    #[test]
    fn a_quick_cancel_hook_releases_its_call_with_every_worker_held() {
        assert!(released_by_its_hook_with_every_worker_held(
            |token, hook| { token.on_cancel_quick(hook) }
        ));
    }

    /// What `on_cancel` is for: a probe blocked on something other than
    /// its token, woken by its hook. When the engine ends the wait, the
    /// hook runs on a thread of its own, not a worker: the call it
    /// releases may hold the only worker the cap allows.
    #[test]
    fn a_host_cancel_hook_releases_its_call_with_every_worker_held() {
        assert!(released_by_its_hook_with_every_worker_held(
            |token, hook| { token.on_cancel(hook) }
        ));
    }

    #[test]
    fn an_async_probe_cancelling_its_own_token_does_not_end_its_wait() {
        struct CancelsItsOwn;
        impl crate::AsyncProbe for CancelsItsOwn {
            fn begin(&mut self, ctx: &ProbeContext, reply: crate::Reply) {
                let seen = ctx.cancel.is_cancelled();
                ctx.cancel.cancel();
                reply.send(Ok(Observation::text(match (ctx.sample, seen) {
                    (1, _) => "not yet",
                    (_, false) => "ready",
                    (_, true) => "a call got a cancelled token",
                })));
            }
        }
        let spec = ready_spec(Duration::from_secs(60)).interval(Duration::from_millis(10));
        let handle = Engine::new().start_async(spec, CancelsItsOwn, Default::default());
        let result = handle.unwrap().wait();
        assert_eq!(result.outcome, Outcome::Matched, "{result:?}");
        assert_eq!(result.samples, 2);
    }

    #[test]
    fn a_freed_worker_takes_the_queued_call_whose_deadline_comes_first() {
        // One worker, held by a hung call. A wait with a far deadline
        // queues its call, then one with a near deadline: the call queued
        // second is the one that cannot wait. (In order of arrival, a quick
        // call behind hung ones waits for a worker per hung call.)
        let engine = Engine::with_worker_cap(1);
        let release = CancelToken::new();
        let hung = hang(&engine, &release);
        let order = Arc::new(Mutex::new(Vec::new()));
        let answers = |name: &'static str| {
            let order = order.clone();
            probe_fn(move |_| {
                order.lock().unwrap().push(name);
                Ok(Observation::text("ready"))
            })
        };
        let far = engine.start(ready_spec(Duration::from_secs(60)), answers("far"));
        let near = engine.start(ready_spec(Duration::from_secs(30)), answers("near"));
        // The scheduler takes starts in order: once a wait started after
        // both has ended (at its deadline, its call still queued), both
        // calls are queued.
        let short = ready_spec(Duration::from_millis(20)).interval(Duration::from_millis(10));
        let marker = engine.start(short, answers("marker"));
        assert_eq!(marker.unwrap().wait().outcome, Outcome::ProbeError);
        release.cancel();
        assert_eq!(hung.wait().outcome, Outcome::Matched);
        for handle in [near, far] {
            assert_eq!(handle.unwrap().wait().outcome, Outcome::Matched);
        }
        assert_eq!(*order.lock().unwrap(), ["near", "far"]);
    }

    #[test]
    fn a_wait_ending_a_moment_later_shares_the_worker_with_waits_that_keep_it_busy() {
        // One worker, and three waits whose calls take longer than their
        // interval: a call of theirs is always queued. The last wait's
        // deadline is 30 ms after theirs: by deadline alone their calls
        // always came first, and it ended without a sample. Placed back
        // 10 ms per sample taken, their calls let its calls in.
        let engine = Engine::with_worker_cap(1);
        let spec = |max_wait| ready_spec(max_wait).interval(Duration::from_millis(10));
        let (began, first_call) = mpsc::channel();
        let busy = || {
            let began = began.clone();
            probe_fn(move |_| {
                let _ = began.send(());
                // The call's own work, not a synchronisation.
                std::thread::sleep(Duration::from_millis(15));
                Ok(Observation::text("busy"))
            })
        };
        let first = engine.start(spec(Duration::from_millis(600)), busy());
        first_call.recv_timeout(Duration::from_secs(20)).unwrap();
        let started = Instant::now();
        let mut busy_waits = vec![first.unwrap()];
        for _ in 0..2 {
            let wait = engine.start(spec(Duration::from_millis(600)), busy());
            busy_waits.push(wait.unwrap());
        }
        let later = Duration::from_millis(630).saturating_sub(started.elapsed());
        let counted = Arc::new(AtomicU64::new(0));
        let last = engine.start(spec(later), Counted(counted)).unwrap().wait();
        // Each ends at its deadline, saying the cap was reached if a call
        // of its was queued then; what matters is that each was sampled.
        for wait in busy_waits.into_iter().map(|w| w.wait()).chain([last]) {
            assert!(wait.samples >= 3, "{wait:?}");
        }
    }

    #[test]
    fn work_queued_past_the_worker_cap_never_runs_and_its_wait_says_why() {
        let engine = Engine::with_worker_cap(2);
        let release = CancelToken::new();
        // One worker hangs; a wait takes its first sample on the other,
        // which then hangs too: that wait's next call finds no worker.
        let mut hung = vec![hang(&engine, &release)];
        let calls = Arc::new(AtomicU64::new(0));
        let (sampled, first_sample) = mpsc::channel();
        let options = WaitOptions::default().on_progress(move |_| {
            let _ = sampled.send(());
        });
        let spec = ready_spec(Duration::from_secs(2));
        let probe = Box::new(Counted(calls.clone()));
        let queued_call = engine.start_with(spec, Some(probe), options).unwrap();
        first_sample.recv_timeout(Duration::from_secs(20)).unwrap();
        hung.push(hang(&engine, &release));
        // A wait started now needs no worker to start, whether its pattern
        // is in the compile cache or compiles on a CPU thread: only its
        // probe call waits for one.
        let never_compiled = Pattern::literal("compiled by no one yet");
        let specs = [
            Spec::new(Condition::Matches(never_compiled))
                .interval(Duration::from_millis(50))
                .max_wait(Duration::from_millis(200)),
            ready_spec(Duration::from_millis(200)),
        ];
        for spec in specs {
            let probe = probe_fn(|_| Ok(Observation::text("ready")));
            let result = engine.start(spec, probe).unwrap().wait();
            assert_eq!(result.outcome, Outcome::ProbeError);
            let error = result.error.unwrap_or_default();
            assert!(
                error.contains("no probe call could start") && error.contains("cap of 2"),
                "{error}"
            );
        }
        let result = queued_call.wait_timeout(Duration::from_secs(20)).unwrap();
        assert_eq!(result.outcome, Outcome::ProbeError);
        let error = result.error.unwrap_or_default();
        assert!(
            error.contains("no probe call could start") && error.contains("cap of 2"),
            "{error}"
        );
        release.cancel();
        for handle in hung {
            assert_eq!(handle.wait().outcome, Outcome::Matched);
        }
        // The call left in the queue never runs: its wait has its result.
        assert!(queued_call.wait_released(Duration::from_secs(20)));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_sample_read_on_the_last_worker_is_not_a_call_queued_past_the_cap() {
        // One worker hangs; the other reads a costly first sample (about
        // 150 KB of Unicode words under eight case-insensitive
        // `\w{38}X\w{2}`: seconds in a test build, after seconds of
        // compiling) past its wait's deadline, while a polling wait's
        // call is queued. The costly wait must not end saying no probe
        // call could start.
        //
        // The deadline leaves the compile (2 s in a test build) time to
        // spare on a loaded machine (a 3 s one did not: load used it up),
        // and the probe answers a second before it: the read, which takes
        // longer than that and only longer under load, runs past it.
        let engine = Engine::with_worker_cap(2);
        let release = CancelToken::new();
        let hung = hang(&engine, &release);
        let letters: Vec<char> = [0x41..0x5b, 0x3b1..0x3c9, 0x430..0x44f, 0x4e00..0x4e40]
            .into_iter()
            .flatten()
            .filter_map(char::from_u32)
            .collect();
        let text: String = (0..60_000usize)
            .map(|i| letters[i.wrapping_mul(2_654_435_761) % letters.len()])
            .collect();
        let patterns = "#%&~=<>@"
            .chars()
            .map(|c| Pattern::regex(format!(r"\w{{38}}{c}\w{{2}}")).case_insensitive())
            .collect();
        let calls = Arc::new(AtomicU64::new(0));
        let polling = engine
            .start(ready_spec(Duration::from_secs(60)), Counted(calls))
            .unwrap();
        let spec = Spec::new(Condition::Patterns(patterns))
            .interval(Duration::from_millis(50))
            .max_wait(Duration::from_secs(10));
        let probe = probe_fn(move |ctx| {
            let answer_at = ctx.budget.saturating_sub(Duration::from_secs(1));
            ctx.cancel.wait_timeout(answer_at);
            Ok(Observation::text(text.clone()))
        });
        let result = engine.start(spec, probe).unwrap().wait();
        assert_eq!(result.outcome, Outcome::Timeout, "{result:?}");
        let error = result.error.unwrap_or_default();
        assert!(error.contains("passed while sample 1 was read"), "{error}");
        polling.control().cancel();
        release.cancel();
        assert_eq!(polling.wait().outcome, Outcome::Cancelled);
        assert_eq!(hung.wait().outcome, Outcome::Matched);
    }

    /// A stream probe whose position is the number of calls made. Its
    /// second call tells the test it began, then reads on when told.
    struct ReadsOnWhenTold {
        position: u32,
        began: mpsc::Sender<()>,
        go: mpsc::Receiver<()>,
    }

    impl Probe for ReadsOnWhenTold {
        fn sample(&mut self, _: &ProbeContext) -> Result<Observation, ProbeError> {
            if self.position == 1 {
                let _ = self.began.send(());
                let _ = self.go.recv_timeout(Duration::from_secs(60));
            }
            self.position += 1;
            Ok(Observation::text(format!("line {}\n", self.position)))
        }

        fn mode(&self) -> ProbeMode {
            ProbeMode::Stream
        }

        fn resume_point(&self) -> Option<crate::resume::ResumeToken> {
            Some(crate::resume::ResumeToken::Lines {
                lines: vec![format!("position {}", self.position)],
            })
        }
    }

    /// Holds the scheduler in its `begin` until released.
    struct HoldsTheScheduler {
        entered: mpsc::Sender<()>,
        release: mpsc::Receiver<()>,
    }

    impl crate::AsyncProbe for HoldsTheScheduler {
        fn begin(&mut self, _: &ProbeContext, reply: crate::Reply) {
            let _ = self.entered.send(());
            let _ = self.release.recv_timeout(Duration::from_secs(60));
            reply.send(Ok(Observation::text("ready")));
        }
    }

    /// A stream wait the host cancels after a call returned, its answer
    /// still queued: the wait ends cancelled without reading that answer,
    /// so its token is where the last answer it took left the probe, not
    /// past text it never saw.
    #[test]
    fn an_answer_dropped_for_a_cancel_leaves_the_token_before_its_text() {
        let engine = Engine::new();
        let (began, second_call) = mpsc::channel();
        let (go, go_rx) = mpsc::channel();
        let probe = ReadsOnWhenTold {
            position: 0,
            began,
            go: go_rx,
        };
        let spec = Spec::new(Condition::Matches(Pattern::literal("never")))
            .view(ViewKind::Fresh)
            .interval(Duration::from_millis(10))
            .max_wait(Duration::from_secs(60));
        let stream = engine.start(spec, probe).unwrap();
        second_call.recv_timeout(Duration::from_secs(20)).unwrap();
        let (entered, held) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        let holder = HoldsTheScheduler {
            entered,
            release: release_rx,
        };
        let holder = engine
            .start_async(
                ready_spec(Duration::from_secs(60)),
                holder,
                Default::default(),
            )
            .unwrap();
        held.recv_timeout(Duration::from_secs(20)).unwrap();
        // The scheduler is held: the second call's answer is queued...
        go.send(()).unwrap();
        let queued = Instant::now() + Duration::from_secs(20);
        while engine.tx.len() == 0 {
            assert!(Instant::now() < queued, "the answer never came");
            std::thread::yield_now();
        }
        // ...and the host cancels before the scheduler reads it.
        stream.control().cancel();
        release.send(()).unwrap();
        let result = stream.wait();
        assert_eq!(result.outcome, Outcome::Cancelled);
        let after_first = crate::resume::ResumeToken::Lines {
            lines: vec!["position 1".to_string()],
        };
        assert_eq!(result.resume, Some(after_first.encode()));
        assert_eq!(holder.wait().outcome, Outcome::Matched);
    }
}
