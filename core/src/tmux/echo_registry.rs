//! The process-wide echo registry: where a host records the keys it typed
//! into panes, so that waits on those panes discount the echo.
//!
//! A tool server that sends keys to a pane (a `send_keys` tool) calls
//! [`record_keys`] (or [`record_send_keys`] with the `send-keys` arguments)
//! right after tmux accepted them. Every pane wait of this process reads
//! the same [`echo_log`], so the typed input and the recently submitted
//! lines of that pane are masked before matching (see [`super::echo`]).
//!
//! Records are keyed by which tmux server the pane is on (its socket
//! path, pid and start time, [`ServerIdentity`]) and the pane id, as
//! libtmux-cxx keys them: `%0` on two servers never mix, and a server
//! restarted on the same socket does not inherit the old one's records.
//! Recording asks the server who it is (one `display-message`); when it
//! cannot answer, nothing is recorded (the echo then counts as output).
//! Records expire on their own.
//!
//! ```
//! use waitfor::tmux::{echo_key, echo_log, record_keys_on, Key, ServerIdentity};
//! let server = ServerIdentity { socket_path: "/tmp/doc".into(), pid: 7, start_time: 1 };
//! record_keys_on(&server, "%7", &[Key::text("make test"), Key::Enter]);
//! let now = std::time::Instant::now();
//! assert_eq!(echo_log().recent(&echo_key(&server, "%7"), now), ["make test"]);
//! ```

use super::echo::{EchoLog, Key, ServerIdentity};
use super::{Tmux, TmuxError};
use crate::CancelToken;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Longest time recording waits for the server to say who it is.
const IDENTITY_BUDGET: Duration = Duration::from_millis(500);

static LOG: OnceLock<Arc<EchoLog>> = OnceLock::new();

/// The process-wide echo log that pane waits read by default.
pub fn echo_log() -> Arc<EchoLog> {
    Arc::clone(LOG.get_or_init(|| Arc::new(EchoLog::new())))
}

/// The key of a pane in an [`EchoLog`]: its server and its `%N` id.
///
/// ```
/// use waitfor::tmux::{echo_key, ServerIdentity};
/// let old = ServerIdentity { socket_path: "/tmp/s".into(), pid: 7, start_time: 1 };
/// let restarted = ServerIdentity { pid: 9, start_time: 5, ..old.clone() };
/// assert_ne!(echo_key(&old, "%1"), echo_key(&restarted, "%1"));
/// ```
pub fn echo_key(server: &ServerIdentity, pane_id: &str) -> String {
    format!(
        "{}\u{0}{}\u{0}{}\u{0}{pane_id}",
        server.socket_path, server.pid, server.start_time
    )
}

impl Tmux {
    /// Which server `pane_id` is on.
    pub fn server_identity(
        &self,
        pane_id: &str,
        budget: Duration,
        cancel: &CancelToken,
    ) -> Result<ServerIdentity, TmuxError> {
        let format = "#{pid}\t#{start_time}\t#{socket_path}";
        let out = self.run(
            &["display-message", "-p", "-t", pane_id, format],
            budget,
            cancel,
        )?;
        parse_server_identity(out.lines().next().unwrap_or(""))
    }
}

/// A server's `#{pid}\t#{start_time}\t#{socket_path}` line; an unreadable
/// one is a [`TmuxError::unexpected`], which names the likely cause.
fn parse_server_identity(line: &str) -> Result<ServerIdentity, TmuxError> {
    let bad = || TmuxError::unexpected("server identity", line);
    // The socket path comes last, so a tab inside it cannot shift fields.
    let mut fields = line.splitn(3, '\t');
    let mut next = || fields.next().ok_or_else(bad);
    let pid = next()?.parse().map_err(|_| bad())?;
    let start_time = next()?.parse().map_err(|_| bad())?;
    let socket_path = next()?.to_string();
    Ok(ServerIdentity {
        socket_path,
        pid,
        start_time,
    })
}

/// Records, now, that this process sent `keys` to pane `pane_id` (`%N`) of
/// `server`.
pub fn record_keys_on(server: &ServerIdentity, pane_id: &str, keys: &[Key]) {
    echo_log().record(&echo_key(server, pane_id), keys, Instant::now());
}

/// Records, now, that this process sent `keys` to pane `pane_id` (`%N`) of
/// the tmux server on `socket_name` (`None`: the default socket). Nothing
/// is recorded when the server cannot say who it is.
pub fn record_keys(socket_name: Option<&str>, pane_id: &str, keys: &[Key]) {
    let tmux = match socket_name {
        Some(name) => Tmux::new().with_socket_name(name),
        None => Tmux::new(),
    };
    if let Ok(server) = tmux.server_identity(pane_id, IDENTITY_BUDGET, &CancelToken::new()) {
        record_keys_on(&server, pane_id, keys);
    }
}

/// Records a `send-keys` call by its key arguments: with `literal` (`-l`)
/// each argument is text, otherwise each is a tmux key name
/// ([`Key::from_tmux_name`]); `enter` adds a final `Enter`.
///
/// ```no_run
/// use waitfor::tmux::record_send_keys;
/// // After `tmux -L work send-keys -t %2 -l 'ls -l'` and `Enter`:
/// record_send_keys(Some("work"), "%2", &["ls -l"], true, true);
/// ```
pub fn record_send_keys(
    socket_name: Option<&str>,
    pane_id: &str,
    args: &[&str],
    literal: bool,
    enter: bool,
) {
    let mut keys: Vec<Key> = args
        .iter()
        .map(|a| {
            if literal {
                Key::text(*a)
            } else {
                Key::from_tmux_name(a)
            }
        })
        .collect();
    if enter {
        keys.push(Key::Enter);
    }
    record_keys(socket_name, pane_id, &keys);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_server_identity_line() {
        let server = parse_server_identity("4242\t1700000000\t/tmp/tmux-0/my\tsock").unwrap();
        assert_eq!(
            server,
            ServerIdentity {
                socket_path: "/tmp/tmux-0/my\tsock".into(),
                pid: 4242,
                start_time: 1_700_000_000,
            }
        );
    }

    #[test]
    fn underscores_for_tabs_name_the_missing_utf8_setting() {
        // What tmux prints without UTF-8 output (no `-u`, no UTF-8 locale).
        let line = "4242_1700000000_/tmp/tmux-0/default";
        let message = parse_server_identity(line).unwrap_err().to_string();
        assert!(
            message.contains("run tmux with `-u` or a UTF-8 locale"),
            "{message}"
        );
        assert!(
            message.ends_with(&format!("server identity line: {line:?}")),
            "{message}"
        );
    }

    #[test]
    fn other_unreadable_lines_quote_the_line() {
        for line in ["", "4242", "pid\t1700000000\t/tmp/s", "4242\tsoon\t/tmp/s"] {
            let e = parse_server_identity(line).unwrap_err();
            assert!(matches!(e, TmuxError::Parse(_)), "{e:?}");
            assert_eq!(
                e.to_string(),
                format!("unexpected tmux output: server identity line: {line:?}")
            );
        }
    }
}
