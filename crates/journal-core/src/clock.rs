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
    /// A time of day with no UTC offset: which instant it names depends on a
    /// zone the text does not give.
    #[error(
        "{text:?} gives a time of day but no UTC offset: add Z for UTC or its offset (2026-11-01T09:00:00Z, \
         2026-11-01T09:00:00+01:00), or give a date alone (its midnight UTC)"
    )]
    NoOffset {
        /// The text (truncated).
        text: String,
    },
    /// Before 1970-01-01T00:00:00.000Z or after 9999-12-29T00:00:00.000Z.
    #[error(
        "{unix_millis} ms since the epoch is outside the instants held here, 1970-01-01T00:00:00.000Z to \
         9999-12-29T00:00:00.000Z"
    )]
    OutOfRange {
        /// The instant asked for.
        unix_millis: i64,
    },
}

/// 9999-12-29T00:00:00Z, inside what every reader of RFC 3339 handles.
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

    /// Parses the canonical spelling and nothing else. Every record read
    /// parses one, so this reads the fixed layout directly (a tenth of a
    /// general RFC 3339 parse and a re-spelling); `tests/instants.rs` holds
    /// it to jiff on both sides.
    pub fn parse(text: &str) -> Result<Self, AtError> {
        let refuse = || AtError::NotCanonical { text: text.chars().take(40).collect() };
        let bytes: &[u8; 24] = text.as_bytes().try_into().map_err(|_| refuse())?;
        let [
            y0,
            y1,
            y2,
            y3,
            b'-',
            mo0,
            mo1,
            b'-',
            d0,
            d1,
            b'T',
            h0,
            h1,
            b':',
            mi0,
            mi1,
            b':',
            s0,
            s1,
            b'.',
            ms0,
            ms1,
            ms2,
            b'Z',
        ] = *bytes
        else {
            return Err(refuse());
        };
        let number = |digits: &[u8]| {
            digits
                .iter()
                .try_fold(0i64, |sum, digit| digit.is_ascii_digit().then(|| sum * 10 + i64::from(digit - b'0')))
        };
        let field = |digits: &[u8], range: std::ops::RangeInclusive<i64>| number(digits).filter(|n| range.contains(n));
        let (Some(year), Some(month)) = (number(&[y0, y1, y2, y3]), field(&[mo0, mo1], 1..=12)) else {
            return Err(refuse());
        };
        let day = field(&[d0, d1], 1..=days_in_month(year, month)).ok_or_else(refuse)?;
        let (Some(hour), Some(minute), Some(second), Some(millis)) =
            (field(&[h0, h1], 0..=23), field(&[mi0, mi1], 0..=59), field(&[s0, s1], 0..=59), number(&[ms0, ms1, ms2]))
        else {
            return Err(refuse());
        };
        let seconds = ((days_from_civil(year, month, day) * 24 + hour) * 60 + minute) * 60 + second;
        Self::from_unix_millis(seconds * 1000 + millis)
    }

    /// Parses a bound a person types: the canonical spelling, any RFC 3339
    /// instant (`2026-11-01T00:00:00Z`), or a date (`2026-11-01`, its midnight UTC).
    /// A time of day with no offset is refused, never read as its date alone.
    pub fn parse_lenient(text: &str) -> Result<Self, AtError> {
        let refuse = || AtError::NotCanonical { text: text.chars().take(40).collect() };
        if let Ok(timestamp) = text.parse::<jiff::Timestamp>() {
            return Self::from_unix_millis(timestamp.as_millisecond());
        }
        // jiff reads a date out of a civil date-time too, dropping its time
        // (and any zone name): `2026-11-01T09:30:00` was read as midnight.
        if text.contains(['T', 't', ' ', ':', '[']) {
            return Err(match text.parse::<jiff::civil::DateTime>() {
                Ok(_) => AtError::NoOffset { text: text.chars().take(40).collect() },
                Err(_) => refuse(),
            });
        }
        let date: jiff::civil::Date = text.parse().map_err(|_| refuse())?;
        // Its midnight UTC, reckoned here: jiff holds no instant past
        // 9999-12-30, and a date past the range is out of range, not misspelt.
        let days = days_from_civil(i64::from(date.year()), i64::from(date.month()), i64::from(date.day()));
        Self::from_unix_millis(days * 86_400_000)
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (days, millis_of_day) = (self.unix_millis.div_euclid(86_400_000), self.unix_millis.rem_euclid(86_400_000));
        let (year, month, day) = civil_from_days(days);
        let (hour, minute) = (millis_of_day / 3_600_000, millis_of_day / 60_000 % 60);
        let (second, millis) = (millis_of_day / 1000 % 60, millis_of_day % 1000);
        write!(f, "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z")
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`, exact for every date; `month` 1 to 12).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date `days` after 1970-01-01 (the inverse of [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
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
