//! What one look at a process's environment in `/proc` says about it,
//! for the sweep of marked processes (`unix::end_marked`).
//!
//! A process in the middle of `execve` shows less of its environment than
//! it has, in two ways, and a sweep that took either for "not marked" let
//! a marked process that was exec'ing as it passed outlive its mark:
//!
//! - From its new memory, nothing (0 bytes) until the new stack that holds
//!   the environment is built. So an empty read is told apart by the
//!   process's `/proc/PID/stat`, read then only.
//! - From the memory `/proc/PID/environ` was opened on, its start only,
//!   when that memory is let go of between two `read` calls: the rest
//!   reads as the end of the file. So the environment is read in one call
//!   ([`read`]), which the kernel serves from one memory.
//!
//! And a process whose main thread has ended (`pthread_exit`) while other
//! threads run on shows none through its pid, as a zombie does: the
//! `/proc/PID` files are the main thread's. Its threads count tells it,
//! and its environment is read through another thread
//! ([`read_through_thread`]).

use std::collections::HashSet;
use std::os::unix::fs::FileExt;

/// The environment of process `pid`, read whole in one `read` call into
/// `buf` (a sweep's, reused from process to process): a buffer that fills
/// is doubled and read again from the start, never continued.
pub(super) fn read(pid: u32, buf: &mut Vec<u8>) -> std::io::Result<&[u8]> {
    let len = read_whole(&format!("/proc/{pid}/environ"), buf)?;
    Ok(&buf[..len])
}

/// The environment of process `pid` as one of its threads other than the
/// main one sees it (`None`: none has one), read as [`read`] does. The
/// threads share one memory, so any live thread's is the process's; a
/// process whose main thread has ended while others run shows none
/// through its own `/proc/PID/environ` ([`Verdict::LeaderEnded`]).
pub(super) fn read_through_thread(pid: u32, buf: &mut Vec<u8>) -> Option<&[u8]> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let len = tasks
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&tid| tid != pid)
        .find_map(|tid| {
            let len = read_whole(&format!("/proc/{pid}/task/{tid}/environ"), buf).ok()?;
            (len > 0).then_some(len)
        })?;
    Some(&buf[..len])
}

/// Reads the file at `path` whole in one `read` call into `buf` (see
/// [`read`]); says how many bytes it holds.
fn read_whole(path: &str, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let file = std::fs::File::open(path)?;
    if buf.is_empty() {
        buf.resize(FIRST_READ, 0);
    }
    loop {
        let len = file.read_at(buf, 0)?;
        if len < buf.len() {
            return Ok(len);
        }
        buf.resize(buf.len() * 2, 0);
    }
}

/// The `/proc/PID/stat` line of process `pid` (`None`: it is gone). Its
/// command name is the basename of the program it ran, any bytes but NUL
/// and '/': one that is not UTF-8 is read lossily, not as "gone", which
/// would let a marked process caught in `execve` of such a program escape
/// (the fields the sweep reads are after the name, and ASCII).
pub(super) fn stat(pid: u32) -> Option<String> {
    let line = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    Some(String::from_utf8_lossy(&line).into_owned())
}

/// The buffer [`read`] starts with: most environments are a few KiB.
const FIRST_READ: usize = 32 << 10;

/// `PF_KTHREAD` in the flags of `/proc/PID/stat`: a kernel thread, which
/// has no environment and is nobody's to end. The flag is the kernel's own
/// word for it, in a line the look at an empty environment reads anyway
/// (for the state and the environment's range), so it costs nothing more;
/// an unreadable `/proc/PID/exe` would also mean "other user's", "gone" or
/// "exiting", and a parent pid of 2 is not a kernel thread in every pid
/// namespace.
const PF_KTHREAD: u64 = 0x0020_0000;
/// `PF_EXITING`: the process's main thread is ending and has let go of
/// its memory (the environment reads empty). With no other thread, the
/// process needs no kill; with others, it runs on in them.
const PF_EXITING: u64 = 0x0000_0004;

/// The marks a sweep ends, and the variable that carries them.
pub(super) struct Marks<'a> {
    /// `VAR=`, how the variable starts in an environment.
    prefix: Vec<u8>,
    /// A set: one sweep serves the marks of hundreds of waits that ended
    /// together, and reads each environment once for all of them.
    marks: HashSet<&'a [u8]>,
}

/// What a look at one process found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// It carries one of the marks: kill it.
    Marked,
    /// It carries none, or needs no kill: do not look at it again.
    NotMarked,
    /// Its environment could not be told (it is in the middle of
    /// `execve`): look at it again in the next pass.
    Unsettled,
    /// Its environment is empty, as far as one look tells: look at it
    /// again in the next pass, and believe it if that look finds it
    /// empty still. (An environment being written shows the same for a
    /// moment; a process that cleared its own, `env -i`, shows it for
    /// good, and costs each sweep one more look only.)
    SeemsEmpty,
    /// Its main thread has ended (a zombie, or ending) while other threads
    /// run on, and `/proc/PID/environ` shows the main thread's memory,
    /// none: read the environment through another thread
    /// ([`read_through_thread`]). A kill of its pid ends them all.
    LeaderEnded,
}

impl<'a> Marks<'a> {
    pub(super) fn new(var: &str, marks: &'a [String]) -> Self {
        Self {
            prefix: format!("{var}=").into_bytes(),
            marks: marks.iter().map(|m| m.as_bytes()).collect(),
        }
    }

    /// What a process with `environ` (its `/proc/PID/environ`) is. `stat`
    /// reads its `/proc/PID/stat` (`None`: it is gone), and is called for
    /// an empty environment only; `seemed_empty` says the previous look
    /// found [`Verdict::SeemsEmpty`].
    pub(super) fn verdict(
        &self,
        environ: &[u8],
        stat: impl FnOnce() -> Option<String>,
        seemed_empty: bool,
    ) -> Verdict {
        if environ.is_empty() {
            return stat().map_or(Verdict::NotMarked, |stat| empty_read(&stat, seemed_empty));
        }
        if self.carried_by(environ) {
            Verdict::Marked
        } else {
            Verdict::NotMarked
        }
    }

    /// Whether `environ` holds one of the marks.
    pub(super) fn carried_by(&self, environ: &[u8]) -> bool {
        environ.split(|&b| b == 0).any(|entry| {
            entry
                .strip_prefix(self.prefix.as_slice())
                .is_some_and(|mark| self.marks.contains(mark))
        })
    }
}

/// What an empty read of a process's environment means, from its `stat`.
/// The range of its environment in memory tells `execve` apart: none yet
/// (0) until the new stack is built. A kernel thread, a zombie and a
/// process ending have no memory, so no range either (and recent kernels
/// refuse to read their environment at all, which the sweep takes for an
/// empty read). Those are the state and flags of the main thread only:
/// one that ended (`pthread_exit`) while other threads run leaves the
/// process running, and the number of its threads tells it.
fn empty_read(stat: &str, seemed_empty: bool) -> Verdict {
    // The command name, in parentheses, may hold spaces and ')': the
    // fields after it start after the last ')'.
    let Some(after_name) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
        return Verdict::Unsettled;
    };
    // Field `n` as proc(5) numbers them (the state is the 3rd).
    let field = |n: usize| after_name.split_ascii_whitespace().nth(n - 3);
    let number = |n: usize| field(n).and_then(|f| f.parse::<u64>().ok());
    let flags = number(9).unwrap_or(0);
    if flags & PF_KTHREAD != 0 {
        return Verdict::NotMarked;
    }
    if matches!(field(3), Some("Z" | "X")) || flags & PF_EXITING != 0 {
        // Field 20 counts the threads, the ended main one among them.
        return if number(20).is_some_and(|threads| threads > 1) {
            Verdict::LeaderEnded
        } else {
            Verdict::NotMarked
        };
    }
    match (number(50), number(51)) {
        (Some(start), Some(end)) if end != 0 && start == end => {
            if seemed_empty {
                Verdict::NotMarked
            } else {
                Verdict::SeemsEmpty
            }
        }
        // No range yet (in `execve`), or one filled since the read.
        _ => Verdict::Unsettled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARK: &str = "0123abcd";

    /// A `/proc/PID/stat` line of a process with one thread: `state`,
    /// `flags` and the environment's range (fields 3, 9, 50 and 51), in a
    /// command name with spaces and a ')' to skip.
    fn stat(state: &str, flags: u64, env: (u64, u64)) -> String {
        stat_of_threads(state, flags, env, 1)
    }

    /// As [`stat`], of a process with `threads` threads (field 20).
    fn stat_of_threads(state: &str, flags: u64, env: (u64, u64), threads: u64) -> String {
        let mut fields: Vec<String> = (3..=52).map(|_| "0".to_string()).collect();
        fields[0] = state.to_string();
        fields[9 - 3] = flags.to_string();
        fields[20 - 3] = threads.to_string();
        fields[50 - 3] = env.0.to_string();
        fields[51 - 3] = env.1.to_string();
        format!("4242 (a) b (c) {}", fields.join(" "))
    }

    fn verdict(environ: &[u8], stat: Option<String>, seemed_empty: bool) -> Verdict {
        let marks = [MARK.to_string()];
        Marks::new("WAITFOR_RUN", &marks).verdict(environ, || stat, seemed_empty)
    }

    /// A user process's flags (`PF_RANDOMIZE`, as `/proc` shows them).
    const USER: u64 = 0x0040_0000;
    /// The range an empty environment has after `execve`.
    const EMPTY: (u64, u64) = (0x7ffd_0000, 0x7ffd_0000);

    #[test]
    fn a_marked_environment_is_killed() {
        let environ = format!("A=1\0WAITFOR_RUN={MARK}\0B=2\0");
        assert_eq!(verdict(environ.as_bytes(), None, false), Verdict::Marked);
    }

    #[test]
    fn an_environment_without_the_mark_is_done() {
        let other = b"A=1\0WAITFOR_RUN=ffff\0XWAITFOR_RUN=0123abcd\0";
        assert_eq!(verdict(other, None, false), Verdict::NotMarked);
    }

    #[test]
    fn an_empty_read_of_a_process_in_execve_is_looked_at_again() {
        let in_execve = stat("R", USER, (0, 0));
        assert_eq!(
            verdict(b"", Some(in_execve.clone()), false),
            Verdict::Unsettled
        );
        assert_eq!(verdict(b"", Some(in_execve), true), Verdict::Unsettled);
        // Its environment was set up between the two reads.
        let filled = stat("R", USER, (0x7ffd_0000, 0x7ffd_0100));
        assert_eq!(verdict(b"", Some(filled), true), Verdict::Unsettled);
    }

    #[test]
    fn an_empty_environment_is_believed_on_the_second_look() {
        assert_eq!(
            verdict(b"", Some(stat("S", USER, EMPTY)), false),
            Verdict::SeemsEmpty
        );
        assert_eq!(
            verdict(b"", Some(stat("S", USER, EMPTY)), true),
            Verdict::NotMarked
        );
    }

    #[test]
    fn an_empty_read_of_what_has_no_memory_is_done() {
        let kernel_thread = stat("S", 0x0020_8040, (0, 0));
        let zombie = stat("Z", USER, (0, 0));
        let ending = stat("R", USER | 0x4, (0, 0));
        for stat in [kernel_thread, zombie, ending] {
            assert_eq!(verdict(b"", Some(stat), false), Verdict::NotMarked);
        }
        // Gone by the time its `stat` was read.
        assert_eq!(verdict(b"", None, false), Verdict::NotMarked);
    }

    #[test]
    fn an_empty_read_of_a_process_whose_main_thread_ended_looks_through_another() {
        let zombie_leader = stat_of_threads("Z", USER | 0x4, (0, 0), 2);
        let ending_leader = stat_of_threads("R", USER | 0x4, (0, 0), 3);
        for stat in [zombie_leader, ending_leader] {
            assert_eq!(verdict(b"", Some(stat), false), Verdict::LeaderEnded);
        }
        // A kernel thread is nobody's, however many threads it counts.
        let kernel_thread = stat_of_threads("S", 0x0020_8044, (0, 0), 2);
        assert_eq!(verdict(b"", Some(kernel_thread), false), Verdict::NotMarked);
    }

    #[test]
    fn an_environment_larger_than_the_buffer_is_read_whole_from_its_start() {
        let pid = std::process::id();
        let whole = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        assert!(
            whole.len() > 8,
            "the test's environment is longer than 8 bytes"
        );
        let mut small = vec![0; 8];
        assert_eq!(read(pid, &mut small).unwrap(), whole.as_slice());
    }

    /// A process running a program whose name is not UTF-8 (its command
    /// name in `stat`) is told by its `stat` as any other.
    #[test]
    fn a_stat_line_whose_command_name_is_not_utf8_is_read() {
        use std::os::unix::ffi::OsStrExt;
        let dir = std::env::temp_dir().join(format!("waitfor-stat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let program = dir.join(std::ffi::OsStr::from_bytes(b"sl\xffeep"));
        let _ = std::fs::remove_file(&program);
        std::os::unix::fs::symlink("/bin/sleep", &program).unwrap();
        let mut child = std::process::Command::new(&program)
            .arg("30")
            .spawn()
            .unwrap();
        // The command name is set as `execve` ends, after the spawn.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let line = loop {
            let line = super::stat(child.id()).expect("the child runs");
            if line.contains('\u{fffd}') || std::time::Instant::now() > deadline {
                break line;
            }
            std::thread::yield_now();
        };
        child.kill().unwrap();
        child.wait().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(line.contains("(sl\u{fffd}eep) "), "{line}");
    }

    #[test]
    fn an_unreadable_stat_line_is_looked_at_again() {
        assert_eq!(
            verdict(b"", Some("4242 (sh".into()), false),
            Verdict::Unsettled
        );
    }
}
