//! The tmux client against a real tmux server on a private socket per test
//! (`-L` unique name, `-f /dev/null`), killed at the end of each test.
//! Synchronisation is by polling a condition with a generous deadline.
#![cfg(unix)] // tmux runs on Unix.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use waitfor::process::RunError;
use waitfor::tmux::{
    ControlClient, ControlState, PaneTarget, Rows, Tmux, TmuxError, WakeFn, CALLS_PER_SERVER,
};
use waitfor::CancelToken;

const BUDGET: Duration = Duration::from_secs(5);
const PATIENCE: Duration = Duration::from_secs(15);

static NEXT: AtomicU32 = AtomicU32::new(0);

struct Server {
    name: String,
    tmux: Tmux,
}

impl Server {
    /// A new server whose first session `session` runs a plain `sh` with
    /// the prompt `$ `, in a `width` x `height` window.
    fn start(session: &str, width: u32, height: u32) -> Self {
        let name = format!(
            "waitfor-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let tmux = Tmux::new()
            .with_socket_name(&name)
            .with_config_file("/dev/null");
        let server = Server { name, tmux };
        server.cmd(&[
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "env PS1='$ ' sh",
        ]);
        server
    }

    fn cmd(&self, args: &[&str]) -> String {
        self.tmux
            .run(args, BUDGET, &CancelToken::new())
            .unwrap_or_else(|e| panic!("tmux {args:?}: {e}"))
    }

    fn new_session(&self, session: &str) {
        self.cmd(&[
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "40",
            "-y",
            "10",
            "env PS1='$ ' sh",
        ]);
    }

    fn session_of(&self, target: &str) -> String {
        self.cmd(&["display-message", "-p", "-t", target, "#{session_id}"])
            .trim()
            .to_string()
    }

    /// A watch of `pane` through a control client of its session.
    fn watch(&self, pane: &str, wake: WakeFn, budget: Duration) -> ControlClient {
        let session = self.session_of(pane);
        self.tmux
            .control_attach(&session, pane, wake, budget, &CancelToken::new())
            .unwrap()
    }

    fn pane_of(&self, target: &str) -> String {
        self.cmd(&["display-message", "-p", "-t", target, "#{pane_id}"])
            .trim()
            .to_string()
    }

    fn type_line(&self, pane: &str, text: &str) {
        self.cmd(&["send-keys", "-t", pane, "-l", text]);
        self.cmd(&["send-keys", "-t", pane, "Enter"]);
    }

    fn snap(&self, pane: &str, rows: Rows) -> waitfor::tmux::PaneSnapshot {
        self.tmux
            .snapshot(pane, rows, BUDGET, &CancelToken::new())
            .unwrap()
    }

    /// Waits until a snapshot satisfies `cond`, and returns it.
    fn snap_until(
        &self,
        pane: &str,
        rows: Rows,
        mut cond: impl FnMut(&waitfor::tmux::PaneSnapshot) -> bool,
    ) -> waitfor::tmux::PaneSnapshot {
        let end = Instant::now() + PATIENCE;
        loop {
            let s = self.snap(pane, rows);
            if cond(&s) {
                return s;
            }
            assert!(
                Instant::now() < end,
                "condition never held; last snapshot: {s:#?}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_prompt(&self, pane: &str) -> waitfor::tmux::PaneSnapshot {
        self.snap_until(pane, Rows::Visible, |s| {
            s.lines.iter().any(|l| l.starts_with('$'))
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.tmux.run(&["kill-server"], BUDGET, &CancelToken::new());
    }
}

fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + PATIENCE;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        thread::sleep(Duration::from_millis(10));
    }
    cond()
}

fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Pids of live processes whose command line contains all of `needles`.
fn processes_with(needles: &[&str]) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if needles.iter().all(|n| cmdline.contains(n)) && process_alive(pid) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn resolution_follows_the_python_seed_order() {
    let srv = Server::start("beta", 40, 10);
    srv.new_session("alpha");
    // Explicit shells: the user's login shell and its rc files are not ours.
    srv.cmd(&["split-window", "-t", "alpha", "env PS1='$ ' sh"]);
    srv.cmd(&["new-window", "-t", "beta", "env PS1='$ ' sh"]);
    let cancel = CancelToken::new();
    let resolve = |t: PaneTarget| srv.tmux.resolve_pane(&t, BUDGET, &cancel);

    // Default: the first session by name (alpha), its active pane (the split).
    let alpha_active = srv.pane_of("alpha:");
    let got = resolve(PaneTarget::default()).unwrap();
    assert_eq!(got.pane_id, alpha_active);
    assert_eq!(got.session_name, "alpha");

    // pane_id wins over everything else.
    let beta_first = srv.pane_of("beta:0.0");
    let t = PaneTarget {
        pane_id: Some(beta_first.clone()),
        session_name: Some("alpha".into()),
        ..Default::default()
    };
    assert_eq!(resolve(t).unwrap().pane_id, beta_first);

    // window_id: that window's active pane, over session fields.
    let window = srv
        .cmd(&["display-message", "-p", "-t", "beta:0", "#{window_id}"])
        .trim()
        .to_string();
    let t = PaneTarget {
        window_id: Some(window.clone()),
        session_name: Some("alpha".into()),
        ..Default::default()
    };
    let got = resolve(t).unwrap();
    assert_eq!(got.pane_id, beta_first);
    assert_eq!(got.window_id, window);

    // session_id, then session_name: active pane of the active window (beta:1).
    let beta_active = srv.pane_of("beta:");
    assert_ne!(beta_active, beta_first);
    let sid = srv.session_of("beta:");
    let t = PaneTarget {
        session_id: Some(sid),
        session_name: Some("alpha".into()),
        ..Default::default()
    };
    assert_eq!(resolve(t).unwrap().pane_id, beta_active);
    let t = PaneTarget {
        session_name: Some("beta".into()),
        ..Default::default()
    };
    assert_eq!(resolve(t).unwrap().pane_id, beta_active);

    // Exact names only: tmux's own -t would take "alp" as a prefix of alpha.
    let t = PaneTarget {
        session_name: Some("alp".into()),
        ..Default::default()
    };
    assert!(matches!(resolve(t), Err(TmuxError::NoSuchSession(n)) if n == "alp"));
    let t = PaneTarget {
        pane_id: Some("%999".into()),
        ..Default::default()
    };
    assert!(matches!(resolve(t), Err(TmuxError::NoSuchPane(p)) if p == "%999"));
    let t = PaneTarget {
        window_id: Some("@999".into()),
        ..Default::default()
    };
    assert!(matches!(resolve(t), Err(TmuxError::NoSuchWindow(_))));
    let t = PaneTarget {
        session_id: Some("$999".into()),
        ..Default::default()
    };
    assert!(matches!(resolve(t), Err(TmuxError::NoSuchSession(_))));

    // A tmux target string, as the C++ seed takes it.
    let t = PaneTarget {
        target: Some("beta:0.0".into()),
        ..Default::default()
    };
    assert_eq!(resolve(t).unwrap().pane_id, beta_first);
    let t = PaneTarget {
        target: Some("nosuch:9".into()),
        ..Default::default()
    };
    assert!(matches!(resolve(t), Err(TmuxError::NoSuchPane(_))));
}

#[test]
fn no_server_is_a_typed_error() {
    let name = format!("waitfor-test-absent-{}", std::process::id());
    let tmux = Tmux::new().with_socket_name(&name);
    let err = tmux
        .resolve_pane(&PaneTarget::default(), BUDGET, &CancelToken::new())
        .unwrap_err();
    assert!(matches!(err, TmuxError::NoServer { .. }), "{err:?}");
    assert!(err.to_string().contains(&name));
    let err = tmux
        .snapshot("%0", Rows::Visible, BUDGET, &CancelToken::new())
        .unwrap_err();
    assert!(matches!(err, TmuxError::NoServer { .. }), "{err:?}");
    let missing = Tmux::new().with_program("/nonexistent/tmux");
    let err = missing
        .resolve_pane(&PaneTarget::default(), BUDGET, &CancelToken::new())
        .unwrap_err();
    assert!(
        matches!(err, TmuxError::Run(RunError::Spawn { .. })),
        "{err:?}"
    );
}

#[test]
fn snapshot_reports_pane_facts() {
    let srv = Server::start("s", 40, 10);
    let pane = srv.pane_of("s:");
    let s = srv.wait_prompt(&pane);
    assert_eq!(s.pane_id, pane);
    assert_eq!((s.pane_width, s.pane_height), (40, 10));
    assert_eq!(s.history_limit, 2000);
    assert_eq!(s.history_size, 0);
    assert!(!s.alternate_on && !s.pane_dead && !s.pane_in_mode);
    assert!(s.pane_pid.is_some_and(|p| p > 1));
    assert_eq!(s.invocations, 1);
    assert!(s.rows_exact);
    assert_eq!(
        s.lines.len(),
        10,
        "one line per unwrapped row of the screen"
    );
    assert_eq!(s.lines[s.cursor_line().unwrap()], "$");
    assert_eq!(s.cursor_x, 2);

    srv.type_line(&pane, "echo hello");
    let s = srv.snap_until(&pane, Rows::Visible, |s| {
        s.lines.iter().any(|l| l == "hello")
    });
    assert_eq!(s.lines[0], "$ echo hello");
    assert_eq!(s.cursor_y, 2);
    assert_eq!(s.snapshot_cursor_text(), "$");
    let err = srv
        .tmux
        .snapshot("%999", Rows::Visible, BUDGET, &CancelToken::new())
        .unwrap_err();
    assert!(matches!(err, TmuxError::NoSuchPane(_)), "{err:?}");
}

trait CursorText {
    fn snapshot_cursor_text(&self) -> &str;
}

impl CursorText for waitfor::tmux::PaneSnapshot {
    fn snapshot_cursor_text(&self) -> &str {
        &self.lines[self.cursor_line().unwrap()]
    }
}

#[test]
fn anchored_rows_survive_scrolling_without_loss_or_repeat() {
    let srv = Server::start("s", 40, 10);
    let pane = srv.pane_of("s:");
    let entry = srv.wait_prompt(&pane);
    let anchor = entry.cursor_row();

    srv.type_line(&pane, "seq 1 100");
    // A hint far behind (100 rows scrolled > MARGIN) needs the one retake.
    // Taken once the next prompt is drawn: the pane changes no more, so the
    // snapshot after it shows the same.
    let stale = srv.snap_until(&pane, Rows::from_row(anchor, entry.history_size), |s| {
        s.lines.iter().any(|l| l == "100")
            && s.lines
                .iter()
                .rev()
                .find(|l| !l.is_empty())
                .is_some_and(|l| l == "$")
    });
    assert!(stale.history_size > entry.history_size + waitfor::tmux::MARGIN);
    // A retake; one more if the output outran it too.
    assert!((2..=waitfor::tmux::MAX_INVOCATIONS).contains(&stale.invocations));
    let fresh = srv.snap(&pane, Rows::from_row(anchor, stale.history_size));
    assert_eq!(fresh.invocations, 1);
    assert_eq!(fresh.lines, stale.lines);

    let mut expected = vec!["$ seq 1 100".to_string()];
    expected.extend((1..=100).map(|i| i.to_string()));
    expected.push("$".to_string());
    let got: Vec<String> = fresh
        .lines
        .iter()
        .filter(|l| !l.is_empty())
        .cloned()
        .collect();
    assert_eq!(got, expected);
    assert_eq!(fresh.first_row, anchor);
    assert_eq!(fresh.line_rows[0], anchor);
    assert_eq!(fresh.line_rows[1], anchor + 1);
    assert_eq!(fresh.cursor_row(), anchor + 101);
    assert_eq!(
        fresh
            .line_at_row(anchor + 50)
            .map(|i| fresh.lines[i].as_str()),
        Some("50")
    );

    // The whole history is there too, and clearing it shrinks history_size
    // (the caller's "anchor lost").
    let all = srv.snap(&pane, Rows::All);
    assert_eq!(all.first_row, 0);
    assert!(all.lines.iter().any(|l| l == "$ seq 1 100"));
    srv.cmd(&["clear-history", "-t", &pane]);
    let cleared = srv.snap(&pane, Rows::Visible);
    assert_eq!(cleared.history_size, 0);
}

#[test]
fn soft_wrapped_lines_are_joined_with_their_rows() {
    let srv = Server::start("s", 20, 10);
    let pane = srv.pane_of("s:");
    let entry = srv.wait_prompt(&pane);
    let anchor = entry.cursor_row();
    let long: String = (0..50).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    srv.type_line(&pane, &format!("echo {long}"));
    let s = srv.snap_until(&pane, Rows::from_row(anchor, entry.history_size), |s| {
        s.lines.iter().any(|l| l == &long)
    });
    assert!(s.rows_exact);
    let cmd = format!("$ echo {long}");
    assert_eq!(
        s.lines[0], cmd,
        "the typed command wraps over 3 rows and is joined"
    );
    assert_eq!(s.line_rows[0], anchor);
    assert_eq!(s.lines[1], long);
    assert_eq!(
        s.line_rows[1],
        anchor + 3,
        "57 characters at width 20 take 3 rows"
    );
    assert_eq!(s.line_rows[2], anchor + 6, "50 characters take 3 rows");
    assert_eq!(s.line_at_row(anchor + 4), Some(1));

    // Anchored in the middle of a wrapped line: only its rows from the anchor.
    let mid = srv.snap(&pane, Rows::from_row(anchor + 4, s.history_size));
    assert_eq!(mid.lines[0], long[20..]);
    assert_eq!(mid.line_rows[0], anchor + 4);
}

#[test]
fn alternate_screen_is_reported() {
    let srv = Server::start("s", 40, 10);
    let pane = srv.pane_of("s:");
    srv.wait_prompt(&pane);
    srv.type_line(&pane, "printf '\\033[?1049h'; echo in-alt");
    let s = srv.snap_until(&pane, Rows::Visible, |s| {
        s.alternate_on && s.lines.iter().any(|l| l == "in-alt")
    });
    assert!(
        !s.lines.iter().any(|l| l.contains("printf")),
        "the alternate screen hides the normal one"
    );
    srv.type_line(&pane, "printf '\\033[?1049l'");
    let s = srv.snap_until(&pane, Rows::Visible, |s| !s.alternate_on);
    assert!(s.lines.iter().any(|l| l.contains("printf '\\033[?1049h'")));
}

#[test]
fn dead_and_respawned_panes_are_reported() {
    let srv = Server::start("s", 40, 10);
    srv.cmd(&["set-option", "-g", "remain-on-exit", "on"]);
    let pane = srv.pane_of("s:");
    let first = srv.wait_prompt(&pane);
    srv.type_line(&pane, "exit 3");
    let dead = srv.snap_until(&pane, Rows::Visible, |s| s.pane_dead);
    // Under load tmux can mark the pane dead before it has reaped the
    // process (and, rarely, never shows the status): when the status is
    // there it must be the one the shell exited with.
    assert!(
        matches!(dead.pane_dead_status, None | Some(3)),
        "{:?}",
        dead.pane_dead_status
    );
    srv.cmd(&["respawn-pane", "-k", "-t", &pane, "env PS1='$ ' sh"]);
    let again = srv.snap_until(&pane, Rows::Visible, |s| !s.pane_dead);
    assert_ne!(again.pane_pid, first.pane_pid);
    assert_eq!(again.pane_id, pane);
}

/// A budget without end (a host passing on a time it was given) is no
/// panic: every call's deadline saturates, as `Tmux::run`'s does.
#[test]
fn a_budget_without_end_is_no_panic() {
    let name = format!("waitfor-test-endless-{}", std::process::id());
    let absent = Tmux::new().with_socket_name(&name);
    let err = absent
        .snapshot("%0", Rows::Visible, Duration::MAX, &CancelToken::new())
        .unwrap_err();
    assert!(matches!(err, TmuxError::NoServer { .. }), "{err:?}");
    let srv = Server::start("s", 40, 10);
    let pane = srv.pane_of("s:");
    let snap = srv
        .tmux
        .snapshot(&pane, Rows::Visible, Duration::MAX, &CancelToken::new())
        .unwrap();
    assert_eq!(snap.pane_id, pane);
    let client = srv.watch(&pane, Box::new(|| {}), BUDGET);
    assert!(client.ping(Duration::MAX, &CancelToken::new()).is_ok());
}

#[test]
fn control_client_wakes_on_output_and_stays_out_of_the_way() {
    let srv = Server::start("s", 40, 10);
    let pane = srv.pane_of("s:");
    srv.cmd(&["split-window", "-t", "s:", "env PS1='$ ' sh"]);
    let other = srv.pane_of("s:");
    assert_ne!(other, pane);
    srv.wait_prompt(&pane);
    // Keys sent before the new shell draws its prompt may be lost.
    srv.wait_prompt(&other);
    let size_before = srv.cmd(&[
        "display-message",
        "-p",
        "-t",
        "s:",
        "#{window_width}x#{window_height}",
    ]);

    let wakes = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&wakes);
    let client = srv.watch(
        &pane,
        Box::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }),
        BUDGET,
    );
    assert_eq!(client.state(), ControlState::Attached);
    assert!(client.ping(BUDGET, &CancelToken::new()).is_ok());

    // Output in another pane does not wake; output in the watched one does.
    srv.type_line(&other, "echo elsewhere");
    srv.snap_until(&other, Rows::Visible, |s| {
        s.lines.iter().any(|l| l == "elsewhere")
    });
    assert!(
        client.ping(BUDGET, &CancelToken::new()).is_ok(),
        "notifications before the reply are read"
    );
    assert_eq!(wakes.load(Ordering::SeqCst), 0);
    srv.type_line(&pane, "echo watched");
    assert!(eventually(|| wakes.load(Ordering::SeqCst) > 0));
    assert!(client.outputs() > 0 && client.last_output().is_some());

    // What the user sees: same window size, a read-only ignore-size control
    // client in list-clients, counted by session_attached.
    let size_now = srv.cmd(&[
        "display-message",
        "-p",
        "-t",
        "s:",
        "#{window_width}x#{window_height}",
    ]);
    assert_eq!(size_now, size_before);
    let clients = srv.cmd(&[
        "list-clients",
        "-F",
        "#{client_pid} #{client_control_mode} #{client_flags}",
    ]);
    let line = clients
        .lines()
        .find(|l| l.starts_with(&format!("{} ", client.pid())))
        .expect("listed");
    assert!(
        line.contains(" 1 ") && line.contains("read-only") && line.contains("ignore-size"),
        "{line}"
    );
    assert_eq!(
        srv.cmd(&["display-message", "-p", "-t", "s:", "#{session_attached}"])
            .trim(),
        "1"
    );

    let pid = client.pid();
    drop(client);
    assert!(!process_alive(pid), "tmux -C reaped on drop");
    assert!(eventually(|| srv.cmd(&["list-clients"]).trim().is_empty()));
    assert!(processes_with(&["-C", &srv.name]).is_empty());
}

#[test]
fn watches_of_one_session_share_one_control_client() {
    // A pane wait watches its pane through a control client: one per
    // wait was a `tmux -C` process and a client of the user's server per
    // wait (300 waits on one server slowed it until most had no sample).
    let srv = Server::start("s", 40, 10);
    let pane = srv.pane_of("s:");
    srv.cmd(&["split-window", "-t", "s:", "env PS1='$ ' sh"]);
    let other = srv.pane_of("s:");
    srv.wait_prompt(&pane);
    srv.wait_prompt(&other);
    let sid = srv.session_of("s:");
    let counted = |wakes: &Arc<AtomicU32>| -> WakeFn {
        let wakes = Arc::clone(wakes);
        Box::new(move || {
            wakes.fetch_add(1, Ordering::SeqCst);
        })
    };
    let (first_wakes, second_wakes) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let attach = |pane: &str, wakes: &Arc<AtomicU32>| {
        srv.tmux
            .control_attach(&sid, pane, counted(wakes), BUDGET, &CancelToken::new())
            .unwrap()
    };
    let first = attach(&pane, &first_wakes);
    let second = attach(&other, &second_wakes);
    assert_eq!(first.pid(), second.pid(), "one client");
    assert_eq!(srv.cmd(&["list-clients"]).lines().count(), 1);

    // Each watch is woken by its own pane's output only.
    srv.type_line(&other, "echo second");
    assert!(eventually(|| second_wakes.load(Ordering::SeqCst) > 0));
    assert!(first.ping(BUDGET, &CancelToken::new()).is_ok());
    assert_eq!(first_wakes.load(Ordering::SeqCst), 0);
    assert_eq!(first.outputs(), 0);
    srv.type_line(&pane, "echo first");
    assert!(eventually(|| first_wakes.load(Ordering::SeqCst) > 0));

    // The client lives as long as a watch does.
    let pid = first.pid();
    drop(first);
    assert!(process_alive(pid));
    assert!(second.ping(BUDGET, &CancelToken::new()).is_ok());
    drop(second);
    assert!(!process_alive(pid), "tmux -C reaped with the last watch");
    assert!(eventually(|| srv.cmd(&["list-clients"]).trim().is_empty()));

    // A later watch starts a client of its own.
    let third = attach(&pane, &first_wakes);
    assert_ne!(third.pid(), pid);
    assert_eq!(third.state(), ControlState::Attached);
}

#[test]
fn watches_starting_together_share_one_control_client() {
    // Watches that attach at the same moment, before any client exists,
    // wait for the first one's client instead of each starting one.
    const WATCHES: usize = 16;
    let srv = Server::start("s", 40, 10);
    let pane = srv.pane_of("s:");
    let sid = srv.session_of("s:");
    let start = std::sync::Barrier::new(WATCHES);
    let watches: Vec<_> = thread::scope(|scope| {
        let attaches: Vec<_> = (0..WATCHES)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    srv.tmux
                        .control_attach(&sid, &pane, Box::new(|| {}), BUDGET, &CancelToken::new())
                        .unwrap()
                })
            })
            .collect();
        attaches.into_iter().map(|a| a.join().unwrap()).collect()
    });
    let pids: std::collections::HashSet<u32> = watches.iter().map(|w| w.pid()).collect();
    assert_eq!(pids.len(), 1, "one client for {WATCHES} watches");
    assert_eq!(srv.cmd(&["list-clients"]).lines().count(), 1);
    drop(watches);
    assert!(eventually(|| srv.cmd(&["list-clients"]).trim().is_empty()));
}

#[test]
fn calls_to_one_server_take_turns() {
    // A server answers one command at a time; more clients at once only
    // crowd the CPU. Each call records when its command runs.
    const CALLS: usize = 3 * CALLS_PER_SERVER;
    let srv = Server::start("s", 40, 10);
    let log = std::env::temp_dir().join(format!("{}-turns.log", srv.name));
    let script = format!(
        "echo start >> '{0}'; sleep 0.2; echo end >> '{0}'",
        log.display()
    );
    thread::scope(|scope| {
        for _ in 0..CALLS {
            scope.spawn(|| srv.cmd(&["run-shell", &script]));
        }
    });
    let events = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    let (mut running, mut most) = (0, 0);
    for event in events.lines() {
        running = if event == "start" {
            running + 1
        } else {
            running - 1
        };
        most = most.max(running);
    }
    assert_eq!(events.lines().filter(|e| *e == "start").count(), CALLS);
    assert!(most <= CALLS_PER_SERVER, "{most} commands ran at once");
}

#[test]
fn a_client_marked_as_not_answering_has_ended_for_every_watch() {
    // One watch finds the shared client silent for its whole ping budget:
    // every watch through it polls from then on, and a new watch starts a
    // client of its own.
    let srv = Server::start("s", 40, 10);
    let pane = srv.pane_of("s:");
    let sid = srv.session_of("s:");
    let attach = || {
        srv.tmux
            .control_attach(&sid, &pane, Box::new(|| {}), BUDGET, &CancelToken::new())
            .unwrap()
    };
    let (first, second) = (attach(), attach());
    // Every reply the client sent so far is read.
    assert!(first.ping(BUDGET, &CancelToken::new()).is_ok());
    // The server reads and writes a control client's pipes itself: stopped,
    // it answers no client.
    let server: libc::pid_t = srv
        .cmd(&["display-message", "-p", "#{pid}"])
        .trim()
        .parse()
        .unwrap();
    // SAFETY: plain syscalls on the test's own tmux server.
    unsafe { libc::kill(server, libc::SIGSTOP) };
    let silent = first.ping(Duration::from_millis(300), &CancelToken::new());
    // SAFETY: as above.
    unsafe { libc::kill(server, libc::SIGCONT) };
    assert!(silent.is_err(), "a stopped server answers nothing");
    first.stopped_answering("no reply");
    assert!(matches!(second.state(), ControlState::Exited(_)));
    let third = attach();
    assert_ne!(third.pid(), first.pid());
    assert_eq!(third.state(), ControlState::Attached);
}

#[test]
fn a_budget_beyond_any_clock_is_no_panic() {
    let srv = Server::start("s", 40, 10);
    let out = srv
        .tmux
        .run(
            &["display-message", "-p", "ok"],
            Duration::MAX,
            &CancelToken::new(),
        )
        .unwrap();
    assert_eq!(out.trim(), "ok");
    let watch = srv.watch(&srv.pane_of("s:"), Box::new(|| {}), Duration::MAX);
    assert_eq!(watch.state(), ControlState::Attached);
}

#[test]
fn control_client_reports_failures_and_exit() {
    let srv = Server::start("s", 40, 10);
    let pane = srv.pane_of("s:");
    let err = srv
        .tmux
        .control_attach("$999", &pane, Box::new(|| {}), BUDGET, &CancelToken::new())
        .unwrap_err();
    assert!(matches!(err, TmuxError::NoSuchSession(_)), "{err:?}");
    let absent = Tmux::new().with_socket_name(format!("{}-absent", srv.name));
    let err = absent
        .control_attach("$0", "%0", Box::new(|| {}), BUDGET, &CancelToken::new())
        .unwrap_err();
    assert!(matches!(err, TmuxError::NoServer { .. }), "{err:?}");
    // The refused client reported its error as it exited: gone moments later.
    assert!(eventually(|| processes_with(&["-C", &srv.name]).is_empty()));

    // A client whose server goes away says so, and ping fails.
    let sid = srv.session_of("s:");
    let client = srv
        .tmux
        .control_attach(&sid, &pane, Box::new(|| {}), BUDGET, &CancelToken::new())
        .unwrap();
    srv.cmd(&["kill-server"]);
    assert!(eventually(|| matches!(
        client.state(),
        ControlState::Exited(_)
    )));
    assert!(client
        .ping(Duration::from_millis(200), &CancelToken::new())
        .is_err());
    client.close();
    assert!(processes_with(&["-C", &srv.name]).is_empty());
}

#[test]
fn cancel_and_budget_kill_the_tmux_child() {
    let srv = Server::start("s", 40, 10);
    let channel = "waitfor-never-signalled";
    // `wait-for` blocks until the channel is signalled: a hung tmux call.
    let token = CancelToken::new();
    let canceller = token.clone();
    let needles = [srv.name.as_str(), "wait-for", channel];
    let t = thread::spawn({
        let name = srv.name.clone();
        move || {
            assert!(eventually(|| !processes_with(&[
                name.as_str(),
                "wait-for",
                channel
            ])
            .is_empty()));
            canceller.cancel();
        }
    });
    let err = srv
        .tmux
        .run(&["wait-for", channel], Duration::from_secs(60), &token)
        .unwrap_err();
    t.join().unwrap();
    assert!(
        err.is_interrupted() && matches!(err, TmuxError::Run(RunError::Cancelled { .. })),
        "{err:?}"
    );
    assert!(
        processes_with(&needles).is_empty(),
        "tmux child left after cancel"
    );

    let err = srv
        .tmux
        .run(
            &["wait-for", channel],
            Duration::from_millis(200),
            &CancelToken::new(),
        )
        .unwrap_err();
    assert!(
        matches!(err, TmuxError::Run(RunError::TimedOut { .. })),
        "{err:?}"
    );
    assert!(
        processes_with(&needles).is_empty(),
        "tmux child left after the budget"
    );

    // A snapshot or resolution with a cancelled token starts nothing.
    let cancelled = CancelToken::new();
    cancelled.cancel();
    let err = srv
        .tmux
        .snapshot("%0", Rows::Visible, BUDGET, &cancelled)
        .unwrap_err();
    assert!(err.is_interrupted());
    let err = srv
        .tmux
        .resolve_pane(&PaneTarget::default(), BUDGET, &cancelled)
        .unwrap_err();
    assert!(err.is_interrupted());
}

#[test]
fn echo_of_typed_keys_is_masked_on_a_real_pane() {
    use waitfor::tmux::{EchoLog, Key};
    let srv = Server::start("s", 40, 10);
    let pane = srv.pane_of("s:");
    let entry = srv.wait_prompt(&pane);
    let log = EchoLog::new();
    let t0 = Instant::now();

    // Typed, not submitted: on screen only as echo on the cursor line.
    srv.cmd(&["send-keys", "-t", &pane, "-l", "echo ready"]);
    log.record(&pane, &[Key::text("echo ready")], t0);
    let s = srv.snap_until(
        &pane,
        Rows::from_row(entry.cursor_row(), entry.history_size),
        |s| s.lines.iter().any(|l| l.contains("echo ready")),
    );
    let m = log.mask(&pane, &s.lines, s.cursor_line(), t0);
    assert!(m.only_echo("ready"), "{m:?}");

    // Submitted: the echo line stays masked, the output line is real.
    srv.cmd(&["send-keys", "-t", &pane, "Enter"]);
    log.record(&pane, &[Key::Enter], t0);
    let s = srv.snap_until(
        &pane,
        Rows::from_row(entry.cursor_row(), entry.history_size),
        |s| s.lines.iter().any(|l| l == "ready"),
    );
    let m = log.mask(
        &pane,
        &s.lines,
        s.cursor_line(),
        t0 + Duration::from_secs(1),
    );
    assert_eq!(m.lines[0].trim(), "$");
    assert!(!m.only_echo("ready"));
    // Ten seconds later the record is gone and nothing is masked.
    let m = log.mask(
        &pane,
        &s.lines,
        s.cursor_line(),
        t0 + Duration::from_secs(11),
    );
    assert_eq!(m.masked, 0);
}
