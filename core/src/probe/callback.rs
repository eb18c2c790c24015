//! A probe made from a closure.

use super::{Observation, Probe, ProbeContext, ProbeError, ProbeMode};

/// A probe that calls a closure; see [`probe_fn`].
pub struct FnProbe<F> {
    call: F,
    mode: ProbeMode,
    name: String,
}

/// Makes a snapshot probe from a closure.
///
/// ```
/// use waitfor::{probe_fn, Observation, Probe};
/// let probe = probe_fn(|ctx| Ok(Observation::text(format!("sample {}", ctx.sample))));
/// assert_eq!(probe.name(), "callback");
/// ```
pub fn probe_fn<F>(call: F) -> FnProbe<F>
where
    F: FnMut(&ProbeContext) -> Result<Observation, ProbeError> + Send + 'static,
{
    FnProbe {
        call,
        mode: ProbeMode::Snapshot,
        name: "callback".to_string(),
    }
}

impl<F> FnProbe<F> {
    /// The same probe, declared a stream (each call returns only new text).
    pub fn stream(mut self) -> Self {
        self.mode = ProbeMode::Stream;
        self
    }

    /// The same probe under another name (the `probe_tool` span attribute).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

impl<F> Probe for FnProbe<F>
where
    F: FnMut(&ProbeContext) -> Result<Observation, ProbeError> + Send + 'static,
{
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        (self.call)(ctx)
    }

    fn mode(&self) -> ProbeMode {
        self.mode
    }

    fn name(&self) -> &str {
        &self.name
    }
}
