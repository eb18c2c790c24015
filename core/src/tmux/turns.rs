//! At most [`CALLS_PER_SERVER`] tmux invocations of this process in flight
//! per server.
//!
//! A tmux server answers its clients one command at a time, so more
//! clients at once do not answer sooner: they are only more processes
//! contending for the CPU. 300 pane waits starting together on one server
//! kept some 270 threads and processes runnable, and the engine's own
//! threads got the CPU too late to end the waits at their deadlines. A
//! call beyond the limit waits for its turn, behind the calls already
//! waiting, within its own budget; it leaves the queue within
//! [`super::CANCEL_CHECK`] of its cancel token's cancel. Control-mode
//! clients (`tmux -C`, long-lived) take no turn.

use super::socket_key::{PerServer, SocketKey};
use super::CANCEL_CHECK;
use crate::sync::{Condvar, Mutex};
use crate::CancelToken;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Most tmux invocations of this process in flight on one server.
pub const CALLS_PER_SERVER: usize = 4;

/// The invocations of one server: in flight, and waiting for a turn.
#[derive(Default)]
struct Server {
    calls: Mutex<Calls>,
    freed: Condvar,
}

#[derive(Default)]
struct Calls {
    in_flight: usize,
    waiting: usize,
}

/// One invocation's turn; the next call's when dropped.
pub(super) struct Turn(Arc<Server>);

impl Drop for Turn {
    fn drop(&mut self) {
        self.0.calls.lock().in_flight -= 1;
        self.0.freed.notify_one();
    }
}

/// A turn to call the server at `socket`, once fewer than
/// [`CALLS_PER_SERVER`] calls are in flight there and the calls that
/// came first have theirs; `None` when `deadline` passes or `cancel` is
/// cancelled first.
pub(super) fn take(socket: PathBuf, deadline: Instant, cancel: &CancelToken) -> Option<Turn> {
    static SERVERS: OnceLock<PerServer<Server>> = OnceLock::new();
    let key = SocketKey::of(socket);
    let server = SERVERS.get_or_init(PerServer::new).get(key);
    let mut calls = server.calls.lock();
    // Behind the calls already waiting: a newcomer never takes the turn
    // a freed call handed to one of them.
    if calls.in_flight >= CALLS_PER_SERVER || calls.waiting > 0 {
        calls.waiting += 1;
        loop {
            let now = Instant::now();
            if cancel.is_cancelled() || now >= deadline {
                calls.waiting -= 1;
                drop(calls);
                // The turn this one may have been woken for goes on.
                server.freed.notify_one();
                return None;
            }
            server
                .freed
                .wait_for(&mut calls, CANCEL_CHECK.min(deadline - now));
            if calls.in_flight < CALLS_PER_SERVER {
                break;
            }
        }
        calls.waiting -= 1;
    }
    calls.in_flight += 1;
    drop(calls);
    Some(Turn(server))
}
