//! Wall-clock time as RFC 3339 text, without a date crate, and the clock
//! an event wait reads it from.

use crate::sync::Mutex;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where an event wait and its source read the wall clock (`since`,
/// `fresh.asOf`): the system's, or a virtual one the simulator sets before
/// each read, so that a simulated wait's envelope is exact.
#[derive(Clone, Default)]
pub(crate) struct Clock(Option<Arc<Mutex<SystemTime>>>);

impl Clock {
    /// A virtual clock that reads `at` until [`Clock::set`] moves it.
    pub(crate) fn virtual_at(at: SystemTime) -> Clock {
        Clock(Some(Arc::new(Mutex::new(at))))
    }

    /// The time now: the system's, or the virtual clock's.
    pub(crate) fn now(&self) -> SystemTime {
        self.0
            .as_ref()
            .map_or_else(SystemTime::now, |at| *at.lock())
    }

    /// The virtual clock's time; `None` for the system clock.
    pub(crate) fn fixed(&self) -> Option<SystemTime> {
        self.0.as_ref().map(|at| *at.lock())
    }

    /// Moves a virtual clock to `at` (the system clock cannot be set).
    pub(crate) fn set(&self, at: SystemTime) {
        if let Some(clock) = &self.0 {
            *clock.lock() = at;
        }
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.fixed() {
            None => f.write_str("Clock(system)"),
            Some(at) => write!(f, "Clock(virtual, {})", rfc3339(at)),
        }
    }
}

/// `t` as RFC 3339 UTC with milliseconds, such as
/// `"2026-01-01T00:00:00.000Z"`; times before 1970 are written as the epoch.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let t = UNIX_EPOCH + Duration::from_millis(1_767_225_600_123);
/// assert_eq!(waitfor::ouro::rfc3339(t), "2026-01-01T00:00:00.123Z");
/// ```
pub fn rfc3339(t: SystemTime) -> String {
    let ms = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let secs = (ms / 1000) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_date(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// Days since 1970-01-01 as (year, month, day) in the proleptic Gregorian
/// calendar, counting in 400-year eras that start on March 1st.
fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468; // days since 0000-03-01
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153; // month from March = 0
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_virtual_clock_reads_what_it_was_set_to() {
        let start = UNIX_EPOCH + std::time::Duration::from_secs(1_767_225_600);
        let clock = Clock::virtual_at(start);
        let shared = clock.clone();
        shared.set(start + std::time::Duration::from_millis(250));
        assert_eq!(rfc3339(clock.now()), "2026-01-01T00:00:00.250Z");
        assert_eq!(Clock::default().fixed(), None);
    }

    #[test]
    fn known_dates() {
        let at = |s: u64| rfc3339(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(1_709_251_199), "2024-02-29T23:59:59.000Z");
        assert_eq!(at(4_102_444_800), "2100-01-01T00:00:00.000Z");
    }
}
