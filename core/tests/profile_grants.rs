//! Profiles reach only what the host grants: AURA's built-in
//! `run_command` and `read_file` (real processes, real files, FIFOs and
//! devices), and tmux sockets named by path.

use serde_json::{json, Value};
use std::path::Path;
use waitfor::grants::{Commands, Grants};
use waitfor::profiles::{call, prepare, Host, ToolError};
use waitfor::Rule;
#[cfg(unix)]
use waitfor::WaitOptions;

mod files;
use files::temp_dir;

fn host(grants: Grants) -> Host {
    Host {
        grants,
        ..Host::default()
    }
}

fn args(tool: &str, tool_args: Value, until: &str) -> Value {
    json!({
        "probe": {"tool": tool, "args": tool_args},
        "until": {"matches": until},
        "poll_sec": 1, "max_wait_sec": 10
    })
}

fn read_file(path: impl AsRef<Path>) -> Value {
    args(
        "read_file",
        json!({"path": path.as_ref().to_str().unwrap()}),
        "ready",
    )
}

/// The refusal of an invalid call: its field, rule and message.
fn refusal(result: Result<Value, ToolError>) -> (String, Rule, String) {
    match result {
        Err(ToolError::InvalidArguments(e)) => (e.field, e.rule, e.message),
        other => panic!("expected invalid_arguments, got {other:?}"),
    }
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn run_command_is_refused_when_the_host_grants_no_commands() {
    let probe = args("run_command", json!({"argv": ["sh", "-c", "id"]}), "uid");
    let (field, rule, message) = refusal(call("aura/wait_for", &probe, &Host::default()));
    assert_eq!(
        (field.as_str(), rule),
        ("probe.args.argv", Rule::NotGranted)
    );
    assert!(message.contains("has not granted"), "{message}");
}

#[test]
fn run_command_runs_only_the_granted_programs() {
    let grants = Grants::none().commands(Commands::Only(vec!["echo".into()]));
    let echo = args("run_command", json!({"argv": ["echo", "up"]}), "up");
    let out = call("aura/wait_for", &echo, &host(grants.clone())).unwrap();
    assert_eq!(out["reason"], "matched");
    let shell = args(
        "run_command",
        json!({"argv": ["sh", "-c", "echo up"]}),
        "up",
    );
    let (_, rule, message) = refusal(call("aura/wait_for", &shell, &host(grants)));
    assert_eq!(rule, Rule::NotGranted);
    assert!(
        message.contains("`sh`") && message.contains("echo"),
        "{message}"
    );
}

#[test]
fn run_command_runs_in_a_cwd_of_the_agent_s_choosing_only_inside_the_file_roots() {
    let root = temp_dir("run-command-cwd");
    let echo = Grants::none().commands(Commands::Only(vec!["echo".into()]));
    let in_dir = |cwd: &Path| {
        args(
            "run_command",
            json!({"argv": ["echo", "up"], "cwd": cwd.to_str().unwrap()}),
            "up",
        )
    };
    let outside = std::env::temp_dir();
    let (field, rule, message) = refusal(call(
        "aura/wait_for",
        &in_dir(&outside),
        &host(echo.clone().file_root(&root)),
    ));
    assert_eq!((field.as_str(), rule), ("probe.args.cwd", Rule::NotGranted));
    assert!(message.contains("leave cwd out"), "{message}");
    let out = call(
        "aura/wait_for",
        &in_dir(&root),
        &host(echo.file_root(&root)),
    )
    .unwrap();
    assert_eq!(out["reason"], "matched");
}

/// A `cwd` that is not a path is refused, never taken for none: the
/// command would run in the host's own directory, where the agent did not
/// ask for it (`make clean` in the server's tree). `null` is none.
#[test]
fn run_command_refuses_a_cwd_that_is_not_a_string() {
    let root = temp_dir("run-command-cwd-type");
    let grants = Grants::none()
        .commands(Commands::Only(vec!["pwd".into()]))
        .file_root(&root);
    let path = root.to_str().unwrap();
    for cwd in [json!(5), json!([path]), json!({"path": path}), json!(true)] {
        let probe = args("run_command", json!({"argv": ["pwd"], "cwd": cwd}), "/");
        let (field, rule, _) = refusal(call("aura/wait_for", &probe, &host(grants.clone())));
        assert_eq!(
            (field.as_str(), rule),
            ("probe.args.cwd", Rule::WrongType),
            "{cwd}"
        );
    }
    let none = args("run_command", json!({"argv": ["pwd"], "cwd": null}), "/");
    let out = call("aura/wait_for", &none, &host(grants)).unwrap();
    assert_eq!(out["reason"], "matched");
}

/// `run_command`'s `cwd` is checked again at every run, on the directory
/// as opened: one renamed away and replaced by a link out of the roots
/// after the call was checked is refused (the call fails), never run in.
#[cfg(unix)]
#[test]
fn run_command_never_runs_in_a_cwd_swapped_for_a_link_out_of_the_roots() {
    let base = temp_dir("run-command-cwd-swap");
    let (root, outside) = (base.join("root"), base.join("outside"));
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let outside_real = std::fs::canonicalize(&outside).unwrap();
    let grants = Grants::none()
        .commands(Commands::Only(vec!["pwd".into()]))
        .file_root(&root);
    let call_args = json!({
        "probe": {"tool": "run_command",
                  "args": {"argv": ["pwd"], "cwd": root.join("d").to_str().unwrap()}},
        "until": {"matches": outside_real.to_str().unwrap()},
        "poll_sec": 1, "max_wait_sec": 5
    });
    // Checked here; every run comes after the swap.
    let prepared = prepare("aura/wait_for", &call_args, &host(grants)).unwrap();
    std::fs::rename(root.join("d"), root.join("d.old")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("d")).unwrap();
    match prepared.run(WaitOptions::default()) {
        Err(ToolError::Runtime(message)) => assert!(
            message.contains("not_granted") && message.contains("cwd"),
            "{message}"
        ),
        other => panic!("ran in a directory outside the roots: {other:?}"),
    }
    // A cwd that does not exist yet is refused at the check.
    let later = json!({
        "probe": {"tool": "run_command",
                  "args": {"argv": ["pwd"], "cwd": root.join("later").to_str().unwrap()}},
        "until": {"matches": "never"}, "poll_sec": 1, "max_wait_sec": 5
    });
    let grants = Grants::none()
        .commands(Commands::Only(vec!["pwd".into()]))
        .file_root(&root);
    let (field, rule, message) = refusal(call("aura/wait_for", &later, &host(grants)));
    assert_eq!((field.as_str(), rule), ("probe.args.cwd", Rule::NotGranted));
    assert!(message.contains("not a directory"), "{message}");
}

#[cfg(unix)]
#[test]
fn read_file_is_refused_outside_the_granted_roots() {
    let (_, rule, message) = refusal(call(
        "aura/wait_for",
        &read_file("/etc/shadow"),
        &Host::default(),
    ));
    assert_eq!(rule, Rule::NotGranted);
    assert!(message.contains("grants no file access"), "{message}");
    let root = temp_dir("aura-outside");
    let (field, rule, message) = refusal(call(
        "aura/wait_for",
        &read_file("/etc/shadow"),
        &host(Grants::none().file_root(&root)),
    ));
    assert_eq!(
        (field.as_str(), rule),
        ("probe.args.path", Rule::NotGranted)
    );
    assert!(message.contains("outside the directories"), "{message}");
    // A link inside the root that leads out is outside too.
    std::os::unix::fs::symlink("/etc/passwd", root.join("passwd")).unwrap();
    let (_, _, message) = refusal(call(
        "aura/wait_for",
        &read_file(root.join("passwd")),
        &host(Grants::none().file_root(&root)),
    ));
    assert!(message.contains("outside the directories"), "{message}");
}

#[test]
fn read_file_reads_a_file_inside_a_granted_root() {
    let root = temp_dir("aura-granted");
    std::fs::write(root.join("status"), "service ready\n").unwrap();
    let out = call(
        "aura/wait_for",
        &read_file(root.join("status")),
        &host(Grants::none().file_root(&root)),
    )
    .unwrap();
    assert_eq!(out["reason"], "matched");
    assert_eq!(out["last_observation"], "service ready\n");
}

#[cfg(unix)]
#[test]
fn read_file_refuses_what_is_not_a_regular_file_and_names_its_kind() {
    let root = temp_dir("aura-kinds");
    mkfifo(&root.join("pipe"));
    std::fs::create_dir(root.join("sub")).unwrap();
    let granted = host(Grants::none().file_root(&root).file_root("/dev"));
    for (path, kind) in [
        (root.join("pipe"), "a FIFO"),
        (root.join("sub"), "a directory"),
        ("/dev/zero".into(), "a device"),
        ("/dev/urandom".into(), "a device"),
    ] {
        let (_, rule, message) = refusal(call("aura/wait_for", &read_file(&path), &granted));
        assert_eq!(rule, Rule::NotGranted, "{path:?}");
        assert!(
            message.contains(kind) && message.contains("not a regular file"),
            "{path:?}: {message}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_file_replaced_by_a_fifo_after_the_check_is_refused_when_read() {
    let root = temp_dir("aura-swap");
    let path = root.join("status");
    std::fs::write(&path, "x").unwrap();
    let prepared = prepare(
        "aura/wait_for",
        &read_file(&path),
        &host(Grants::none().file_root(&root)),
    )
    .unwrap();
    std::fs::remove_file(&path).unwrap();
    mkfifo(&path);
    match prepared.run(WaitOptions::default()) {
        Err(ToolError::Runtime(message)) => assert!(message.contains("a FIFO"), "{message}"),
        other => panic!("expected a runtime error, got {other:?}"),
    }
}

#[test]
fn a_file_over_the_cap_is_reported_without_being_read_whole() {
    let root = temp_dir("aura-big");
    let path = root.join("big");
    // Sparse: 64 MiB of zero bytes that take no disk.
    std::fs::File::create(&path)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let result = call(
        "aura/wait_for",
        &read_file(&path),
        &host(Grants::none().file_root(&root)),
    );
    match result {
        Err(ToolError::Runtime(message)) => {
            // One byte past the 256 KiB cap, not the 64 MiB of the file.
            assert!(
                message.contains("returned 262145 bytes on sample 1, over the 262144-byte cap"),
                "{message}"
            );
        }
        other => panic!("expected a runtime error, got {other:?}"),
    }
}

#[test]
fn a_tmux_socket_path_is_refused_unless_the_host_allows_paths() {
    let args = json!({"pane_id": "%0", "socket_name": "../../x.sock", "timeout": 1});
    let refused = prepare("libtmux-mcp/wait_for_text", &args, &Host::default()).err();
    match refused {
        Some(ToolError::InvalidArguments(e)) => {
            assert_eq!(
                (e.field.as_str(), e.rule),
                ("socket_name", Rule::NotGranted)
            );
            assert!(e.message.contains("not a path"), "{}", e.message);
        }
        other => panic!(
            "expected invalid_arguments, got {:?}",
            other.map(|e| e.to_string())
        ),
    }
    let paths = host(Grants::none().tmux_socket_paths(true));
    assert!(prepare("libtmux-mcp/wait_for_text", &args, &paths).is_ok());
    let name = json!({"pane_id": "%0", "socket_name": "work", "timeout": 1});
    assert!(prepare("libtmux-mcp/wait_for_text", &name, &Host::default()).is_ok());
}

/// An empty socket name is the default socket, as libtmux takes it and as
/// the C door always took it: in a tool call and in a spec alike (and so
/// for `waitfor pane --socket-name ""`).
#[cfg(unix)]
#[test]
fn an_empty_socket_name_is_the_default_socket() {
    let args = json!({"pane_id": "%0", "socket_name": "", "timeout": 1});
    assert!(prepare("libtmux-mcp/wait_for_text", &args, &Host::default()).is_ok());
    let spec = json!({"probe": {"tmux": {"pane_id": "%0", "socket_name": ""}},
                      "until": {"matches": "x"}});
    waitfor::Spec::from_value(&spec).unwrap();
    // Never `tmux -L ""`, whose socket would be tmux's directory itself.
    let tmux = waitfor::tmux::Tmux::new().with_socket_name("");
    assert_eq!(tmux.argv(&["ls"]), ["tmux", "-u", "ls"]);
}

/// No socket's path can be that long: it used to reach tmux, and come
/// back as "no tmux server running", which sends an agent looking for one.
#[test]
fn a_socket_name_too_long_for_any_socket_is_refused_as_out_of_range() {
    let long = "s".repeat(waitfor::limits::MAX_SOCKET_NAME_BYTES + 1);
    let args = json!({"pane_id": "%0", "socket_name": long, "timeout": 1});
    match prepare("libtmux-mcp/wait_for_text", &args, &Host::default()).err() {
        Some(ToolError::InvalidArguments(e)) => {
            assert_eq!(
                (e.field.as_str(), e.rule),
                ("socket_name", Rule::OutOfRange)
            );
            assert!(e.message.contains("104 bytes long"), "{}", e.message);
        }
        other => panic!("expected invalid_arguments, got {other:?}"),
    }
    let spec = json!({"probe": {"tmux": {"pane_id": "%0", "socket_name": long}},
                      "until": {"matches": "x"}});
    let e = waitfor::Spec::from_value(&spec).unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.rule),
        ("probe.tmux.socket_name", Rule::OutOfRange)
    );
    let longest = "s".repeat(waitfor::limits::MAX_SOCKET_NAME_BYTES);
    let args = json!({"pane_id": "%0", "socket_name": longest, "timeout": 1});
    assert!(prepare("libtmux-mcp/wait_for_text", &args, &Host::default()).is_ok());
}

#[test]
fn a_nul_byte_bound_for_the_system_is_refused_before_the_wait_by_every_profile() {
    // Granted everything: the NUL is what is refused, not the reach.
    let all = host(Grants::all());
    let cases = [
        (
            "aura/wait_for",
            args("run_command", json!({"argv": ["echo", "a\0b"]}), "a"),
            "probe.args.argv[1]",
        ),
        (
            "aura/wait_for",
            args(
                "run_command",
                json!({"argv": ["pwd"], "cwd": "/tmp\0"}),
                "a",
            ),
            "probe.args.cwd",
        ),
        ("aura/wait_for", read_file("/tmp/a\0b"), "probe.args.path"),
        (
            "ouro/wait",
            json!({"path": "/tmp/a\0b", "timeout": "1s"}),
            "path",
        ),
        (
            "libtmux-mcp/wait_for_text",
            json!({"pane_id": "%0", "socket_name": "w\0rk", "timeout": 1}),
            "socket_name",
        ),
        (
            "libtmux-cxx/wait_for_text",
            json!({"target": "main\0:0", "text": "ready", "timeout_ms": 100}),
            "target",
        ),
    ];
    for (profile, args, field) in cases {
        let refused = prepare(profile, &args, &all).err();
        match refused {
            Some(ToolError::InvalidArguments(e)) => {
                assert_eq!(
                    (e.field.as_str(), e.rule),
                    (field, Rule::ContainsNul),
                    "{profile} {args}"
                );
                assert!(e.message.contains("NUL"), "{}", e.message);
            }
            other => panic!(
                "{profile} {args}: expected invalid_arguments, got {:?}",
                other.map(|e| e.to_string())
            ),
        }
    }
}
