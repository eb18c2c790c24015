//! The `command` probe with real processes.

use std::time::{Duration, Instant};
use waitfor::grants::{Commands, Grants};
use waitfor::{Engine, Outcome, Policy, Rule, Spec, WaitOptions};

mod files;

fn run(spec: &str) -> waitfor::WaitResult {
    Engine::global()
        .run(Spec::from_json(spec).unwrap(), granted())
        .unwrap()
}

/// A host that lets waits run any program.
fn granted() -> WaitOptions {
    WaitOptions::default().policy(Policy::default().grants(Grants::none().commands(Commands::Any)))
}

fn alive(pid: i32) -> bool {
    // A zombie waiting for its parent (init, here) to reap it is not alive.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

#[test]
fn output_and_exit_status() {
    let result = run(
        r#"{"probe": {"command": {"argv": ["sh", "-c", "echo out; echo err >&2; exit 3"]}},
                        "until": {"all": [{"exit_code": 3}, {"matches": "err"}]}}"#,
    );
    assert_eq!(result.outcome, Outcome::Matched);
    assert_eq!(result.exit_code, Some(3));
    assert_eq!(result.tail.lines, vec!["out", "err"]);
}

#[test]
fn stderr_can_be_left_out() {
    // A generous limit: the first spawn can be slow on a loaded machine.
    let result = run(
        r#"{"probe": {"command": {"argv": ["sh", "-c", "echo err >&2"], "stderr": false}},
                        "until": {"matches": "err"}, "interval_ms": 100, "max_wait_ms": 2000}"#,
    );
    assert_eq!(result.outcome, Outcome::Timeout, "{result:?}");
    assert!(result.samples >= 1);
}

#[test]
fn a_command_that_never_stops_writing_is_over_the_cap_at_once() {
    let started = Instant::now();
    let result = run(
        r#"{"probe": {"command": {"argv": ["yes"]}}, "until": {"matches": "never"},
            "max_wait_ms": 10000}"#,
    );
    assert!(started.elapsed() < Duration::from_secs(3), "{result:?}");
    assert_eq!(result.outcome, Outcome::Error, "{result:?}");
    let error = result.error.unwrap();
    assert!(error.contains("exceeds the cap of 262144 bytes"), "{error}");
}

#[test]
fn a_spec_may_lower_the_hosts_cap_but_not_raise_it() {
    // The agent's spec asks for a terabyte: the host's 256 KiB hold, and
    // `yes` is stopped one byte past them instead of filling memory.
    let result = run(
        r#"{"probe": {"command": {"argv": ["yes"]}}, "until": {"matches": "never"},
            "max_wait_ms": 10000, "output_cap_bytes": 1099511627776}"#,
    );
    assert_eq!(result.outcome, Outcome::Error, "{result:?}");
    let error = result.error.unwrap();
    assert!(error.contains("exceeds the cap of 262144 bytes"), "{error}");
    // Lower than the host's: the spec's.
    let result = run(
        r#"{"probe": {"command": {"argv": ["yes"]}}, "until": {"matches": "never"},
            "max_wait_ms": 10000, "output_cap_bytes": 1000}"#,
    );
    let error = result.error.unwrap();
    assert!(error.contains("exceeds the cap of 1000 bytes"), "{error}");
    // A host that allows more, allows more.
    let spec = r#"{"probe": {"command": {"argv": ["sh", "-c", "head -c 300000 /dev/zero"]}},
        "until": {"matches": "never"}, "interval_ms": 100, "max_wait_ms": 1000,
        "output_cap_bytes": 1000000}"#;
    let roomy = Policy::default()
        .grants(Grants::none().commands(Commands::Any))
        .output_cap(1 << 20);
    let result = Engine::global()
        .run(
            Spec::from_json(spec).unwrap(),
            WaitOptions::default().policy(roomy),
        )
        .unwrap();
    assert_eq!(result.outcome, Outcome::Timeout, "{result:?}");
}

#[test]
fn the_cap_counts_the_bytes_read_not_their_replaced_text() {
    // 100,000 bytes that are not UTF-8 become 300,000 bytes of U+FFFD:
    // within the 256 KiB cap as read.
    let result = run(
        r#"{"probe": {"command": {"argv": ["sh", "-c", "head -c 100000 /dev/zero | tr '\\0' '\\377'"]}},
            "until": {"matches": "never"}, "interval_ms": 100, "max_wait_ms": 1000}"#,
    );
    assert_eq!(result.outcome, Outcome::Timeout, "{result:?}");
    // Over the cap, the error says how many bytes were read: one past it.
    let result = run(
        r#"{"probe": {"command": {"argv": ["sh", "-c", "head -c 300000 /dev/zero | tr '\\0' '\\377'"]}},
            "until": {"matches": "never"}, "max_wait_ms": 10000}"#,
    );
    assert_eq!(result.outcome, Outcome::Error, "{result:?}");
    let error = result.error.unwrap();
    assert!(error.ends_with("(262145 bytes read)"), "{error}");
}

#[test]
fn stderr_left_out_is_not_counted_against_the_cap() {
    let result = run(
        r#"{"probe": {"command": {"argv": ["sh", "-c", "echo ready; yes >&2"], "stderr": false}},
            "until": {"matches": "ready"}, "max_wait_ms": 1500}"#,
    );
    // Neither over the cap nor stopped early: a command that never ends.
    assert_eq!(result.outcome, Outcome::ProbeError, "{result:?}");
    // Killed as its budget ran out, or abandoned at the deadline (a race
    // on a loaded machine): either way the deadline's doing, and not over
    // the cap.
    let error = result.error.unwrap();
    assert!(error.contains("no sample completed"), "{error}");
}

#[test]
fn json_output_feeds_pointer_conditions() {
    let result = run(
        r#"{"probe": {"command": {"argv": ["echo", "{\"status\": {\"phase\": \"Running\"}}"]}},
                        "until": {"json": {"pointer": "/status/phase", "equals": "Running"}}}"#,
    );
    assert_eq!(result.outcome, Outcome::Matched);
}

#[test]
fn a_missing_program_is_a_probe_error() {
    let result = run(
        r#"{"probe": {"command": {"argv": ["/nonexistent/waitfor-test"]}}, "until": {"matches": "x"}}"#,
    );
    assert_eq!(result.outcome, Outcome::ProbeError);
    assert!(result.error.unwrap().contains("/nonexistent/waitfor-test"));
}

#[test]
fn the_command_is_killed_at_the_deadline_with_nothing_left_behind() {
    let dir = files::temp_dir("cmd");
    let pids = dir.join("pids");
    let script = format!("sleep 300 & echo $$ $! > {}; wait", pids.display());
    let spec = serde_json::json!({
        "probe": {"command": {"argv": ["sh", "-c", script]}},
        "until": {"matches": "never"},
        "interval_ms": 10,
        "max_wait_ms": 500
    });
    let started = Instant::now();
    let result = run(&spec.to_string());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the deadline did not hold"
    );
    assert_eq!(result.outcome, Outcome::ProbeError);
    // Either the engine abandoned the call at the deadline, or the call's
    // own budget ran out first and it reported the kill: one or the other.
    assert_eq!(
        result.probe.abandoned + result.probe.errors,
        1,
        "{result:?}"
    );
    let text = std::fs::read_to_string(&pids).expect("the command started");
    let pids: Vec<i32> = text
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    let deadline = Instant::now() + Duration::from_secs(20);
    while pids.iter().any(|&pid| alive(pid)) {
        assert!(
            Instant::now() < deadline,
            "processes {pids:?} outlived the wait"
        );
        std::thread::yield_now();
    }
}

#[test]
fn built_in_probes_reach_only_what_the_host_grants() {
    let refused = |spec: &str, options: WaitOptions| {
        Engine::global()
            .run(Spec::from_json(spec).unwrap(), options)
            .expect_err("refused before any probe call")
    };
    let command =
        r#"{"probe": {"command": {"argv": ["sh", "-c", "id"]}}, "until": {"matches": "uid"}}"#;
    let err = refused(command, WaitOptions::default());
    assert_eq!(
        (err.field.as_str(), err.rule),
        ("probe.command.argv", Rule::NotGranted)
    );
    let only_echo = Grants::none().commands(Commands::Only(vec!["echo".into()]));
    let err = refused(
        command,
        WaitOptions::default().policy(Policy::default().grants(only_echo)),
    );
    assert!(err.message.contains("it allows: echo"), "{}", err.message);

    let file = r#"{"probe": {"file": {"path": "/etc/shadow"}}, "until": {"matches": "root"}}"#;
    let err = refused(file, WaitOptions::default());
    assert_eq!(
        (err.field.as_str(), err.rule),
        ("probe.file.path", Rule::NotGranted)
    );
    let tmp_only = Grants::none().file_root(std::env::temp_dir());
    let err = refused(
        file,
        WaitOptions::default().policy(Policy::default().grants(tmp_only)),
    );
    assert!(
        err.message.contains("outside the directories"),
        "{}",
        err.message
    );

    let socket = r#"{"probe": {"tmux": {"pane_id": "%0", "socket_name": "../../x.sock"}}, "until": {"matches": "x"}}"#;
    let err = refused(socket, WaitOptions::default());
    assert_eq!(
        (err.field.as_str(), err.rule),
        ("probe.tmux.socket_name", Rule::NotGranted)
    );
}

/// A directory chooses what a granted program does (which `./run.sh` runs,
/// which repository's hooks `git` obeys): unless any program may run, a
/// command's `cwd` must lie inside the file roots, its links resolved.
#[cfg(unix)]
#[test]
fn a_command_runs_only_in_a_directory_the_host_grants() {
    use std::os::unix::fs::PermissionsExt;
    let base = files::temp_dir("command-cwd");
    let script = |dir: &str, says: &str| {
        let dir = base.join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("run.sh");
        std::fs::write(&path, format!("#!/bin/sh\necho {says}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    };
    let (granted_dir, other_dir) = (script("granted", "mine"), script("other", "theirs"));
    std::os::unix::fs::symlink(&other_dir, granted_dir.join("link")).unwrap();
    let run_sh = |cwd: &std::path::Path| {
        let spec = serde_json::json!({
            "probe": {"command": {"argv": ["./run.sh"], "cwd": cwd}},
            "until": {"exit_code": 0}, "max_wait_ms": 5000,
        });
        Spec::from_json(&spec.to_string()).unwrap()
    };
    let grants = Grants::none()
        .commands(Commands::Only(vec!["./run.sh".into()]))
        .file_root(&granted_dir);
    let options = || WaitOptions::default().policy(Policy::default().grants(grants.clone()));

    let ran = Engine::global()
        .run(run_sh(&granted_dir), options())
        .unwrap();
    assert_eq!(ran.tail.lines, ["mine"], "{ran:?}");
    for outside in [
        other_dir.clone(),
        granted_dir.join("link"),
        granted_dir.join("../other"),
    ] {
        let err = Engine::global()
            .run(run_sh(&outside), options())
            .expect_err("refused before anything runs");
        assert_eq!(
            (err.field.as_str(), err.rule),
            ("probe.command.cwd", Rule::NotGranted),
            "{outside:?}"
        );
    }
    // No roots: no directory of the agent's choosing.
    let no_roots = Grants::none().commands(Commands::Only(vec!["./run.sh".into()]));
    let options = WaitOptions::default().policy(Policy::default().grants(no_roots));
    let err = Engine::global()
        .run(run_sh(&granted_dir), options)
        .expect_err("refused");
    assert_eq!(err.rule, Rule::NotGranted);
    assert!(err.message.contains("leave cwd out"), "{}", err.message);
    // Any program may run: any directory too.
    let theirs = Engine::global().run(run_sh(&other_dir), granted()).unwrap();
    assert_eq!(theirs.tail.lines, ["theirs"], "{theirs:?}");
}

/// A command that starts a process in a session of its own (`setsid`) on
/// every sample: none of them outlives the wait.
#[cfg(target_os = "linux")]
#[test]
fn processes_that_left_the_group_end_with_the_wait() {
    let dir = files::temp_dir("setsid");
    // Each sample's shell waits until its escaped child has written its pid
    // (to `pid.<the shell's pid>`), so the child has left the group by then.
    let script = format!(
        "setsid sh -c 'echo $$ > {dir}/pid.'$$'; exec sleep 300' >/dev/null & \
         until [ -s {dir}/pid.$$ ]; do sleep 0.01; done; echo sampled",
        dir = dir.display()
    );
    let spec = serde_json::json!({
        "probe": {"command": {"argv": ["sh", "-c", script]}},
        // Time for several samples even on a loaded machine, where one
        // (two shells, a file, a poll) has taken over half a second, and
        // once, with five builds running, no sample ended within 3 s.
        "until": {"matches": "never"}, "interval_ms": 100, "max_wait_ms": 6000
    });
    let result = run(&spec.to_string());
    assert_eq!(result.outcome, Outcome::Timeout);
    let started: Vec<i32> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok()?.trim().parse().ok())
        .collect();
    assert!(!started.is_empty());
    let end = Instant::now() + Duration::from_secs(20);
    while started.iter().any(|&p| alive(p)) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<_> = started.iter().filter(|&&p| alive(p)).collect();
    assert!(left.is_empty(), "outlived the wait: {left:?}");
}

/// The directory a command runs in is checked at every run, on the
/// directory as opened, not only when the wait starts: a `cwd` inside the
/// roots that is renamed away and replaced by a link out of them after the
/// check is refused at the next run (a probe error), never run in.
#[cfg(unix)]
#[test]
fn a_cwd_swapped_for_a_link_out_of_the_roots_is_never_run_in() {
    let base = files::temp_dir("command-cwd-swap");
    let (root, outside) = (base.join("root"), base.join("outside"));
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let outside_real = std::fs::canonicalize(&outside).unwrap();
    let grants = Grants::none()
        .commands(Commands::Only(vec!["pwd".into()]))
        .file_root(&root);
    let spec = serde_json::json!({
        "probe": {"command": {"argv": ["pwd"], "cwd": root.join("d")}},
        "until": {"matches": outside_real.to_str().unwrap()},
        "interval_ms": 20, "max_wait_ms": 5000,
    });
    let options = WaitOptions::default().policy(Policy::default().grants(grants));
    // Checked here, before the swap; every run comes after it (or, at
    // most the first, before it, in `d` itself).
    let handle = Engine::global()
        .start_with(Spec::from_json(&spec.to_string()).unwrap(), None, options)
        .unwrap();
    std::fs::rename(root.join("d"), root.join("d.old")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("d")).unwrap();
    let result = handle.wait();
    assert_eq!(result.outcome, Outcome::ProbeError, "{result:?}");
    let error = result.probe.last_error.unwrap_or_default();
    assert!(
        error.contains("not_granted") && error.contains("cwd"),
        "{error}"
    );
}

/// A `cwd` that does not exist when the wait starts is refused then: a
/// link out of the roots that appears there later is never run in.
#[cfg(unix)]
#[test]
fn a_cwd_that_does_not_exist_yet_is_refused_at_the_check() {
    let base = files::temp_dir("command-cwd-missing");
    let grants = Grants::none()
        .commands(Commands::Only(vec!["pwd".into()]))
        .file_root(&base);
    let spec = serde_json::json!({
        "probe": {"command": {"argv": ["pwd"], "cwd": base.join("later")}},
        "until": {"matches": "never"}, "max_wait_ms": 5000,
    });
    let options = WaitOptions::default().policy(Policy::default().grants(grants));
    let err = Engine::global()
        .start_with(Spec::from_json(&spec.to_string()).unwrap(), None, options)
        .map(|handle| handle.wait())
        .expect_err("refused before anything runs");
    assert_eq!(
        (err.field.as_str(), err.rule),
        ("probe.command.cwd", Rule::NotGranted)
    );
    assert!(err.message.contains("not a directory"), "{}", err.message);
}

/// Set in the hosts the next test starts: `MODE DIR`, how the host leaves
/// its wait and where its command writes the pids it starts.
#[cfg(target_os = "linux")]
const EXITING_HOST_VAR: &str = "WAITFOR_TEST_EXITING_COMMAND_HOST";

/// A host that exits while its wait's probe is still held leaves no process
/// that left the command's group behind: not mid-wait (`exit`), not right
/// after a cancelled wait (`cancel`) or a wait whose call was abandoned at
/// its deadline (`deadline`), whose probe the abandoned call still holds.
#[cfg(target_os = "linux")]
#[test]
fn processes_that_left_the_group_end_when_the_host_exits() {
    if let Some(var) = std::env::var_os(EXITING_HOST_VAR) {
        let var = var.into_string().unwrap();
        let (mode, dir) = var.split_once(' ').unwrap();
        // Each sample's shell starts a process in a session of its own,
        // waits until it has written its pid, then hangs in its group.
        let script = format!(
            "setsid sh -c 'echo $$ > {dir}/pid.'$$'; exec sleep 300' >/dev/null & \
             until [ -s {dir}/pid.$$ ]; do sleep 0.01; done; sleep 300"
        );
        let max_wait_ms = if mode == "deadline" { 2000 } else { 60_000 };
        let spec = serde_json::json!({
            "probe": {"command": {"argv": ["sh", "-c", script]}},
            "until": {"matches": "never"}, "max_wait_ms": max_wait_ms,
        });
        let handle = Engine::global()
            .start_with(Spec::from_json(&spec.to_string()).unwrap(), None, granted())
            .unwrap();
        let started = || {
            std::fs::read_dir(dir)
                .unwrap()
                .flatten()
                .any(|e| std::fs::read(e.path()).is_ok_and(|s| s.ends_with(b"\n")))
        };
        let end = Instant::now() + Duration::from_secs(20);
        while !started() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        match mode {
            "exit" => {}
            "cancel" => {
                handle.control().cancel();
                handle.wait();
            }
            _ => {
                handle.wait();
            }
        }
        std::process::exit(0);
    }
    let mut outlived = Vec::new();
    for mode in ["exit", "cancel", "deadline"] {
        let dir = files::temp_dir(&format!("exiting-host-{mode}"));
        let host = std::process::Command::new(std::env::current_exe().unwrap())
            .env(EXITING_HOST_VAR, format!("{mode} {}", dir.display()))
            .args([
                "--exact",
                "processes_that_left_the_group_end_when_the_host_exits",
            ])
            .output()
            .unwrap();
        assert!(host.status.success(), "{mode}: {host:?}");
        let started: Vec<i32> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok()?.trim().parse().ok())
            .collect();
        assert!(!started.is_empty(), "{mode}: the command never ran");
        let end = Instant::now() + Duration::from_secs(20);
        while started.iter().any(|&p| alive(p)) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        let left: Vec<i32> = started.iter().copied().filter(|&p| alive(p)).collect();
        for &pid in &left {
            // SAFETY: plain syscall; cleans up after a failure.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        if !left.is_empty() {
            outlived.push(format!("{mode}: {left:?}"));
        }
    }
    assert!(outlived.is_empty(), "outlived the host: {outlived:?}");
}
