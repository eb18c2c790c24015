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

/// Which way a measure improves: the reader of `libwaitfor ÷ peer` needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Less is better: time, CPU, memory, threads.
    Lower,
    /// More is better: samples taken, calls served.
    Higher,
}

/// One row of the common results table: libwaitfor's figure beside its
/// peer's (or the machine's floor), the same measure in the same unit
/// from the same run. `ours` and `peer` are the raw values the ratio is
/// taken from; `ours_text` and `peer_text` show them with their unit.
///
/// ```
/// use waitfor_bench::{Better, Row};
/// let row = Row {
///     measure: "CPU per sample",
///     ours: 2.0,
///     ours_text: "2.00 µs".into(),
///     peer_name: "thread + sleep loop",
///     peer: 8.0,
///     peer_text: "8.00 µs".into(),
///     better: Better::Lower,
///     goal: "<= 2 µs",
///     met: Some(true),
/// };
/// assert_eq!(
///     row.markdown(),
///     "| CPU per sample | 2.00 µs | thread + sleep loop: 8.00 µs | 0.25 | lower | <= 2 µs | ✓ |"
/// );
/// ```
#[derive(Clone, Debug)]
pub struct Row<'a> {
    /// What is measured, whole enough to read without a section title.
    pub measure: &'a str,
    /// libwaitfor's value.
    pub ours: f64,
    /// libwaitfor's value with its unit.
    pub ours_text: String,
    /// The peer or floor, e.g. "thread + sleep loop".
    pub peer_name: &'a str,
    /// The peer's value, in the unit of `ours`.
    pub peer: f64,
    /// The peer's value with its unit.
    pub peer_text: String,
    /// Which way the measure improves.
    pub better: Better,
    /// The goal, empty when there is none.
    pub goal: &'a str,
    /// Whether the goal is met; `None` when there is no goal.
    pub met: Option<bool>,
}

impl Row<'_> {
    /// The row in the column order of [`TABLE_HEADER`].
    pub fn markdown(&self) -> String {
        format!(
            "| {} | {} | {}: {} | {} | {} | {} | {} |",
            self.measure,
            self.ours_text,
            self.peer_name,
            self.peer_text,
            ratio(self.ours, self.peer),
            match self.better {
                Better::Lower => "lower",
                Better::Higher => "higher",
            },
            self.goal,
            match self.met {
                Some(true) => "✓",
                Some(false) => "✗",
                None => "",
            }
        )
    }

    /// Prints the row on standard output.
    pub fn print(&self) {
        println!("{}", self.markdown());
    }
}

/// The columns of the common results table (two lines: names, rule).
/// `bench/python/bench.py`, `bench/node/rows.mjs` and `bench/pane/run.sh`
/// print the same; `scripts/bench.sh` gathers every row under one header.
pub const TABLE_HEADER: &str = "| measure | libwaitfor | peer or floor, same run | libwaitfor ÷ peer | better | goal | met |\n|---|---|---|---|---|---|---|";

/// Prints [`TABLE_HEADER`].
pub fn header() {
    println!("{TABLE_HEADER}");
}

/// `ours ÷ peer`, with two significant digits below 1, two decimals up to
/// 100 and none beyond; a dash when the peer is zero.
///
/// ```
/// assert_eq!(waitfor_bench::ratio(1.0, 4.0), "0.25");
/// assert_eq!(waitfor_bench::ratio(5.0, 10_000.0), "0.00050");
/// assert_eq!(waitfor_bench::ratio(2.0, 1.2), "1.67");
/// assert_eq!(waitfor_bench::ratio(2000.0, 1.0), "2000");
/// assert_eq!(waitfor_bench::ratio(1.0, 0.0), "—");
/// ```
pub fn ratio(ours: f64, peer: f64) -> String {
    let r = ours / peer;
    if !r.is_finite() {
        "—".to_string()
    } else if r == 0.0 {
        "0".to_string()
    } else if r >= 100.0 {
        format!("{r:.0}")
    } else if r >= 1.0 {
        format!("{r:.2}")
    } else {
        let decimals = (1 - r.log10().floor() as i32).max(2) as usize;
        format!("{r:.decimals$}")
    }
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
