//! What a profile call tells the client while it runs: progress with a
//! total and a message, and log messages, each as the profile's original
//! tool sends them (MCP `notifications/progress` and
//! `notifications/message`). The engine knows nothing of them: a
//! profile's [`Report`] maps the engine's [`Progress`] and result to them.

use super::tool::ToolError;
use crate::machine::Progress;
use crate::result::WaitResult;
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// A progress notice: MCP's `progress`, `total` and `message`.
///
/// ```
/// let p = waitfor::profiles::ToolProgress { progress: 1.5, total: Some(8.0), message: None };
/// assert_eq!(p.total, Some(8.0));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolProgress {
    /// How far the call is: seconds elapsed (libtmux-cxx: milliseconds).
    pub progress: f64,
    /// What `progress` runs to (the time limit, in the same unit), if known.
    pub total: Option<f64>,
    /// A line for a human watching.
    pub message: Option<String>,
}

/// A log notice's level, MCP's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
}

impl LogLevel {
    /// The MCP name of the level.
    ///
    /// ```
    /// assert_eq!(waitfor::profiles::LogLevel::Warning.as_str(), "warning");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }
}

/// A log notice: MCP's `level` and `data` (a text).
///
/// ```
/// use waitfor::profiles::{LogLevel, ToolLog};
/// let log = ToolLog { level: LogLevel::Warning, message: "slow".into() };
/// assert_eq!(log.level.as_str(), "warning");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolLog {
    /// How serious it is.
    pub level: LogLevel,
    /// What happened.
    pub message: String,
}

/// One notice of a profile call.
///
/// ```
/// use waitfor::profiles::{LogLevel, Notice, ToolLog};
/// let n = Notice::Log(ToolLog { level: LogLevel::Warning, message: "x".into() });
/// assert_eq!(n.to_json()["kind"], "log");
/// assert_eq!(n.to_json()["level"], "warning");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Notice {
    /// How far the call is.
    Progress(ToolProgress),
    /// A log message.
    Log(ToolLog),
}

impl Notice {
    /// `{"kind": "progress", "progress", "total", "message"}` or
    /// `{"kind": "log", "level", "message"}`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("plain data")
    }

    /// A warning log notice (libtmux-mcp's, built on Unix only).
    #[cfg(unix)]
    pub(crate) fn warning(message: impl Into<String>) -> Self {
        Self::Log(ToolLog {
            level: LogLevel::Warning,
            message: message.into(),
        })
    }
}

type OnProgress = Box<dyn Fn(&Progress) -> Vec<Notice> + Send + Sync>;
type OnEnd = Box<dyn Fn(&WaitResult) -> Vec<Notice> + Send + Sync>;

/// How a profile reports on one call: the notices for each of the
/// engine's progress reports, and for the end of the wait. A host calls
/// [`Report::progress`] from the wait's progress callback and
/// [`Report::end`] once from its completion callback, and sends what they
/// give to the client.
///
/// ```
/// use std::time::Duration;
/// use waitfor::profiles::{Notice, Report};
/// let report = Report::elapsed_of(Duration::from_secs(10));
/// let p = waitfor::Progress { samples: 2, elapsed_ms: 1500, last_line: None };
/// let Notice::Progress(n) = &report.progress(&p)[0] else { panic!() };
/// assert_eq!((n.progress, n.total), (1.5, Some(10.0)));
/// ```
pub struct Report {
    on_progress: OnProgress,
    on_end: OnEnd,
}

impl Report {
    /// A report of its own: `on_progress` and `on_end` map the engine's
    /// progress and result.
    pub(crate) fn new(
        on_progress: impl Fn(&Progress) -> Vec<Notice> + Send + Sync + 'static,
        on_end: impl Fn(&WaitResult) -> Vec<Notice> + Send + Sync + 'static,
    ) -> Self {
        Self {
            on_progress: Box::new(on_progress),
            on_end: Box::new(on_end),
        }
    }

    /// For profiles whose original sends no progress of its own: progress
    /// is the seconds elapsed, the total the time limit (`bound`), no
    /// message; nothing at the end.
    pub fn elapsed_of(bound: Duration) -> Self {
        let total = bound.as_secs_f64();
        Self::new(
            move |p| vec![Notice::Progress(elapsed(p, total, None))],
            |_| Vec::new(),
        )
    }

    /// The notices for one of the engine's progress reports.
    pub fn progress(&self, progress: &Progress) -> Vec<Notice> {
        (self.on_progress)(progress)
    }

    /// The notices for the end of the wait, before its output or error.
    pub fn end(&self, result: &WaitResult) -> Vec<Notice> {
        (self.on_end)(result)
    }
}

/// Progress as seconds elapsed out of `total`.
pub(crate) fn elapsed(p: &Progress, total: f64, message: Option<String>) -> ToolProgress {
    ToolProgress {
        progress: p.elapsed_ms as f64 / 1000.0,
        total: Some(total),
        message,
    }
}

/// The notices a profile sends when it refuses a call (before any wait).
pub(crate) type OnRefusal = fn(&ToolError) -> Vec<Notice>;

/// For profiles that send nothing on a refusal.
pub(crate) fn silent(_: &ToolError) -> Vec<Notice> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_serialize_as_the_bindings_hand_them_on() {
        let p = Notice::Progress(ToolProgress {
            progress: 0.5,
            total: None,
            message: Some("m".into()),
        });
        assert_eq!(
            p.to_json(),
            serde_json::json!({"kind": "progress", "progress": 0.5, "total": null, "message": "m"})
        );
        assert_eq!(
            Notice::Log(ToolLog {
                level: LogLevel::Warning,
                message: "w".into()
            })
            .to_json(),
            serde_json::json!({"kind": "log", "level": "warning", "message": "w"})
        );
    }
}
