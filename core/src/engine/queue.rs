//! A blocking queue that sleeps at once when empty.
//!
//! The scheduler and the workers hand each other one message per sample;
//! a channel that spins before it sleeps costs more than the handoff
//! itself when a wait samples 20 times a second. This queue takes a lock,
//! and wakes a sleeper only when one sleeps.

use crate::sync::{Condvar, Mutex};
use std::collections::VecDeque;
use std::time::Instant;

pub(crate) struct Queue<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

struct State<T> {
    items: VecDeque<T>,
    sleepers: usize,
    /// When the last sleeper to go to sleep wakes on its own (`None`: not
    /// before an item); meaningful for a queue with one taker.
    wakes_at: Option<Instant>,
}

impl<T> Queue<T> {
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State {
                items: VecDeque::new(),
                sleepers: 0,
                wakes_at: None,
            }),
            ready: Condvar::new(),
        }
    }

    /// Adds an item; wakes one sleeper if any sleeps.
    pub fn push(&self, item: T) {
        let mut state = self.state.lock();
        state.items.push_back(item);
        if state.sleepers > 0 {
            self.ready.notify_one();
        }
    }

    /// Adds several items under one lock, waking as many sleepers as
    /// there are items (at most).
    pub fn push_all(&self, items: impl IntoIterator<Item = T>) {
        let mut state = self.state.lock();
        let before = state.items.len();
        state.items.extend(items);
        let added = state.items.len() - before;
        for _ in 0..added.min(state.sleepers) {
            self.ready.notify_one();
        }
    }

    /// Adds an item, waking the taker only if it sleeps past `by`: an item
    /// that can wait for a taker about to wake anyway (one wake-up per tick
    /// instead of one per item). Decided under the queue's lock, so the
    /// item is never left behind a taker that went to sleep meanwhile. For
    /// a queue with one taker.
    pub fn push_unless_awake_by(&self, item: T, by: Instant) {
        let mut state = self.state.lock();
        state.items.push_back(item);
        if state.sleepers > 0 && state.wakes_at.is_none_or(|at| at > by) {
            self.ready.notify_one();
        }
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.state.lock().items.len()
    }

    /// Takes one item, sleeping until one comes or `deadline` passes
    /// (`None`: no deadline).
    pub fn pop(&self, deadline: Option<Instant>) -> Option<T> {
        let mut state = self.state.lock();
        loop {
            if let Some(item) = state.items.pop_front() {
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
            state.sleepers -= 1;
            if timed_out {
                return state.items.pop_front();
            }
        }
    }

    /// Gives back room for more than `room` items (at least those waiting).
    pub fn shrink_to(&self, room: usize) {
        self.state.lock().items.shrink_to(room);
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
    use std::time::Duration;

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
    fn pop_times_out_when_empty() {
        let queue: Queue<u8> = Queue::new();
        assert_eq!(
            queue.pop(Some(Instant::now() + Duration::from_millis(1))),
            None
        );
    }

    #[test]
    fn a_sleeper_is_woken_by_a_push() {
        let queue = Arc::new(Queue::new());
        let pusher = queue.clone();
        let taker = std::thread::spawn(move || queue.pop(None));
        pusher.push(7);
        assert_eq!(taker.join().unwrap(), Some(7));
    }
}
