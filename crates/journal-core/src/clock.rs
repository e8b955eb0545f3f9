//! When a record was written: [`At`], a UTC instant to the millisecond in one
//! canonical RFC 3339 spelling, and the injected [`Clock`] the runtime reads it
//! from, so tests and the golden corpus stay byte-stable.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The instant a record was written: UTC, milliseconds, spelled
/// `YYYY-MM-DDTHH:MM:SS.mmmZ` and nothing else (one spelling per instant, so
/// the bytes a record is hashed over are a function of the instant).
///
/// ```
/// use journal_core::At;
/// let at = At::parse("2026-12-02T09:30:00.250Z")?;
/// assert_eq!(at.to_string(), "2026-12-02T09:30:00.250Z");
/// assert!(At::parse("2026-12-02T09:30:00Z").is_err()); // no milliseconds: another spelling
/// # Ok::<(), journal_core::clock::AtError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct At {
    unix_millis: i64,
}

/// Why a text is not an [`At`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AtError {
    /// Not the canonical spelling.
    #[error("{text:?} is not a UTC instant spelled YYYY-MM-DDTHH:MM:SS.mmmZ")]
    NotCanonical {
        /// The text (truncated).
        text: String,
    },
    /// Outside the years 1970 to 9999.
    #[error("{unix_millis} ms since the epoch is outside the years 1970 to 9999")]
    OutOfRange {
        /// The instant asked for.
        unix_millis: i64,
    },
}

const FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.3fZ";
/// 9999-12-30T00:00:00Z, inside what every reader of RFC 3339 handles.
const MAX_MILLIS: i64 = 253_402_041_600_000;

impl At {
    /// The instant `unix_millis` milliseconds after 1970-01-01T00:00:00Z.
    pub fn from_unix_millis(unix_millis: i64) -> Result<Self, AtError> {
        if !(0..=MAX_MILLIS).contains(&unix_millis) {
            return Err(AtError::OutOfRange { unix_millis });
        }
        Ok(Self { unix_millis })
    }

    /// Milliseconds since 1970-01-01T00:00:00Z.
    pub fn unix_millis(&self) -> i64 {
        self.unix_millis
    }

    /// Parses the canonical spelling and nothing else.
    pub fn parse(text: &str) -> Result<Self, AtError> {
        let refuse = || AtError::NotCanonical { text: text.chars().take(40).collect() };
        if text.len() != 24 {
            return Err(refuse());
        }
        let timestamp: jiff::Timestamp = text.parse().map_err(|_| refuse())?;
        let at = Self::from_unix_millis(timestamp.as_millisecond())?;
        if at.to_string() != text {
            return Err(refuse());
        }
        Ok(at)
    }

    /// Parses a bound a person types: the canonical spelling, any RFC 3339
    /// instant (`2026-11-01T00:00:00Z`), or a date (`2026-11-01`, its midnight UTC).
    pub fn parse_lenient(text: &str) -> Result<Self, AtError> {
        let refuse = || AtError::NotCanonical { text: text.chars().take(40).collect() };
        if let Ok(timestamp) = text.parse::<jiff::Timestamp>() {
            return Self::from_unix_millis(timestamp.as_millisecond());
        }
        let date: jiff::civil::Date = text.parse().map_err(|_| refuse())?;
        let zoned = date.to_zoned(jiff::tz::TimeZone::UTC).map_err(|_| refuse())?;
        Self::from_unix_millis(zoned.timestamp().as_millisecond())
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // In range by construction, so the conversion cannot fail; the
        // fallback keeps Display total all the same.
        match jiff::Timestamp::from_millisecond(self.unix_millis) {
            Ok(timestamp) => write!(f, "{}", timestamp.strftime(FORMAT)),
            Err(_) => write!(f, "@{}ms", self.unix_millis),
        }
    }
}

impl Serialize for At {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for At {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        At::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Where the runtime reads the time it writes on every record.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> At;
}

/// The system's clock. Before 1970 (a broken clock) it reads the epoch.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> At {
        let millis = jiff::Timestamp::now().as_millisecond().clamp(0, MAX_MILLIS);
        At { unix_millis: millis }
    }
}

/// A clock for tests and fixtures: starts at an instant and moves on by a
/// fixed step at every reading, so every record gets a distinct, repeatable time.
#[derive(Debug)]
pub struct SteppingClock {
    next: AtomicI64,
    step_millis: i64,
}

impl SteppingClock {
    /// Starts at `start` and advances `step_millis` per reading.
    pub fn new(start: At, step_millis: i64) -> Self {
        Self { next: AtomicI64::new(start.unix_millis), step_millis }
    }
}

impl Clock for SteppingClock {
    fn now(&self) -> At {
        let millis = self.next.fetch_add(self.step_millis, Ordering::Relaxed);
        At { unix_millis: millis.clamp(0, MAX_MILLIS) }
    }
}

/// The system clock, shared.
pub fn system_clock() -> &'static SystemClock {
    static CLOCK: SystemClock = SystemClock;
    &CLOCK
}
