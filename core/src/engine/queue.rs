//! A blocking queue that sleeps at once when empty.
//!
//! The scheduler and the workers hand each other one message per sample;
//! a channel that spins before it sleeps costs more than the handoff
//! itself when a wait samples 20 times a second. This queue takes a lock,
//! and wakes one sleeper at a time, only when none is on its way already:
//! a taker that leaves items behind wakes the next. A pool grown to 2,000
//! workers for hung calls then serves the next burst with the few workers
//! it needs; waking one per item would spread a burst over every worker,
//! each woken cold, and start first calls 3x later (`docs/ARCHITECTURE.md`,
//! Workers). Items come out in order of arrival, or, for the workers'
//! tasks, earliest deadline first.

use crate::sync::{Condvar, Mutex, MutexGuard};
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

/// How a queue keeps its items: in order of arrival (`VecDeque`) or most
/// urgent first (`BinaryHeap`, see [`Urgent`]).
pub(crate) trait Store<T>: Default {
    fn put(&mut self, item: T);
    fn take(&mut self) -> Option<T>;
    fn count(&self) -> usize;
    fn shrink(&mut self, room: usize);
    /// Items it has room for without growing.
    #[cfg(test)]
    fn room(&self) -> usize;
}

impl<T> Store<T> for VecDeque<T> {
    fn put(&mut self, item: T) {
        self.push_back(item);
    }
    fn take(&mut self) -> Option<T> {
        self.pop_front()
    }
    fn count(&self) -> usize {
        self.len()
    }
    fn shrink(&mut self, room: usize) {
        self.shrink_to(room);
    }
    #[cfg(test)]
    fn room(&self) -> usize {
        self.capacity()
    }
}

impl<T: Ord> Store<T> for BinaryHeap<T> {
    fn put(&mut self, item: T) {
        self.push(item);
    }
    fn take(&mut self) -> Option<T> {
        self.pop()
    }
    fn count(&self) -> usize {
        self.len()
    }
    fn shrink(&mut self, room: usize) {
        self.shrink_to(room);
    }
    #[cfg(test)]
    fn room(&self) -> usize {
        self.capacity()
    }
}

/// An item of an earliest-deadline-first queue: the one with the earliest
/// `due` comes out first, and of those due together the first queued.
pub(crate) struct Urgent<T> {
    pub due: Duration,
    /// Arrival order, for ties.
    pub seq: u64,
    pub item: T,
}

impl<T> Urgent<T> {
    fn key(&self) -> (Duration, u64) {
        (self.due, self.seq)
    }
}

impl<T> PartialEq for Urgent<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T> Eq for Urgent<T> {}

impl<T> PartialOrd for Urgent<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Urgent<T> {
    /// Reversed: `BinaryHeap` gives the greatest first.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.key().cmp(&self.key())
    }
}

pub(crate) struct Queue<T, S = VecDeque<T>> {
    state: Mutex<State<S>>,
    ready: Condvar,
    _items: std::marker::PhantomData<fn(T) -> T>,
}

struct State<S> {
    items: S,
    /// Takers asleep in [`Queue::pop`], those woken and not back yet
    /// included.
    sleepers: usize,
    /// Wake-ups sent and not yet taken by a sleeper coming back.
    wakes: usize,
    /// When the last sleeper to go to sleep wakes on its own (`None`: not
    /// before an item); meaningful for a queue with one taker.
    wakes_at: Option<Instant>,
}

impl<T, S: Store<T>> Queue<T, S> {
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State {
                items: S::default(),
                sleepers: 0,
                wakes: 0,
                wakes_at: None,
            }),
            ready: Condvar::new(),
            _items: std::marker::PhantomData,
        }
    }

    /// Adds an item; wakes a sleeper if none is woken already.
    pub fn push(&self, item: T) {
        let mut state = self.state.lock();
        state.items.put(item);
        self.unlock_and_wake(state, true);
    }

    /// Adds several items under one lock; wakes a sleeper if none is
    /// woken already (each taker passes the wake-up on while items are
    /// left).
    pub fn push_all(&self, items: impl IntoIterator<Item = T>) {
        let mut state = self.state.lock();
        let before = state.items.count();
        for item in items {
            state.items.put(item);
        }
        let added = state.items.count() > before;
        self.unlock_and_wake(state, added);
    }

    /// Lets go of the lock, then, if `wanted`, wakes a sleeper when one
    /// sleeps and none is woken already. In that order: a sleeper woken
    /// while the lock is held is often run at once on the waker's core,
    /// finds the lock taken and sleeps again, and the waker is then put
    /// off until it has run: two more switches per hand-over (see
    /// docs/ARCHITECTURE.md, "Wake-ups"). Nothing is lost: the
    /// wake-up is counted under the lock, so a push meanwhile sends no
    /// other, and the sleeper that comes back (woken, or timed out) looks
    /// for items under the lock.
    fn unlock_and_wake(&self, mut state: MutexGuard<'_, State<S>>, wanted: bool) {
        let wake = wanted && state.sleepers > 0 && state.wakes == 0;
        state.wakes += usize::from(wake);
        drop(state);
        if wake {
            self.ready.notify_one();
        }
    }

    /// Adds an item, waking the taker only if it sleeps past `by`: an item
    /// that can wait for a taker about to wake anyway (one wake-up per tick
    /// instead of one per item). Decided under the queue's lock, so the
    /// item is never left behind a taker that went to sleep meanwhile. For
    /// a queue with one taker.
    pub fn push_unless_awake_by(&self, item: T, by: Instant) {
        self.push_all_unless_awake_by(std::iter::once(item), by);
    }

    /// Adds several items under one lock, waking the taker only if it
    /// sleeps past `by` (see [`Queue::push_unless_awake_by`]).
    pub fn push_all_unless_awake_by(&self, items: impl IntoIterator<Item = T>, by: Instant) {
        let mut state = self.state.lock();
        let before = state.items.count();
        for item in items {
            state.items.put(item);
        }
        let added = state.items.count() > before;
        let wanted = added && state.wakes_at.is_none_or(|at| at > by);
        self.unlock_and_wake(state, wanted);
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.state.lock().items.count()
    }

    /// Takes one item, sleeping until one comes or `deadline` passes
    /// (`None`: no deadline).
    ///
    /// A taker that leaves items behind wakes another, so a call that
    /// hangs does not hold up the items queued after it.
    pub fn pop(&self, deadline: Option<Instant>) -> Option<T> {
        let mut state = self.state.lock();
        loop {
            if let Some(item) = state.items.take() {
                let left = state.items.count() > 0;
                self.unlock_and_wake(state, left);
                return Some(item);
            }
            state.sleepers += 1;
            state.wakes_at = deadline;
            let timed_out = match deadline {
                Some(deadline) => self.ready.wait_until(&mut state, deadline),
                None => {
                    self.ready.wait(&mut state);
                    false
                }
            };
            // Which sleeper a wake-up reached does not matter: any one
            // coming back takes it and looks for items.
            state.sleepers -= 1;
            state.wakes = state.wakes.saturating_sub(1);
            if timed_out {
                let item = state.items.take();
                let left = item.is_some() && state.items.count() > 0;
                self.unlock_and_wake(state, left);
                return item;
            }
        }
    }

    /// Gives back room for more than `room` items (at least those waiting).
    pub fn shrink_to(&self, room: usize) {
        self.state.lock().items.shrink(room);
    }

    /// Items it has room for without growing.
    #[cfg(test)]
    pub fn room(&self) -> usize {
        self.state.lock().items.room()
    }
}

impl<T> Queue<T> {
    /// Runs `inside` holding the queue's lock: a test forks meanwhile.
    #[cfg(all(test, unix))]
    pub fn locked(&self, inside: impl FnOnce()) {
        let _state = self.state.lock();
        inside();
    }

    /// Takes every item waiting, without sleeping.
    pub fn drain(&self, into: &mut impl Extend<T>) {
        into.extend(self.state.lock().items.drain(..));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn items_come_out_in_order() {
        let queue = Queue::new();
        queue.push(1);
        queue.push(2);
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.pop(None), Some(1));
        let mut rest = Vec::new();
        queue.drain(&mut rest);
        assert_eq!(rest, vec![2]);
    }

    #[test]
    fn urgent_items_come_out_earliest_due_first_and_ties_in_order() {
        let queue: Queue<Urgent<&str>, BinaryHeap<Urgent<&str>>> = Queue::new();
        let at = Duration::from_millis;
        for (due, seq, item) in [
            (9, 0, "late"),
            (3, 1, "soon"),
            (3, 2, "soon too"),
            (1, 3, "now"),
        ] {
            queue.push(Urgent {
                due: at(due),
                seq,
                item,
            });
        }
        let order: Vec<_> = (0..4).map(|_| queue.pop(None).unwrap().item).collect();
        assert_eq!(order, ["now", "soon", "soon too", "late"]);
    }

    #[test]
    fn a_batch_wakes_one_sleeper_and_each_taker_passes_the_wake_up_on() {
        const TAKERS: usize = 8;
        let queue = Arc::new(Queue::<usize>::new());
        let takers: Vec<_> = (0..TAKERS)
            .map(|_| {
                let queue = queue.clone();
                std::thread::spawn(move || {
                    queue.pop(Some(Instant::now() + Duration::from_secs(60)))
                })
            })
            .collect();
        while queue.state.lock().sleepers < TAKERS {
            std::thread::yield_now();
        }
        queue.push_all(0..TAKERS);
        // One woken (or back already); each that leaves items behind wakes
        // one more, so every item still finds a taker.
        assert!(queue.state.lock().wakes <= 1);
        let mut items: Vec<usize> = takers
            .into_iter()
            .map(|t| t.join().unwrap().unwrap())
            .collect();
        items.sort();
        assert_eq!(items, (0..TAKERS).collect::<Vec<_>>());
    }

    #[test]
    fn pop_times_out_when_empty() {
        let queue: Queue<u8> = Queue::new();
        assert_eq!(
            queue.pop(Some(Instant::now() + Duration::from_millis(1))),
            None
        );
    }

    #[test]
    fn no_item_is_left_behind_sleeping_takers() {
        // Pushers wake takers after letting go of the lock: every item
        // still reaches a taker, however the threads interleave.
        const PUSHERS: usize = 4;
        const ITEMS: usize = 2_000;
        let queue = Arc::new(Queue::<usize>::new());
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let queue = queue.clone();
                std::thread::spawn(move || {
                    let mut taken = 0;
                    let patience = Duration::from_secs(20);
                    while let Some(item) = queue.pop(Some(Instant::now() + patience)) {
                        if item == usize::MAX {
                            return taken;
                        }
                        taken += 1;
                    }
                    panic!("an item was left in the queue with its taker asleep");
                })
            })
            .collect();
        let pushers: Vec<_> = (0..PUSHERS)
            .map(|n| {
                let queue = queue.clone();
                std::thread::spawn(move || {
                    for item in 0..ITEMS {
                        if item % 2 == 0 {
                            queue.push(item);
                        } else {
                            queue.push_all([item]);
                        }
                        if item % 100 == n {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        for pusher in pushers {
            pusher.join().unwrap();
        }
        queue.push_all([usize::MAX, usize::MAX]);
        let taken: usize = takers.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(taken, PUSHERS * ITEMS);
    }

    #[test]
    fn a_sleeper_is_woken_by_a_push() {
        let queue = Arc::new(Queue::<i32>::new());
        let pusher = queue.clone();
        let taker = std::thread::spawn(move || queue.pop(None));
        pusher.push(7);
        assert_eq!(taker.join().unwrap(), Some(7));
    }
}
