//! `Spec::from_json` on any text; a spec that parses runs on virtual time
//! against a short scripted probe.
#![no_main]

use serde_json::Value;
use std::time::Duration;
use waitfor::simulate::{simulate, Script, ScriptStep};
use waitfor::{Observation, Policy, ProbeError, Rule, Spec};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = Spec::from_json(text);
    match serde_json::from_str::<Value>(text) {
        Err(_) => {
            let err = parsed
                .as_ref()
                .expect_err("text that is not JSON is no spec");
            // Its field is the root, or the path of the string a fault
            // inside a string is in (a lone surrogate escape, a raw
            // control byte), its keys unescaped; cut when long.
            assert_eq!(err.rule, Rule::InvalidJson, "{err:?}");
            assert!(err.field.len() <= 4200, "{err:?} keeps a long field");
        }
        Ok(value) => {
            if let Err(err) = &parsed {
                waitfor_fuzz::check_spec_error(err, &value);
            }
        }
    }
    if let Ok(spec) = parsed {
        simulate_briefly(&spec);
    }
});

/// A few hundred samples at most: the ceiling is clamped to 200 intervals.
fn simulate_briefly(spec: &Spec) {
    let ceiling = spec
        .interval
        .saturating_mul(200)
        .min(Duration::from_secs(300));
    let policy = Policy::default().max_wait_ceiling(ceiling);
    let step = |ms, answer| ScriptStep {
        takes: Duration::from_millis(ms),
        answer,
    };
    let script = Script {
        steps: vec![
            step(0, Some(Ok(Observation::text("starting\n")))),
            step(5, Some(Err(ProbeError::new("refused")))),
            step(
                30,
                Some(Ok(
                    Observation::text("ready ok 200\nerror\n").with_exit_code(0)
                )),
            ),
            step(
                0,
                Some(Ok(Observation::json(serde_json::json!({"status": "ok"})))),
            ),
            step(0, None),
        ],
        ..Script::default()
    };
    let sim = match simulate(spec, &policy, &script) {
        Ok(sim) => sim,
        // What only compiling finds (a program over the size limit, bytes
        // outside UTF-8 under `(?-u)`): the engine ends such a wait with
        // outcome `error`.
        Err(err) if err.rule == Rule::InvalidRegex => return,
        Err(err) => panic!("a valid spec simulates: {err:?}"),
    };
    let result = &sim.result;
    assert!(
        result.elapsed_ms <= result.effective_max_wait_ms,
        "{result:?}"
    );
    assert!(
        sim.call_starts_ms.windows(2).all(|w| w[0] < w[1]),
        "calls overlap: {:?}",
        sim.call_starts_ms
    );
    assert!(sim.call_starts_ms.iter().all(|&at| at <= result.elapsed_ms));
    assert!(result.samples <= sim.call_starts_ms.len() as u64);
}
