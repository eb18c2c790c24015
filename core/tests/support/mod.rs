//! A real tmux server for pane-wait tests, started on a private socket and
//! killed on drop; helpers to drive a pane and run profile calls.
#![allow(dead_code)] // each test binary uses part of it

pub mod fork;

use serde_json::Value;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use waitfor::profiles::{prepare, Host, Notice, Report, ToolError};
use waitfor::tmux::{Rows, Tmux};
use waitfor::{CancelToken, Engine, WaitHandle, WaitResult};

pub const BUDGET: Duration = Duration::from_secs(5);
pub const PATIENCE: Duration = Duration::from_secs(20);

static NEXT: AtomicU32 = AtomicU32::new(0);

pub struct Server {
    pub name: Option<String>,
    pub tmux: Tmux,
    pub pane: String,
}

impl Server {
    /// A server on a unique `-L` socket whose session `main` runs `sh`
    /// with the prompt `$ ` in a `width` x `height` window.
    pub fn start(width: u32, height: u32) -> Self {
        let name = format!(
            "waitfor-pane-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let tmux = Tmux::new()
            .with_socket_name(&name)
            .with_config_file("/dev/null");
        Self::with(Some(name), tmux, width, height)
    }

    /// A server on the default socket (the caller points `TMUX_TMPDIR`
    /// somewhere private first).
    pub fn start_default(width: u32, height: u32) -> Self {
        Self::with(
            None,
            Tmux::new().with_config_file("/dev/null"),
            width,
            height,
        )
    }

    /// Kills this server and starts a new one on the same socket.
    pub fn restart(self, width: u32, height: u32) -> Self {
        let (name, tmux) = (self.name.clone(), self.tmux.clone());
        let pid = self.cmd(&["display-message", "-p", "#{pid}"]);
        let process = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
        drop(self);
        let end = Instant::now() + PATIENCE;
        while process.exists() {
            assert!(Instant::now() < end, "the old server never exited");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self::with(name, tmux, width, height)
    }

    fn with(name: Option<String>, tmux: Tmux, width: u32, height: u32) -> Self {
        let mut server = Server {
            name,
            tmux,
            pane: String::new(),
        };
        server.cmd(&[
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "env PS1='$ ' sh",
        ]);
        server.pane = server
            .cmd(&["display-message", "-p", "-t", "main", "#{pane_id}"])
            .trim()
            .to_string();
        server.wait_screen(|s| s.contains('$'));
        server
    }

    pub fn cmd(&self, args: &[&str]) -> String {
        self.tmux
            .run(args, BUDGET, &CancelToken::new())
            .unwrap_or_else(|e| panic!("tmux {args:?}: {e}"))
    }

    /// Types `text` and Enter, as a test user (no echo recorded).
    pub fn type_line(&self, text: &str) {
        self.cmd(&["send-keys", "-t", &self.pane, "-l", text]);
        self.cmd(&["send-keys", "-t", &self.pane, "Enter"]);
    }

    /// Types `text` (and Enter) as the host would, recording the echo.
    pub fn send_recorded(&self, text: &str, enter: bool) {
        waitfor::tmux::record_send_keys(self.name.as_deref(), &self.pane, &[text], true, enter);
        self.cmd(&["send-keys", "-t", &self.pane, "-l", text]);
        if enter {
            self.cmd(&["send-keys", "-t", &self.pane, "Enter"]);
        }
    }

    /// The visible screen.
    pub fn screen(&self) -> String {
        self.tmux
            .snapshot(&self.pane, Rows::Visible, BUDGET, &CancelToken::new())
            .unwrap()
            .lines
            .join("\n")
    }

    /// Waits until the visible screen satisfies `cond`.
    pub fn wait_screen(&self, cond: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + PATIENCE;
        loop {
            let s = self.screen();
            if cond(&s) {
                return s;
            }
            assert!(Instant::now() < end, "screen never matched; last:\n{s}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the shell is idle at a prompt on the cursor line.
    pub fn wait_prompt(&self) {
        let end = Instant::now() + PATIENCE;
        loop {
            let s = self
                .tmux
                .snapshot(&self.pane, Rows::Visible, BUDGET, &CancelToken::new())
                .unwrap();
            if s.cursor_line().is_some_and(|i| s.lines[i] == "$") {
                return;
            }
            assert!(Instant::now() < end, "no idle prompt: {:?}", s.lines);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs `f` while the server process is stopped (SIGSTOP): every
    /// tmux call to it hangs, as with a wedged server.
    pub fn frozen<T>(&self, f: impl FnOnce() -> T) -> T {
        let pid = self
            .cmd(&["display-message", "-p", "#{pid}"])
            .trim()
            .to_string();
        let signal = |sig: &str| {
            let sent = std::process::Command::new("kill")
                .args([sig, &pid])
                .status()
                .is_ok_and(|s| s.success());
            assert!(sent, "kill {sig} {pid}");
        };
        signal("-STOP");
        let out = f();
        signal("-CONT");
        out
    }

    /// Lines of `list-clients` for control clients.
    pub fn control_clients(&self) -> Vec<String> {
        self.cmd(&[
            "list-clients",
            "-F",
            "#{client_name} #{client_control_mode}",
        ])
        .lines()
        .filter(|l| l.ends_with(" 1"))
        .map(|l| l.split(' ').next().unwrap_or("").to_string())
        .collect()
    }

    /// Polls `cond` with a generous deadline.
    pub fn until(&self, what: &str, cond: impl Fn() -> bool) {
        let end = Instant::now() + PATIENCE;
        while !cond() {
            assert!(Instant::now() < end, "never happened: {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.tmux.run(&["kill-server"], BUDGET, &CancelToken::new());
    }
}

/// A profile call running in the background.
pub struct Running {
    pub handle: WaitHandle,
    pub render: waitfor::profiles::Render,
    entered: crossbeam_channel::Receiver<()>,
    report: Arc<Report>,
    notices: Arc<std::sync::Mutex<Vec<Notice>>>,
}

impl Running {
    /// Blocks until the entry sample was taken (the anchor is set), or
    /// the wait ended.
    pub fn entered(&self) {
        if let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
            self.entered.recv_timeout(PATIENCE)
        {
            panic!("the entry sample was never taken");
        }
    }

    pub fn finish(self) -> (Result<Value, ToolError>, WaitResult) {
        let result = self.handle.wait();
        ((self.render)(&result), result)
    }

    /// The output or error, and every notice of the call, its end's too.
    pub fn finish_with_notices(self) -> (Result<Value, ToolError>, Vec<Notice>) {
        let (out, _, notices) = self.finish_all();
        (out, notices)
    }

    /// The output or error, the engine's result, and every notice.
    pub fn finish_all(self) -> (Result<Value, ToolError>, WaitResult, Vec<Notice>) {
        let result = self.handle.wait();
        let mut notices = std::mem::take(&mut *self.notices.lock().unwrap());
        notices.extend(self.report.end(&result));
        ((self.render)(&result), result, notices)
    }
}

/// Starts a profile call; `entered()` tells when its anchor is set.
pub fn start(profile: &str, args: Value, host: &Host) -> Running {
    let (spec, probe, options, render, report) = prepare(profile, &args, host)
        .unwrap_or_else(|e| panic!("{args}: {e}"))
        .into_parts();
    let (tx, rx) = crossbeam_channel::bounded(1);
    let report = Arc::new(report);
    let notices = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (reporting, sent) = (report.clone(), notices.clone());
    let options = options.on_progress(move |p| {
        sent.lock().unwrap().extend(reporting.progress(p));
        let _ = tx.try_send(());
    });
    let handle = Engine::global()
        .start_with(spec, Some(probe), options)
        .unwrap();
    Running {
        handle,
        render,
        report,
        notices,
        entered: rx,
    }
}

/// Checks `value` against a JSON Schema.
pub fn assert_valid(schema: &Value, value: &Value) {
    let validator = jsonschema::validator_for(schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{value} breaks the output schema: {errors:?}"
    );
}

/// The output schema of a profile's tool definition.
pub fn output_schema(profile: &str) -> Value {
    waitfor::profiles::definitions()
        .into_iter()
        .find(|d| d.profile == profile)
        .unwrap()
        .tool["outputSchema"]
        .clone()
}

/// Process ids of tmux processes for `socket` whose argv holds `word`.
pub fn tmux_processes(socket: &str, word: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.iter().any(|a| a == socket) && args.iter().any(|a| a == word) {
            found.push(pid);
        }
    }
    found
}

/// The names of an object's keys, in order (a tool's output lists its
/// fields in its original's order).
pub fn keys(object: &Value) -> Vec<&str> {
    object
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}
