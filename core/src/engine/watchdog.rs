//! The watchdog that lets the scheduler run quick probe calls itself.
//!
//! A probe call on a worker costs two thread hand-offs per sample, and on
//! a virtual machine each wake-up of a sleeping thread costs more than a
//! quick probe's whole work. So the scheduler calls probes that have been
//! quick on its own thread. Should such a call hang after all, every
//! other wait would stall with it: the watchdog notices a call running
//! longer than [`STALL`] and hands the scheduler's state to a new thread;
//! the stuck thread, once its call returns, posts the answer like a
//! worker and ends.
//!
//! A call can also look stuck when its thread merely waits for a CPU (a
//! loaded machine, more busy threads than cores). Taking the scheduler
//! away then helps nobody: the new thread waits for a CPU as well, and
//! calls sent to workers meanwhile cost more CPU just when it is short. So
//! before it takes over, the watchdog looks at the thread: blocked in its
//! call (Linux `/proc`), it loses the scheduler at once; runnable, it is
//! looked at every half bound, and keeps the scheduler until it has run
//! half a bound (its CPU clock) since the first look, or the call has
//! lasted [`PREEMPTED_LIMIT`].
//!
//! The watchdog sleeps on a timer the scheduler arms and disarms without
//! waking it (a Linux `timerfd`), so it costs nothing while calls are
//! quick. Elsewhere there is no watchdog and every call goes to workers.

use crate::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// An inline call running longer than this loses the scheduler.
pub(crate) const STALL: Duration = Duration::from_millis(1);

/// The longest an inline call keeps the scheduler while its thread waits
/// for a CPU rather than runs it.
const PREEMPTED_LIMIT: Duration = Duration::from_millis(20);

/// Phases of the inline call in flight, in the low bits of `phase`.
const IDLE: u64 = 0;
const RUNNING: u64 = 1;
const TAKEN: u64 = 2;
const PHASE_BITS: u64 = 3;

/// Proof that the current thread entered an inline call.
#[derive(Clone, Copy)]
pub(crate) struct Ticket(u64);

pub(crate) struct Watchdog {
    timer: timer::Timer,
    epoch: Instant,
    /// The inline call in flight: its number shifted left two bits, and
    /// its phase.
    phase: AtomicU64,
    /// When the inline call in flight began, in nanoseconds since `epoch`.
    started: AtomicU64,
    /// Until when the timer is armed (nanoseconds since `epoch`, 0: not
    /// armed); written by the scheduler only.
    armed_until: AtomicU64,
    /// The thread that makes the inline calls, if known. Written when a
    /// scheduler thread starts, read when a call looks stuck: both rare.
    caller: Mutex<Option<thread::Caller>>,
}

/// The thread in a call past [`STALL`] as the watchdog first saw it.
struct Look {
    /// The call's phase word (which call it was).
    phase: u64,
    /// Its CPU time then.
    ran: Duration,
}

impl Watchdog {
    /// A watchdog, where the platform has the timer it needs.
    pub fn new(epoch: Instant) -> Option<Self> {
        Some(Self {
            timer: timer::Timer::new()?,
            epoch,
            phase: AtomicU64::new(IDLE),
            started: AtomicU64::new(0),
            armed_until: AtomicU64::new(0),
            caller: Mutex::new(None),
        })
    }

    /// Called by a thread that starts making the inline calls (a new
    /// scheduler thread).
    pub fn calls_from_this_thread(&self) {
        *self.caller.lock() = thread::Caller::current();
    }

    fn now(&self) -> u64 {
        nanos(self.epoch.elapsed())
    }

    /// Called by the scheduler before an inline call, which starts at
    /// `started`.
    pub fn enter(&self, started: Instant) -> Ticket {
        let now = nanos(started.saturating_duration_since(self.epoch));
        let number = (self.phase.load(Ordering::Relaxed) >> 2) + 1;
        self.started.store(now, Ordering::Relaxed);
        let ticket = (number << 2) | RUNNING;
        self.phase.store(ticket, Ordering::Release);
        // One arm covers the calls of the next half window; the watchdog
        // re-arms itself for a call that is young when it fires.
        let stall = nanos(STALL);
        if self.armed_until.load(Ordering::Relaxed) < now + stall / 2 {
            self.timer.arm(STALL);
            self.armed_until.store(now + stall, Ordering::Relaxed);
        }
        Ticket(ticket)
    }

    /// Called by the scheduler after an inline call: false when the
    /// watchdog took the scheduler away meanwhile.
    pub fn leave(&self, ticket: Ticket) -> bool {
        self.phase
            .compare_exchange(
                ticket.0,
                ticket.0 & !PHASE_BITS,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// Called by the scheduler after its inline calls of a turn.
    pub fn disarm(&self) {
        if self.armed_until.swap(0, Ordering::Relaxed) != 0 {
            self.timer.disarm();
        }
    }

    /// The watchdog thread's loop: calls `take_over` each time it took the
    /// scheduler away from a stuck inline call.
    pub fn watch(&self, take_over: impl Fn()) -> ! {
        let mut first_look = None;
        loop {
            self.timer.wait();
            let phase = self.phase.load(Ordering::Acquire);
            let now = self.now();
            // The timer may have fired on an arm of ours that overwrote a
            // later one of the scheduler's: never leave it unarmed while
            // the scheduler counts on it.
            let armed_until = self.armed_until.load(Ordering::Relaxed);
            if phase & PHASE_BITS != RUNNING {
                if armed_until > now {
                    self.timer.arm(Duration::from_nanos(armed_until - now));
                }
                continue;
            }
            let started = self.started.load(Ordering::Relaxed);
            let stall_at = started + nanos(STALL);
            if now < stall_at {
                let until = stall_at.max(armed_until);
                self.timer.arm(Duration::from_nanos(until - now));
                continue;
            }
            if now < started + nanos(PREEMPTED_LIMIT)
                && self.queued_for_a_cpu(phase, &mut first_look)
            {
                self.timer.arm(STALL / 2);
                continue;
            }
            let taken = (phase & !PHASE_BITS) | TAKEN;
            if self
                .phase
                .compare_exchange(phase, taken, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                take_over();
            }
        }
    }

    /// Whether the thread in call `phase` is, as far as can be told, not
    /// stuck in it but waiting for a CPU: runnable, and since the first
    /// look at this call it has run less than half a stall bound.
    fn queued_for_a_cpu(&self, phase: u64, first_look: &mut Option<Look>) -> bool {
        let caller = *self.caller.lock();
        let Some(thread::State {
            runnable: true,
            ran,
        }) = caller.and_then(|c| c.state())
        else {
            return false;
        };
        match first_look {
            Some(first) if first.phase == phase => ran.saturating_sub(first.ran) < STALL / 2,
            // The first look at this call: runnable, so look again.
            _ => {
                *first_look = Some(Look { phase, ran });
                true
            }
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(target_os = "linux")]
mod timer {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::Duration;

    /// A one-shot monotonic timer that one thread waits on and any thread
    /// arms or disarms without waking it.
    pub(crate) struct Timer(OwnedFd);

    impl Timer {
        pub fn new() -> Option<Self> {
            // SAFETY: plain syscall; a valid descriptor is owned below.
            let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
            // SAFETY: `fd` is a fresh descriptor nobody else owns.
            (fd >= 0).then(|| Self(unsafe { OwnedFd::from_raw_fd(fd) }))
        }

        pub fn arm(&self, after: Duration) {
            // A zero value would disarm: fire a nanosecond later instead.
            let after = after.max(Duration::from_nanos(1));
            self.set(libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            });
        }

        pub fn disarm(&self) {
            self.set(libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            });
        }

        fn set(&self, value: libc::timespec) {
            let spec = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: value,
            };
            // SAFETY: the descriptor is a timerfd we own; `spec` is valid.
            unsafe {
                libc::timerfd_settime(self.0.as_raw_fd(), 0, &spec, std::ptr::null_mut());
            }
        }

        /// Blocks until the timer fires.
        pub fn wait(&self) {
            let mut expirations = 0u64;
            // SAFETY: reads 8 bytes into a u64 we own.
            unsafe {
                libc::read(
                    self.0.as_raw_fd(),
                    (&mut expirations as *mut u64).cast(),
                    std::mem::size_of::<u64>(),
                );
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod timer {
    use std::time::Duration;

    /// No timer that can be armed without waking its waiter: no watchdog,
    /// and every probe call goes to a worker.
    pub(crate) struct Timer(std::convert::Infallible);

    impl Timer {
        pub fn new() -> Option<Self> {
            None
        }

        pub fn arm(&self, _after: Duration) {
            match self.0 {}
        }

        pub fn disarm(&self) {
            match self.0 {}
        }

        pub fn wait(&self) {
            match self.0 {}
        }
    }
}

#[cfg(target_os = "linux")]
mod thread {
    use std::time::Duration;

    /// A thread as the watchdog finds it.
    pub(crate) struct State {
        /// Running or waiting for a CPU (not blocked).
        pub runnable: bool,
        /// Its CPU time so far.
        pub ran: Duration,
    }

    /// The thread making inline calls: its kernel id (for `/proc`) and its
    /// CPU-time clock, which counts a running thread's current slice too.
    #[derive(Clone, Copy)]
    pub(crate) struct Caller {
        id: i32,
        clock: libc::clockid_t,
    }

    impl Caller {
        /// The calling thread, if its CPU clock can be had.
        pub fn current() -> Option<Self> {
            let mut clock: libc::clockid_t = 0;
            // SAFETY: plain calls on the calling thread; `clock` is ours.
            let (status, id) = unsafe {
                (
                    libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock),
                    libc::gettid(),
                )
            };
            (status == 0).then_some(Self { id, clock })
        }

        /// How the thread is now, if it is still there.
        pub fn state(self) -> Option<State> {
            let stat = std::fs::read_to_string(format!("/proc/self/task/{}/stat", self.id)).ok()?;
            // The state follows the command name, which may hold spaces and
            // parentheses: it comes after the last `)`.
            let state = stat[stat.rfind(')')? + 1..].split_whitespace().next()?;
            let mut ran = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: reads a clock into a timespec we own; a clock of a
            // thread that has ended gives an error, not undefined behaviour.
            if unsafe { libc::clock_gettime(self.clock, &mut ran) } != 0 {
                return None;
            }
            Some(State {
                runnable: state == "R",
                ran: Duration::new(ran.tv_sec as u64, ran.tv_nsec as u32),
            })
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod thread {
    /// Never built: there is no watchdog without its timer.
    pub(crate) struct State {
        pub runnable: bool,
        pub ran: std::time::Duration,
    }

    #[derive(Clone, Copy)]
    pub(crate) struct Caller;

    impl Caller {
        pub fn current() -> Option<Self> {
            None
        }

        pub fn state(self) -> Option<State> {
            None
        }
    }
}
