//! Seed profiles: each tool libwaitfor stands in for, with its exact input
//! schema, output schema and semantics, mapped onto the one engine.
//!
//! A host registers [`definitions`] with its MCP server and passes each
//! call's arguments to [`call`] (or [`prepare`], to run the wait itself
//! with progress and cancellation).

mod aura;
mod builtin_tools;
mod calls;
#[cfg(unix)]
mod libtmux_cxx;
#[cfg(unix)]
mod libtmux_mcp;
mod notice;
mod ouro;
mod tool;

use calls::CallSlot;
pub use calls::{calls_in_flight, max_calls, set_max_calls, DEFAULT_MAX_CALLS};
#[cfg(unix)]
pub use libtmux_mcp::{
    ceiling_from_env as libtmux_mcp_ceiling, CEILING_ENV as LIBTMUX_MCP_CEILING_ENV,
};
pub use notice::{LogLevel, Notice, Report, ToolLog, ToolProgress};
pub use tool::{Host, ToolCaller, ToolDefinition, ToolError, UNKNOWN_TOOL};

use crate::engine::{Engine, WaitOptions};
use crate::error::{ErrorCode, ErrorInfo};
use crate::policy::Policy;
use crate::probe::Probe;
use crate::result::WaitResult;
use crate::spec::Spec;
use serde_json::Value;

/// A profile's JSON file (`schemas/`: a schema or annotations), parsed.
fn schema(text: &str) -> Value {
    serde_json::from_str(text).expect("valid JSON")
}

/// Turns the engine's result into the profile's output JSON.
pub type Render = Box<dyn Fn(&WaitResult) -> Result<Value, ToolError> + Send + Sync>;

/// A profile call made ready to run: the wait, its probe, the profile's
/// policy, how to render the result and how to report on the call.
pub struct Prepared {
    /// The wait, validated.
    pub spec: Spec,
    /// The probe the profile uses.
    pub probe: Box<dyn Probe>,
    /// The profile's limits (ceiling, output cap).
    pub policy: Policy,
    /// Renders the result as the profile's output.
    pub render: Render,
    /// The progress and log notices the profile sends while the call
    /// runs and when it ends.
    pub report: Report,
    /// The call's place among the calls in flight (see [`max_calls`]),
    /// held by the wait ([`Prepared::run`], [`Prepared::into_parts`]).
    slot: CallSlot,
}

impl Prepared {
    /// The call's parts, for a host that starts its wait itself: the wait,
    /// its probe, the options to start it with, the renderer and the
    /// notices. The options carry the profile's policy and hold the call's
    /// place among the calls in flight (see [`max_calls`]) until the wait
    /// ends; the host adds its callbacks to them.
    ///
    /// ```
    /// use waitfor::grants::{Commands, Grants};
    /// use waitfor::profiles::{calls_in_flight, prepare, Host};
    /// let args = serde_json::json!({
    ///     "probe": {"tool": "run_command", "args": {"argv": ["echo", "Running"]}},
    ///     "until": {"matches": "Running"},
    ///     "poll_sec": 1, "max_wait_sec": 10
    /// });
    /// let grants = Grants::none().commands(Commands::Only(vec!["echo".into()]));
    /// let host = Host { grants, ..Host::default() };
    /// let prepared = prepare("aura/wait_for", &args, &host).unwrap();
    /// assert_eq!(calls_in_flight(), 1);
    /// let (spec, probe, options, render, _report) = prepared.into_parts();
    /// let options = options.on_progress(|_| {});
    /// let handle = waitfor::Engine::global().start_with(spec, Some(probe), options).unwrap();
    /// let result = handle.wait();
    /// assert_eq!(calls_in_flight(), 0);
    /// assert_eq!(render(&result).unwrap()["reason"], "matched");
    /// ```
    pub fn into_parts(self) -> (Spec, Box<dyn Probe>, WaitOptions, Render, Report) {
        let options = WaitOptions::default().policy(self.policy).hold(self.slot);
        (self.spec, self.probe, options, self.render, self.report)
    }

    /// Runs the wait on the global engine and renders its result.
    pub fn run(self, options: WaitOptions) -> Result<Value, ToolError> {
        let options = options.policy(self.policy).hold(self.slot);
        let handle = Engine::global().start_with(self.spec, Some(self.probe), options)?;
        (self.render)(&handle.wait())
    }
}

struct Entry {
    id: &'static str,
    definition: fn() -> Value,
    /// Checks the arguments and prepares the call, without its place
    /// among the calls in flight ([`prepare`] gives it one).
    prepare: fn(&Value, &Host) -> Result<Prepared, ToolError>,
    refused: notice::OnRefusal,
}

const PROFILES: &[Entry] = &[
    Entry {
        id: aura::PROFILE,
        definition: aura::definition,
        prepare: aura::prepare,
        refused: notice::silent,
    },
    #[cfg(unix)]
    Entry {
        id: libtmux_mcp::PROFILE,
        definition: libtmux_mcp::definition,
        prepare: libtmux_mcp::prepare,
        refused: libtmux_mcp::refused,
    },
    #[cfg(unix)]
    Entry {
        id: libtmux_cxx::PROFILE,
        definition: libtmux_cxx::definition,
        prepare: libtmux_cxx::prepare,
        refused: notice::silent,
    },
    Entry {
        id: ouro::PROFILE,
        definition: ouro::definition,
        prepare: ouro::prepare,
        refused: notice::silent,
    },
];

/// The profiles whose probe is a tmux pane. Off Unix they are neither
/// listed nor callable: a call answers that tmux waits need a Unix host.
const TMUX_PROFILES: [&str; 2] = ["libtmux-mcp/wait_for_text", "libtmux-cxx/wait_for_text"];

/// Every profile's MCP tool definition.
pub fn definitions() -> Vec<ToolDefinition> {
    PROFILES
        .iter()
        .map(|p| ToolDefinition {
            profile: p.id,
            tool: (p.definition)(),
        })
        .collect()
}

/// Finds a profile by its id (`aura/wait_for`) or by its tool's name
/// (`wait_for`), when only one profile has that tool name.
fn entry(name: &str) -> Result<&'static Entry, ToolError> {
    let unknown = || {
        if TMUX_PROFILES.contains(&name) {
            // Known, but not built off Unix: say why rather than "unknown".
            ToolError::Runtime(crate::tmux::NEEDS_UNIX_HOST.to_string())
        } else {
            ToolError::UnknownProfile(name.to_string())
        }
    };
    if let Some(entry) = PROFILES.iter().find(|p| p.id == name) {
        return Ok(entry);
    }
    let by_tool: Vec<&'static Entry> = PROFILES
        .iter()
        .filter(|p| (p.definition)()["name"].as_str() == Some(name))
        .collect();
    match by_tool[..] {
        [entry] => Ok(entry),
        [] => Err(unknown()),
        _ => Err(ToolError::AmbiguousTool {
            name: name.to_string(),
            profiles: by_tool.iter().map(|p| p.id).collect(),
        }),
    }
}

/// A profile's definition, by profile id or by a tool name only one
/// profile has; [`ToolError::UnknownProfile`] otherwise, or
/// [`ToolError::AmbiguousTool`] naming the profiles that offer the name.
///
/// ```
/// let def = waitfor::profiles::find("wait_for").unwrap();
/// assert_eq!(def.profile, "aura/wait_for");
/// assert_eq!(waitfor::profiles::find("aura/wait_for").unwrap(), def);
/// assert_eq!(waitfor::profiles::find("nope").unwrap_err().code(), "unknown_profile");
/// ```
pub fn find(name: &str) -> Result<ToolDefinition, ToolError> {
    let entry = entry(name)?;
    Ok(ToolDefinition {
        profile: entry.id,
        tool: (entry.definition)(),
    })
}

/// Validates a call's arguments and makes it ready to run, then takes its
/// place among the calls in flight: a valid call over the cap
/// ([`max_calls`]) is [`ToolError::TooManyCalls`], at once; an invalid one
/// is refused for its arguments whatever the load, as its original tool
/// refuses it. `profile` is a profile id or a tool name (see [`find`]).
///
/// ```
/// use waitfor::profiles::{prepare, Host};
/// let err = prepare("aura/wait_for", &serde_json::json!({"probe": {"tool": ""}, "until": {"matches": "x"}}), &Host::default());
/// assert_eq!(err.err().unwrap().code(), "invalid_arguments");
/// ```
pub fn prepare(profile: &str, args: &Value, host: &Host) -> Result<Prepared, ToolError> {
    let entry = entry(profile)?;
    let prepared = (entry.prepare)(args, host)?;
    Ok(Prepared {
        slot: CallSlot::take()?,
        ..prepared
    })
}

/// [`prepare`] for a simulated call, which takes no place among the calls
/// in flight (it runs on virtual time on the caller's thread), with the
/// tmux profiles reaching their pane through `tmux` (the simulator's
/// scripted server).
#[cfg(unix)]
pub(crate) fn prepare_on_tmux(
    profile: &str,
    args: &Value,
    host: &Host,
    tmux: crate::tmux::Tmux,
) -> Result<Prepared, ToolError> {
    let entry = entry(profile)?;
    match entry.id {
        libtmux_mcp::PROFILE => libtmux_mcp::prepare_on(args, host, tmux),
        libtmux_cxx::PROFILE => libtmux_cxx::prepare_on(args, host, tmux),
        _ => (entry.prepare)(args, host),
    }
}

/// [`prepare`] for a simulated call, which takes no place among the calls
/// in flight, with `ouro/wait` reading the wall clock from `clock` (the
/// simulator's virtual clock, or the real one) for its envelope's `since`
/// and `fresh.asOf`.
pub(crate) fn prepare_on_clock(
    profile: &str,
    args: &Value,
    host: &Host,
    clock: &crate::ouro::Clock,
) -> Result<Prepared, ToolError> {
    let entry = entry(profile)?;
    match entry.id {
        ouro::PROFILE => ouro::prepare_on(args, host, clock),
        _ => (entry.prepare)(args, host),
    }
}

/// Whether `profile` names the profile whose probe reads a JSON Lines
/// event file (`ouro/wait`).
pub(crate) fn reads_event_files(profile: &str) -> bool {
    entry(profile).is_ok_and(|e| e.id == ouro::PROFILE)
}

/// Whether `profile` names a profile whose probe is a tmux pane.
#[cfg(unix)]
pub(crate) fn reads_a_pane(profile: &str) -> bool {
    entry(profile).is_ok_and(|e| TMUX_PROFILES.contains(&e.id))
}

/// Validates a call's arguments without running it, and gives the
/// profile's id: what [`call`] would refuse, this refuses.
///
/// ```
/// use waitfor::profiles::{check, Host};
/// let args = serde_json::json!({"probe": {"tool": "t", "args": {}}, "until": {"matches": "x"}});
/// assert_eq!(check("wait_for", &args, &Host::default()).unwrap(), "aura/wait_for");
/// ```
pub fn check(profile: &str, args: &Value, host: &Host) -> Result<&'static str, ToolError> {
    let entry = entry(profile)?;
    (entry.prepare)(args, host)?;
    Ok(entry.id)
}

impl From<&ToolError> for ErrorInfo {
    /// The shape every binding gives a failed profile call: code
    /// `unknown_profile`, `invalid_arguments` (with `field` and `rule`; the
    /// message is the field's, `field: what`, as for a refused spec),
    /// `runtime` or `too_many_calls`.
    fn from(err: &ToolError) -> Self {
        match err {
            ToolError::UnknownProfile(_) | ToolError::AmbiguousTool { .. } => {
                ErrorInfo::new(ErrorCode::UnknownProfile, err.to_string())
            }
            ToolError::InvalidArguments(spec) => ErrorInfo::spec(ErrorCode::InvalidArguments, spec),
            ToolError::Runtime(_) => ErrorInfo::new(ErrorCode::Runtime, err.to_string()),
            ToolError::TooManyCalls { .. } => {
                ErrorInfo::new(ErrorCode::TooManyCalls, err.to_string())
            }
        }
    }
}

/// The notices a profile sends when it refuses a call ([`prepare`] gave
/// `error`), before the host answers with the error: libtmux-mcp logs a
/// warning for an invalid regex; the other profiles send none.
///
/// ```
/// use waitfor::profiles::{prepare, refusal_notices, Host};
/// let args = serde_json::json!({"probe": {"tool": ""}, "until": {"matches": "x"}});
/// let err = prepare("aura/wait_for", &args, &Host::default()).err().unwrap();
/// assert!(refusal_notices("aura/wait_for", &err).is_empty());
/// ```
pub fn refusal_notices(profile: &str, error: &ToolError) -> Vec<Notice> {
    entry(profile).map_or_else(|_| Vec::new(), |entry| (entry.refused)(error))
}

/// Runs a profile call to its end on the global engine.
///
/// ```
/// use waitfor::profiles::{call, Host};
/// let args = serde_json::json!({
///     "probe": {"tool": "run_command", "args": {"argv": ["echo", "Running"]}},
///     "until": {"matches": "Running"},
///     "poll_sec": 1, "max_wait_sec": 10
/// });
/// // Without host tools, the built-in `run_command` runs only what the host grants.
/// let grants = waitfor::grants::Grants::none()
///     .commands(waitfor::grants::Commands::Only(vec!["echo".into()]));
/// let host = Host { grants, ..Host::default() };
/// let out = call("aura/wait_for", &args, &host).unwrap();
/// assert_eq!(out["reason"], "matched");
/// ```
pub fn call(profile: &str, args: &Value, host: &Host) -> Result<Value, ToolError> {
    prepare(profile, args, host)?.run(WaitOptions::default())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn the_tmux_profiles_named_for_other_hosts_are_the_ones_built_on_unix() {
        assert_eq!(TMUX_PROFILES, [libtmux_mcp::PROFILE, libtmux_cxx::PROFILE]);
        for id in TMUX_PROFILES {
            assert!(PROFILES.iter().any(|p| p.id == id), "{id}");
        }
    }

    #[test]
    fn a_tool_name_several_profiles_offer_is_refused_naming_them() {
        let err = find("wait_for_text").unwrap_err();
        assert_eq!(err.code(), "unknown_profile");
        assert_eq!(
            err.to_string(),
            "tool name `wait_for_text` is offered by libtmux-mcp/wait_for_text, \
             libtmux-cxx/wait_for_text: name the profile"
        );
        let call = prepare("wait_for_text", &Value::Null, &Host::default());
        assert_eq!(call.err(), Some(err));
    }
}
