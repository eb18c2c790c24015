//! The sweep of a wait's escaped processes: it ends only what carries the
//! wait's mark (a marked job that runs in a process group it does not own,
//! as one `tmux run-shell` started in the tmux server's group, goes alone,
//! never with its group), what carries it in any of its threads, and what
//! it killed is gone by the time it returns.
#![cfg(target_os = "linux")]

mod support;

use std::time::Duration;
use support::Server;
use waitfor::process::{run_bounded, RunMark, RunOptions};
use waitfor::CancelToken;

/// Whether `pid` runs: one of its threads is neither gone nor a zombie.
/// Its own `stat` is its main thread's, a zombie while other threads run
/// on if that one ended first.
fn runs(pid: &str) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
            stat.rfind(')')
                .is_some_and(|i| !matches!(stat.get(i + 2..i + 3), Some("Z" | "X")))
        })
    })
}

/// Runs the Python `program` (named `name`) in a marked wait, out of
/// the wait's process group (`setsid`); the program writes its pid to the
/// path it is given and runs on. Then ends the wait, and says whether the
/// program runs on once `finish_sweeps` has returned, looked at once (it
/// is killed then).
fn runs_on_once_swept(name: &str, program: &str) -> bool {
    let dir = tempfile::Builder::new()
        .prefix(&format!("waitfor-sweep-{name}-"))
        .tempdir()
        .unwrap();
    let (file, path) = (dir.path().join("pid"), dir.path().join("program.py"));
    std::fs::write(&path, program).unwrap();
    let script = format!(
        "setsid python3 '{path}' '{f}' >/dev/null 2>&1 & until [ -s '{f}' ]; do sleep 0.01; done",
        path = path.display(),
        f = file.display()
    );
    let pid = swept(script, &file);
    drop(dir);
    let runs_on = runs(&pid);
    if runs_on {
        // SAFETY: a process this test started, which must not outlive it.
        unsafe { libc::kill(pid.parse().unwrap(), libc::SIGKILL) };
    }
    runs_on
}

/// Runs `script` in a marked wait; before it ends, the script leaves a
/// process running that writes its pid to `pid_file`. Then ends the wait
/// and returns once `finish_sweeps` has; says that pid.
fn swept(script: String, pid_file: &std::path::Path) -> String {
    let mark = RunMark::new();
    let options = RunOptions {
        env: vec![mark.env()],
        ..RunOptions::default()
    };
    let argv = ["sh".to_string(), "-c".to_string(), script];
    run_bounded(
        &argv,
        &options,
        Duration::from_secs(20),
        &CancelToken::new(),
    )
    .unwrap();
    let pid = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .to_string();
    assert!(runs(&pid), "{pid} runs while its wait does");
    drop(mark);
    waitfor::process::finish_sweeps();
    pid
}

/// The sweep returns once what it killed has exited, not once the kill
/// is sent: a kill takes effect when the process next runs, and its exit
/// lets go of its memory, a while for a large one (here 256 MiB, each
/// page written). So right after `finish_sweeps`, it is gone.
#[test]
fn what_the_sweep_killed_is_gone_when_it_returns() {
    let program = r#"import os, sys, time
memory = bytearray(b"x") * (256 << 20)
open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(300)
"#;
    assert!(
        !runs_on_once_swept("large", program),
        "the killed process ran on after the sweep returned"
    );
}

/// A process whose main thread ended (`pthread_exit`) while another
/// thread runs on shows no environment through its pid: the main
/// thread's memory is gone, the others' is not. It carries its mark
/// still, read through one of the others, and ends with it.
#[test]
fn a_process_whose_main_thread_ended_ends_with_its_mark() {
    // The second thread writes the pid once the main one is a zombie.
    let program = r#"import ctypes, os, sys, threading, time

def run():
    while open("/proc/self/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)
    open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(300)

threading.Thread(target=run).start()
ctypes.CDLL(None).pthread_exit(None)
"#;
    assert!(
        !runs_on_once_swept("threads", program),
        "the process whose main thread ended outlived its mark"
    );
}

#[test]
fn a_marked_job_in_a_group_it_does_not_own_goes_alone() {
    let server = Server::start(80, 24);
    let name = server.name.clone().expect("a private socket");
    let tmux_pid = server.cmd(&["display-message", "-p", "#{pid}"]);
    let dir = tempfile::Builder::new()
        .prefix("waitfor-sweep-reach-")
        .tempdir()
        .unwrap();
    let (job, job_pid) = (dir.path().join("job.sh"), dir.path().join("job.pid"));
    std::fs::write(
        &job,
        format!("echo $$ > '{}'; exec sleep 1000\n", job_pid.display()),
    )
    .unwrap();
    // The job carries the mark on purpose; it runs in the server's group.
    let script = format!(
        "tmux -L '{name}' run-shell -b \"WAITFOR_RUN=$WAITFOR_RUN sh '{job}'\" && \
         until [ -s '{pid}' ]; do sleep 0.01; done",
        job = job.display(),
        pid = job_pid.display()
    );
    let job_pid = swept(script, &job_pid);
    drop(dir);
    // Gone: the sweep returned once what it killed had exited.
    assert!(!runs(&job_pid), "the marked job outlived its mark");
    assert!(
        runs(tmux_pid.trim()),
        "the tmux server was killed with the marked job"
    );
    assert_eq!(server.cmd(&["display-message", "-p", "ok"]).trim(), "ok");
}
