//! Where probe calls in flight answer: one place per wait, by a small
//! slot number the package hands out (and reuses once the wait has
//! ended), checked against the wait's key.
//!
//! Slots make finding a reply an index instead of a hash lookup; the key
//! (never reused) keeps a late answer, or the end of a wait whose slot
//! now belongs to another, from reaching the wrong wait.

use waitfor::Reply;

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
    slots: Vec<Option<(u64, Reply)>>,
}

impl Replies {
    /// Keeps `reply` for the call of wait `key` in `slot`; returns a reply
    /// the slot still held (a wait that has ended), for the caller to
    /// drop outside its lock: a dropped reply answers as it goes.
    pub fn put(&mut self, slot: u32, key: u64, reply: Reply) -> Option<Reply> {
        let slot = slot as usize;
        if slot >= self.slots.len() {
            self.slots.resize_with(slot + 1, || None);
        }
        self.slots[slot].replace((key, reply)).map(|(_, old)| old)
    }

    /// Takes the reply of wait `key` from `slot`, if it is there.
    pub fn take(&mut self, slot: u32, key: u64) -> Option<Reply> {
        let held = self.slots.get_mut(slot as usize)?;
        match held {
            Some((k, _)) if *k == key => held.take().map(|(_, reply)| reply),
            _ => None,
        }
    }
}
