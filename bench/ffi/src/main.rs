//! What the C ABI costs.
//!
//! 1. Per probe call: the same trivial probe ("ready", 5 bytes) called as a
//!    Rust closure and through the C ABI (an `extern "C"` callback filling
//!    the observation with `waitfor_observation_set_text`, wrapped exactly as
//!    `waitfor_start` wraps it). Goal: the C ABI adds at most 1 µs a call.
//! 2. Host CPU while a wait runs: a host thread blocked in
//!    `waitfor_handle_wait` against one that polls it every millisecond, for
//!    the same one-second wait, measured with `CLOCK_THREAD_CPUTIME_ID`.
//!    Goal: the blocked host thread uses no CPU.
//!
//! Run: `cargo run --release -p waitfor-ffi-bench`

use engine::{probe_fn, CancelToken, Observation, Probe, ProbeContext};
use ffi::callbacks::waitfor_observation_set_text;
use ffi::callbacks::{c_probe, waitfor_callbacks, waitfor_observation, waitfor_probe_ctx};
use ffi::handle::{waitfor_handle, waitfor_handle_free, waitfor_handle_wait, waitfor_start};
use ffi::info::waitfor_string_free;
use ffi::status::{WAITFOR_ERR_TIMEOUT, WAITFOR_OK};
use std::ffi::{c_char, c_void};
use std::hint::black_box;
use std::time::{Duration, Instant};
use waitfor_bench::{header, Better, Row};

const CALLS: u32 = 2_000_000;
const ROUNDS: usize = 5;

unsafe extern "C" fn c_ready(
    _user_data: *mut c_void,
    _ctx: *const waitfor_probe_ctx,
    out: *mut waitfor_observation,
) -> i32 {
    // SAFETY: `out` is the observation of the running call.
    unsafe { waitfor_observation_set_text(out, c"ready".as_ptr(), 5) }
}

fn ctx() -> ProbeContext {
    ProbeContext {
        sample: 1,
        elapsed: Duration::ZERO,
        budget: Duration::from_secs(60),
        cancel: CancelToken::new(),
        output_cap: 256 * 1024,
    }
}

/// Best of `ROUNDS` runs of `CALLS` calls, in ns a call.
fn ns_per_call(probe: &mut dyn Probe) -> f64 {
    let ctx = ctx();
    (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..CALLS {
                black_box(probe.sample(black_box(&ctx)).unwrap());
            }
            start.elapsed().as_nanos() as f64 / f64::from(CALLS)
        })
        .fold(f64::INFINITY, f64::min)
}

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

unsafe extern "C" fn c_never(
    _user_data: *mut c_void,
    _ctx: *const waitfor_probe_ctx,
    out: *mut waitfor_observation,
) -> i32 {
    // SAFETY: as in `c_ready`.
    unsafe { waitfor_observation_set_text(out, c"not yet".as_ptr(), 7) }
}

/// A one-second wait (never matches) started through the C ABI.
fn start_one_second_wait() -> *mut waitfor_handle {
    let spec = r#"{"until": {"matches": "ready"}, "interval_ms": 50, "max_wait_ms": 1000}"#;
    let callbacks = waitfor_callbacks {
        probe: Some(c_never),
        progress: None,
        done: None,
        user_data: std::ptr::null_mut(),
        finalize: None,
    };
    let mut handle = std::ptr::null_mut();
    // SAFETY: valid inputs and out-pointers.
    let status = unsafe {
        waitfor_start(
            spec.as_ptr().cast(),
            spec.len(),
            &callbacks,
            &mut handle,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(status, WAITFOR_OK);
    handle
}

/// Host CPU and wall time of waiting for one wait, blocking or polling.
fn host_cost(poll: Option<Duration>) -> (Duration, Duration) {
    let handle = start_one_second_wait();
    let (cpu0, wall0) = (thread_cpu(), Instant::now());
    let mut result: *mut c_char = std::ptr::null_mut();
    loop {
        let timeout = poll.map_or(-1, |_| 0);
        // SAFETY: a live handle and valid out-pointers.
        let status =
            unsafe { waitfor_handle_wait(handle, timeout, &mut result, std::ptr::null_mut()) };
        if status != WAITFOR_ERR_TIMEOUT {
            assert_eq!(status, WAITFOR_OK);
            break;
        }
        std::thread::sleep(poll.unwrap_or_default());
    }
    let cost = (thread_cpu() - cpu0, wall0.elapsed());
    // SAFETY: ours, once.
    unsafe {
        waitfor_string_free(result);
        waitfor_handle_free(handle);
    }
    cost
}

fn main() {
    let mut rust = probe_fn(|_| Ok(Observation::text("ready")));
    let callbacks = waitfor_callbacks {
        probe: Some(c_ready),
        progress: None,
        done: None,
        user_data: std::ptr::null_mut(),
        finalize: None,
    };
    // SAFETY: a valid callbacks struct.
    let mut c = unsafe { c_probe(&callbacks) }.expect("a probe");
    let rust_ns = ns_per_call(&mut rust);
    let c_ns = ns_per_call(c.as_mut());
    let ns = |v: f64| format!("{v:.1} ns");
    header();
    Row {
        measure: "C ABI: one probe call (\"ready\", 5 bytes), through the C ABI",
        ours: c_ns,
        ours_text: ns(c_ns),
        peer_name: "the same probe as a Rust closure",
        peer: rust_ns,
        peer_text: ns(rust_ns),
        better: Better::Lower,
        goal: "adds <= 1000 ns",
        met: Some(c_ns - rust_ns <= 1000.0),
    }
    .print();

    let (blocked_cpu, blocked_wall) = host_cost(None);
    let (polled_cpu, _) = host_cost(Some(Duration::from_millis(1)));
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    Row {
        measure: &format!(
            "C ABI: host thread CPU over a {:.0} ms wait, blocked in waitfor_handle_wait",
            blocked_wall.as_secs_f64() * 1e3
        ),
        ours: blocked_cpu.as_secs_f64(),
        ours_text: ms(blocked_cpu),
        peer_name: "a host thread polling every 1 ms",
        peer: polled_cpu.as_secs_f64(),
        peer_text: ms(polled_cpu),
        better: Better::Lower,
        goal: "",
        met: None,
    }
    .print();
}
