//! The cap on profile calls in flight: a call over it is refused at once
//! with `too_many_calls`, the calls running go on, and a call's place comes
//! back however its wait ends. The cap is process-wide, so this file's
//! tests take turns.

#[cfg(unix)]
mod support;

use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use waitfor::profiles::{
    calls_in_flight, max_calls, prepare, set_max_calls, Host, ToolCaller, ToolError,
    DEFAULT_MAX_CALLS,
};
use waitfor::{ErrorCode, ErrorInfo, Outcome, ProbeContext, ProbeError, WaitHandle};

/// One test at a time: they share the process's cap and count.
static TURN: Mutex<()> = Mutex::new(());

/// Takes the turn and sets the cap to 2; the default comes back after.
struct Capped(#[allow(dead_code)] MutexGuard<'static, ()>);

fn capped() -> Capped {
    let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(calls_in_flight(), 0);
    set_max_calls(2);
    Capped(turn)
}

impl Drop for Capped {
    fn drop(&mut self) {
        set_max_calls(DEFAULT_MAX_CALLS);
    }
}

/// The host's `status` tool: "starting" until `ready`, then "ready";
/// `fail` makes it fail, `panic` panic.
#[derive(Default)]
struct Status {
    ready: AtomicBool,
    fail: AtomicBool,
    panic: AtomicBool,
}

impl ToolCaller for Status {
    fn call_tool(&self, _: &str, _: &Value, _: &ProbeContext) -> Result<String, ProbeError> {
        if self.panic.load(Ordering::SeqCst) {
            panic!("the status tool panicked");
        }
        if self.fail.load(Ordering::SeqCst) {
            return Err(ProbeError::new("the status tool failed"));
        }
        let ready = self.ready.load(Ordering::SeqCst);
        Ok(if ready { "ready" } else { "starting" }.into())
    }
}

fn args(max_wait_sec: u64) -> Value {
    json!({
        "probe": {"tool": "status", "args": {}},
        "until": {"matches": "ready"},
        "poll_sec": 1,
        "max_wait_sec": max_wait_sec,
    })
}

/// A running call and the channel its end is heard on, with the calls in
/// flight when the host heard it.
struct Call {
    handle: WaitHandle,
    ended: crossbeam_channel::Receiver<(Outcome, usize)>,
}

impl Call {
    /// How the call ended; its place was back before the host heard.
    fn ended(&self, in_flight: usize) -> Outcome {
        heard(&self.ended, in_flight)
    }
}

/// The outcome heard on `ended`, checking the calls in flight then.
fn heard(ended: &crossbeam_channel::Receiver<(Outcome, usize)>, in_flight: usize) -> Outcome {
    let (outcome, then) = ended.recv_timeout(LONG).unwrap();
    assert_eq!(then, in_flight);
    outcome
}

/// More than any wait here takes.
const LONG: Duration = Duration::from_secs(60);

fn start(status: &Arc<Status>, max_wait_sec: u64) -> Result<Call, ToolError> {
    let host = Host {
        tools: Some(status.clone()),
        ..Host::default()
    };
    let (spec, probe, options, _, _) =
        prepare("aura/wait_for", &args(max_wait_sec), &host)?.into_parts();
    let (tx, ended) = crossbeam_channel::bounded(1);
    let options = options.on_done(move |result| {
        let _ = tx.send((result.outcome, calls_in_flight()));
    });
    let handle = waitfor::Engine::global()
        .start_with(spec, Some(probe), options)
        .unwrap();
    Ok(Call { handle, ended })
}

fn refused(status: &Arc<Status>) -> ToolError {
    match start(status, 30) {
        Ok(_) => panic!("a third call was let in over the cap"),
        Err(err) => err,
    }
}

/// The cap of 2 is full: a third call is refused.
fn assert_full(status: &Arc<Status>) {
    assert_eq!(calls_in_flight(), 2);
    assert_eq!(refused(status).code(), "too_many_calls");
}

#[test]
fn a_call_over_the_cap_is_refused_and_the_running_ones_go_on() {
    let _capped = capped();
    let status = Arc::new(Status::default());
    let first = start(&status, 30).unwrap();
    let second = start(&status, 30).unwrap();
    let err = refused(&status);
    assert_eq!(err, ToolError::TooManyCalls { cap: 2 });
    assert_eq!(err.code(), "too_many_calls");
    let info = ErrorInfo::from(&err);
    assert_eq!(info.code, ErrorCode::TooManyCalls);
    assert_eq!(info.code.as_str(), "too_many_calls");
    assert!(info.field.is_none() && info.rule.is_none());
    assert!(info.message.contains("at most 2"), "{}", info.message);
    assert!(info.message.contains("raise the cap"), "{}", info.message);
    // The refusal touched neither running call: both match once ready.
    status.ready.store(true, Ordering::SeqCst);
    for call in [&first, &second] {
        call.handle.control().wake();
    }
    assert_eq!(first.handle.wait().outcome, Outcome::Matched);
    assert_eq!(second.handle.wait().outcome, Outcome::Matched);
    assert_eq!(calls_in_flight(), 0);
    // And the places are back.
    let third = start(&status, 30).unwrap();
    assert_eq!(third.handle.wait().outcome, Outcome::Matched);
}

/// A full cap changes no answer about arguments: an invalid call is
/// refused for them, as its original tool refuses it, whatever the load.
#[test]
fn an_invalid_call_at_a_full_cap_is_refused_for_its_arguments() {
    let _capped = capped();
    let status = Arc::new(Status::default());
    let first = start(&status, 30).unwrap();
    let second = start(&status, 30).unwrap();
    assert_full(&status);
    let host = Host {
        tools: Some(status.clone()),
        ..Host::default()
    };
    let invalid = json!({"probe": {"tool": ""}, "until": {"matches": "ready"}});
    let err = prepare("aura/wait_for", &invalid, &host).err().unwrap();
    assert_eq!(err.code(), "invalid_arguments");
    assert_eq!(calls_in_flight(), 2);
    for call in [first, second] {
        call.handle.control().cancel();
        call.handle.wait();
    }
}

#[test]
fn a_place_comes_back_however_the_call_ends() {
    let _capped = capped();
    let blocker = Arc::new(Status::default());
    let long = start(&blocker, 30).unwrap();

    // A result.
    let status = Arc::new(Status::default());
    let call = start(&status, 30).unwrap();
    assert_full(&status);
    status.ready.store(true, Ordering::SeqCst);
    call.handle.control().wake();
    assert_eq!(call.ended(1), Outcome::Matched);

    // A cancel.
    let status = Arc::new(Status::default());
    let call = start(&status, 30).unwrap();
    assert_full(&status);
    call.handle.control().cancel();
    assert_eq!(call.ended(1), Outcome::Cancelled);

    // A probe that fails, then one that panics (each wait may end at
    // once, so the cap is not checked full here: `ended(1)` says the
    // place was back when the host heard).
    let fail: fn(&Status) = |s| s.fail.store(true, Ordering::SeqCst);
    let panic: fn(&Status) = |s| s.panic.store(true, Ordering::SeqCst);
    for end in [fail, panic] {
        let status = Arc::new(Status::default());
        end(&status);
        let call = start(&status, 2).unwrap();
        assert_eq!(call.ended(1), Outcome::ProbeError);
    }

    // A handle the host dropped: the wait goes on to its end, then gives
    // its place back.
    let status = Arc::new(Status::default());
    let Call { handle, ended } = start(&status, 2).unwrap();
    drop(handle);
    assert_full(&status);
    assert_eq!(heard(&ended, 1), Outcome::Timeout);

    // A call prepared and never started.
    let host = Host {
        tools: Some(status.clone()),
        ..Host::default()
    };
    let prepared = prepare("aura/wait_for", &args(30), &host).unwrap();
    assert_full(&status);
    drop(prepared);

    // Every place but the long call's is back: one more fits, not two.
    assert_eq!(calls_in_flight(), 1);
    let last = start(&status, 30).unwrap();
    assert_full(&status);
    last.handle.control().cancel();
    assert_eq!(last.ended(1), Outcome::Cancelled);
    long.handle.control().cancel();
    assert_eq!(long.ended(0), Outcome::Cancelled);
}

#[test]
fn the_cap_is_the_hosts_to_set() {
    let _capped = capped();
    assert_eq!(max_calls(), 2);
    assert_eq!(set_max_calls(0), 2);
    let status = Arc::new(Status::default());
    assert_eq!(refused(&status), ToolError::TooManyCalls { cap: 0 });
    // Checking a call takes no place.
    let host = Host {
        tools: Some(status.clone()),
        ..Host::default()
    };
    assert!(waitfor::profiles::check("aura/wait_for", &args(30), &host).is_ok());
    set_max_calls(1);
    let call = start(&status, 30).unwrap();
    assert_eq!(refused(&status), ToolError::TooManyCalls { cap: 1 });
    // Lowered under the calls running, the cap leaves them be.
    set_max_calls(0);
    status.ready.store(true, Ordering::SeqCst);
    call.handle.control().wake();
    assert_eq!(call.handle.wait().outcome, Outcome::Matched);
}

/// A forked child counts its own calls, none of its parent's, and its
/// count is never locked for good by a parent's thread that was counting
/// at the fork (threads checking the count here the whole time).
#[cfg(unix)]
#[test]
fn a_forked_child_counts_its_own_calls_whatever_the_parent_was_doing() {
    let _capped = capped();
    let status = Arc::new(Status::default());
    let running = start(&status, 60).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let counters: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    assert_eq!(calls_in_flight(), 1);
                }
            })
        })
        .collect();
    let child_counted = (0..200).all(|_| {
        support::fork::in_forked_child(Duration::from_secs(10), || {
            // The parent's call is not this process's; the cap is the
            // parent's.
            calls_in_flight() == 0 && max_calls() == 2
        })
    });
    stop.store(true, Ordering::Relaxed);
    for counter in counters {
        counter.join().unwrap();
    }
    running.handle.control().cancel();
    assert_eq!(running.ended(0), Outcome::Cancelled);
    assert!(child_counted, "a forked child's count hung or was wrong");
}

/// The shared vector of `file` named `name`.
fn vector(file: &str, name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    let text = std::fs::read_to_string(path.join(file)).unwrap();
    let vectors: Value = serde_json::from_str(&text).unwrap();
    let found = vectors["vectors"].as_array().unwrap().iter();
    found.clone().find(|v| v["name"] == name).unwrap().clone()
}

/// A simulated call (a shared vector, `simulate` in every binding) runs on
/// virtual time on the caller's thread: it takes no place, and answers
/// alike whatever the calls running and the cap.
#[test]
fn a_simulated_call_takes_no_place() {
    let _capped = capped();
    let vectors = [
        (
            "aura.json",
            "match on the first sample: elapsed 0, no sleep",
        ),
        (
            "gen_profiles.json",
            "ouro events: satisfied by an event already in the file",
        ),
        (
            "panes.json",
            "libtmux-cxx: text visible at entry matches at once: capture-at-entry",
        ),
    ];
    for (file, name) in vectors {
        let vector = vector(file, name);
        let answer = waitfor::vectors::run(&vector).unwrap();
        assert!(answer.get("tool_error").is_none(), "{name}: {answer}");
        set_max_calls(0);
        let refusing = waitfor::vectors::run(&vector).unwrap();
        set_max_calls(2);
        assert_eq!(refusing, answer, "{name}");
    }
}
