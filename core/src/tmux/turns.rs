//! At most [`CALLS_PER_SERVER`] tmux invocations of this process in flight
//! per server.
//!
//! A tmux server answers its clients one command at a time, so more
//! clients at once do not answer sooner: they are only more processes
//! contending for the CPU. 300 pane waits starting together on one server
//! kept some 270 threads and processes runnable, and the engine's own
//! threads got the CPU too late to end the waits at their deadlines. A
//! call beyond the limit waits for its turn within its own budget, and
//! leaves the queue within [`CANCEL_CHECK`] of its cancel token's cancel.

use super::socket_key::SocketKey;
use crate::sync::{Condvar, Mutex};
use crate::CancelToken;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

/// Most tmux invocations of this process in flight on one server.
pub const CALLS_PER_SERVER: usize = 4;

/// How often a call waiting for its turn looks at its cancel token (a
/// cancelled wait is over already; its call only holds a worker until
/// then).
pub const CANCEL_CHECK: Duration = Duration::from_millis(50);

/// The invocations in flight on one server.
#[derive(Default)]
struct Server {
    in_flight: Mutex<usize>,
    freed: Condvar,
}

/// One invocation's turn; the next call's when dropped.
pub(super) struct Turn(Option<Arc<Server>>);

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(server) = self.0.take() {
            *server.in_flight.lock() -= 1;
            server.freed.notify_one();
        }
    }
}

/// The servers this process has calls in flight on; `None` in a forked
/// child, which may have inherited the lock held (its calls take no turn).
fn servers() -> Option<&'static Mutex<HashMap<SocketKey, Weak<Server>>>> {
    type Servers = (u32, Mutex<HashMap<SocketKey, Weak<Server>>>);
    static SERVERS: OnceLock<Servers> = OnceLock::new();
    let (owner, servers) = SERVERS.get_or_init(|| (std::process::id(), Mutex::default()));
    (*owner == std::process::id()).then_some(servers)
}

/// A turn to call the server at `socket`, once fewer than
/// [`CALLS_PER_SERVER`] calls are in flight there; `None` when `deadline`
/// passes or `cancel` is cancelled first.
pub(super) fn take(socket: PathBuf, deadline: Instant, cancel: &CancelToken) -> Option<Turn> {
    let Some(servers) = servers() else {
        return Some(Turn(None));
    };
    let server = {
        let mut all = servers.lock();
        let key = SocketKey::of(socket);
        match all.get(&key).and_then(Weak::upgrade) {
            Some(server) => server,
            None => {
                all.retain(|_, server| server.strong_count() > 0);
                let server = Arc::new(Server::default());
                all.insert(key, Arc::downgrade(&server));
                server
            }
        }
    };
    let mut in_flight = server.in_flight.lock();
    while *in_flight >= CALLS_PER_SERVER {
        let now = Instant::now();
        if cancel.is_cancelled() || now >= deadline {
            return None;
        }
        let slice = CANCEL_CHECK.min(deadline - now);
        server.freed.wait_for(&mut in_flight, slice);
    }
    *in_flight += 1;
    drop(in_flight);
    Some(Turn(Some(server)))
}
