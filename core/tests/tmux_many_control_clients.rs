//! Many pane waits on one real tmux server (a private socket): their
//! control-mode clients attaching and closing together must never take
//! the server down. tmux up to 3.5a crashes when a control client leaves
//! while another is in its handshake (see `waitfor::tmux::control`); before
//! the per-server gate, 120 waits crashed tmux 3.3a in most runs.
//!
//! Cost: about 2 s of wall time and one tmux server (CI on 2 cores).
#![cfg(unix)] // tmux runs on Unix.

mod support;

use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use support::{start, tmux_processes, Server, PATIENCE};
use waitfor::process::RunError;
use waitfor::profiles::Host;
use waitfor::tmux::TmuxError;
use waitfor::CancelToken;

const PY: &str = "libtmux-mcp/wait_for_text";
const WAITS: usize = 120;

#[test]
fn a_hundred_waits_attaching_and_ending_together_leave_the_server_alive() {
    let s = Server::start(60, 10);
    let socket = s.name.clone().unwrap();
    let pid = s.cmd(&["display-message", "-p", "#{pid}"]);
    // Started together, without waiting for each entry: attaches and
    // closes (of waits that end, or could not attach in time) overlap.
    let waits: Vec<_> = (0..WAITS)
        .map(|_| {
            start(
                PY,
                json!({"pane_id": s.pane, "socket_name": socket,
                       "patterns": ["never-printed"], "timeout": 1.0}),
                &Host::default(),
            )
        })
        .collect();
    for running in waits {
        let (out, result) = running.finish();
        // Under load a wait may end in an error (tmux slow to answer);
        // either way it ends near its deadline, never long after.
        assert!(
            result.elapsed_ms < 1_000 + 2_000,
            "ended {} ms after its start: {out:?}",
            result.elapsed_ms
        );
    }
    // The same server answers, with its session and pane.
    assert_eq!(
        s.tmux
            .run(
                &["display-message", "-p", "#{pid}"],
                support::BUDGET,
                &waitfor::CancelToken::new()
            )
            .expect("the tmux server survived the waits"),
        pid
    );
    assert_eq!(
        s.cmd(&["display-message", "-p", "-t", &s.pane, "#{pane_id}"])
            .trim(),
        s.pane
    );
    // Every control client is closed, and its process reaped, in time.
    s.until("no control client", || s.control_clients().is_empty());
    s.until("no tmux -C process", || {
        tmux_processes(&socket, "-C").is_empty()
    });
}

/// A control client whose attach was given up (here: cancelled while the
/// server is stopped) is not killed in tmux's handshake, which crashes
/// tmux as well: it is closed once tmux answered, and the wait that gave
/// it up does not wait for that.
#[test]
fn a_client_given_up_in_its_attach_is_closed_once_tmux_answered() {
    let s = Server::start(60, 10);
    let socket = s.name.clone().unwrap();
    let session = s
        .cmd(&["display-message", "-p", "-t", &s.pane, "#{session_id}"])
        .trim()
        .to_string();
    let pid = s
        .cmd(&["display-message", "-p", "#{pid}"])
        .trim()
        .to_string();
    let signal = move |sig: &str| {
        let _ = std::process::Command::new("kill")
            .args([sig, &pid])
            .status();
    };
    signal("-STOP");
    // Whatever happens below, the server runs again after PATIENCE.
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (signal, done) = (signal.clone(), done.clone());
        std::thread::spawn(move || {
            let end = Instant::now() + PATIENCE;
            while !done.load(Ordering::SeqCst) && Instant::now() < end {
                std::thread::park_timeout(end.saturating_duration_since(Instant::now()));
            }
            signal("-CONT");
        })
    };
    let cancel = CancelToken::new();
    let canceller = cancel.clone();
    let watched = socket.clone();
    // Cancels once the `tmux -C` process runs (polled, bounded).
    let t = std::thread::spawn(move || {
        let end = Instant::now() + PATIENCE;
        while tmux_processes(&watched, "-C").is_empty() && Instant::now() < end {
            std::thread::yield_now();
        }
        canceller.cancel();
        Instant::now()
    });
    let err = s
        .tmux
        .control_attach(&session, &s.pane, Box::new(|| {}), PATIENCE, &cancel)
        .err();
    let returned = Instant::now();
    let cancelled = t.join().unwrap();
    let returned_in = returned.saturating_duration_since(cancelled);
    let alive_while_stopped = !tmux_processes(&socket, "-C").is_empty();
    signal("-CONT");
    done.store(true, Ordering::SeqCst);
    watchdog.thread().unpark();
    watchdog.join().unwrap();
    assert!(
        matches!(err, Some(TmuxError::Run(RunError::Cancelled { .. }))),
        "{err:?}"
    );
    assert!(
        returned_in < std::time::Duration::from_secs(1),
        "the attach returned {returned_in:?} after the cancel"
    );
    assert!(alive_while_stopped, "killed before tmux answered it");
    s.until("the given-up client closed", || {
        tmux_processes(&socket, "-C").is_empty() && s.control_clients().is_empty()
    });
    s.cmd(&["display-message", "-p", "#{pid}"]);
}
