//! Values kept per wait by the small slot number the package hands out and
//! reuses once the wait has ended (an index, not a hash lookup): each
//! wait's controls, and the reply of its probe call in flight with the
//! wait's key, which is never reused, so a late answer never reaches the
//! slot's next wait.

/// Values by slot: a slot's next value replaces the last one.
///
/// ```ignore
/// let mut slots = Slots::default();
/// assert!(slots.put(3, (41, 'a')).is_none());
/// assert!(slots.take_if(3, |(key, _)| *key == 40).is_none());
/// assert_eq!(slots.get(3), Some(&(41, 'a')));
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

    /// Every value held.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.values.iter().flatten()
    }

    /// Takes the value in `slot` if `wanted` says it is the one.
    pub fn take_if(&mut self, slot: u32, wanted: impl FnOnce(&T) -> bool) -> Option<T> {
        self.values
            .get_mut(slot as usize)?
            .take_if(|value| wanted(value))
    }
}
