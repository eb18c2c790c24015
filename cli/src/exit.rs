//! Exit codes: one outcome, one code.
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | condition met: `matched`, `settled`, `any_output` |
//! | 1    | `timeout` |
//! | 2    | usage error (clap's own code for bad flags; also bad durations and patterns) |
//! | 3    | `stopped`: a `--stop` marker appeared |
//! | 4    | `gone`: the target can no longer change |
//! | 5    | `probe_error`: the probe failed (e.g. the program does not exist) |
//! | 6    | `error`: the wait could not go on (e.g. output over the cap) |
//! | 130  | `cancelled` (Ctrl-C, as a shell reports SIGINT) |

use waitfor::Outcome;

/// The exit code for a wait's outcome.
pub fn exit_code(outcome: Outcome) -> u8 {
    match outcome {
        Outcome::Matched | Outcome::Settled | Outcome::AnyOutput => 0,
        Outcome::Timeout => 1,
        Outcome::Stopped => 3,
        Outcome::Gone => 4,
        Outcome::ProbeError => 5,
        Outcome::Error => 6,
        Outcome::Cancelled => 130,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_its_own_code() {
        let table = [
            (Outcome::Matched, 0),
            (Outcome::Settled, 0),
            (Outcome::AnyOutput, 0),
            (Outcome::Timeout, 1),
            (Outcome::Stopped, 3),
            (Outcome::Gone, 4),
            (Outcome::ProbeError, 5),
            (Outcome::Error, 6),
            (Outcome::Cancelled, 130),
        ];
        for (outcome, code) in table {
            assert_eq!(exit_code(outcome), code, "{outcome:?}");
            assert_eq!(outcome.is_success(), code == 0, "{outcome:?}");
            assert_ne!(code, 2, "2 is clap's usage error");
        }
    }
}
