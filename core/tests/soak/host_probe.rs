//! Host probes that misbehave on purpose, each counting its calls.

use crate::gate::Gate;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use waitfor::{Observation, Probe, ProbeContext, ProbeError};

/// What a host probe does when called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// Answers `ready` at once.
    MatchNow,
    /// Answers at once, never `ready`.
    NeverMatch,
    /// Blocks until its call is cancelled (or the gate opens).
    HangUntilCancelled,
    /// Blocks until the gate opens, ignoring its cancel token.
    HangForever,
    /// Answers twice without `ready`, then blocks until the gate opens.
    HangLater,
    /// Fails every call; the wait fails at the first.
    Fail,
    /// Fails every other call under a tolerant policy; `ready` at call 4.
    FailTolerated,
    /// Panics.
    Panic,
    /// Answers one byte over the output cap.
    Oversized,
}

/// The message of every deliberate panic, so the test's panic hook can
/// keep them quiet.
pub const PANIC_MESSAGE: &str = "soak: deliberate panic";

pub struct HostProbe {
    pub behaviour: Behaviour,
    pub calls: Arc<AtomicU64>,
    pub gate: Arc<Gate>,
}

impl Probe for HostProbe {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let not_yet = || Ok(Observation::text(format!("not yet {call}")));
        match self.behaviour {
            Behaviour::MatchNow => Ok(Observation::text("ready")),
            Behaviour::NeverMatch => not_yet(),
            Behaviour::HangUntilCancelled => {
                self.gate.block(Some(&ctx.cancel));
                not_yet()
            }
            Behaviour::HangForever => {
                self.gate.block(None);
                not_yet()
            }
            Behaviour::HangLater if call <= 2 => not_yet(),
            Behaviour::HangLater => {
                self.gate.block(None);
                not_yet()
            }
            Behaviour::Fail => Err(ProbeError::new("soak: refused")),
            Behaviour::FailTolerated if call % 2 == 1 => Err(ProbeError::new("soak: flaky")),
            Behaviour::FailTolerated if call >= 4 => Ok(Observation::text("ready")),
            Behaviour::FailTolerated => not_yet(),
            Behaviour::Panic => panic!("{PANIC_MESSAGE}"),
            Behaviour::Oversized => Ok(Observation::text("x".repeat(ctx.output_cap + 1))),
        }
    }
}
