//! Feeds observations straight into a wait's state machine, with no
//! threads and no timers: what a sample costs the engine itself (the view
//! and the conditions). For benchmarks.

use crate::error::SpecError;
use crate::machine::{Conditions, Machine, Step};
use crate::policy::Policy;
use crate::probe::{Observation, ProbeMode};
use crate::result::WaitResult;
use crate::spec::Spec;
use std::time::Duration;

/// One wait driven by hand, sample by sample, at a standstill clock.
///
/// ```
/// use waitfor::{Observation, ProbeMode, Spec};
/// let spec = Spec::from_json(r#"{"until": {"matches": "ready"}}"#).unwrap();
/// let mut sampler = waitfor::simulate::Sampler::new(&spec, ProbeMode::Snapshot).unwrap();
/// assert!(sampler.feed(Observation::text("starting")).is_none());
/// assert!(sampler.feed(Observation::text("starting\nready")).is_some());
/// ```
pub struct Sampler {
    machine: Machine,
}

impl Sampler {
    /// A sampler for `spec` with a probe of `mode`.
    pub fn new(spec: &Spec, mode: ProbeMode) -> Result<Self, SpecError> {
        // No host: the spec's own deadline and cap stand.
        let policy = Policy::default()
            .max_wait_ceiling(spec.max_wait)
            .output_cap(spec.output_cap.unwrap_or(crate::policy::DEFAULT_OUTPUT_CAP));
        let mut machine = Machine::new(spec, &policy, mode, Duration::ZERO)?;
        machine.start(Duration::ZERO, Conditions::compile(spec)?);
        Ok(Self { machine })
    }

    /// Feeds one observation; the result if this sample ended the wait.
    pub fn feed(&mut self, observation: Observation) -> Option<WaitResult> {
        match self.machine.on_probe(Duration::ZERO, Ok(observation)) {
            Step::Done(ending) => Some(self.machine.result(ending)),
            // Asleep until the next poll: wake it so it takes the next one.
            _ => match self.machine.on_wake(Duration::ZERO) {
                Step::Done(ending) => Some(self.machine.result(ending)),
                _ => None,
            },
        }
    }
}
