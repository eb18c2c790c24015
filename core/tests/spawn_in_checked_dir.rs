//! A command given an opened, checked directory (`RunOptions::cwd_dir`)
//! runs in that very directory, and on Linux starts without a fork.
//!
//! Alone in its test binary: it registers a fork handler, which must see
//! no fork but this test's.
#![cfg(any(target_os = "linux", target_os = "android"))]

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use waitfor::process::{run_bounded, RunOptions};
use waitfor::CancelToken;

/// Where the fork handler writes a byte for each fork (-1: nowhere).
static FORKS_TOLD_TO: AtomicI32 = AtomicI32::new(-1);

/// Runs in the child of every `fork` of this process (not for
/// `posix_spawn`, which glibc starts with a `clone` of its own).
extern "C" fn tell_of_fork() {
    let fd = FORKS_TOLD_TO.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: `write` is async-signal-safe; the byte is on the stack.
        unsafe { libc::write(fd, [1u8].as_ptr().cast(), 1) };
    }
}

/// Forks seen so far: the bytes in the handler's pipe.
fn forks_seen(read_end: &OwnedFd) -> usize {
    let mut seen = 0;
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: reads into a buffer of the given length; the read end is
        // non-blocking.
        let n = unsafe { libc::read(read_end.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return seen;
        }
        seen += n as usize;
    }
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `pipe2` fills the two descriptors it is given.
    assert_eq!(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK) },
        0
    );
    // SAFETY: both descriptors were just opened and are owned here.
    unsafe {
        use std::os::fd::FromRawFd;
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    }
}

#[test]
fn a_command_runs_in_the_opened_directory_and_starts_without_a_fork() {
    let (read_end, write_end) = pipe();
    FORKS_TOLD_TO.store(write_end.as_raw_fd(), Ordering::SeqCst);
    // SAFETY: registers a plain function that only writes to a pipe.
    unsafe { libc::pthread_atfork(None, None, Some(tell_of_fork)) };

    let root = tempfile::Builder::new()
        .prefix("waitfor-spawn-dir-")
        .tempdir()
        .unwrap();
    let checked = root.path().join("checked");
    std::fs::create_dir_all(&checked).unwrap();
    let opened = OwnedFd::from(std::fs::File::open(&checked).unwrap());
    // The path now leads elsewhere: the command must not follow it.
    let moved = root.path().join("moved");
    std::fs::rename(&checked, &moved).unwrap();
    std::fs::create_dir(&checked).unwrap();

    let opts = RunOptions {
        cwd: Some(checked.clone()),
        cwd_dir: Some(Arc::new(opened)),
        ..RunOptions::default()
    };
    let argv = ["pwd", "-P"].map(String::from);
    let out = run_bounded(&argv, &opts, Duration::from_secs(20), &CancelToken::new()).unwrap();
    let ran_in = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        ran_in.trim_end(),
        std::fs::canonicalize(&moved).unwrap().to_str().unwrap(),
        "the command runs in the directory that was opened"
    );

    // The handler works: a forked start is seen...
    let mut hooked = std::process::Command::new("true");
    // SAFETY: the hook does nothing; it only makes the start a fork.
    unsafe {
        use std::os::unix::process::CommandExt;
        hooked.pre_exec(|| Ok(()));
    }
    assert!(hooked.status().unwrap().success());
    let forks = forks_seen(&read_end);
    assert_eq!(
        forks, 1,
        "the probe's own start is not a fork, the hooked one is"
    );
}
