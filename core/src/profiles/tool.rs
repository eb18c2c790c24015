//! What every profile shares: tool definitions, errors, the host context.

use crate::error::SpecError;
use crate::grants::Grants;
use crate::probe::{ProbeContext, ProbeError};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// An MCP tool definition, ready to register with any MCP server SDK.
///
/// ```
/// let defs = waitfor::profiles::definitions();
/// let aura = defs.iter().find(|d| d.profile == "aura/wait_for").unwrap();
/// assert_eq!(aura.tool["name"], "wait_for");
/// assert!(aura.tool["inputSchema"].is_object());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// The library's name for the profile (`family/tool`), unique.
    pub profile: &'static str,
    /// The MCP tool object: `name`, `title`, `description`, `inputSchema`,
    /// `outputSchema`, `annotations`.
    pub tool: Value,
}

/// Why a profile call gave no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// No profile of that name.
    #[error("unknown profile `{0}`")]
    UnknownProfile(String),
    /// A tool name that more than one profile offers: the call names
    /// which, by profile id. Its code is `unknown_profile` too.
    #[error("tool name `{name}` is offered by {}: name the profile", profiles.join(", "))]
    AmbiguousTool {
        /// The tool name asked for.
        name: String,
        /// The ids of the profiles that offer it.
        profiles: Vec<&'static str>,
    },
    /// The arguments broke a rule of the tool's input schema.
    #[error("invalid arguments: {0}")]
    InvalidArguments(#[from] SpecError),
    /// The wait ran and could not finish normally (the probe failed, its
    /// output went over the cap, ...). MCP servers return it as a tool
    /// result with `isError: true`.
    #[error("{0}")]
    Runtime(String),
    /// The process already runs as many profile calls as its host allows
    /// (see [`set_max_calls`](super::set_max_calls)): the call is refused
    /// at once, and the calls running go on. Its code is `too_many_calls`.
    #[error(
        "too many tool calls in flight: this process runs at most {cap} at once; \
         retry when one has ended, or have the host raise the cap (its max tool calls setting)"
    )]
    TooManyCalls {
        /// The cap in force.
        cap: usize,
    },
}

impl ToolError {
    /// A stable code for bindings: `unknown_profile`, `invalid_arguments`,
    /// `runtime`, `too_many_calls`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownProfile(_) | Self::AmbiguousTool { .. } => "unknown_profile",
            Self::InvalidArguments(_) => "invalid_arguments",
            Self::Runtime(_) => "runtime",
            Self::TooManyCalls { .. } => "too_many_calls",
        }
    }
}

/// The error a [`ToolCaller`] gives for a tool its host does not have:
/// `aura/wait_for` then answers as AURA does, "probe tool 'NAME' is not
/// exposed by any connected MCP server". A message that ends with `": "`
/// and this text counts too: the bindings put the exception's type or
/// "the tool threw" before what a host's tool raised.
///
/// ```
/// use waitfor::profiles::UNKNOWN_TOOL;
/// let err = waitfor::ProbeError::new(UNKNOWN_TOOL);
/// assert_eq!(err.message, "tool is not exposed by any connected MCP server");
/// ```
pub const UNKNOWN_TOOL: &str = "tool is not exposed by any connected MCP server";

/// Whether a tool call's error says the tool does not exist (see
/// [`UNKNOWN_TOOL`]).
pub(crate) fn is_unknown_tool(error: &str) -> bool {
    error
        .strip_suffix(UNKNOWN_TOOL)
        .is_some_and(|before| before.is_empty() || before.ends_with(": "))
}

/// Calls another tool of the host's server: the probe of the generic
/// `wait_for` profile. Called on a worker thread, with the call's budget
/// and cancel token in `ctx`.
///
/// ```
/// use waitfor::profiles::ToolCaller;
/// use waitfor::{ProbeContext, ProbeError};
/// struct Echo;
/// impl ToolCaller for Echo {
///     fn call_tool(&self, name: &str, args: &serde_json::Value, _ctx: &ProbeContext) -> Result<String, ProbeError> {
///         Ok(format!("{name} {args}"))
///     }
/// }
/// ```
pub trait ToolCaller: Send + Sync + 'static {
    /// Runs tool `name` with `args` and returns its text output; a tool
    /// the host does not have is an error of [`UNKNOWN_TOOL`].
    fn call_tool(&self, name: &str, args: &Value, ctx: &ProbeContext)
        -> Result<String, ProbeError>;
}

/// What a host lends to profile calls.
///
/// ```
/// let host = waitfor::profiles::Host::default();
/// assert!(host.tools.is_none());
/// assert!(host.grants.file_roots.is_empty());
/// ```
#[derive(Clone, Default)]
pub struct Host {
    /// The host's tools for `wait_for` probes; `None` offers the built-in
    /// `run_command` and `read_file` tools, as far as `grants` allow.
    pub tools: Option<Arc<dyn ToolCaller>>,
    /// What the profiles' built-in readers and tools may reach (nothing by
    /// default).
    pub grants: Grants,
    /// Overrides the profile's own ceiling on the time limit.
    pub max_wait_ceiling: Option<std::time::Duration>,
}
