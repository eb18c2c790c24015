//! A wait's first job on a CPU thread (`cpu.rs`): compiling its conditions, in its own
//! time rather than on the host's thread (large patterns take seconds).

use super::call::panic_message;
use super::queue::Queue;
use super::scheduler::Msg;
use crate::cancel::CancelToken;
use crate::machine::Conditions;
use crate::spec::{Condition, Spec};
use crate::Pattern;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The conditions of wait `id` to compile.
pub(crate) struct CompileJob {
    pub id: u64,
    pub spec: Box<Spec>,
    /// Cancelled when the wait ends: a compile not begun by then is skipped.
    pub ended: CancelToken,
}

/// What compiling gave: the conditions, or why the wait cannot go on.
pub(crate) type Compiled = Result<Conditions, String>;

impl CompileJob {
    /// Compiles, and queues the outcome in the scheduler's `inbox`.
    pub fn run(self, inbox: &Queue<Msg>) {
        let Self { id, spec, ended } = self;
        // A wait that ended before its compile began has no use for it.
        let compiled = (!ended.is_cancelled()).then(|| {
            catch_unwind(AssertUnwindSafe(|| {
                crate::pattern::until_wait_ends(&ended, || Conditions::compile(&spec))
            }))
        });
        drop_spec(spec);
        let compiled = match compiled {
            None => return,
            Some(Ok(Ok(conditions))) => Ok(conditions),
            Some(Ok(Err(error))) => Err(format!(
                "the spec's patterns could not be compiled: {error}"
            )),
            Some(Err(panic)) => Err(format!(
                "compiling the spec's patterns panicked: {}",
                panic_message(panic.as_ref())
            )),
        };
        inbox.push(Msg::Compiled {
            id,
            conditions: compiled,
        });
    }
}

/// Specs with up to this many patterns are looked up in the compile cache
/// on the scheduler thread: cached patterns are at most 256 bytes, so the
/// lookup takes microseconds whatever an agent sends.
const CACHE_LOOKUP_PATTERNS: usize = 16;

/// `spec`'s conditions at once, when every pattern in them is in the
/// compile cache: the scheduler calls this itself, so that a wait on
/// patterns compiled before needs no CPU thread to start. Why: with every
/// CPU thread busy compiling others' large patterns, such a wait would
/// otherwise wait for one before its first sample, and miss its deadline
/// there.
pub(crate) fn from_cache(spec: &Spec) -> Option<Conditions> {
    let mut count = 0;
    if visit_patterns(spec, &mut |_| {
        count += 1;
        count > CACHE_LOOKUP_PATTERNS
    }) {
        return None;
    }
    crate::pattern::from_cache_only(|| Conditions::compile(spec)).ok()
}

/// Pattern text above this is given back when its spec is freed.
const LARGE_TEXT_BYTES: usize = 256 << 10;

/// Frees `spec`. Its patterns' text can be megabytes (60 of 60 KiB), freed
/// after whatever trim its compile asked for, or with none if the compile
/// was skipped: so a large one asks for a trim of its own.
fn drop_spec(spec: Box<Spec>) {
    let large = pattern_text_bytes(&spec) > LARGE_TEXT_BYTES;
    drop(spec);
    if large {
        crate::memory::give_back_freed_memory();
    }
}

fn pattern_text_bytes(spec: &Spec) -> usize {
    let mut bytes = 0;
    visit_patterns(spec, &mut |p| {
        bytes += p.text.len();
        false
    });
    bytes
}

/// Calls `stop` with each pattern of `spec`'s conditions and stop markers
/// until it returns true; says whether it did.
fn visit_patterns(spec: &Spec, stop: &mut impl FnMut(&Pattern) -> bool) -> bool {
    fn condition(c: &Condition, stop: &mut impl FnMut(&Pattern) -> bool) -> bool {
        match c {
            Condition::Matches(p) | Condition::NotMatches(p) => stop(p),
            Condition::Patterns(list) => list.iter().any(&mut *stop),
            Condition::Any(list) | Condition::All(list) => list.iter().any(|c| condition(c, stop)),
            _ => false,
        }
    }
    condition(&spec.until, stop) || spec.stop.iter().any(stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheduler_takes_conditions_from_the_cache_only_for_a_few_cached_patterns() {
        let spec = |n: usize| {
            let patterns = (0..n).map(|i| Pattern::literal(format!("cache lookup {i}")));
            Spec::new(Condition::Patterns(patterns.collect()))
        };
        assert!(from_cache(&spec(1)).is_none(), "nothing compiled yet");
        Conditions::compile(&spec(CACHE_LOOKUP_PATTERNS + 1)).unwrap();
        assert!(from_cache(&spec(CACHE_LOOKUP_PATTERNS)).is_some());
        // Cached, but more than a lookup on the scheduler may take.
        assert!(from_cache(&spec(CACHE_LOOKUP_PATTERNS + 1)).is_none());
    }

    #[test]
    fn a_large_spec_asks_for_its_memory_back_even_when_its_compile_is_skipped() {
        let inbox = Queue::new();
        let ended = CancelToken::new();
        ended.cancel();
        let long = Pattern::literal("x".repeat(60 << 10));
        let skipped = |id, patterns| CompileJob {
            id,
            spec: Box::new(Spec::new(Condition::Patterns(vec![long.clone(); patterns]))),
            ended: ended.clone(),
        };
        let asked = crate::memory::GIVE_BACKS_ASKED.get();
        skipped(1, 1).run(&inbox);
        assert_eq!(
            crate::memory::GIVE_BACKS_ASKED.get(),
            asked,
            "60 KiB of text"
        );
        skipped(2, 60).run(&inbox);
        assert_eq!(
            crate::memory::GIVE_BACKS_ASKED.get(),
            asked + 1,
            "3.6 MiB of text"
        );
        assert_eq!(inbox.len(), 0);
    }
}
