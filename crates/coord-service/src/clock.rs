//! The one clock. Production uses the database's clock (so hosts sharing a database
//! agree on expiry); tests inject a [`ManualClock`] and move time instead of sleeping.

use chrono::{Duration, Utc};
use coord_domain::Timestamp;
use coord_domain::time::truncate_micros;
use std::sync::{Mutex, PoisonError};

pub trait Clock: Send + Sync {
    /// The current time, or `None` to let the store use the database's clock.
    fn now(&self) -> Option<Timestamp>;
}

/// Defers to the database's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct DatabaseClock;

impl Clock for DatabaseClock {
    fn now(&self) -> Option<Timestamp> {
        None
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Timestamp>,
}

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        ManualClock {
            now: Mutex::new(truncate_micros(start)),
        }
    }

    /// Starts at the current wall-clock time, so rows written through it sort sensibly
    /// beside rows written by the database's clock.
    pub fn starting_now() -> Self {
        ManualClock::new(Utc::now())
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now += by;
    }

    pub fn advance_minutes(&self, m: i64) {
        self.advance(Duration::minutes(m));
    }

    pub fn set(&self, t: Timestamp) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = truncate_micros(t);
    }

    pub fn get(&self) -> Timestamp {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Option<Timestamp> {
        Some(self.get())
    }
}
