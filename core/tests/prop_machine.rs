//! Properties of the wait machine on virtual time (the simulator), over
//! random specs, probe timelines and host actions: no probe call after the
//! result; the result never after the deadline, and a timeout exactly at
//! it; a stop marker wins a tie with a match in the same sample; the
//! sample plan (first sample at once, then on an interval grid, no
//! overlap, no planned sample missing, backoff non-decreasing and capped);
//! and a wait resumed from its token over one stream loses nothing and
//! sees nothing twice.

use proptest::prelude::*;
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use waitfor::probes::FileProbe;
use waitfor::simulate::{simulate, simulate_probe, Control, Script, ScriptStep};
use waitfor::{
    probe_fn, Backoff, Condition, ErrorPolicy, Observation, Outcome, Pattern, Policy, Probe,
    ProbeContext, ProbeError, ProbeMode, ResumeToken, Spec,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// What one scripted probe call answers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shows {
    Noise,
    Ready,
    Fail,
    /// The success and the failure marker in the same sample.
    Both,
    Error,
    Hang,
}

impl Shows {
    fn decides(self) -> bool {
        matches!(self, Shows::Ready | Shows::Fail | Shows::Both)
    }
}

/// A scripted call: virtual milliseconds it takes, and its answer.
type Call = (u64, Shows);

fn shows(decisive: bool, hang: bool) -> BoxedStrategy<Shows> {
    let mut choices = vec![(6, Just(Shows::Noise)), (2, Just(Shows::Error))];
    if decisive {
        choices.extend([
            (1, Just(Shows::Ready)),
            (1, Just(Shows::Fail)),
            (1, Just(Shows::Both)),
        ]);
    }
    if hang {
        choices.push((1, Just(Shows::Hang)));
    }
    proptest::strategy::Union::new_weighted(choices).boxed()
}

fn calls(decisive: bool, hang: bool) -> impl Strategy<Value = Vec<Call>> {
    prop::collection::vec((0..400u64, shows(decisive, hang)), 1..12)
}

fn script(calls: &[Call]) -> Script {
    let steps = calls
        .iter()
        .map(|&(takes, shows)| ScriptStep {
            takes: ms(takes),
            answer: match shows {
                Shows::Noise => Some(Ok(Observation::text("working\n"))),
                Shows::Ready => Some(Ok(Observation::text("working\nREADY\n"))),
                Shows::Fail => Some(Ok(Observation::text("working\nFAIL\n"))),
                Shows::Both => Some(Ok(Observation::text("READY and FAIL\n"))),
                Shows::Error => Some(Err(ProbeError::new("refused"))),
                Shows::Hang => None,
            },
        })
        .collect();
    Script {
        mode: ProbeMode::Snapshot,
        steps,
        controls: Vec::new(),
    }
}

/// The scripted call made as call `i` (the last step repeats).
fn call_at(calls: &[Call], i: usize) -> Call {
    calls[i.min(calls.len() - 1)]
}

/// Until "READY", stop at "FAIL"; errors tolerated `tolerate` times in a row.
fn spec(interval: u64, max_wait: u64, tolerate: u32) -> Spec {
    Spec::new(Condition::Matches(Pattern::literal("READY")))
        .stop([Pattern::literal("FAIL")])
        .interval(ms(interval))
        .max_wait(ms(max_wait))
        .on_probe_error(ErrorPolicy::Tolerate(tolerate))
}

/// An interval and a longer time limit, in milliseconds.
fn timing() -> impl Strategy<Value = (u64, u64)> {
    (10..500u64).prop_flat_map(|interval| (Just(interval), interval + 1..interval * 12))
}

/// The first multiple of `interval` after `start` that is not before `end`.
fn next_planned(start: u64, end: u64, interval: u64) -> u64 {
    let after = start + interval;
    if end <= after {
        after
    } else {
        end.div_ceil(interval) * interval
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the probe answers and the host does: no call starts after
    /// the result or overlaps the one before; the result comes at the
    /// deadline at the latest (a timeout exactly at it) and never after a
    /// cancel; the sample that decides is the first decisive one, and a
    /// failure marker wins over a success marker in it.
    #[test]
    fn result_timeline(
        (interval, max_wait) in timing(),
        calls in calls(true, true),
        tolerate in 0..3u32,
        controls in prop::collection::vec((0..6000u64, prop_oneof![Just(Control::Cancel), Just(Control::Wake)]), 0..3),
        ceiling in prop::option::of(20..6000u64),
    ) {
        let spec = spec(interval, max_wait, tolerate);
        let policy = ceiling.map_or_else(Policy::default, |c| Policy::default().max_wait_ceiling(ms(c)));
        let mut script = script(&calls);
        script.controls = controls.iter().map(|&(at, c)| (ms(at), c)).collect();
        let sim = simulate(&spec, &policy, &script).unwrap();
        let r = &sim.result;
        let end = r.elapsed_ms;
        let limit = max_wait.min(ceiling.unwrap_or(u64::MAX));
        prop_assert_eq!(r.effective_max_wait_ms, limit);
        prop_assert!(end <= limit, "result at {} after the deadline {}", end, limit);
        if r.outcome == Outcome::Timeout {
            prop_assert_eq!(end, limit, "a timeout ends exactly at the deadline");
        }
        let first_cancel = controls.iter().filter(|(_, c)| *c == Control::Cancel).map(|(at, _)| *at).min();
        if let Some(cancel) = first_cancel {
            prop_assert!(end <= cancel, "result at {} after the cancel at {}", end, cancel);
        }
        prop_assert_eq!(sim.call_starts_ms.first(), Some(&0), "the first sample is taken at once");
        for (i, &start) in sim.call_starts_ms.iter().enumerate() {
            prop_assert!(start <= end, "call {} starts at {}, after the result at {}", i, start, end);
            let (takes, shows) = call_at(&calls, i);
            let answered = start + takes;
            if let Some(&next) = sim.call_starts_ms.get(i + 1) {
                prop_assert!(shows != Shows::Hang, "a call after a hung one");
                prop_assert!(next >= answered, "call {} at {} overlaps the one answering at {}", i + 1, next, answered);
                prop_assert!(!shows.decides(), "call {} decided, yet the wait went on", i);
            } else if shows.decides() && answered == end {
                let expected = if shows == Shows::Ready { Outcome::Matched } else { Outcome::Stopped };
                prop_assert_eq!(r.outcome, expected, "{:?} decided", shows);
            }
        }
        if matches!(r.outcome, Outcome::Matched | Outcome::Stopped) {
            let last = sim.call_starts_ms.len() - 1;
            let (takes, shows) = call_at(&calls, last);
            prop_assert_eq!(sim.call_starts_ms[last] + takes, end, "decided when the last call answered");
            prop_assert!(shows.decides());
        }
    }

    /// Without wakes or a decision, samples keep to the plan: the first at
    /// once, each next one at the first grid point (a multiple of the
    /// interval) after the last start that the last call has ended by, and
    /// none missing before the deadline.
    #[test]
    fn sample_plan((interval, max_wait) in timing(), calls in calls(false, false)) {
        let spec = spec(interval, max_wait, u32::MAX);
        let sim = simulate(&spec, &Policy::default(), &script(&calls)).unwrap();
        // Every call may fail (tolerated): no sample is then a probe error.
        prop_assert!(matches!(sim.result.outcome, Outcome::Timeout | Outcome::ProbeError));
        prop_assert_eq!(sim.result.elapsed_ms, max_wait);
        let starts = &sim.call_starts_ms;
        prop_assert_eq!(starts[0], 0);
        for i in 0..starts.len() {
            let (takes, _) = call_at(&calls, i);
            let planned = next_planned(starts[i], starts[i] + takes, interval);
            match starts.get(i + 1) {
                Some(&next) => prop_assert_eq!(next, planned, "call {} in {:?}", i + 1, starts),
                None => prop_assert!(planned >= max_wait, "the sample planned at {} is missing before the deadline {}", planned, max_wait),
            }
        }
    }

    /// With backoff and instant calls, the gaps between samples never
    /// shrink and never pass the cap; the first gap is the interval.
    #[test]
    fn backoff_plan(
        interval in 10..300u64,
        factor in 1.0..4.0f64,
        cap_over in 0..2000u64,
        max_wait in 500..20_000u64,
    ) {
        let cap = ms(interval + cap_over);
        let spec = spec(interval, max_wait.max(interval + 1), 0).backoff(Backoff { factor, max_interval: cap });
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let mut probe = probe_fn(move |ctx| {
            record.lock().unwrap().push(ctx.elapsed);
            Ok(Observation::text("working"))
        });
        let sim = simulate_probe(&spec, &Policy::default(), &mut probe, &[]).unwrap();
        prop_assert_eq!(sim.result.outcome, Outcome::Timeout);
        let starts = seen.lock().unwrap().clone();
        prop_assert_eq!(starts[0], Duration::ZERO);
        let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        if let Some(first) = gaps.first() {
            prop_assert_eq!(*first, ms(interval));
        }
        prop_assert!(gaps.windows(2).all(|g| g[0] <= g[1]), "gaps shrink: {:?}", gaps);
        prop_assert!(gaps.iter().all(|g| *g <= cap), "a gap over the cap {:?}: {:?}", cap, gaps);
    }

    /// Two waits over one growing file, the second resumed from the first's
    /// token (as text, as hosts pass it): together they see every byte
    /// written after the first began, once, even when a write ends inside a
    /// character.
    #[test]
    fn resume_exactly_once(
        text in "[a-z\\n é✓]{0,120}",
        cuts in prop::collection::vec(0..40usize, 1..12),
        first_until in 1..10usize,
        (interval, max_wait) in timing(),
    ) {
        let dir = TempDir::new();
        let path = dir.0.join("app.log");
        std::fs::write(&path, "old content\n").unwrap();
        let chunks = chunks(text.as_bytes(), &cuts);
        let split = first_until.min(chunks.len());
        let spec = spec(interval, max_wait, 0);

        // The first wait writes its chunks as it samples, then times out.
        let mut first = Writing::new(FileProbe::new(&path), &path, &chunks[..split]);
        simulate_probe(&spec, &Policy::default(), &mut first, &[]).unwrap();
        let token = first.probe.resume_point().expect("a file probe that read can resume");
        let token = ResumeToken::decode(&token.encode()).unwrap();

        // The rest is written between the waits and during the second.
        for chunk in first.chunks.drain(..) {
            append(&path, &chunk);
        }
        let (between, during) = chunks[split..].split_at(chunks[split..].len() / 2);
        for chunk in between {
            append(&path, chunk);
        }
        let mut second = Writing::new(FileProbe::new(&path).resume_from(&token), &path, during);
        simulate_probe(&spec, &Policy::default(), &mut second, &[]).unwrap();
        second.drain();
        let seen = format!("{}{}", first.seen, second.seen);
        prop_assert_eq!(seen, text);
    }
}

/// `bytes` cut at the given lengths (what is left is the last chunk).
fn chunks(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = bytes;
    for &cut in cuts {
        let (chunk, after) = rest.split_at(cut.min(rest.len()));
        out.push(chunk.to_vec());
        rest = after;
    }
    out.push(rest.to_vec());
    out
}

fn append(path: &Path, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
}

/// A file probe whose file gets one more chunk before each sample after
/// the first (the writer and the wait interleaved on virtual time), and
/// that keeps what it returned.
struct Writing {
    probe: FileProbe,
    path: PathBuf,
    chunks: VecDeque<Vec<u8>>,
    samples: u64,
    seen: String,
}

impl Writing {
    fn new(probe: FileProbe, path: &Path, chunks: &[Vec<u8>]) -> Self {
        Self {
            probe,
            path: path.to_path_buf(),
            chunks: chunks.iter().cloned().collect(),
            samples: 0,
            seen: String::new(),
        }
    }

    /// Writes what is left and reads to the end, as a later wait would.
    fn drain(&mut self) {
        for chunk in self.chunks.drain(..) {
            append(&self.path, &chunk);
        }
        let ctx = ProbeContext {
            sample: self.samples + 1,
            elapsed: Duration::ZERO,
            budget: ms(1000),
            cancel: waitfor::CancelToken::new(),
            output_cap: 1 << 20,
        };
        self.seen.push_str(&self.probe.sample(&ctx).unwrap().text);
    }
}

impl Probe for Writing {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        self.samples += 1;
        if self.samples > 1 {
            if let Some(chunk) = self.chunks.pop_front() {
                append(&self.path, &chunk);
            }
        }
        let observation = self.probe.sample(ctx)?;
        self.seen.push_str(&observation.text);
        Ok(observation)
    }

    fn mode(&self) -> ProbeMode {
        ProbeMode::Stream
    }
}

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "waitfor-prop-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
