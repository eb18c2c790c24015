//! Pane waits sharing one tmux server's turns
//! ([`waitfor::tmux::CALLS_PER_SERVER`] calls of this process at a time):
//! a wait that this process's other waits starved of turns says so, and a
//! wait on an idle server never does. Against real tmux servers on private
//! sockets; a test binary of its own, so that its load slows no other test.
#![cfg(unix)] // tmux runs on Unix.

mod support;

use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use support::{assert_valid, output_schema, start, Server};
use waitfor::profiles::{Host, LogLevel, Notice};
use waitfor::{CancelToken, Engine, Spec, WaitHandle, WaitOptions, WaitResult};

const PY: &str = "libtmux-mcp/wait_for_text";
const CXX: &str = "libtmux-cxx/wait_for_text";

/// Callers that keep every turn of `s`'s server taken until `stop`:
/// twice [`waitfor::tmux::CALLS_PER_SERVER`] of them, each calling a
/// `run-shell` that tmux answers after 0.2 s, again and again. So every
/// turn is held, calls queue behind them, and tmux keeps answering: busy,
/// not stuck, however fast or loaded the machine.
fn keep_turns_taken(s: &Server, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    (0..2 * waitfor::tmux::CALLS_PER_SERVER)
        .map(|_| {
            let (tmux, stop) = (s.tmux.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let budget = Duration::from_secs(10);
                    let _ = tmux.run(&["run-shell", "sleep 0.2"], budget, &CancelToken::new());
                }
            })
        })
        .collect()
}

/// A wait on the engine's own JSON spec for text that never comes on
/// `s`'s pane, polling every `interval_ms` (no control client).
fn polling_wait(s: &Server, interval_ms: u64, max_wait_ms: u64) -> WaitHandle {
    let mut tmux = json!({"pane_id": s.pane, "push": false});
    if let Some(name) = &s.name {
        tmux["socket_name"] = json!(name);
    }
    let spec = Spec::from_value(&json!({
        "probe": {"tmux": tmux},
        "until": {"matches": "never"},
        "interval_ms": interval_ms,
        "max_wait_ms": max_wait_ms,
    }))
    .unwrap();
    Engine::global()
        .start_with(spec, None, WaitOptions::default())
        .unwrap()
}

/// The messages of the warnings among `notices`.
fn warnings(notices: &[Notice]) -> Vec<String> {
    notices
        .iter()
        .filter_map(|n| match n {
            Notice::Log(log) if log.level == LogLevel::Warning => Some(log.message.clone()),
            _ => None,
        })
        .collect()
}

fn starved(result: &WaitResult) -> bool {
    result
        .notices
        .iter()
        .any(|n| n.contains("this process's other waits on this tmux server held every turn"))
}

/// Points `TMUX_TMPDIR` at a directory of this binary's own before any
/// server starts: libtmux-cxx reaches only the default socket. Tests
/// running at once share it; it goes when the last of them drops it.
fn private_sockets() -> Arc<tempfile::TempDir> {
    static DIR: Mutex<Weak<tempfile::TempDir>> = Mutex::new(Weak::new());
    let mut shared = DIR.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(dir) = shared.upgrade() {
        return dir;
    }
    let dir = tempfile::Builder::new()
        .prefix("waitfor-turns-")
        .tempdir()
        .unwrap();
    std::env::set_var("TMUX_TMPDIR", dir.path());
    std::env::remove_var("TMUX");
    let dir = Arc::new(dir);
    *shared = Arc::downgrade(&dir);
    dir
}

/// A new wait behind hundreds of others on one busy server samples far
/// less often than asked: its result says why (the engine's `notices`,
/// and libtmux-mcp's warnings), while each profile's output stays the
/// original's (a timeout, with no field of its own).
#[test]
fn a_wait_starved_of_turns_by_this_process_s_other_waits_says_so() {
    let _sockets = private_sockets();
    let s = Server::start_default(60, 10);
    let stop = Arc::new(AtomicBool::new(false));
    let load = keep_turns_taken(&s, &stop);
    let py_args = json!({"pane_id": s.pane, "patterns": ["never"], "timeout": 1});
    let py = start(PY, py_args, &Host::default());
    let cxx_args = json!({"target": s.pane, "text": "never", "timeout_ms": 1000});
    let cxx = start(CXX, cxx_args, &Host::default());
    let generic = polling_wait(&s, 50, 1000);
    let (py_out, py_result, py_notices) = py.finish_all();
    let (cxx_out, cxx_result, cxx_notices) = cxx.finish_all();
    let generic = generic.wait();
    stop.store(true, Ordering::Relaxed);
    for caller in load {
        caller.join().unwrap();
    }

    let py_out = py_out.expect("a timeout, not an error");
    assert_valid(&output_schema(PY), &py_out);
    assert_eq!(py_out["outcome"], "timeout", "{py_out}");
    assert!(starved(&py_result), "{py_result:?}");
    let warned = warnings(&py_notices);
    assert!(warned.contains(&py_result.notices[0]), "{warned:?}");

    let cxx_out = cxx_out.expect("a timeout, not an error");
    assert_valid(&output_schema(CXX), &cxx_out);
    assert_eq!(cxx_out["timed_out"], true, "{cxx_out}");
    assert!(starved(&cxx_result), "{cxx_result:?}");
    assert_eq!(
        warnings(&cxx_notices),
        Vec::<String>::new(),
        "the original logs nothing"
    );

    assert!(starved(&generic), "{generic:?}");
    let json: Value = generic.to_json();
    assert_eq!(json["notices"], json!(generic.notices));
}

/// A wait whose server answers at once never waits for a turn, and its
/// result has no notice: not even when it times out.
#[test]
fn a_wait_on_an_idle_server_has_no_notice() {
    let _sockets = private_sockets();
    let s = Server::start(60, 10);
    let (out, result, notices) = start(
        PY,
        json!({"socket_name": s.name, "pane_id": s.pane, "patterns": ["never"], "timeout": 1}),
        &Host::default(),
    )
    .finish_all();
    assert_eq!(out.unwrap()["outcome"], "timeout");
    assert!(result.notices.is_empty(), "{result:?}");
    assert_eq!(
        warnings(&notices).len(),
        1,
        "only the original's: {notices:?}"
    );
    let generic = polling_wait(&s, 10, 1000).wait();
    assert_eq!(generic.outcome, waitfor::Outcome::Timeout);
    assert!(generic.notices.is_empty(), "{generic:?}");
    assert!(generic.to_json().get("notices").is_none());
}
