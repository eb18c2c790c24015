//! Measuring helpers shared by the benchmark programs.

use std::time::Duration;

/// CPU time (user + system) this process has used.
pub fn process_cpu() -> Duration {
    // SAFETY: getrusage fills the struct we pass; RUSAGE_SELF is valid.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Resident memory of this process, in bytes.
pub fn resident_bytes() -> u64 {
    status_field("VmRSS:") * 1024
}

/// Threads of this process.
pub fn threads() -> u64 {
    status_field("Threads:")
}

fn status_field(name: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

/// The `p`-th percentile (0-100) of `samples`, which it sorts.
pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort();
    let rank = ((p / 100.0) * (samples.len() - 1) as f64).round() as usize;
    samples[rank.min(samples.len() - 1)]
}

/// A duration in microseconds with two decimals.
pub fn us(d: Duration) -> String {
    format!("{:.2} µs", d.as_secs_f64() * 1e6)
}

/// A duration in milliseconds with two decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// Prints one result row: what, figure, goal, peer figure, ratio.
pub fn row(what: &str, ours: String, goal: &str, peer: &str, ratio: f64) {
    println!("| {what} | {ours} | {goal} | {peer} | {ratio:.2}x |");
}

/// Prints the table header.
pub fn header(title: &str) {
    println!("\n### {title}\n");
    println!("| measure | libwaitfor | goal | peer | peer / libwaitfor |");
    println!("|---|---|---|---|---|");
}
