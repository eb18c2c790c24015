//! Probes that answer later from a loop of their own ([`AsyncProbe`]): no
//! worker thread waits for them, deadlines still hold, and lost or late
//! answers break nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use waitfor::{
    AsyncProbe, CancelToken, Condition, Engine, ErrorPolicy, Observation, Outcome, Pattern,
    ProbeContext, Reply, Rule, Spec, WaitHandle, WaitOptions,
};

mod threads;
use threads::thread_count;

fn ready_spec(interval: Duration, max_wait: Duration) -> Spec {
    Spec::new(Condition::Matches(Pattern::literal("ready")))
        .interval(interval)
        .max_wait(max_wait)
}

/// A call as a host loop receives it.
struct Call {
    sample: u64,
    cancel: CancelToken,
    reply: Reply,
}

/// Queues every call on a channel, as a binding queues it on its loop.
struct Queued(mpsc::Sender<Call>);

impl AsyncProbe for Queued {
    fn begin(&mut self, ctx: &ProbeContext, reply: Reply) {
        let _ = self.0.send(Call {
            sample: ctx.sample,
            cancel: ctx.cancel.clone(),
            reply,
        });
    }
}

#[test]
fn one_loop_thread_answers_many_waits_in_batches() {
    const WAITS: usize = 300;
    let (tx, calls) = mpsc::channel::<Call>();
    // The host's loop: takes what is queued, answers it all at once.
    let host_loop = std::thread::spawn(move || {
        let mut most_threads = 0;
        while let Ok(first) = calls.recv() {
            most_threads = most_threads.max(thread_count());
            let batch: Vec<Call> = std::iter::once(first).chain(calls.try_iter()).collect();
            Reply::send_all(batch.into_iter().map(|call| {
                let text = if call.sample < 3 { "starting" } else { "ready" };
                (call.reply, Ok(Observation::text(text)))
            }));
        }
        most_threads
    });
    let before = thread_count();
    let handles: Vec<_> = (0..WAITS)
        .map(|_| {
            let spec = ready_spec(Duration::from_millis(10), Duration::from_secs(120));
            Engine::global()
                .start_async(spec, Queued(tx.clone()), WaitOptions::default())
                .unwrap()
        })
        .collect();
    drop(tx);
    for handle in handles {
        let result = handle.wait();
        assert_eq!((result.outcome, result.samples), (Outcome::Matched, 3));
    }
    let most = host_loop.join().unwrap();
    // No worker is tied up per pending call: at most the engine's own
    // threads (scheduler, delivery, idle workers) appeared.
    assert!(
        most <= before + 8,
        "{} threads for {WAITS} pending calls",
        most - before
    );
}

#[test]
fn an_unanswered_call_is_abandoned_at_the_deadline_and_its_late_answer_ignored() {
    let (tx, calls) = mpsc::channel();
    // A deadline that even a loaded machine reaches after the first answer.
    let handle = Engine::global()
        .start_async(
            ready_spec(Duration::from_millis(10), Duration::from_secs(2)),
            Queued(tx),
            WaitOptions::default(),
        )
        .unwrap();
    let first: Call = calls.recv().unwrap();
    first.reply.send(Ok(Observation::text("starting")));
    // The second call is never answered in time.
    let call = calls.recv().unwrap();
    let result = handle
        .wait_timeout(Duration::from_secs(30))
        .expect("the deadline held");
    assert_eq!(result.outcome, Outcome::Timeout);
    assert_eq!((result.samples, result.probe.abandoned), (1, 1));
    assert!(call.cancel.is_cancelled(), "the call was told");
    assert!(handle.wait_released(Duration::from_secs(30)));
    call.reply.send(Ok(Observation::text("ready")));
    assert!(calls.try_recv().is_err(), "no call began after the wait");
}

#[test]
fn a_reply_dropped_unanswered_is_a_probe_error() {
    struct Forgets;
    impl AsyncProbe for Forgets {
        fn begin(&mut self, _ctx: &ProbeContext, _reply: Reply) {}
    }
    let result = Engine::global()
        .start_async(
            ready_spec(Duration::from_millis(10), Duration::from_secs(30)),
            Forgets,
            WaitOptions::default(),
        )
        .unwrap()
        .wait();
    assert_eq!(result.outcome, Outcome::ProbeError);
    let error = result.probe.last_error.unwrap();
    assert!(error.contains("without answering"), "{error}");
}

#[test]
fn a_panicking_begin_is_a_probe_error_under_each_policy() {
    struct Panics;
    impl AsyncProbe for Panics {
        fn begin(&mut self, ctx: &ProbeContext, reply: Reply) {
            if ctx.sample < 3 {
                panic!("host bug in begin");
            }
            reply.send(Ok(Observation::text("ready")));
        }
    }
    let spec = ready_spec(Duration::from_millis(10), Duration::from_secs(30));
    let result = Engine::global()
        .start_async(spec.clone(), Panics, WaitOptions::default())
        .unwrap()
        .wait();
    assert_eq!(result.outcome, Outcome::ProbeError);
    let error = result.probe.last_error.unwrap();
    assert!(error.contains("host bug in begin"), "{error}");
    let tolerant = spec.on_probe_error(ErrorPolicy::Tolerate(2));
    let result = Engine::global()
        .start_async(tolerant, Panics, WaitOptions::default())
        .unwrap()
        .wait();
    assert_eq!((result.outcome, result.samples), (Outcome::Matched, 1));
    assert_eq!(result.probe.errors, 2);
}

#[test]
fn cancel_ends_a_wait_whose_call_is_pending() {
    let (tx, calls) = mpsc::channel();
    let handle = Engine::global()
        .start_async(
            ready_spec(Duration::from_millis(10), Duration::from_secs(600)),
            Queued(tx),
            WaitOptions::default(),
        )
        .unwrap();
    let call = calls.recv().unwrap();
    handle.control().cancel();
    let result = handle
        .wait_timeout(Duration::from_secs(30))
        .expect("cancel was heard");
    assert_eq!(result.outcome, Outcome::Cancelled);
    assert!(call.cancel.is_cancelled());
}

#[test]
fn a_spec_with_a_builtin_probe_is_refused() {
    let spec =
        Spec::from_json(r#"{"probe": {"file": {"path": "/tmp/x"}}, "until": {"matches": "a"}}"#)
            .unwrap();
    let (tx, _calls) = mpsc::channel();
    let err = Engine::global()
        .start_async(spec, Queued(tx), WaitOptions::default())
        .err()
        .unwrap();
    assert_eq!((err.field.as_str(), err.rule), ("probe", Rule::Conflict));
}

/// The name of the thread this runs on.
fn thread_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or_default()
        .to_string()
}

/// Answers "working" twice, then "ready", from `begin` itself.
struct ReadyOnThird(u64);

impl AsyncProbe for ReadyOnThird {
    fn begin(&mut self, _: &ProbeContext, reply: Reply) {
        self.0 += 1;
        let text = if self.0 < 3 { "working" } else { "ready" };
        reply.send(Ok(Observation::text(text)));
    }
}

#[test]
fn an_async_probes_callbacks_are_called_on_delivery_threads() {
    let (tx, heard) = mpsc::channel();
    let reports = tx.clone();
    let mut spec = ready_spec(Duration::from_millis(10), Duration::from_secs(30));
    spec.progress_every = Duration::from_millis(1);
    let options = WaitOptions::default()
        .on_progress(move |_| drop(reports.send(("progress", thread_name()))))
        .on_done(move |_| drop(tx.send(("done", thread_name()))));
    let handle = Engine::global()
        .start_async(spec, ReadyOnThird(0), options)
        .unwrap();
    assert_eq!(handle.wait().outcome, Outcome::Matched);
    // Callbacks run on delivery threads, never on the scheduler (its
    // `begin` runs there): results on theirs, reports on their own.
    let heard: Vec<_> = heard.try_iter().collect();
    assert!(
        heard.contains(&("done", "waitfor-delivery".to_string())),
        "{heard:?}"
    );
    assert!(heard.len() >= 2, "no progress report: {heard:?}");
    assert!(
        heard
            .iter()
            .all(|(what, t)| *what == "done" || t == "waitfor-reports"),
        "{heard:?}"
    );
}

#[test]
fn a_panicking_callback_does_not_stop_the_scheduler() {
    for _ in 0..2 {
        let mut spec = ready_spec(Duration::from_millis(10), Duration::from_secs(30));
        spec.progress_every = Duration::from_millis(1);
        let options = WaitOptions::default()
            .on_progress(|_| panic!("host bug in on_progress"))
            .on_done(|_| panic!("host bug in on_done"));
        let result = Engine::global()
            .start_async(spec, ReadyOnThird(0), options)
            .unwrap()
            .wait_timeout(Duration::from_secs(30))
            .expect("the handle still hears");
        assert_eq!((result.outcome, result.samples), (Outcome::Matched, 3));
    }
}

/// Holds the scheduler thread in its `begin` until released: while it
/// waits there, the test does what must take effect before the scheduler
/// next looks.
struct HoldsTheScheduler {
    entered: mpsc::Sender<()>,
    release: mpsc::Receiver<()>,
}

impl AsyncProbe for HoldsTheScheduler {
    fn begin(&mut self, _ctx: &ProbeContext, reply: Reply) {
        let _ = self.entered.send(());
        let _ = self.release.recv_timeout(Duration::from_secs(30));
        reply.send(Ok(Observation::text("ready")));
    }
}

/// Starts a wait on `engine` whose first call holds the scheduler, and
/// returns once it does: the wait, and what releases the scheduler.
fn hold_the_scheduler(engine: &Engine) -> (WaitHandle, mpsc::Sender<()>) {
    let (entered_tx, entered) = mpsc::channel();
    let (release_tx, release) = mpsc::channel();
    let holder = engine
        .start_async(
            ready_spec(Duration::from_millis(10), Duration::from_secs(30)),
            HoldsTheScheduler {
                entered: entered_tx,
                release,
            },
            WaitOptions::default(),
        )
        .unwrap();
    entered.recv_timeout(Duration::from_secs(30)).unwrap();
    (holder, release_tx)
}

/// Answers "not yet" at once, counting its calls.
struct Counted(Arc<AtomicUsize>);

impl AsyncProbe for Counted {
    fn begin(&mut self, _ctx: &ProbeContext, reply: Reply) {
        self.0.fetch_add(1, Ordering::SeqCst);
        reply.send(Ok(Observation::text("not yet")));
    }
}

/// Sends each call with how many calls of `Counted` had begun by then.
struct Notes {
    begun: Arc<AtomicUsize>,
    calls: mpsc::Sender<(usize, Reply)>,
}

impl AsyncProbe for Notes {
    fn begin(&mut self, _ctx: &ProbeContext, reply: Reply) {
        let _ = self.calls.send((self.begun.load(Ordering::SeqCst), reply));
    }
}

/// The scheduler takes answers ahead of the other messages it has: of
/// thousands of waits woken together (by one file event), those whose
/// calls answered go on (and end) while the rest of the wakes are handled,
/// not after the last one.
#[test]
fn an_answer_is_taken_ahead_of_wakes_that_came_before_it() {
    // Four turns' worth of messages.
    const WOKEN: usize = 4096;
    let engine = Engine::new();
    let idle = || ready_spec(Duration::from_secs(3600), Duration::from_secs(7200));
    let begun = Arc::new(AtomicUsize::new(0));
    let woken: Vec<_> = (0..WOKEN)
        .map(|_| {
            let probe = Counted(begun.clone());
            engine
                .start_async(idle(), probe, WaitOptions::default())
                .unwrap()
        })
        .collect();
    let end = std::time::Instant::now() + Duration::from_secs(60);
    while begun.load(Ordering::SeqCst) < WOKEN {
        assert!(std::time::Instant::now() < end, "first calls not all made");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (calls_tx, calls) = mpsc::channel();
    let probe = Notes {
        begun: begun.clone(),
        calls: calls_tx,
    };
    let answered = engine
        .start_async(idle(), probe, WaitOptions::default())
        .unwrap();
    // Its first call is out, and a wake waits for its answer.
    let (before, first) = calls.recv_timeout(Duration::from_secs(30)).unwrap();
    answered.control().wake();
    let (holder, release_tx) = hold_the_scheduler(&engine);
    // While the scheduler is held: the wakes, then the answer.
    for handle in &woken {
        handle.control().wake();
    }
    first.send(Ok(Observation::text("not yet")));
    release_tx.send(()).unwrap();
    let (seen, _second) = calls.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(
        seen - before,
        0,
        "calls of woken waits begun before the answer was taken"
    );
    for handle in woken.iter().chain([&answered, &holder]) {
        handle.control().cancel();
    }
}

/// Tells, at each call, how many of `tokens` read cancelled: how many
/// of their waits the scheduler had ended by then (`begin` runs on it).
struct CountsEnded {
    tokens: Arc<std::sync::Mutex<Vec<CancelToken>>>,
    counts: mpsc::Sender<usize>,
}

impl AsyncProbe for CountsEnded {
    fn begin(&mut self, _ctx: &ProbeContext, reply: Reply) {
        let tokens = self.tokens.lock().unwrap();
        let ended = tokens.iter().filter(|t| t.is_cancelled()).count();
        let _ = self.counts.send(ended);
        reply.send(Ok(Observation::text("not yet")));
    }
}

/// Answers its first call at once; its second, made by its sample timer,
/// holds the scheduler until released.
struct HoldsAtItsSecondCall {
    entered: mpsc::Sender<()>,
    release: mpsc::Receiver<()>,
}

impl AsyncProbe for HoldsAtItsSecondCall {
    fn begin(&mut self, ctx: &ProbeContext, reply: Reply) {
        if ctx.sample == 2 {
            let _ = self.entered.send(());
            let _ = self.release.recv_timeout(Duration::from_secs(60));
        }
        reply.send(Ok(Observation::text("not yet")));
    }
}

/// Answers come ahead of other messages, but a turn takes no more of
/// them than of the others before it fires the timers that are due:
/// thousands of answers that came together (a host loop answering its
/// calls at once) hold no deadline or sample for all of them.
#[test]
fn a_burst_of_answers_holds_due_timers_no_longer_than_a_turn() {
    const ANSWERED: usize = 8192;
    let engine = Engine::new();
    let idle = || ready_spec(Duration::from_secs(3600), Duration::from_secs(7200));
    let (calls_tx, calls) = mpsc::channel();
    let answered: Vec<_> = (0..ANSWERED)
        .map(|_| {
            engine
                .start_async(idle(), Queued(calls_tx.clone()), WaitOptions::default())
                .unwrap()
        })
        .collect();
    let first: Vec<Call> = (0..ANSWERED)
        .map(|_| calls.recv_timeout(Duration::from_secs(60)).unwrap())
        .collect();
    let tokens = Arc::new(std::sync::Mutex::new(
        first.iter().map(|call| call.cancel.clone()).collect(),
    ));
    // The holder's second call holds the scheduler in the timers of one
    // turn; the observer's comes due meanwhile, so its timer fires in the
    // next turn, the one that takes the answers.
    let (entered_tx, entered) = mpsc::channel();
    let (release_tx, release) = mpsc::channel();
    let holder = engine
        .start_async(
            ready_spec(Duration::from_millis(300), Duration::from_secs(3600)),
            HoldsAtItsSecondCall {
                entered: entered_tx,
                release,
            },
            WaitOptions::default(),
        )
        .unwrap();
    let (counts_tx, counts) = mpsc::channel();
    let observer_interval = Duration::from_millis(600);
    let observer = engine
        .start_async(
            ready_spec(observer_interval, Duration::from_secs(3600)),
            CountsEnded {
                tokens,
                counts: counts_tx,
            },
            WaitOptions::default(),
        )
        .unwrap();
    let observer_started = std::time::Instant::now();
    assert_eq!(counts.recv_timeout(Duration::from_secs(30)), Ok(0));
    entered.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(
        counts.try_recv().is_err(),
        "the observer's timer fired before the holder's: run again"
    );
    // Every answer waits in the inbox together.
    Reply::send_all(
        first
            .into_iter()
            .map(|call| (call.reply, Ok(Observation::text("ready")))),
    );
    while observer_started.elapsed() < observer_interval * 2 {
        std::thread::sleep(observer_interval);
    }
    release_tx.send(()).unwrap();
    let ended = counts.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(
        ended < ANSWERED / 2,
        "a due sample waited for {ended} of {ANSWERED} answers to be handled"
    );
    for handle in answered.iter().chain([&observer, &holder]) {
        handle.control().cancel();
    }
}

/// A wait cancelled before its first call began makes no call: `cancel`
/// stops a call not begun at once, not when the scheduler reads the
/// message (a command probe's command never starts).
#[test]
fn a_wait_cancelled_before_its_first_call_makes_none() {
    let engine = Engine::new();
    let (holder, release_tx) = hold_the_scheduler(&engine);
    // The scheduler is held: this wait's start, and its cancel, wait for it.
    let (calls_tx, calls) = mpsc::channel();
    let cancelled = engine
        .start_async(
            ready_spec(Duration::from_millis(10), Duration::from_secs(30)),
            Queued(calls_tx),
            WaitOptions::default(),
        )
        .unwrap();
    cancelled.control().cancel();
    release_tx.send(()).unwrap();
    assert_eq!(cancelled.wait().outcome, Outcome::Cancelled);
    assert_eq!(calls.try_iter().count(), 0);
    assert_eq!(holder.wait().outcome, Outcome::Matched);
}

/// A wait started cancelled (its host's signal fired before the start)
/// ends `cancelled` with no call, blocking or async, however soon the
/// scheduler takes it up.
#[test]
fn a_wait_started_cancelled_makes_no_call() {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (async_tx, async_calls) = mpsc::channel();
    let handles: Vec<_> = (0..200)
        .map(|i| {
            let spec = ready_spec(Duration::from_millis(10), Duration::from_secs(30));
            let options = WaitOptions::default().cancelled();
            if i % 2 == 0 {
                let counted = calls.clone();
                let probe = waitfor::probe_fn(move |_| {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Ok(Observation::text("ready"))
                });
                Engine::global().start_with(spec, Some(Box::new(probe)), options)
            } else {
                Engine::global().start_async(spec, Queued(async_tx.clone()), options)
            }
            .unwrap()
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.wait().outcome, Outcome::Cancelled);
    }
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(async_calls.try_iter().count(), 0);
}

/// A wait the host cancelled before its deadline ends `cancelled`, even
/// when the scheduler, held up, reaches the deadline before the host's
/// `Msg::Cancel`: the cancel came first, and the host hears it did.
#[test]
fn a_wait_cancelled_before_its_deadline_is_cancelled_when_the_scheduler_sees_the_deadline_first() {
    let engine = Engine::new();
    let (calls_tx, calls) = mpsc::channel();
    let max_wait = Duration::from_millis(300);
    let started = std::time::Instant::now();
    let cancelled = engine
        .start_async(
            ready_spec(Duration::from_millis(10), max_wait),
            Queued(calls_tx),
            WaitOptions::default(),
        )
        .unwrap();
    // Its first call is out, unanswered, when its deadline passes.
    let _out = calls.recv_timeout(Duration::from_secs(30)).unwrap();
    // The scheduler is held while it handles the holder's messages: the
    // cancel's message waits for its next turn, the deadline for the
    // timers of this one.
    let (holder, release_tx) = hold_the_scheduler(&engine);
    cancelled.control().cancel();
    while started.elapsed() < max_wait + Duration::from_millis(100) {
        std::thread::sleep(Duration::from_millis(20));
    }
    release_tx.send(()).unwrap();
    assert_eq!(cancelled.wait().outcome, Outcome::Cancelled);
    assert_eq!(holder.wait().outcome, Outcome::Matched);
}
