//! Every wait's next sample and deadline.
//!
//! Sample times are rounded up to a grain so that thousands of waits share
//! wake-ups; they go into one bucket per grain, so arming one costs an
//! append and a turn takes whole buckets instead of popping a heap entry
//! by entry (with 10,000 waits the heap walk was the scheduler's largest
//! cost). Deadlines are exact and stay in a heap.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::Duration;

/// Sample timers are rounded up to this grain; deadlines are exact.
///
/// A sample may come up to a grain after its planned time (the plan
/// itself does not drift: see the machine's grid). Each wake-up of the
/// scheduler costs 45-80 µs of CPU on a virtual machine, more than a
/// quick sample: waits started a few milliseconds apart share one
/// wake-up per interval at 2 ms where they needed two or three at 1 ms
/// (the README's benchmark figures give the gain).
pub(crate) const TIMER_GRAIN: Duration = Duration::from_millis(2);

/// A due timer: the wait's id and the timer's sequence number (0 for the
/// deadline, valid while the wait runs).
pub(crate) type Due = (u64, u64);

#[derive(Default)]
pub(crate) struct Timers {
    /// Sample timers by grain number (time since the epoch / grain).
    buckets: BTreeMap<u64, Vec<Due>>,
    /// Emptied bucket vectors, kept for their capacity.
    spare: Vec<Vec<Due>>,
    deadlines: BinaryHeap<Reverse<(Duration, u64)>>,
    samples: usize,
}

fn grain_of(at: Duration) -> u64 {
    let grain = TIMER_GRAIN.as_nanos();
    u64::try_from(at.as_nanos().div_ceil(grain)).unwrap_or(u64::MAX)
}

fn start_of(grain: u64) -> Duration {
    let grain_nanos = u64::try_from(TIMER_GRAIN.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(grain.saturating_mul(grain_nanos))
}

impl Timers {
    /// Arms wait `id`'s sample timer number `seq` at `at`, rounded up to
    /// the grain; none when that is past `deadline` (the deadline fires).
    pub fn arm_sample(&mut self, at: Duration, deadline: Duration, id: u64, seq: u64) {
        let grain = grain_of(at);
        if start_of(grain) > deadline {
            return;
        }
        let spare = &mut self.spare;
        self.buckets
            .entry(grain)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push((id, seq));
        self.samples += 1;
    }

    /// Arms wait `id`'s deadline.
    pub fn arm_deadline(&mut self, at: Duration, id: u64) {
        self.deadlines.push(Reverse((at, id)));
    }

    /// When the next timer fires.
    pub fn next(&self) -> Option<Duration> {
        let sample = self.buckets.keys().next().map(|&g| start_of(g));
        let deadline = self.deadlines.peek().map(|Reverse((at, _))| *at);
        match (sample, deadline) {
            (Some(s), Some(d)) => Some(s.min(d)),
            (s, d) => s.or(d),
        }
    }

    /// Moves every timer due at `now` into `due`.
    pub fn take_due(&mut self, now: Duration, due: &mut Vec<Due>) {
        while let Some(entry) = self.buckets.first_entry() {
            if start_of(*entry.key()) > now {
                break;
            }
            let mut bucket = entry.remove();
            self.samples -= bucket.len();
            due.append(&mut bucket);
            self.spare.push(bucket);
        }
        while let Some(Reverse((at, id))) = self.deadlines.peek().copied() {
            if at > now {
                break;
            }
            self.deadlines.pop();
            due.push((id, 0));
        }
    }

    /// Gives back room for more than `room` entries, and the spare
    /// bucket vectors beyond `room`.
    pub fn shrink_to(&mut self, room: usize) {
        self.deadlines.shrink_to(room);
        self.spare.truncate(room);
        self.spare.shrink_to(room);
        for bucket in &mut self.spare {
            bucket.shrink_to(room);
        }
    }

    /// Entries held, stale ones included.
    pub fn len(&self) -> usize {
        self.samples + self.deadlines.len()
    }

    /// Drops the entries `live` rejects (timers of finished waits, sample
    /// timers replaced by later ones).
    pub fn retain(&mut self, live: impl Fn(u64, u64) -> bool) {
        self.deadlines.retain(|Reverse((_, id))| live(*id, 0));
        let mut samples = 0;
        self.buckets.retain(|_, bucket| {
            bucket.retain(|&(id, seq)| live(id, seq));
            samples += bucket.len();
            !bucket.is_empty()
        });
        self.samples = samples;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn samples_round_up_to_the_grain_and_deadlines_are_exact() {
        let mut timers = Timers::default();
        // Planned 0.3 ms into the second grain: rounded up to its end.
        let planned = TIMER_GRAIN + Duration::from_micros(300);
        timers.arm_sample(planned, ms(100), 1, 5);
        timers.arm_deadline(planned - Duration::from_micros(200), 2);
        assert_eq!(timers.next(), Some(planned - Duration::from_micros(200)));
        let mut due = Vec::new();
        timers.take_due(planned - Duration::from_micros(100), &mut due);
        assert_eq!(due, vec![(2, 0)]);
        timers.take_due(TIMER_GRAIN * 2 - Duration::from_nanos(1), &mut due);
        assert_eq!(due, vec![(2, 0)]);
        timers.take_due(TIMER_GRAIN * 2, &mut due);
        assert_eq!(due, vec![(2, 0), (1, 5)]);
        assert_eq!((timers.len(), timers.next()), (0, None));
    }

    #[test]
    fn timers_keep_their_time_after_months_of_uptime() {
        // Grain numbers past u32::MAX (99.4 days of 2 ms grains).
        let mut timers = Timers::default();
        let now = Duration::from_secs(120 * 86_400);
        timers.arm_sample(
            now + Duration::from_secs(10),
            now + Duration::from_secs(3600),
            1,
            1,
        );
        let mut due = Vec::new();
        timers.take_due(now, &mut due);
        assert!(due.is_empty(), "a timer 10 s ahead fired at once: {due:?}");
        assert_eq!(timers.next(), Some(now + Duration::from_secs(10)));
    }

    #[test]
    fn a_sample_past_the_deadline_is_left_to_the_deadline() {
        let mut timers = Timers::default();
        timers.arm_sample(
            Duration::from_micros(9_500),
            Duration::from_micros(9_200),
            1,
            1,
        );
        assert_eq!(timers.len(), 0);
    }

    #[test]
    fn retain_drops_stale_entries() {
        let mut timers = Timers::default();
        timers.arm_sample(ms(5), ms(100), 1, 1);
        timers.arm_sample(ms(5), ms(100), 1, 2);
        timers.arm_deadline(ms(100), 1);
        timers.arm_deadline(ms(100), 2);
        timers.retain(|id, seq| id == 1 && seq != 1);
        let mut due = Vec::new();
        timers.take_due(ms(100), &mut due);
        assert_eq!(due, vec![(1, 2), (1, 0)]);
    }
}
