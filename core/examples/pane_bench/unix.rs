//! The benchmark itself: tmux runs on Unix.

use std::io::Write;
use std::time::{Duration, Instant};
use waitfor::tmux::{PaneProbe, PaneTarget, PushPath, Tmux};
use waitfor::{Condition, Engine, Pattern, Spec, WaitOptions};

fn cpu_seconds() -> f64 {
    let mut total = 0.0;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: getrusage fills the struct we own.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut u) };
        let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
        total += t(u.ru_utime) + t(u.ru_stime);
    }
    total
}

fn start(
    socket: &str,
    pane: &str,
    text: &str,
    push: bool,
    wait: Duration,
) -> (waitfor::WaitHandle, waitfor::tmux::PaneReportHandle) {
    let target = PaneTarget {
        pane_id: Some(pane.into()),
        ..Default::default()
    };
    let probe = PaneProbe::new(Tmux::new().with_socket_name(socket), target).push(push);
    let report = probe.report();
    let spec = Spec::new(Condition::Matches(Pattern::literal(text)))
        .interval(Duration::from_millis(50))
        .max_wait(wait);
    let handle = Engine::global()
        .start_with(spec, Some(Box::new(probe)), WaitOptions::default())
        .unwrap();
    (handle, report)
}

fn react(socket: &str, pane: &str, tty: &str, push: bool, round: usize) -> f64 {
    let text = format!("bench-line-{}-{round}", if push { "c" } else { "p" });
    let (handle, report) = start(socket, pane, &text, push, Duration::from_secs(10));
    let ready = Instant::now() + Duration::from_secs(5);
    while report.get().pane.is_none() || (push && report.get().push != PushPath::ControlMode) {
        assert!(Instant::now() < ready, "wait never got ready");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A random phase against the poll timer.
    std::thread::sleep(Duration::from_millis(20 + (round as u64 * 37) % 50));
    let mut f = std::fs::OpenOptions::new().write(true).open(tty).unwrap();
    let t0 = Instant::now();
    writeln!(f, "{text}").unwrap();
    let result = handle.wait();
    assert_eq!(result.outcome, waitfor::Outcome::Matched);
    t0.elapsed().as_secs_f64() * 1000.0
}

fn stats(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[v.len() / 2], v.iter().sum::<f64>() / v.len() as f64)
}

fn quiet_cpu(socket: &str, pane: &str, push: bool, secs: u64) -> f64 {
    let c0 = cpu_seconds();
    let (handle, _) = start(
        socket,
        pane,
        "never-appears",
        push,
        Duration::from_secs(secs),
    );
    handle.wait();
    (cpu_seconds() - c0) / secs as f64
}

pub fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (socket, pane, tty) = (&a[1], &a[2], &a[3]);
    let rounds: usize = a[4].parse().unwrap();
    let control: Vec<f64> = (0..rounds)
        .map(|r| react(socket, pane, tty, true, r))
        .collect();
    let polling: Vec<f64> = (0..rounds)
        .map(|r| react(socket, pane, tty, false, r))
        .collect();
    // One capture's cost, for "probe time + 27 ms".
    let tmux = Tmux::new().with_socket_name(socket.as_str());
    let t0 = Instant::now();
    for _ in 0..20 {
        tmux.snapshot(
            pane,
            waitfor::tmux::Rows::Visible,
            Duration::from_secs(2),
            &waitfor::CancelToken::new(),
        )
        .unwrap();
    }
    let probe_ms = t0.elapsed().as_secs_f64() * 1000.0 / 20.0;
    let (cp50, cmean) = stats(control);
    let (pp50, pmean) = stats(polling);
    println!(
        "{}",
        serde_json::json!({
            "control_p50_ms": cp50, "control_mean_ms": cmean,
            "polling_p50_ms": pp50, "polling_mean_ms": pmean,
            "probe_ms": probe_ms,
            "cpu_per_wait_second_control": quiet_cpu(socket, pane, true, 3),
            "cpu_per_wait_second_polling": quiet_cpu(socket, pane, false, 3),
        })
    );
}
