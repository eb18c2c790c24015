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
/// An `ouro/wait` vector with `files` runs the tool on real JSON Lines
/// files in a fresh directory its host grants (`$FILES` in the
/// arguments), changed at virtual times by its `script`'s `log`, on a
/// virtual wall clock; with `resume`, the call its answer's resume step
/// names runs next (its answer is `resumed`). The answer writes the
/// directory as `$FILES` and each cursor's keyed hashes as `KEYED`
/// (`tests/vectors/README.md` has the details).
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
    if profiles::reads_event_files(profile) && vector.get("files").is_some() {
        return event_log::answer(profile, vector);
    }
    let clock = crate::ouro::Clock::default();
    let prepared = profiles::prepare_on_clock(profile, &args, &Default::default(), &clock);
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
        ..
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

/// The `ouro/wait` vectors with `files`: the tool reads real JSON Lines
/// files in a fresh directory that the vector's host grants, written
/// before the call and changed at virtual times while it runs (`script`'s
/// `log`), on a virtual wall clock from [`event_log::START`]. The answer
/// names the directory `$FILES` and writes each cursor's keyed hashes
/// (random per process and file) as `KEYED`, so it is the same in every
/// run and language.
mod event_log {
    use super::*;
    use crate::error::Rule;
    use crate::grants::Grants;
    use crate::ouro::Clock;
    use crate::profiles::Host;
    use crate::simulate::event_log::{
        check_file_count, files, log_script, simulate_log, write_files, LogScript,
    };
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    /// Where the virtual wall clock starts: 2026-01-01T00:00:00.000Z.
    pub(super) const START: Duration = Duration::from_secs(1_767_225_600);

    /// What `arguments` write for the vector's directory, and what the
    /// answer writes for it.
    const DIR: &str = "$FILES";

    /// A fresh directory, removed with everything in it when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> Result<TempDir, SpecError> {
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let base = std::env::temp_dir();
            loop {
                let n = NEXT.fetch_add(1, Ordering::Relaxed);
                let path = base.join(format!("waitfor-vector-{}-{n}", std::process::id()));
                match std::fs::create_dir(&path) {
                    // Resolved, as the grant check resolves what it reads.
                    Ok(()) => {
                        return std::fs::canonicalize(&path).map(TempDir).map_err(|e| {
                            let _ = std::fs::remove_dir(&path);
                            unusable(e)
                        })
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(unusable(e)),
                }
            }
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn unusable(e: std::io::Error) -> SpecError {
        SpecError::new(
            "files",
            Rule::Unsupported,
            format!("cannot make the vector's directory: {e}"),
        )
    }

    /// Every string in `value` with `from` replaced by `to`.
    fn replace_in_strings(value: &mut Value, from: &str, to: &str) {
        match value {
            Value::String(s) if s.contains(from) => *s = s.replace(from, to),
            Value::Array(items) => items
                .iter_mut()
                .for_each(|v| replace_in_strings(v, from, to)),
            Value::Object(map) => map
                .values_mut()
                .for_each(|v| replace_in_strings(v, from, to)),
            _ => {}
        }
    }

    /// The answer with the directory written `$FILES` (also where it sits
    /// in JSON text, such as a resume command) and each cursor's keyed
    /// hashes written `KEYED`: `j2.{offset}.{line}.KEYED`.
    fn normalized(mut answer: Value, dir: &str) -> Value {
        let escaped = Value::from(dir).to_string();
        let escaped = &escaped[1..escaped.len() - 1];
        replace_in_strings(&mut answer, escaped, DIR);
        replace_in_strings(&mut answer, dir, DIR);
        let cursor = regex::Regex::new(r"\bj2\.([0-9]+)\.([0-9]+)\.[0-9a-f]{16}\.[0-9a-f]{32}\b")
            .expect("a valid pattern");
        fn keyed(value: &mut Value, cursor: &regex::Regex) {
            match value {
                Value::String(s) => {
                    if let std::borrow::Cow::Owned(new) = cursor.replace_all(s, "j2.$1.$2.KEYED") {
                        *s = new;
                    }
                }
                Value::Array(items) => items.iter_mut().for_each(|v| keyed(v, cursor)),
                Value::Object(map) => map.values_mut().for_each(|v| keyed(v, cursor)),
                _ => {}
            }
        }
        keyed(&mut answer, &cursor);
        answer
    }

    /// One call of the tool on `args`, its clock starting at `start`.
    fn call(
        profile: &str,
        args: &Value,
        host: &Host,
        script: &LogScript,
        dir: &Path,
        start: SystemTime,
    ) -> Result<Value, SpecError> {
        let clock = Clock::virtual_at(start);
        let prepared = profiles::prepare_on_clock(profile, args, host, &clock);
        profile_answer(profile, prepared, &mut |spec, policy, probe, report| {
            simulate_log(spec, policy, probe, report, script, dir, &mut |at| {
                clock.set(start + at)
            })
        })
    }

    /// The arguments of the call an answer's `resume` step makes (`TOOL
    /// {arguments as JSON}`).
    fn resumed_arguments(profile: &str, answer: &Value) -> Result<Value, SpecError> {
        let no_resume = |why: &str| SpecError::new("resume", Rule::Conflict, why.to_string());
        let tool = profiles::find(profile)
            .map_err(|e| no_resume(&e.to_string()))?
            .tool["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let command = answer["output"]["resume"]["command"]
            .as_str()
            .ok_or_else(|| no_resume("the call gave no resume step to make"))?;
        command
            .strip_prefix(&format!("{tool} "))
            .and_then(|args| serde_json::from_str(args).ok())
            .ok_or_else(|| no_resume("the resume step is not a call of the tool"))
    }

    /// A vector's `resume`: `{after_ms, script}`.
    fn resume_of(vector: &Value) -> Result<Option<(Duration, LogScript)>, SpecError> {
        let Some(resume) = vector.get("resume") else {
            return Ok(None);
        };
        let Some(obj) = resume.as_object() else {
            return Err(SpecError::new(
                "resume",
                Rule::WrongType,
                "must be an object",
            ));
        };
        if let Some(key) = obj
            .keys()
            .find(|k| !["after_ms", "script"].contains(&k.as_str()))
        {
            return Err(SpecError::new(
                format!("resume.{key}"),
                Rule::UnknownField,
                "resume takes after_ms and script",
            ));
        }
        let after = match obj.get("after_ms") {
            None => 0,
            Some(ms) => ms.as_u64().ok_or_else(|| {
                SpecError::new(
                    "resume.after_ms",
                    Rule::WrongType,
                    "must be a whole number of milliseconds",
                )
            })?,
        };
        let script = log_script(obj.get("script"), "resume.script")?;
        Ok(Some((Duration::from_millis(after), script)))
    }

    /// The vector's answer: the call's, and with `resume`, the answer of
    /// the call its `resume` step makes (after `after_ms` more virtual
    /// time, with that script's edits) as `resumed`.
    pub(super) fn answer(profile: &str, vector: &Value) -> Result<Value, SpecError> {
        let written = files(&vector["files"], "files")?;
        let script = log_script(vector.get("script"), "script")?;
        let resume = resume_of(vector)?;
        let resume_script = resume.as_ref().map(|(_, script)| script);
        check_file_count(
            &written,
            &[&script]
                .into_iter()
                .chain(resume_script)
                .collect::<Vec<_>>(),
        )?;
        let dir = TempDir::new()?;
        let text = dir.0.to_str().ok_or_else(|| {
            SpecError::new(
                "files",
                Rule::Unsupported,
                "the temporary directory's path is not UTF-8",
            )
        })?;
        write_files(&dir.0, &written)?;
        let host = Host {
            grants: Grants::none().file_root(&dir.0),
            ..Host::default()
        };
        let mut args = vector.get("arguments").cloned().unwrap_or_default();
        replace_in_strings(&mut args, DIR, text);
        let start = UNIX_EPOCH + START;
        let mut answer = call(profile, &args, &host, &script, &dir.0, start)?;
        if let Some((after, script)) = resume {
            let args = resumed_arguments(profile, &answer)?;
            let elapsed =
                Duration::from_millis(answer["result"]["elapsed_ms"].as_u64().unwrap_or(0));
            let again = call(
                profile,
                &args,
                &host,
                &script,
                &dir.0,
                start + elapsed + after,
            )?;
            answer["resumed"] = again;
        }
        Ok(normalized(answer, text))
    }
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

    /// An `ouro/wait` vector with `files` runs the tool on real files in a
    /// directory of its own, which is gone once the answer is given; its
    /// files stay inside it and within their bound.
    #[test]
    fn an_event_log_vector_writes_only_inside_its_own_directory_and_removes_it() {
        let ours = || -> Vec<String> {
            let prefix = format!("waitfor-vector-{}-", std::process::id());
            std::fs::read_dir(std::env::temp_dir())
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|name| name.starts_with(&prefix))
                .collect()
        };
        let event = json!({"type": "t", "at": "a", "by": "b", "summary": "s"});
        let answer = run(&json!({
            "profile": "ouro/wait",
            "arguments": {"path": "$FILES/log.jsonl", "timeout": "1s"},
            "files": {"log.jsonl": [event]},
        }))
        .unwrap();
        assert_eq!(answer["output"]["state"], "satisfied");
        assert_eq!(answer["output"]["for"], "an event in $FILES/log.jsonl");
        assert_eq!(ours(), Vec::<String>::new());
        for (vector, field) in [
            (json!({"files": {"../escape": []}}), "files.../escape"),
            (json!({"files": {"a/b": []}}), "files.a/b"),
            (
                json!({"files": {}, "script": {"log": [{"file": "..", "remove": true}]}}),
                "script.log[0].file",
            ),
            (
                json!({"files": {}, "script": {"log": [{"file": "x", "remove": true, "append": []}]}}),
                "script.log[0]",
            ),
            (
                json!({"files": {"big": ["x".repeat((16 << 20) + 1)]}}),
                "files.big",
            ),
            (json!({"files": {}, "resume": {"after": 1}}), "resume.after"),
        ] {
            let mut vector = vector;
            vector["profile"] = "ouro/wait".into();
            vector["arguments"] = json!({"path": "$FILES/log.jsonl"});
            assert_eq!(run(&vector).unwrap_err().field, field);
        }
        // A resume step is needed to resume: a gone wait has none.
        let gone = json!({
            "profile": "ouro/wait",
            "arguments": {"path": "$FILES/none.jsonl"},
            "files": {},
            "resume": {},
        });
        assert_eq!(run(&gone).unwrap_err().field, "resume");
        assert_eq!(ours(), Vec::<String>::new());
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
