//! The shared test vectors (`tests/vectors/`): one vector in, its whole
//! answer out, on virtual time. Every binding runs them through [`run`],
//! so all languages answer identically. A profile's vector runs the
//! profile itself (its arguments, probe, render and notices), which is why
//! this sits above the profiles rather than in [`crate::simulate`].

use crate::error::SpecError;
use crate::machine::Progress;
use crate::policy::Policy;
use crate::probe::Probe;
use crate::profiles::{self, refusal_notices, Notice, Prepared, ToolError};
use crate::simulate::{policy_from, simulate, simulate_reporting, Script, Simulation};
use crate::spec::Spec;
use serde_json::Value;

/// Runs one test vector (JSON) on virtual time. A vector names either a
/// `spec` (with an optional `policy` of `max_wait_ceiling_ms` and
/// `output_cap_bytes`) or a `profile` with its `arguments`, plus a
/// `script`. The answer holds `result` (the engine's result JSON),
/// `call_starts_ms` and `progress`, and for a profile its `output` or its
/// `tool_error` (`code`, `field`, `rule` as [`crate::ErrorInfo`], and the
/// tool's own `message`) and its `notices` (each [`crate::profiles::Notice`]
/// the host would send, in order: progress and log notices while the wait
/// runs, then the ones at its end, or the ones for a refused call).
///
/// A tmux profile's script describes the pane (see [`Script::from_json`]):
/// a scripted tmux server shows it, and the profile's own pane probe
/// reads it through the same tmux invocations as on a real server, so
/// its output is the one a real pane gives. Every binding runs the
/// shared vectors through this, so all languages answer identically.
///
/// ```
/// let answer = waitfor::vectors::run(&serde_json::json!({
///     "spec": {"until": {"matches": "ok"}, "interval_ms": 100},
///     "script": {"steps": [{"text": "no"}, {"text": "ok"}]}
/// })).unwrap();
/// assert_eq!(answer["result"]["elapsed_ms"], 100);
/// ```
pub fn run(vector: &Value) -> Result<Value, SpecError> {
    let script = vector.get("script").unwrap_or(&Value::Null);
    let Some(profile) = vector.get("profile").and_then(|p| p.as_str()) else {
        let spec = Spec::from_value(vector.get("spec").unwrap_or(&Value::Null))?;
        let policy = policy_from(vector.get("policy"))?;
        let sim = simulate(&spec, &policy, &Script::from_value(script)?)?;
        return Ok(sim.to_json());
    };
    let args = vector.get("arguments").cloned().unwrap_or_default();
    #[cfg(unix)]
    if profiles::reads_a_pane(profile) {
        use crate::simulate::pane::simulate_pane;
        use crate::tmux::scripted::ScriptedServer;
        use crate::tmux::Tmux;
        let server = std::sync::Arc::new(ScriptedServer::new());
        let tmux = Tmux::scripted(server.clone());
        let prepared = profiles::prepare_on_tmux(profile, &args, &Default::default(), tmux);
        return profile_answer(profile, prepared, &mut |spec, policy, probe, report| {
            simulate_pane(spec, policy, probe, report, script, &server)
        });
    }
    let prepared = profiles::prepare(profile, &args, &Default::default());
    profile_answer(profile, prepared, &mut |spec, policy, _, report| {
        simulate_reporting(spec, policy, &Script::from_value(script)?, report)
    })
}

/// What simulates a prepared profile call: its spec, policy and probe,
/// and where each progress report goes.
type RunPrepared<'a> = &'a mut dyn FnMut(
    &Spec,
    &Policy,
    &mut dyn Probe,
    &mut dyn FnMut(&Progress),
) -> Result<Simulation, SpecError>;

/// A profile vector's answer: `run` simulates the prepared call; the
/// answer adds the rendered output or the tool's error, and the notices.
fn profile_answer(
    profile: &str,
    prepared: Result<Prepared, ToolError>,
    run: RunPrepared,
) -> Result<Value, SpecError> {
    /// The error's shape, with the tool's own text (`invalid arguments:
    /// ...` in AURA's words) as an MCP tool result would carry it.
    fn tool_error_json(err: &ToolError) -> Value {
        let mut json = crate::error::ErrorInfo::from(err).to_json();
        json["message"] = err.to_string().into();
        json
    }
    let notices_json =
        |notices: &[Notice]| -> Value { notices.iter().map(Notice::to_json).collect() };
    let Prepared {
        spec,
        mut probe,
        policy,
        render,
        report,
    } = match prepared {
        Ok(prepared) => prepared,
        Err(err) => {
            return Ok(serde_json::json!({
                "tool_error": tool_error_json(&err),
                "notices": notices_json(&refusal_notices(profile, &err)),
            }))
        }
    };
    let mut notices = Vec::new();
    let sim = run(&spec, &policy, probe.as_mut(), &mut |progress| {
        notices.extend(report.progress(progress))
    })?;
    notices.extend(report.end(&sim.result));
    let mut answer = sim.to_json();
    match render(&sim.result) {
        Ok(output) => answer["output"] = output,
        Err(err) => answer["tool_error"] = tool_error_json(&err),
    }
    answer["notices"] = notices_json(&notices);
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pane_facts_and_probe_answers_stay_in_their_own_scripts() {
        let spec = json!({"until": {"matches": "x"}});
        let err = run(&json!({"spec": spec, "script": {"steps": [{"screen": ["$"]}]}}));
        assert_eq!(err.unwrap_err().field, "script.steps[0].screen");
        #[cfg(unix)]
        {
            let vector = json!({
                "profile": "libtmux-cxx/wait_for_text",
                "arguments": {"target": "%1", "text": "x"},
                "script": {"steps": [{"text": "x"}]},
            });
            assert_eq!(run(&vector).unwrap_err().field, "script.steps[0].text");
        }
    }

    /// What `fill` adds is bounded in all: a script of a few bytes cannot
    /// ask for gigabytes.
    #[test]
    fn a_scripts_fill_is_bounded() {
        let spec = json!({"until": {"matches": "x"}});
        let huge = json!({"spec": spec, "script": {"steps": [{"fill": 1u64 << 40}]}});
        let err = run(&huge).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.rule),
            ("script.steps", crate::error::Rule::OutOfRange)
        );
        let many =
            json!({"spec": spec, "script": {"steps": [{"fill": 10 << 20}, {"fill": 10 << 20}]}});
        assert!(run(&many).is_err());
        let fits = json!({"spec": spec, "script": {"steps": [{"fill": 1 << 20}]}});
        assert!(run(&fits).is_ok());
    }

    /// A scripted pane is as large as a pane may sensibly be, no larger:
    /// a script cannot make the simulator print billions of rows.
    #[cfg(unix)]
    #[test]
    fn a_scripted_pane_is_bounded() {
        let args = json!({"target": "%1", "text": "x"});
        for (step, field) in [
            (
                json!({"screen": ["$"], "height": 1_000_000_000u64}),
                "height",
            ),
            (
                json!({"screen": ["$"], "history_size": u64::MAX}),
                "history_size",
            ),
            (json!({"screen": ["$"], "cursor_row": 1}), "cursor_row"),
        ] {
            let vector = json!({
                "profile": "libtmux-cxx/wait_for_text",
                "arguments": args,
                "script": {"steps": [step]},
            });
            let err = run(&vector).unwrap_err();
            assert_eq!(err.field, format!("script.steps[0].{field}"));
        }
    }

    /// The profile's own probe reads the scripted pane: the rows written
    /// after entry match, whole, and the entry prompt does not.
    #[cfg(unix)]
    #[test]
    fn a_tmux_profile_reads_the_scripted_pane_through_its_probe() {
        let answer = run(&json!({
            "profile": "libtmux-mcp/wait_for_text",
            "arguments": {"pane_id": "%1", "patterns": ["ready"], "timeout": 1},
            "script": {"steps": [
                {"screen": ["$ "], "height": 4},
                {"screen": ["$ ./serve", "ready"], "height": 4},
            ]},
        }))
        .unwrap();
        assert_eq!(answer["output"]["outcome"], "matched");
        assert_eq!(answer["output"]["matched_lines"], json!(["ready"]));
        assert_eq!(answer["output"]["tail"], json!(["$ ./serve", "ready"]));
        assert_eq!(answer["call_starts_ms"], json!([0, 50]));
    }
}
