//! A scripted tmux server of one pane, for the simulator: it answers the
//! invocations the pane probe makes (`list-panes`, `display-message`,
//! `capture-pane`) as tmux would print them for the pane it shows now, so
//! that pane resolution, snapshot parsing, the pane probe and a profile's
//! render run unchanged on virtual time (see [`crate::simulate`]).
//!
//! The pane has no soft wraps: each row is one line, and the pane is as
//! wide as its longest row (at least 80 columns). History rows older than
//! the ones a step lists are blank. Keys typed into it are recorded in the
//! server's own echo log, which the probes of its panes read instead of
//! the process-wide one.

use super::echo::{EchoLog, Key, ServerIdentity};
use super::echo_registry::echo_key;
use super::snapshot::capture_top;
use crate::sync::Mutex;
use std::sync::Arc;
use std::time::Instant;

/// Who the scripted server says it is.
fn identity() -> ServerIdentity {
    ServerIdentity {
        socket_path: "/simulated/tmux".into(),
        pid: 1,
        start_time: 1_700_000_000,
    }
}

/// What the pane shows at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PaneState {
    /// `%N`.
    pub pane_id: String,
    /// The visible rows, top to bottom.
    pub screen: Vec<String>,
    /// The history rows right above the screen, oldest first.
    pub history: Vec<String>,
    /// Rows in history (at least `history.len()`).
    pub history_size: u64,
    /// `history-limit`.
    pub history_limit: u64,
    /// The visible row of the cursor.
    pub cursor_y: u32,
    /// The pane program's pid.
    pub pid: u32,
    /// The program exited (the pane is kept).
    pub dead: bool,
    /// On the alternate screen.
    pub alternate: bool,
}

impl PaneState {
    /// The content of absolute row `row`.
    fn row(&self, row: u64) -> &str {
        let listed_from = self.history_size.saturating_sub(self.history.len() as u64);
        let found = if row >= self.history_size {
            self.screen.get((row - self.history_size) as usize)
        } else if row >= listed_from {
            self.history.get((row - listed_from) as usize)
        } else {
            None
        };
        found.map_or("", String::as_str)
    }

    fn height(&self) -> u32 {
        u32::try_from(self.screen.len().max(1)).unwrap_or(u32::MAX)
    }

    /// The value of format variable `name`, as tmux expands `#{name}`.
    fn variable(&self, name: &str) -> String {
        let flag = |on: bool| if on { "1" } else { "0" }.to_string();
        let cursor_row = self.screen.get(self.cursor_y as usize);
        match name {
            "pane_id" => self.pane_id.clone(),
            "window_id" => "@1".into(),
            "session_id" => "$1".into(),
            "session_name" => "main".into(),
            "window_active" | "pane_active" => "1".into(),
            "history_size" => self.history_size.to_string(),
            "history_limit" => self.history_limit.to_string(),
            "cursor_x" => cursor_row.map_or(0, |r| r.chars().count()).to_string(),
            "cursor_y" => self.cursor_y.to_string(),
            "pane_height" => self.height().to_string(),
            "pane_width" => self
                .screen
                .iter()
                .chain(&self.history)
                .map(|r| r.chars().count())
                .max()
                .unwrap_or(0)
                .max(80)
                .to_string(),
            "alternate_on" => flag(self.alternate),
            "pane_dead" => flag(self.dead),
            "pane_pid" => self.pid.to_string(),
            "pane_in_mode" => "0".into(),
            "pid" => identity().pid.to_string(),
            "start_time" => identity().start_time.to_string(),
            "socket_path" => identity().socket_path,
            _ => String::new(),
        }
    }

    /// `format` with each `#{name}` replaced by its value.
    fn expand(&self, format: &str) -> String {
        let mut out = String::new();
        let mut rest = format;
        while let Some(at) = rest.find("#{") {
            out.push_str(&rest[..at]);
            let Some(end) = rest[at..].find('}') else {
                break;
            };
            out.push_str(&self.variable(&rest[at + 2..at + end]));
            rest = &rest[at + end + 1..];
        }
        out.push_str(rest);
        out
    }
}

/// What the scripted server answers now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PaneAnswer {
    /// The pane, as it shows.
    Shows(PaneState),
    /// The pane is gone (killed, or its server).
    Gone,
    /// Every tmux command fails with this text on stderr.
    Fails(String),
}

/// What one invocation gives: exit status, stdout, stderr.
pub(crate) type Printed = (i32, String, String);

/// The scripted server: [`ScriptedServer::show`] sets what it answers.
#[derive(Debug)]
pub(crate) struct ScriptedServer {
    now: Mutex<PaneAnswer>,
    echo: Arc<EchoLog>,
}

impl ScriptedServer {
    pub(crate) fn new() -> Self {
        Self {
            now: Mutex::new(PaneAnswer::Gone),
            echo: Arc::new(EchoLog::new()),
        }
    }

    /// The echo log the probes of this server's panes read.
    pub(crate) fn echo_log(&self) -> Arc<EchoLog> {
        self.echo.clone()
    }

    /// Records, now, that the host typed `text` into pane `pane_id` (a
    /// `\n` in it submits the line), as a `send_keys` tool records it.
    pub(crate) fn typed(&self, pane_id: &str, text: &str) {
        let key = echo_key(&identity(), pane_id);
        self.echo.record(&key, &[Key::text(text)], Instant::now());
    }

    /// Answers from now on as `answer` says.
    pub(crate) fn show(&self, answer: PaneAnswer) {
        *self.now.lock() = answer;
    }

    /// One invocation: its commands (separated by `;` arguments) in turn,
    /// stopping at the first that fails, as tmux does.
    pub(crate) fn run(&self, args: &[&str]) -> Printed {
        let now = self.now.lock().clone();
        let mut stdout = String::new();
        for command in args.split(|a| *a == ";") {
            match command_output(&now, command) {
                Ok(text) => stdout.push_str(&text),
                Err(stderr) => return (1, stdout, stderr),
            }
        }
        (0, stdout, String::new())
    }
}

/// The value after `flag` in `command`.
fn option<'a>(command: &[&'a str], flag: &str) -> Option<&'a str> {
    let at = command.iter().position(|a| *a == flag)?;
    command.get(at + 1).copied()
}

fn command_output(now: &PaneAnswer, command: &[&str]) -> Result<String, String> {
    let pane = match now {
        PaneAnswer::Fails(stderr) => return Err(stderr.clone()),
        PaneAnswer::Gone => None,
        PaneAnswer::Shows(pane) => Some(pane),
    };
    let name = command.first().copied().unwrap_or_default();
    if name == "list-panes" {
        let format = option(command, "-F").unwrap_or_default();
        return Ok(pane.map(|p| p.expand(format) + "\n").unwrap_or_default());
    }
    let target = option(command, "-t").unwrap_or_default();
    let pane = pane
        .filter(|p| !target.starts_with('%') || target == p.pane_id)
        .ok_or_else(|| format!("can't find pane: {target}"))?;
    match name {
        "display-message" => Ok(pane.expand(command.last().copied().unwrap_or_default()) + "\n"),
        "capture-pane" => {
            let start = match option(command, "-S") {
                None | Some("-") => None,
                Some(n) => Some(n.parse::<i64>().map_err(|_| format!("bad start: {n}"))?),
            };
            let top = capture_top(start, pane.history_size, pane.height());
            let end = pane.history_size + u64::from(pane.height());
            Ok((top..end)
                .map(|row| format!("{}\n", pane.row(row)))
                .collect())
        }
        other => Err(format!("unknown command: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tmux::{PaneTarget, Rows, Tmux};
    use crate::CancelToken;
    use std::time::Duration;

    fn pane() -> PaneState {
        PaneState {
            pane_id: "%4".into(),
            screen: vec!["$ make".into(), "done".into(), "$ ".into(), "".into()],
            history: vec!["old".into()],
            history_size: 40,
            history_limit: 2000,
            cursor_y: 2,
            pid: 7,
            ..PaneState::default()
        }
    }

    #[test]
    fn the_real_snapshot_reads_what_the_scripted_server_prints() {
        let server = Arc::new(ScriptedServer::new());
        server.show(PaneAnswer::Shows(pane()));
        let tmux = Tmux::scripted(server);
        let cancel = CancelToken::new();
        let budget = Duration::from_secs(1);
        let found = tmux.resolve_pane(&PaneTarget::default(), budget, &cancel);
        assert_eq!(found.unwrap().pane_id, "%4");
        let snap = tmux.snapshot("%4", Rows::from_row(39, 40), budget, &cancel);
        let snap = snap.unwrap();
        assert!(snap.rows_exact);
        assert_eq!(snap.lines, ["old", "$ make", "done", "$", ""]);
        assert_eq!(snap.printed_lines[3], "$ ");
        assert_eq!((snap.cursor_row(), snap.pane_height), (42, 4));
        assert_eq!(snap.pane_pid, Some(7));
        let missing = tmux.snapshot("%9", Rows::Visible, budget, &cancel);
        assert!(matches!(missing, Err(super::super::TmuxError::NoSuchPane(p)) if p == "%9"));
    }
}
