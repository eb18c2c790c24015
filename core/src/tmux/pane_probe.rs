//! The built-in pane probe: fresh output of one tmux pane, echo masked,
//! woken by a control-mode client.
//!
//! # What one sample returns
//!
//! The first sample resolves the pane, reads the visible screen and takes
//! the entry anchor: the absolute row of the cursor (see
//! [`super::snapshot`]). Every sample after it captures the rows from the
//! anchor down and returns only what was written after the wait began:
//!
//! - on the entry cursor row, what follows the text that was there at
//!   entry (a prompt does not match itself, output written on its row
//!   does); a row rewritten from its start counts whole;
//! - below it, every row whose content differs from what that same
//!   absolute row showed at entry (paint left below the cursor is stale,
//!   a fresh line identical to an old line elsewhere is not);
//! - the host's own echo (see [`super::echo_registry`]) blanked out.
//!
//! That is [`Freshness::ByRow`]; [`Freshness::ByContent`] is libtmux-mcp's
//! rule instead (whole rows whose content is new, nothing masked).
//!
//! So the engine's whole view (`ViewKind::Whole`) sees exactly the fresh
//! text and its incremental matching works on it unchanged. The visible
//! screen at entry goes in [`Observation::at_entry`] (for
//! `matched_at_entry`), or, with [`PaneProbe::credit_entry`], is the first
//! observation itself, so text already on screen counts (the C++ seed).
//!
//! # Endings the probe decides
//!
//! - the pane died, vanished, or was respawned (its pid changed): the
//!   observation is `gone`;
//! - its history shrank below the entry size without the pane growing
//!   (`clear-history`, a trim at the history limit): every later sample is
//!   an "anchor lost" error, since no row number can be trusted;
//! - the alternate screen (a pager, an editor): the observation is
//!   marked [`Observation::alternate_screen`], matching is suppressed while
//!   it lasts, and the report remembers it. With [`Freshness::ByContent`]
//!   (libtmux-mcp's rule) its rows are read and reported as any others
//!   (`region`, `fresh_rows`), but the observation holds none of them, so
//!   each such sample is an ordinary one that matches nothing.
//!
//! # Push
//!
//! Right after the entry sample, a control-mode client
//! ([`super::ControlClient`]) watches the pane and wakes the wait on each
//! `%output`, so a reaction costs one capture. The entry sample answers
//! first and asks for the next call at once, which attaches and captures:
//! an attach can take seconds on a server many waits attach to, and the
//! wait has its first sample meanwhile. While it is attached, a
//! timer sample with no `%output` since the last capture reuses that
//! capture, except every [`VERIFY_EVERY`], when the pane is checked anyway
//! (a kill, a resize or `clear-history` print nothing): the client is
//! pinged and the pane captured. The waits watching one pane share that
//! check ([`ControlClient::check_turn`]): one of them takes it, the others
//! keep their capture while it is under way, and after it while its facts
//! ([`super::PaneFacts`]: pid, size, cursor, history, a hash of the
//! visible screen) are those of their own last capture; they capture too
//! when the facts differ. If the client cannot attach, exits, or leaves a
//! ping unanswered for [`CONTROL_BUDGET`] (then it is marked ended for
//! every wait watching through it), the probe polls (every sample
//! captures). [`PaneReport::push`]
//! says which path was in force.
//!
//! ```no_run
//! use std::time::Duration;
//! use waitfor::tmux::{PaneProbe, PaneTarget, Tmux};
//! use waitfor::{Condition, Engine, Pattern, Spec};
//!
//! let target = PaneTarget { pane_id: Some("%3".into()), ..Default::default() };
//! let probe = PaneProbe::new(Tmux::new().with_socket_name("work"), target);
//! let report = probe.report();
//! let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
//!     .interval(Duration::from_millis(50))
//!     .max_wait(Duration::from_secs(10));
//! let result = Engine::global().wait(spec, probe).unwrap();
//! println!("{:?} via {:?}", result.outcome, report.get().push);
//! ```

use super::echo::{EchoLog, EchoMask};
use super::echo_registry::{echo_key, echo_log};
use super::{
    CheckTurn, ControlClient, ControlState, Freshness, PaneFacts, PanePick, PaneRef, PaneSnapshot,
    PaneTarget, Rows, Tmux, TmuxError, TurnLog,
};
use crate::probe::{EndNotices, Observation, Probe, ProbeContext, ProbeError, Waker};
use crate::process::RunError;
use crate::result::{Outcome, WaitResult};
use crate::sync::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// While a control client is attached, the pane is checked at least this
/// often even without `%output` (a kill, a resize or `clear-history` print
/// nothing): one of the waits watching it pings the client and captures the
/// pane, for all of them (see the [module docs](self)).
pub const VERIFY_EVERY: Duration = Duration::from_millis(500);

/// Longest time the control client gets to attach or answer a ping.
pub const CONTROL_BUDGET: Duration = Duration::from_secs(1);

/// Which path wakes the wait.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PushPath {
    /// Polling only: push was turned off, or has not started yet.
    #[default]
    Polling,
    /// A control-mode client is attached and wakes the wait.
    ControlMode,
    /// The control client could not attach or stopped working; polling.
    Fallback(String),
}

/// Turns the new rows of a sample into the observation's text (see
/// [`PaneProbe::observe_rows`]).
/// An error ends the sample as a probe error.
pub type ObserveRows = Arc<dyn Fn(&[String]) -> Result<String, ProbeError> + Send + Sync>;

/// How a pane wait's pane went away (the observation was `gone`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaneEnd {
    /// The pane's program exited (the pane is kept, `pane_dead`).
    Died,
    /// The pane was respawned: its program's pid changed.
    Respawned {
        /// The pid at entry.
        from: Option<u32>,
        /// The pid now.
        to: Option<u32>,
    },
    /// The pane is gone.
    Vanished,
    /// The whole tmux server is gone; what tmux wrote to stderr.
    ServerGone(String),
}

/// Why a pane probe's first sample found no pane to watch
/// ([`PaneReport::unresolved`]).
///
/// ```
/// use waitfor::tmux::{PaneReport, Unresolved};
/// let report = PaneReport { unresolved: Some(Unresolved::Missing), ..Default::default() };
/// assert_eq!(report.unresolved, Some(Unresolved::Missing));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unresolved {
    /// Nothing the target names: no such pane, window or session, or no
    /// session at all.
    Missing,
    /// No tmux server answers on the socket; what tmux wrote to stderr.
    NoServer(String),
}

/// What the probe saw, for a profile to render beside the engine's result.
#[derive(Clone, Debug, Default)]
pub struct PaneReport {
    /// The resolved pane, once the first sample resolved it.
    pub pane: Option<PaneRef>,
    /// The path in force at the last sample.
    pub push: PushPath,
    /// The rows from the entry cursor row down at the last capture, as
    /// they are (`original`) and with the host's echo blanked (`lines`).
    pub region: EchoMask,
    /// The visible screen at entry, as it was and echo-masked.
    pub entry: EchoMask,
    /// The pane was on the alternate screen at some sample.
    pub alternate_screen: bool,
    /// Real captures taken (samples answered from the last capture are
    /// not counted).
    pub captures: u64,
    /// [`Freshness::ByContent`]: the rows that counted as new at the last
    /// capture.
    pub fresh_rows: Vec<String>,
    /// [`Freshness::ByContent`]: some capture had a new row.
    pub saw_fresh_rows: bool,
    /// How the pane went away, when it did.
    pub end: Option<PaneEnd>,
    /// Why the first sample found no pane to watch, when it did not.
    pub unresolved: Option<Unresolved>,
    /// `history_size` at entry and at the capture that lost the anchor,
    /// when the history shrank below its size at entry.
    pub history_shrank: Option<(u64, u64)>,
    /// The tmux command that did not answer within its budget, and that
    /// budget, when one did not.
    pub unresponsive: Option<(String, Duration)>,
    /// The last failed tmux call ran out of budget waiting for its turn
    /// while the server answered this process's other calls
    /// ([`TmuxError::Busy`]).
    pub no_turn: bool,
    /// How long the wait's tmux calls waited for a turn while tmux
    /// answered this process's other calls ahead of them, the wait of a
    /// call still waiting included (as it stood when the report was read:
    /// see [`PaneReport::starved_notice`]).
    pub turn_wait: Duration,
    /// The visible screen at entry, as `capture-pane -p -J` prints it.
    pub entry_screen: String,
    /// The visible screen at the last capture, as `capture-pane -p -J`
    /// prints it.
    pub screen: String,
    /// [`PaneReport::captures`] when the control client attached.
    pub attached_at: Option<u64>,
    /// `history_limit` at entry, and the first `history_size` sampled in
    /// its last tenth, where tmux frees the oldest rows in batches (so
    /// rows may scroll away between two samples unseen).
    pub history_near_limit: Option<(u64, u64)>,
}

impl PaneReport {
    /// Whether a wait that ended with `result` in its probe's failure
    /// failed at its deadline: its last tmux call spent its budget waiting
    /// for its turn while tmux answered this process's other calls
    /// ([`PaneReport::no_turn`]), not a fault of tmux or of the pane.
    ///
    /// ```
    /// use std::time::Duration;
    /// use waitfor::{tmux::PaneReport, Condition, Engine, Observation, Outcome, Spec};
    /// let spec = Spec::new(Condition::AnyOutput)
    ///     .interval(Duration::from_millis(10))
    ///     .max_wait(Duration::from_millis(40));
    /// let quiet = waitfor::probe_fn(|_| Ok(Observation::text("")));
    /// let mut result = Engine::global().wait(spec, quiet).unwrap();
    /// result.outcome = Outcome::ProbeError;
    /// let no_turn = PaneReport { no_turn: true, ..Default::default() };
    /// assert!(no_turn.failed_without_turn(&result));
    /// assert!(!PaneReport::default().failed_without_turn(&result));
    /// ```
    pub fn failed_without_turn(&self, result: &WaitResult) -> bool {
        result.outcome == Outcome::ProbeError && self.no_turn
    }

    /// Why a wait that ended with `result` at its deadline (a timeout, or
    /// its probe's failure there or for want of a turn) sampled less
    /// often than asked, if this
    /// process's other waits on the same tmux server held its turns
    /// ([`super::CALLS_PER_SERVER`]): its tmux calls spent at least a
    /// quarter of the wait waiting for a turn while tmux answered calls
    /// ahead of them ([`PaneReport::turn_wait`]). `None` for a wait that
    /// was not starved so: on an idle server no call waits, and a server
    /// that answers nothing is stuck, not busy.
    ///
    /// ```
    /// use std::time::Duration;
    /// use waitfor::tmux::PaneReport;
    /// let spec = waitfor::Spec::new(waitfor::Condition::AnyOutput)
    ///     .interval(Duration::from_millis(10))
    ///     .max_wait(Duration::from_millis(40));
    /// let result = waitfor::Engine::global()
    ///     .wait(spec, waitfor::probe_fn(|_| Ok(waitfor::Observation::text(""))))
    ///     .unwrap();
    /// let starved = PaneReport { turn_wait: Duration::from_secs(1), ..Default::default() };
    /// assert!(starved.starved_notice(&result).unwrap().contains("held every turn"));
    /// assert_eq!(PaneReport::default().starved_notice(&result), None);
    /// ```
    pub fn starved_notice(&self, result: &WaitResult) -> Option<String> {
        // A probe failure before the deadline (a pane not found, a server
        // gone) ended the wait for its own reason, save a call's without
        // a turn.
        let at_deadline = result.outcome == Outcome::Timeout
            || self.failed_without_turn(result)
            || result.outcome == Outcome::ProbeError
                && result.elapsed_ms >= result.effective_max_wait_ms;
        let waited = self.turn_wait.as_secs_f64();
        let elapsed = result.elapsed_ms as f64 / 1000.0;
        (at_deadline && waited > 0.0 && waited >= elapsed / 4.0).then(|| {
            let times = match result.samples {
                1 => "once".to_string(),
                n => format!("{n} times"),
            };
            format!(
                "sampled {times} in {elapsed:.1}s: this process's other waits on this tmux \
                 server held every turn ({} tmux calls at a time per server), and this wait's \
                 calls waited {waited:.1}s for theirs",
                super::CALLS_PER_SERVER
            )
        })
    }
}

/// A shared view of a probe's [`PaneReport`], readable after the wait.
#[derive(Clone, Debug, Default)]
pub struct PaneReportHandle {
    report: Arc<Mutex<PaneReport>>,
    /// Where the probe's tmux calls note their turns.
    turns: TurnLog,
}

impl PaneReportHandle {
    /// A copy of the report as it is now.
    pub fn get(&self) -> PaneReport {
        self.read(PaneReport::clone)
    }

    /// What `f` reads of the report as it is now, without a copy of it all.
    pub fn read<T>(&self, f: impl FnOnce(&PaneReport) -> T) -> T {
        let mut report = self.report.lock();
        report.turn_wait = self.turns.waited_behind_answers();
        f(&report)
    }

    fn update(&self, f: impl FnOnce(&mut PaneReport)) {
        f(&mut self.report.lock());
    }
}

/// Fixed after the first sample.
struct Anchor {
    pane: PaneRef,
    row: u64,
    history_size: u64,
    /// `history_limit` at entry.
    history_limit: u64,
    pane_height: u32,
    pane_pid: Option<u32>,
    /// Raw content of each line at or below the anchor at entry, by the
    /// absolute row it starts on.
    stale: HashMap<u64, String>,
    /// [`Freshness::ByContent`]: the printed rows at or below the anchor
    /// at entry.
    stale_contents: HashSet<String>,
}

/// The pane probe; see the [module docs](self).
pub struct PaneProbe {
    tmux: Tmux,
    target: PaneTarget,
    push: bool,
    credit_entry: bool,
    pick: PanePick,
    freshness: Freshness,
    observe_rows: Option<ObserveRows>,
    echo: Arc<EchoLog>,
    waker: Option<Waker>,
    anchor: Option<Anchor>,
    hint: u64,
    lost: Option<String>,
    control: Option<ControlClient>,
    control_tried: bool,
    seen_outputs: u64,
    last_capture: Option<Instant>,
    /// The facts of the last capture.
    facts: Option<PaneFacts>,
    last: Option<Observation>,
    report: PaneReportHandle,
}

impl PaneProbe {
    /// A probe of the pane `target` names on the server `tmux` reaches,
    /// with push on, text at entry not counted, and the process-wide echo
    /// log ([`super::echo_log`]).
    pub fn new(tmux: Tmux, target: PaneTarget) -> Self {
        let echo = tmux.scripted_echo_log().unwrap_or_else(echo_log);
        let report = PaneReportHandle::default();
        Self {
            tmux: tmux.logging_turns(report.turns.clone()),
            target,
            push: true,
            credit_entry: false,
            pick: PanePick::Active,
            freshness: Freshness::ByRow,
            observe_rows: None,
            echo,
            waker: None,
            anchor: None,
            hint: 0,
            lost: None,
            control: None,
            control_tried: false,
            seen_outputs: 0,
            last_capture: None,
            facts: None,
            last: None,
            report,
        }
    }

    /// Turns the control-mode client on (default) or off (poll only; no
    /// client ever appears in `list-clients`).
    pub fn push(mut self, on: bool) -> Self {
        self.push = on;
        self
    }

    /// Whether text already on the visible screen at entry (echo masked)
    /// counts: the first observation is then that screen.
    pub fn credit_entry(mut self, on: bool) -> Self {
        self.credit_entry = on;
        self
    }

    /// Which pane a window or session target stands for (default: the
    /// active one).
    pub fn pick(mut self, pick: PanePick) -> Self {
        self.pick = pick;
        self
    }

    /// Which rows count as new (default [`Freshness::ByRow`]).
    pub fn freshness(mut self, freshness: Freshness) -> Self {
        self.freshness = freshness;
        self
    }

    /// [`Freshness::ByContent`]: the observation is `observe(new rows)`
    /// instead of the rows themselves (a profile that searches rows its
    /// own way gives the engine its findings).
    pub fn observe_rows(mut self, observe: ObserveRows) -> Self {
        self.observe_rows = Some(observe);
        self
    }

    /// Reads this echo log instead of the process-wide one.
    pub fn echo_log(mut self, log: Arc<EchoLog>) -> Self {
        self.echo = log;
        self
    }

    /// A handle on what the probe saw, to read after the wait.
    pub fn report(&self) -> PaneReportHandle {
        self.report.clone()
    }

    /// `lines` of `snap` with the echo recorded for its pane on its server
    /// blanked.
    fn mask(&self, snap: &PaneSnapshot, lines: &[String], cursor_line: Option<usize>) -> EchoMask {
        let key = echo_key(&snap.server, &snap.pane_id);
        self.echo.mask(&key, lines, cursor_line, Instant::now())
    }

    fn entry_sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        let pane = self
            .tmux
            .resolve_pane_picking(&self.target, self.pick, ctx.budget, &ctx.cancel)
            .map_err(|e| {
                let unresolved = match &e {
                    TmuxError::NoSuchPane(_)
                    | TmuxError::NoSuchWindow(_)
                    | TmuxError::NoSuchSession(_)
                    | TmuxError::NoSessions => Some(Unresolved::Missing),
                    TmuxError::NoServer { stderr, .. } => {
                        Some(Unresolved::NoServer(stderr.clone()))
                    }
                    _ => None,
                };
                self.report.update(|r| r.unresolved = unresolved);
                self.failed("list-panes", e)
            })?;
        self.report.update(|r| r.pane = Some(pane.clone()));
        let screen = self
            .tmux
            .snapshot(&pane.pane_id, Rows::Visible, ctx.budget, &ctx.cancel)
            .map_err(|e| self.failed("display-message", e))?;
        let row = screen.cursor_row();
        // The region is the screen from the cursor line down, unless the
        // cursor sits on the continuation of a wrapped line: then ask tmux
        // for the rows from the cursor row, cut there.
        let region = match screen.cursor_line() {
            Some(i) if screen.line_rows[i] == row => screen.clone(),
            _ => self
                .tmux
                .snapshot(
                    &pane.pane_id,
                    Rows::from_row(row, screen.history_size),
                    ctx.budget,
                    &ctx.cancel,
                )
                .map_err(|e| self.failed("display-message", e))?,
        };
        let stale = region
            .lines
            .iter()
            .zip(&region.line_rows)
            .filter(|(_, r)| **r >= row)
            .map(|(l, r)| (*r, l.clone()))
            .collect();
        let first = first_at(&region, row);
        let stale_contents = printed_rows(&region, first).into_iter().collect();
        let (entry, region_mask) = match self.freshness {
            Freshness::ByRow => (
                self.mask(&screen, &screen.lines, screen.cursor_line()),
                self.mask(
                    &region,
                    &region.lines[first..],
                    region.cursor_line().and_then(|i| i.checked_sub(first)),
                ),
            ),
            Freshness::ByContent => (
                EchoMask::unmasked(&screen.printed_lines),
                EchoMask::unmasked(&printed_rows(&region, first)),
            ),
        };
        let at_entry = entry.lines.join("\n");
        let mut obs = if self.credit_entry {
            Observation::text(at_entry.clone())
        } else {
            Observation::text("")
        };
        obs.at_entry = Some(at_entry);
        obs.alternate_screen = screen.alternate_on;
        obs.gone = screen.pane_dead;
        if screen.pane_dead {
            self.report.update(|r| r.end = Some(PaneEnd::Died));
        }
        self.hint = screen.history_size;
        self.note_history(screen.history_limit, screen.history_size);
        self.anchor = Some(Anchor {
            history_limit: screen.history_limit,
            pane: pane.clone(),
            row,
            history_size: screen.history_size,
            pane_height: screen.pane_height,
            pane_pid: screen.pane_pid,
            stale,
            stale_contents,
        });
        self.report.update(|r| {
            r.pane = Some(pane);
            r.entry = entry;
            r.region = region_mask;
            r.alternate_screen |= screen.alternate_on;
            r.captures += 1;
            r.entry_screen = screen.joined_screen_text();
            r.screen = screen.joined_screen_text();
        });
        self.last_capture = Some(Instant::now());
        self.last = Some(obs.clone());
        self.ask_for_control();
        Ok(obs)
    }

    /// Notes the first `size` in the last tenth of `limit` (see
    /// [`PaneReport::history_near_limit`]).
    fn note_history(&self, limit: u64, size: u64) {
        if limit > 0 && size >= limit - (limit / 10).max(1) {
            self.report.update(|r| {
                r.history_near_limit.get_or_insert((limit, size));
            });
        }
    }

    /// The probe error for a failed tmux `command`; a call that ran out of
    /// time, running or waiting for its turn, is noted in the report.
    fn failed(&self, command: &str, e: TmuxError) -> ProbeError {
        let no_turn = matches!(e, TmuxError::Busy { .. });
        self.report.update(|r| r.no_turn = no_turn);
        if let TmuxError::Run(RunError::TimedOut { budget, .. }) = &e {
            let noted = (command.to_string(), *budget);
            self.report.update(|r| r.unresponsive = Some(noted));
        }
        probe_error(e)
    }

    /// Asks for the next call at once when it is to attach the control
    /// client: the entry sample answers without waiting for the attach
    /// (a second or more on a server many waits attach to), and the wait
    /// has its first sample whatever the attach takes.
    fn ask_for_control(&self) {
        if !self.control_tried && self.push {
            if let Some(waker) = &self.waker {
                waker.wake();
            }
        }
    }

    /// Starts the control client once, when there is a waker to call.
    fn ensure_control(&mut self, ctx: &ProbeContext) {
        if self.control_tried || !self.push {
            return;
        }
        self.control_tried = true;
        let (Some(waker), Some(anchor)) = (self.waker.clone(), self.anchor.as_ref()) else {
            return;
        };
        let wake = Box::new(move || waker.wake());
        let budget = ctx.budget.min(CONTROL_BUDGET);
        let attached_at = self.report.get().captures;
        let path = match self.tmux.control_attach(
            &anchor.pane.session_id,
            &anchor.pane.pane_id,
            wake,
            budget,
            &ctx.cancel,
        ) {
            Ok(client) => {
                self.seen_outputs = client.outputs();
                self.control = Some(client);
                // Output may have come between the entry and the attach.
                self.last_capture = None;
                PushPath::ControlMode
            }
            Err(e) => PushPath::Fallback(format!("cannot attach: {e}")),
        };
        self.report.update(|r| {
            r.attached_at = (path == PushPath::ControlMode).then_some(attached_at);
            r.push = path;
        });
    }

    /// Whether the last capture still stands: the control client is
    /// healthy, reported no output since, and the capture is recent.
    fn last_capture_stands(&mut self, ctx: &ProbeContext) -> bool {
        let Some(client) = &self.control else {
            return false;
        };
        let state = client.state();
        let fresh = self
            .last_capture
            .is_some_and(|at| at.elapsed() < VERIFY_EVERY);
        let ping_budget = ctx.budget.min(CONTROL_BUDGET);
        let failure = match state {
            ControlState::Attached if client.outputs() != self.seen_outputs => return false,
            // Just attached: output may have come since the entry capture.
            ControlState::Attached if self.last_capture.is_none() => return false,
            ControlState::Attached if fresh => return true,
            ControlState::Attached => match client.check_turn(VERIFY_EVERY) {
                CheckTurn::Recent(facts) => return Some(facts) == self.facts,
                CheckTurn::UnderWay => return true,
                CheckTurn::Yours => match client.ping(ping_budget, &ctx.cancel) {
                    Ok(_) => None,
                    Err(e) => {
                        let reason = format!("stopped answering: {e}");
                        // Silent for a whole budget, it answers none of
                        // its watches: they all poll from their next sample.
                        if ping_budget == CONTROL_BUDGET && !ctx.cancel.is_cancelled() {
                            client.stopped_answering(&reason);
                        }
                        Some(reason)
                    }
                },
            },
            other => Some(format!("control client ended: {other:?}")),
        };
        if let Some(reason) = failure {
            if !ctx.cancel.is_cancelled() {
                self.control = None;
                self.report.update(|r| r.push = PushPath::Fallback(reason));
            }
        }
        false
    }

    /// Notes the facts of a capture begun at `at`, and shares them with the
    /// pane's other watches while attached.
    fn checked(&mut self, facts: PaneFacts, at: Instant) {
        self.facts = Some(facts);
        if let Some(client) = &self.control {
            client.checked(facts, at);
        }
    }

    fn later_sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        if let Some(lost) = &self.lost {
            return Err(ProbeError::new(lost.clone()));
        }
        self.ensure_control(ctx);
        if self.last_capture_stands(ctx) {
            if let Some(last) = &self.last {
                return Ok(last.clone());
            }
        }
        let outputs = self.control.as_ref().map_or(0, ControlClient::outputs);
        let anchor = self.anchor.as_ref().expect("set by the entry sample");
        let (pane_id, row, entry_history, entry_height, entry_pid) = (
            anchor.pane.pane_id.clone(),
            anchor.row,
            anchor.history_size,
            anchor.pane_height,
            anchor.pane_pid,
        );
        let anchor_limit = anchor.history_limit;
        let began = Instant::now();
        let snap = match self.tmux.snapshot(
            &pane_id,
            Rows::from_row(row, self.hint),
            ctx.budget,
            &ctx.cancel,
        ) {
            Ok(snap) => snap,
            Err(e @ (TmuxError::NoSuchPane(_) | TmuxError::NoServer { .. })) => {
                self.checked(PaneFacts::gone(), began);
                let end = match e {
                    TmuxError::NoServer { stderr, .. } => PaneEnd::ServerGone(stderr),
                    _ => PaneEnd::Vanished,
                };
                self.report.update(|r| r.end = Some(end));
                return Ok(self.previous().with_gone());
            }
            Err(e) => return Err(self.failed("display-message", e)),
        };
        self.seen_outputs = outputs;
        self.last_capture = Some(began);
        self.checked(snap.facts(), began);
        self.report.update(|r| {
            r.captures += 1;
            r.screen = snap.joined_screen_text();
        });
        if snap.pane_pid != entry_pid {
            // Respawned: a new program's output, not comparable.
            let end = PaneEnd::Respawned {
                from: entry_pid,
                to: snap.pane_pid,
            };
            self.report.update(|r| r.end = Some(end));
            return Ok(self.previous().with_gone());
        }
        self.note_history(anchor_limit, snap.history_size);
        if snap.pane_dead {
            self.report.update(|r| r.end = Some(PaneEnd::Died));
        }
        if snap.alternate_on {
            self.report.update(|r| r.alternate_screen = true);
            if self.freshness == Freshness::ByRow {
                let mut obs = self.previous().with_alternate_screen();
                obs.gone = snap.pane_dead;
                return Ok(obs);
            }
        }
        if snap.history_size < entry_history && snap.pane_height <= entry_height {
            let message = format!(
                "anchor lost: pane {pane_id} history shrank below its size at entry \
                 (history_size {entry_history} -> {}, e.g. clear-history); wait again from the current screen",
                snap.history_size
            );
            self.lost = Some(message.clone());
            let shrank = (entry_history, snap.history_size);
            self.report.update(|r| r.history_shrank = Some(shrank));
            return Err(ProbeError::new(message));
        }
        self.hint = snap.history_size;
        let first = first_at(&snap, row);
        let text = match self.freshness {
            Freshness::ByRow => {
                let cursor = snap.cursor_line().and_then(|i| i.checked_sub(first));
                let mask = self.mask(&snap, &snap.lines[first..], cursor);
                let stale = &self.anchor.as_ref().expect("set").stale;
                let text = fresh_text(&snap.line_rows, &mask, row, stale);
                self.report.update(|r| r.region = mask);
                text
            }
            Freshness::ByContent => {
                let rows = printed_rows(&snap, first);
                let stale = &self.anchor.as_ref().expect("set").stale_contents;
                let fresh: Vec<String> = rows
                    .iter()
                    .filter(|r| !stale.contains(*r))
                    .cloned()
                    .collect();
                // A full-screen program's rows are read, never matched.
                let matchable = if snap.alternate_on { &[][..] } else { &fresh };
                let text = match &self.observe_rows {
                    Some(observe) => observe(matchable)?,
                    None => matchable.iter().map(|r| format!("{r}\n")).collect(),
                };
                self.report.update(|r| {
                    r.region = EchoMask::unmasked(&rows);
                    r.saw_fresh_rows |= !fresh.is_empty();
                    r.fresh_rows = fresh;
                });
                text
            }
        };
        let mut obs = Observation::text(text);
        obs.gone = snap.pane_dead;
        self.last = Some(obs.clone());
        Ok(obs)
    }

    /// The last observation again (nothing new), without its entry text.
    fn previous(&self) -> Observation {
        let mut obs = self.last.clone().unwrap_or_default();
        obs.at_entry = None;
        obs.alternate_screen = false;
        obs
    }
}

impl Probe for PaneProbe {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        if self.anchor.is_none() {
            return self.entry_sample(ctx);
        }
        self.later_sample(ctx)
    }

    fn name(&self) -> &str {
        "tmux"
    }

    fn watch(&mut self, waker: Waker) {
        self.waker = Some(waker);
    }

    /// A wait this process's other waits starved of tmux turns says so.
    fn end_notices(&self) -> Option<EndNotices> {
        let report = self.report.clone();
        Some(Arc::new(move |result| {
            report.read(|seen| seen.starved_notice(result).into_iter().collect())
        }))
    }
}

fn probe_error(e: TmuxError) -> ProbeError {
    ProbeError::new(e.to_string())
}

/// The printed lines of `snap` from index `first` on, without the blank
/// rows at the bottom (as libtmux-mcp reads a capture).
fn printed_rows(snap: &PaneSnapshot, first: usize) -> Vec<String> {
    let rows = &snap.printed_lines[first.min(snap.printed_lines.len())..];
    let end = rows
        .iter()
        .rposition(|r| !r.is_empty())
        .map_or(0, |i| i + 1);
    rows[..end].to_vec()
}

/// Index of the first line of `snap` that starts at or below `row`.
fn first_at(snap: &PaneSnapshot, row: u64) -> usize {
    snap.line_rows.partition_point(|r| *r < row)
}

/// The fresh text of a region (see the module docs): `mask` holds the
/// region's lines as captured and echo-masked, `rows` the absolute row of
/// each of the snapshot's lines (the region's are its last ones), `stale`
/// the entry content by row. Leading and trailing blank lines are layout.
fn fresh_text(rows: &[u64], mask: &EchoMask, anchor: u64, stale: &HashMap<u64, String>) -> String {
    let rows = &rows[rows.len() - mask.lines.len()..];
    let mut fresh: Vec<String> = Vec::new();
    for ((raw, masked), row) in mask.original.iter().zip(&mask.lines).zip(rows) {
        let part: String = match stale.get(row) {
            Some(old) if *row == anchor && raw.starts_with(old.as_str()) => {
                masked.chars().skip(old.chars().count()).collect()
            }
            Some(old) if old == raw => String::new(),
            _ => masked.clone(),
        };
        fresh.push(part.trim_end().to_string());
    }
    let first = fresh.iter().position(|l| !l.trim().is_empty());
    let last = fresh.iter().rposition(|l| !l.trim().is_empty());
    match (first, last) {
        (Some(a), Some(b)) => fresh[a..=b].join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{Answer, Inbox};
    use crate::CancelToken;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts the samples a probe asks for.
    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Inbox for Wakes {
        fn wake(&self, ids: &mut dyn Iterator<Item = u64>) {
            self.0.fetch_add(ids.count(), Ordering::SeqCst);
        }
        fn answer(&self, _: &mut dyn Iterator<Item = Answer>) {}
    }

    /// The notice is for a wait that ran out of time, not for one whose
    /// probe failed before its deadline (a pane not found, a server
    /// gone), whatever its calls waited for their turns: that wait ended
    /// for its error, not for want of samples.
    #[test]
    fn a_wait_failed_before_its_deadline_is_not_said_to_be_starved() {
        let starved = PaneReport {
            turn_wait: Duration::from_millis(200),
            ..Default::default()
        };
        let mut result = crate::engine::error_result("probe failed: can't find pane: %9".into());
        result.outcome = Outcome::ProbeError;
        result.elapsed_ms = 300;
        result.effective_max_wait_ms = 400;
        assert_eq!(starved.starved_notice(&result), None);

        // At its deadline, or out of turns, its failure is the starving's.
        let at_deadline = WaitResult {
            elapsed_ms: 400,
            ..result.clone()
        };
        assert!(starved.starved_notice(&at_deadline).is_some());
        let no_turn = PaneReport {
            no_turn: true,
            ..starved.clone()
        };
        assert!(no_turn.starved_notice(&result).is_some());
        let timeout = WaitResult {
            outcome: Outcome::Timeout,
            ..result
        };
        assert!(starved.starved_notice(&timeout).is_some());
    }

    #[test]
    fn the_entry_sample_answers_before_the_control_client_attaches() {
        // On a server many waits attach to, an attach can take seconds: a
        // wait whose first call attached before answering could end with no
        // sample. The entry sample answers first and asks for the next call
        // at once, which attaches.
        let (tmux, run) = super::super::test_server("entry");
        let budget = Duration::from_secs(20);
        let control_clients = || run(&["list-clients", "-F", "#{client_control_mode}"]);
        let mut probe = PaneProbe::new(tmux.clone(), PaneTarget::default());
        let wakes = Arc::new(Wakes::default());
        probe.watch(crate::probe::Waker::new(
            1,
            wakes.clone(),
            std::process::id(),
        ));
        let ctx = |sample| ProbeContext {
            sample,
            elapsed: Duration::ZERO,
            budget,
            cancel: CancelToken::new(),
            output_cap: 1 << 20,
        };
        probe.sample(&ctx(1)).unwrap();
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "the next call asked for");
        assert_eq!(control_clients().trim(), "", "attached before answering");
        probe.sample(&ctx(2)).unwrap();
        assert_eq!(probe.report().get().push, PushPath::ControlMode);
        assert_eq!(probe.report().get().attached_at, Some(1));
        assert_eq!(control_clients().trim(), "1");
        drop(probe);
        run(&["kill-server"]);
    }

    fn mask(lines: &[&str]) -> EchoMask {
        let v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        EchoMask {
            lines: v.clone(),
            original: v,
            masked: 0,
        }
    }

    fn stale(rows: &[(u64, &str)]) -> HashMap<u64, String> {
        rows.iter().map(|(r, s)| (*r, s.to_string())).collect()
    }

    #[test]
    fn the_entry_prompt_does_not_count_but_text_after_it_does() {
        let st = stale(&[(10, "$"), (11, "")]);
        assert_eq!(fresh_text(&[10, 11], &mask(&["$", ""]), 10, &st), "");
        assert_eq!(
            fresh_text(&[10, 11], &mask(&["$ ready", ""]), 10, &st),
            " ready"
        );
        assert_eq!(
            fresh_text(&[10, 11, 12], &mask(&["$ make", "ready", "$"]), 10, &st),
            " make\nready\n$"
        );
    }

    #[test]
    fn stale_paint_below_counts_only_when_changed() {
        let st = stale(&[(10, "$"), (12, "old paint")]);
        let m = mask(&["$", "", "old paint"]);
        assert_eq!(fresh_text(&[10, 11, 12], &m, 10, &st), "");
        let m = mask(&["$", "new", "old paint", "old paint"]);
        assert_eq!(
            fresh_text(&[10, 11, 12, 13], &m, 10, &st),
            "new\n\nold paint"
        );
    }

    #[test]
    fn a_rewritten_cursor_row_counts_whole_and_masking_keeps_columns() {
        let st = stale(&[(5, "$ ec")]);
        assert_eq!(fresh_text(&[5], &mask(&["> x"]), 5, &st), "> x");
        let m = EchoMask {
            original: vec!["$ echo é".into()],
            lines: vec!["$       ".into()],
            masked: 1,
        };
        assert_eq!(fresh_text(&[5], &m, 5, &st), "");
    }

    #[test]
    fn rows_above_the_region_are_skipped() {
        let st = stale(&[(7, "$")]);
        assert_eq!(
            fresh_text(&[5, 7, 8], &mask(&["$ x", "y"]), 7, &st),
            " x\ny"
        );
    }
}
