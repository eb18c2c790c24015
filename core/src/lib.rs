//! libwaitfor: one "wait for a condition" engine for agent tool servers.
//!
//! An agent that must wait for a build, a rollout or a prompt makes one
//! call that returns as soon as the condition holds, fails fast on a
//! failure marker, and always returns structured evidence. This crate is
//! the engine; the C ABI, the Python wheel and the npm package are thin
//! layers over it.
//!
//! ```
//! use waitfor::grants::{Commands, Grants};
//! use waitfor::{Engine, Policy, Spec, WaitOptions};
//! let spec = Spec::from_json(r#"{
//!     "probe": {"command": {"argv": ["echo", "build ok"]}},
//!     "until": {"patterns": ["ok", "done"]},
//!     "stop": ["error"],
//!     "interval_ms": 100,
//!     "max_wait_ms": 5000
//! }"#).unwrap();
//! // Built-in probes reach only what the host grants: here, running `echo`.
//! let grants = Grants::none().commands(Commands::Only(vec!["echo".into()]));
//! let options = WaitOptions::default().policy(Policy::default().grants(grants));
//! let result = Engine::global().run(spec, options).unwrap();
//! assert_eq!(result.matched_index, Some(0));
//! ```

mod cancel;
mod condition;
pub mod duration;
mod engine;
mod error;
pub mod grants;
mod keyed;
mod machine;
pub mod ouro;
mod pane_id;
mod pattern;
mod policy;
mod probe;
#[doc(hidden)]
pub use probe::file_watch_hooks as file_watch;
pub mod process;
pub mod profiles;
mod result;
mod resume;
#[doc(hidden)]
pub mod sampler;
mod simulate;
mod spec;
pub mod sync;
pub mod tmux;
mod view;

pub use cancel::CancelToken;
pub use engine::{Engine, Reply, WaitControl, WaitHandle, WaitOptions, Waker};
pub use error::{ErrorCode, ErrorInfo, Rule, SpecError};
pub use machine::Progress;
pub use pane_id::parse_pane_id;
pub use pattern::{Pattern, MAX_COMPILED_PATTERN_BYTES, MAX_PATTERN_BYTES};
pub use policy::{Policy, DEFAULT_OUTPUT_CAP};
pub use probe::{
    probe_fn, AsyncProbe, CallsBegun, CommandProbe, FileProbe, FnProbe, HostLock, Observation,
    Probe, ProbeContext, ProbeError, ProbeMode,
};
pub use result::{tail_of, Outcome, ProbeAccounting, Tail, WaitResult, RESULT_SCHEMA};
pub use resume::{FilePosition, ResumeToken};
pub use simulate::{
    simulate, simulate_json, simulate_probe, Control, Script, ScriptStep, Simulation,
};
pub use spec::{
    describe, Backoff, Condition, ErrorPolicy, JsonTest, ProbeSpec, Spec, TailLimits, ViewKind,
    MIN_INTERVAL, SPEC_SCHEMA,
};
