//! A child forked while the give-back thread waits out its delay still
//! gives memory back when asked (a binary of its own: it forks, and it
//! counts the process's threads).

#![cfg(all(target_os = "linux", target_env = "gnu"))]

mod support;

use std::time::{Duration, Instant};
use waitfor::simulate::{simulate, Script};
use waitfor::{Condition, Pattern, Policy, Spec};

/// Threads of this process running a give-back (`comm` keeps 15 bytes).
fn give_back_threads() -> usize {
    let mut n = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        n += usize::from(comm.trim_end() == "waitfor-give-ba");
    }
    n
}

/// Compiles, on this thread (a simulated wait), a pattern whose automaton
/// passes the size limit: the compile frees megabytes and asks for a
/// give-back.
fn ask_for_a_give_back() {
    let spec = Spec::new(Condition::Matches(Pattern::regex(r"\w{150}N")));
    let script = Script::from_json(r#"{"steps": [{"after_ms": 0, "text": "x"}]}"#).unwrap();
    let refused = match simulate(&spec, &Policy::default(), &script) {
        Ok(sim) => sim.result.error.unwrap_or_default(),
        Err(e) => e.to_string(),
    };
    assert!(refused.contains("MiB"), "{refused}");
}

fn seen_within(limit: Duration, check: impl Fn() -> bool) -> bool {
    let until = Instant::now() + limit;
    while !check() {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

#[test]
fn a_child_forked_while_a_give_back_waits_gives_back_when_asked() {
    ask_for_a_give_back();
    // Its thread waits half a second before it trims (it names itself
    // once it runs).
    assert!(seen_within(Duration::from_secs(5), || give_back_threads() == 1));
    let asked = support::fork::in_forked_child(Duration::from_secs(30), || {
        // The parent's give-back thread is not in the child.
        ask_for_a_give_back();
        seen_within(Duration::from_secs(5), || give_back_threads() == 1)
    });
    assert!(asked, "the child never started a give-back");
}
