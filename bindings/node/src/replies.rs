//! What is kept per wait on the JavaScript side of the channel, by the
//! small slot number the package hands out (and reuses once the wait has
//! ended): the reply of its probe call in flight, checked against the
//! wait's key, and its controls (see `channel`).
//!
//! Slots make finding a reply an index instead of a hash lookup; the key
//! (never reused) keeps a late answer, or the end of a wait whose slot
//! now belongs to another, from reaching the wrong wait.

use waitfor::Reply;

/// Values kept by slot: a slot's next value replaces the last one.
///
/// ```ignore
/// let mut slots = Slots::default();
/// assert!(slots.put(3, 'a').is_none());
/// assert_eq!(slots.get(3), Some(&'a'));
/// assert_eq!(slots.put(3, 'b'), Some('a'));
/// ```
pub struct Slots<T> {
    values: Vec<Option<T>>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Self { values: Vec::new() }
    }
}

impl<T> Slots<T> {
    /// Keeps `value` in `slot`; returns the value the slot held.
    pub fn put(&mut self, slot: u32, value: T) -> Option<T> {
        let slot = slot as usize;
        if slot >= self.values.len() {
            self.values.resize_with(slot + 1, || None);
        }
        self.values[slot].replace(value)
    }

    /// The value in `slot`, if any.
    pub fn get(&self, slot: u32) -> Option<&T> {
        self.values.get(slot as usize)?.as_ref()
    }

    /// The value in `slot`, to change or take.
    fn entry(&mut self, slot: u32) -> Option<&mut Option<T>> {
        self.values.get_mut(slot as usize)
    }
}

/// The replies of the probe calls in flight, by slot.
///
/// ```ignore
/// let mut replies = Replies::default();
/// assert!(replies.put(3, 41, reply).is_none());
/// assert!(replies.take(3, 40).is_none()); // another wait's key: left alone
/// assert!(replies.take(3, 41).is_some());
/// ```
#[derive(Default)]
pub struct Replies {
    slots: Slots<(u64, Reply)>,
}

impl Replies {
    /// Keeps `reply` for the call of wait `key` in `slot`; returns a reply
    /// the slot still held (a wait that has ended), for the caller to
    /// drop: a dropped reply answers as it goes.
    pub fn put(&mut self, slot: u32, key: u64, reply: Reply) -> Option<Reply> {
        self.slots.put(slot, (key, reply)).map(|(_, old)| old)
    }

    /// Takes the reply of wait `key` from `slot`, if it is there.
    pub fn take(&mut self, slot: u32, key: u64) -> Option<Reply> {
        let held = self.slots.entry(slot)?;
        match held {
            Some((k, _)) if *k == key => held.take().map(|(_, reply)| reply),
            _ => None,
        }
    }
}
