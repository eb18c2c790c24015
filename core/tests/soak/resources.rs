//! What the process holds: threads, descriptors, resident memory, the
//! allocator's blocks in use and child processes.

use std::fmt;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
pub struct Usage {
    pub threads: usize,
    pub fds: usize,
    pub rss_bytes: u64,
    /// Bytes the program holds in allocator blocks (0 where glibc's
    /// counters are not to be had; `None` when not read): unlike the
    /// resident size, free memory the allocator keeps for reuse is not in
    /// it.
    pub heap_bytes: Option<u64>,
    pub children: usize,
}

/// Absolute slack on top of 10%: a few threads the runtime keeps
/// (delivery lanes, a watcher), a few descriptors, allocator caches.
const SLACK_THREADS: usize = 4;
const SLACK_FDS: usize = 8;
const SLACK_RSS: u64 = 8 << 20;
/// The test's own records of 10,000 waits (outcomes, times, messages)
/// are about 0.5 MiB of it when it measures.
const SLACK_HEAP: u64 = 2 << 20;

impl Usage {
    pub fn now() -> Self {
        Self {
            heap_bytes: Some(heap_bytes()),
            ..Self::without_heap()
        }
    }

    /// Usage without the allocator's count, for readings taken while the
    /// engine works: glibc counts by walking every arena's free lists with
    /// that arena locked, which stops each thread that allocates meanwhile
    /// (a fifth of the CPU, in bursts, when read every 100 waits).
    pub fn without_heap() -> Self {
        let count = |dir: &str| std::fs::read_dir(dir).map_or(0, Iterator::count);
        Self {
            threads: count("/proc/self/task"),
            fds: count("/proc/self/fd"),
            rss_bytes: rss_bytes(),
            heap_bytes: None,
            children: children(),
        }
    }

    /// What is still above `baseline` beyond 10% and the slack; empty
    /// when back to baseline.
    pub fn excess_over(&self, baseline: &Usage) -> Vec<String> {
        let limit = |base: u64, slack: u64| base + base / 10 + slack;
        let mut excess = Vec::new();
        let threads = limit(baseline.threads as u64, SLACK_THREADS as u64);
        if self.threads as u64 > threads {
            excess.push(format!("threads {} > {threads}", self.threads));
        }
        let fds = limit(baseline.fds as u64, SLACK_FDS as u64);
        if self.fds as u64 > fds {
            excess.push(format!("descriptors {} > {fds}", self.fds));
        }
        let rss = limit(baseline.rss_bytes, SLACK_RSS);
        if self.rss_bytes > rss {
            excess.push(format!(
                "RSS {} MiB > {} MiB",
                self.rss_bytes >> 20,
                rss >> 20
            ));
        }
        if let (Some(now), Some(base)) = (self.heap_bytes, baseline.heap_bytes) {
            let heap = limit(base, SLACK_HEAP);
            if now > heap {
                excess.push(format!(
                    "allocator blocks in use {} KiB > {} KiB",
                    now >> 10,
                    heap >> 10
                ));
            }
        }
        if self.children > 0 {
            excess.push(format!("{} child processes left", self.children));
        }
        excess
    }

    /// Polls until usage is back to `baseline` or `patience` passes (idle
    /// workers leave after a while); returns the last reading and what is
    /// still in excess.
    pub fn settle(baseline: &Usage, patience: Duration) -> (Usage, Vec<String>) {
        let end = Instant::now() + patience;
        loop {
            let now = Usage::now();
            let excess = now.excess_over(baseline);
            if excess.is_empty() || Instant::now() >= end {
                return (now, excess);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
        let in_use = self
            .heap_bytes
            .map_or(String::new(), |b| format!(" ({:.1} MiB in use)", mib(b)));
        write!(
            f,
            "{} threads, {} fds, {:.1} MiB RSS{in_use}, {} children",
            self.threads,
            self.fds,
            mib(self.rss_bytes),
            self.children
        )
    }
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf with a valid name only reads a constant.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

#[cfg(target_env = "gnu")]
fn heap_bytes() -> u64 {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks + info.hblkhd) as u64
}

#[cfg(not(target_env = "gnu"))]
fn heap_bytes() -> u64 {
    0
}

/// Processes whose parent is this process (zombies included).
fn children() -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| {
            // The parent is the 2nd field after the parenthesised name.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                == Some(me.as_str())
        })
        .count()
}

/// Watches the machine while the waits run: how many tasks it has
/// runnable at once (the `procs_running` of `/proc/stat`, every 10 ms),
/// the waits' commands and this process's threads among them, and how
/// late a thread that only sleeps 10 ms at a time wakes up: the floor of
/// lateness on that machine, beside the engine's.
pub struct LoadWatch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    watcher: std::thread::JoinHandle<Load>,
}

/// What [`LoadWatch`] saw.
pub struct Load {
    pub most_runnable: usize,
    /// How late each 10 ms sleep of the watcher ended, sorted.
    pub oversleeps: Vec<Duration>,
}

impl LoadWatch {
    pub fn start() -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let watcher = std::thread::spawn(move || {
            const NAP: Duration = Duration::from_millis(10);
            let mut load = Load {
                most_runnable: 0,
                oversleeps: Vec::new(),
            };
            while !stopped.load(std::sync::atomic::Ordering::SeqCst) {
                load.most_runnable = load.most_runnable.max(runnable_tasks());
                let slept_from = Instant::now();
                std::thread::sleep(NAP);
                load.oversleeps
                    .push(slept_from.elapsed().saturating_sub(NAP));
            }
            load.oversleeps.sort();
            load
        });
        Self { stop, watcher }
    }

    pub fn finish(self) -> Load {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.watcher.join().expect("the load watcher ran")
    }
}

fn runnable_tasks() -> usize {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines()
        .find_map(|line| line.strip_prefix("procs_running "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}
