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
//!
//! The crate root holds what a host uses: [`Engine`], [`Spec`] and its
//! parts, [`Probe`] and what a call gets and gives ([`ProbeContext`],
//! [`Observation`], [`ProbeError`]), [`WaitOptions`], [`Policy`],
//! [`WaitHandle`], [`WaitResult`] and the errors. The rest lives in named
//! modules: [`probes`] (the built-in command and file probes), [`tmux`],
//! [`grants`], [`simulate`] (waits on virtual time), [`profiles`] (the
//! seed tools), [`ouro`] (the `wait/1` envelope), [`process`] and
//! [`duration`].

mod cancel;
mod condition;
pub mod duration;
mod engine;
mod error;
mod file_id;
mod fold_cost;
/// The integration tests' fork helper, for the unit tests too.
#[cfg(all(test, unix))]
#[path = "../tests/support/fork.rs"]
mod fork;
pub mod grants;
pub mod input;
mod keyed;
pub mod limits;
mod machine;
mod memory;
mod observation;
pub mod ouro;
mod pane_id;
mod pattern;
mod policy;
mod probe;
pub mod probes;
pub mod process;
pub mod profiles;
mod result;
mod resume;
mod sampler;
pub mod simulate;
mod spec;
mod sync;
#[cfg(unix)]
pub mod tmux;
/// Off Unix, only what a spec needs to name a pane (tmux runs on Unix).
#[cfg(not(unix))]
#[path = "tmux/target.rs"]
pub mod tmux;
pub mod vectors;
mod view;

pub use cancel::{CancelHook, CancelToken};
pub use engine::{Engine, WaitControl, WaitHandle, WaitOptions};
pub use error::{ErrorCode, ErrorInfo, Rule, SpecError};
pub use machine::Progress;
pub use observation::{Observation, ProbeMode};
pub use pattern::Pattern;
pub use policy::Policy;
pub use probe::{
    probe_fn, AsyncProbe, EndNotices, FnProbe, HostLock, Probe, ProbeContext, ProbeError, Reply,
    Waker,
};
pub use result::{Outcome, ProbeAccounting, Tail, WaitResult, RESULT_SCHEMA};
pub use resume::{FilePosition, ResumeToken};
pub use spec::{
    describe, Backoff, Condition, ErrorPolicy, JsonTest, ProbeSpec, Spec, TailLimits, ViewKind,
    SPEC_SCHEMA,
};
