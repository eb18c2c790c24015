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

/// The most resident memory this process has had, in bytes.
pub fn peak_resident_bytes() -> u64 {
    status_field("VmHWM:") * 1024
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

/// Where the benchmarks keep their tables: `bench/RESULTS.md`.
pub fn results_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("RESULTS.md")
}

/// Writes `body` as the section `name` of `file`, between the lines
/// `<!-- name:begin -->` and `<!-- name:end -->`, leaving every other
/// section as it is: each benchmark owns its own section. The file and
/// the section are created when missing.
///
/// ```
/// let file = std::env::temp_dir().join(format!("results-doc-{}.md", std::process::id()));
/// waitfor_bench::write_section(&file, "demo", "| a |\n").unwrap();
/// waitfor_bench::write_section(&file, "demo", "| b |\n").unwrap();
/// let text = std::fs::read_to_string(&file).unwrap();
/// assert!(text.contains("| b |") && !text.contains("| a |"));
/// std::fs::remove_file(&file).unwrap();
/// ```
pub fn write_section(file: &std::path::Path, name: &str, body: &str) -> std::io::Result<()> {
    let begin = format!("<!-- {name}:begin -->");
    let end = format!("<!-- {name}:end -->");
    let section = format!("{begin}\n{body}{end}\n");
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            "# Benchmark results\n\nWritten by `make bench`; each benchmark rewrites its own section.\n\n"
                .to_string()
        }
        Err(e) => return Err(e),
    };
    let text = match (text.find(&begin), text.find(&end)) {
        (Some(from), Some(to)) if from < to => {
            let after = text[to + end.len()..].trim_start_matches('\n');
            format!("{}{section}{after}", &text[..from])
        }
        _ => format!("{}\n\n{section}", text.trim_end_matches('\n')),
    };
    std::fs::write(file, text)
}
