//! What the `ouro/wait` tool (`wait_for_event`) may read: only regular
//! files inside the host's file roots. A path outside them is refused the
//! same way whether or not it exists; a FIFO, a device or a directory is
//! refused at once, saying what it is; a missing file inside the roots is
//! `gone`, as the tool's contract says.
#![cfg(unix)] // FIFOs, devices and symlinks: what it refuses is Unix's.

use std::time::{Duration, Instant};

use serde_json::json;
use waitfor::grants::Grants;
use waitfor::profiles::{self, Host, ToolError};

mod events_support;
use events_support::{append, host_for, line, mkfifo, TempDir};

/// Far beyond any refusal, far below the waits' own time limit.
const PROMPTLY: Duration = Duration::from_secs(4);

fn refused_argument(args: serde_json::Value, host: &Host) -> String {
    match profiles::prepare("ouro/wait", &args, host) {
        Err(ToolError::InvalidArguments(e)) => {
            assert_eq!(e.field, "path", "{e}");
            assert_eq!(e.rule, waitfor::Rule::NotGranted, "{e}");
            e.message
        }
        Err(other) => panic!("{args}: {other}"),
        Ok(_) => panic!("{args}: accepted"),
    }
}

#[test]
fn nothing_is_readable_unless_the_host_grants_it() {
    let dir = TempDir::new("reach-none");
    let path = dir.file("log.jsonl");
    append(&path, &line("build.done", "build 7"));
    let message = refused_argument(json!({"path": path}), &Host::default());
    assert!(message.contains("grants no file access"), "{message}");
}

#[test]
fn paths_outside_the_roots_are_refused_alike_whether_they_exist_or_not() {
    let dir = TempDir::new("reach-outside");
    let host = host_for(&dir.0);
    std::os::unix::fs::symlink("/etc/passwd", dir.file("passwd")).unwrap();
    let shadow = refused_argument(json!({"path": "/etc/shadow"}), &host);
    let missing = refused_argument(json!({"path": "/etc/no-such-file-here"}), &host);
    assert_eq!(
        shadow.replace("/etc/shadow", "P"),
        missing.replace("/etc/no-such-file-here", "P")
    );
    // A link inside a root that leads out of it is outside.
    let linked = dir.file("passwd");
    refused_argument(json!({"path": linked}), &host);
    let dotted = format!("{}/../../etc/passwd", dir.0.display());
    refused_argument(json!({"path": dotted}), &host);
}

/// The call's error, which must come long before the wait's time limit.
fn refused_at_once(args: serde_json::Value, host: &Host) -> String {
    let started = Instant::now();
    let err = profiles::call("ouro/wait", &args, host).expect_err("the read is refused");
    assert!(
        started.elapsed() < PROMPTLY,
        "{args}: {:?}",
        started.elapsed()
    );
    err.to_string()
}

#[test]
fn a_fifo_a_device_or_a_directory_is_refused_at_once_saying_what_it_is() {
    let dir = TempDir::new("reach-kinds");
    let host = host_for(&dir.0);
    let fifo = dir.file("pipe");
    mkfifo(&fifo);
    for cursor in [None, Some("end")] {
        let mut args = json!({"path": fifo, "timeout": "30s"});
        if let Some(c) = cursor {
            args["cursor"] = c.into();
        }
        let err = refused_at_once(args, &host);
        assert!(err.contains("is a FIFO"), "{err}");
    }
    let err = refused_at_once(json!({"path": dir.0, "timeout": "30s"}), &host);
    assert!(err.contains("is a directory"), "{err}");
    let devices = Host {
        grants: Grants::none().file_root("/dev"),
        ..Host::default()
    };
    for cursor in [None, Some("end")] {
        let mut args = json!({"path": "/dev/zero", "timeout": "30s"});
        if let Some(c) = cursor {
            args["cursor"] = c.into();
        }
        let err = refused_at_once(args, &devices);
        assert!(err.contains("is a device"), "{err}");
    }
}

#[test]
fn a_missing_file_inside_the_roots_is_gone() {
    let dir = TempDir::new("reach-missing");
    let host = host_for(&dir.0);
    let out = profiles::call(
        "ouro/wait",
        &json!({"path": dir.file("never.jsonl"), "timeout": "30s"}),
        &host,
    )
    .unwrap();
    assert_eq!(out["state"], "gone", "{out}");
    assert_eq!(out["fresh"]["state"], "missing", "{out}");
}

#[test]
fn a_granted_file_is_read() {
    let dir = TempDir::new("reach-granted");
    let path = dir.file("log.jsonl");
    append(&path, &line("build.done", "build 7 passed"));
    let args = json!({"path": path, "type": "build.done", "timeout": "30s"});
    let out = profiles::call("ouro/wait", &args, &host_for(&dir.0)).unwrap();
    assert_eq!(out["state"], "satisfied", "{out}");
    assert_eq!(out["events"][0]["summary"], "build 7 passed");
}
