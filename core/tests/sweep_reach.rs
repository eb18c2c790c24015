//! The sweep of a wait's escaped processes ends only what carries the
//! wait's mark: a marked job that runs in a process group it does not own
//! (one `tmux run-shell` started is in the tmux server's group) goes
//! alone, never with its group.
#![cfg(target_os = "linux")]

mod support;

use std::time::Duration;
use support::Server;
use waitfor::process::{run_bounded, RunMark, RunOptions};
use waitfor::CancelToken;

/// Whether `pid` runs (not gone, not a zombie).
fn runs(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .is_some_and(|i| !stat[i + 2..].starts_with('Z'))
    })
}

#[test]
fn a_marked_job_in_a_group_it_does_not_own_goes_alone() {
    let server = Server::start(80, 24);
    let name = server.name.clone().expect("a private socket");
    let tmux_pid = server.cmd(&["display-message", "-p", "#{pid}"]);
    let dir = std::env::temp_dir().join(format!("waitfor-sweep-reach-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (job, job_pid) = (dir.join("job.sh"), dir.join("job.pid"));
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
    drop(mark);
    waitfor::process::finish_sweeps();
    let job_pid = std::fs::read_to_string(&job_pid).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    // Killed by now, but a kill takes effect when the job next runs, which
    // on a loaded machine can be after this line.
    server.until("the marked job ended", || !runs(job_pid.trim()));
    assert!(
        runs(tmux_pid.trim()),
        "the tmux server was killed with the marked job"
    );
    assert_eq!(server.cmd(&["display-message", "-p", "ok"]).trim(), "ok");
}
