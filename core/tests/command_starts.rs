//! Command waits whose commands wait for start turns (`process/starts.rs`)
//! until their deadline: every turn of this process is held by
//! construction (`start_hooks`), not by many commands' timing.
#![cfg(unix)] // `echo` is a program here.

use std::sync::{mpsc, Mutex};
use std::time::Duration;
use waitfor::grants::{Commands, Grants};
use waitfor::process::start_hooks::hold_start_turns;
use waitfor::profiles::{call, Host, ToolError};
use waitfor::{Engine, Outcome, Policy, Spec, WaitOptions, WaitResult};

/// The tests hold every turn of the process in turn, not at once.
static TURNS: Mutex<()> = Mutex::new(());

/// A host that lets waits run any program.
fn granted() -> WaitOptions {
    WaitOptions::default().policy(Policy::default().grants(Grants::none().commands(Commands::Any)))
}

/// A wait on `echo ready` for `until`, sampling every 10 ms.
fn spec(until: &str, max_wait_ms: u64) -> Spec {
    Spec::from_json(&format!(
        r#"{{"probe": {{"command": {{"argv": ["echo", "ready"]}}}},
            "until": {{"matches": "{until}"}}, "interval_ms": 10, "max_wait_ms": {max_wait_ms}}}"#
    ))
    .unwrap()
}

fn starved(result: &WaitResult) -> bool {
    result
        .notices
        .iter()
        .any(|n| n.contains("for a start turn"))
}

/// A wait whose command never got a turn ends at its deadline as a wait
/// with no sample does (`probe_error`, no sample completed): the command
/// did not run, so there is no output to call a timeout's evidence. Its
/// notice says why, and what the host can do.
#[test]
fn a_command_that_never_got_a_start_turn_says_why() {
    let _one = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let held = hold_start_turns();
    let result = Engine::global().run(spec("never", 300), granted()).unwrap();
    drop(held);
    assert_eq!(result.outcome, Outcome::ProbeError, "{result:?}");
    assert_eq!(result.samples, 0);
    assert_eq!(
        result.error.as_deref(),
        Some("probe timed out: no sample completed within 300 ms")
    );
    assert_eq!(result.notices.len(), 1, "{result:?}");
    let notice = &result.notices[0];
    for said in [
        "its command never started",
        "other commands held every turn",
        "run fewer command waits at once, or give them longer deadlines",
    ] {
        assert!(notice.contains(said), "{notice}");
    }
    let json = result.to_json();
    assert_eq!(json["notices"][0], notice.as_str());
}

/// A wait sampled at first, then held from every turn to its deadline,
/// says how often it sampled.
#[test]
fn a_command_wait_starved_after_its_first_samples_says_so() {
    let _one = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let (sampled, first_sample) = mpsc::channel();
    let options = granted().on_progress(move |_| {
        let _ = sampled.send(());
    });
    let wait = std::thread::spawn(move || Engine::global().run(spec("never", 2000), options));
    first_sample.recv_timeout(Duration::from_secs(20)).unwrap();
    let held = hold_start_turns();
    let result = wait.join().unwrap().unwrap();
    drop(held);
    assert_eq!(result.outcome, Outcome::Timeout, "{result:?}");
    assert!(starved(&result), "{result:?}");
    let sampled = match result.samples {
        1 => "sampled once in".to_string(),
        n => format!("sampled {n} times in"),
    };
    assert!(result.notices[0].starts_with(&sampled), "{result:?}");
}

/// Waits whose commands got their turns say nothing of turns, whether
/// they matched or timed out.
#[test]
fn a_command_wait_that_got_its_turns_has_no_notice() {
    let _one = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let matched = Engine::global()
        .run(spec("ready", 20_000), granted())
        .unwrap();
    assert_eq!(matched.outcome, Outcome::Matched, "{matched:?}");
    assert!(matched.notices.is_empty(), "{matched:?}");
    let timeout = Engine::global()
        .run(spec("never", 1000), granted())
        .unwrap();
    assert!(timeout.samples > 0, "{timeout:?}");
    assert!(timeout.notices.is_empty(), "{timeout:?}");
}

/// AURA's built-in `run_command`, never given a start turn, ends as a
/// probe that gave nothing by the bound does (AURA's runtime error), but
/// says its command waited for a start turn, not that the probe hangs.
#[test]
fn an_aura_run_command_starved_of_start_turns_says_so_not_that_it_hangs() {
    let _one = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let host = Host {
        grants: Grants::none().commands(Commands::Any),
        ..Host::default()
    };
    let args = serde_json::json!({
        "probe": {"tool": "run_command", "args": {"argv": ["echo", "ready"]}},
        "until": {"matches": "never"}, "poll_sec": 1, "max_wait_sec": 2
    });
    let held = hold_start_turns();
    let out = call("aura/wait_for", &args, &host);
    drop(held);
    let Err(ToolError::Runtime(message)) = out else {
        panic!("{out:?}");
    };
    assert!(
        message.starts_with("probe tool 'run_command' returned nothing within max_wait_sec 2s: "),
        "{message}"
    );
    for said in ["its command never started", "for a start turn"] {
        assert!(message.contains(said), "{message}");
    }
    assert!(!message.contains("hanging"), "{message}");
}
