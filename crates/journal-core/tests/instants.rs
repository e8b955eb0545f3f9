//! `At`, the instant every record carries, against jiff (an RFC 3339
//! implementation that is not ours): the canonical spelling it writes and the
//! only one it reads (R-CHAIN-2: the bytes hashed are a function of the instant).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, missing_docs)]

use journal_core::At;
use proptest::prelude::*;

/// 9999-12-29T00:00:00Z, the last instant `At` holds.
const MAX_MILLIS: i64 = 253_402_041_600_000;

fn jiff_spelling(millis: i64) -> String {
    jiff::Timestamp::from_millisecond(millis).unwrap().strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// What a general parser says a text is, held to the canonical spelling:
/// the rule `At::parse` implemented before it read the layout directly.
fn jiff_reading(text: &str) -> Option<i64> {
    let timestamp: jiff::Timestamp = text.parse().ok()?;
    let millis = timestamp.as_millisecond();
    ((0..=MAX_MILLIS).contains(&millis) && text.len() == 24 && jiff_spelling(millis) == text).then_some(millis)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20_000, ..ProptestConfig::default() })]

    #[test]
    fn r_chain_2_every_instant_is_spelled_as_jiff_spells_it_and_reads_back(millis in 0..=MAX_MILLIS) {
        let at = At::from_unix_millis(millis).unwrap();
        let text = at.to_string();
        prop_assert_eq!(&text, &jiff_spelling(millis));
        prop_assert_eq!(At::parse(&text).unwrap(), at);
    }

    /// A spelling with one byte changed is read exactly when jiff's rule
    /// reads it, as the same instant (a changed digit may still be a date).
    #[test]
    fn r_chain_2_a_changed_spelling_is_read_exactly_when_the_canonical_rule_reads_it(
        millis in 0..=MAX_MILLIS,
        at in 0usize..24,
        byte in prop::sample::select(b"0123456789-:.TZ tz+9".to_vec()),
    ) {
        let mut text = jiff_spelling(millis).into_bytes();
        text[at] = byte;
        let text = String::from_utf8(text).unwrap();
        prop_assert_eq!(At::parse(&text).ok().map(|at| at.unix_millis()), jiff_reading(&text), "{}", text);
    }
}

#[test]
fn r_chain_2_calendar_edges_read_as_jiff_reads_them() {
    for text in [
        "1970-01-01T00:00:00.000Z",
        "2000-02-29T23:59:59.999Z",
        "1900-02-29T00:00:00.000Z",
        "2100-02-29T00:00:00.000Z",
        "2024-02-29T12:00:00.000Z",
        "2023-02-29T12:00:00.000Z",
        "2026-04-31T00:00:00.000Z",
        "2026-12-31T23:59:60.000Z",
        "2026-12-31T24:00:00.000Z",
        "2026-13-01T00:00:00.000Z",
        "2026-00-10T00:00:00.000Z",
        "2026-01-00T00:00:00.000Z",
        "1969-12-31T23:59:59.999Z",
        "9999-12-29T00:00:00.000Z",
        "9999-12-29T00:00:00.001Z",
        "9999-12-30T00:00:00.000Z",
        "2026-12-02T09:30:00.250+00:00",
        "2026-12-02 09:30:00.250Z",
        "２026-12-02T09:30:00.25Z",
    ] {
        assert_eq!(At::parse(text).ok().map(|at| at.unix_millis()), jiff_reading(text), "{text}");
    }
}

/// R-UX-3 (review 80): a bound typed with a time of day and no UTC offset
/// (`cost --since 2026-11-01T09:30:00`, the `Z` forgotten) was read as the
/// date alone, its midnight UTC: the window silently began 9.5 hours early,
/// and one with a zone name but no offset (`…[America/New_York]`) lost both
/// its time and its zone. It is refused, saying to add the offset; a date
/// alone and an instant with its offset read as before.
#[test]
fn r_ux_3_a_bound_with_a_time_of_day_and_no_offset_is_refused_not_read_as_midnight() {
    for text in
        ["2026-11-01T09:30:00", "2026-11-01T09:30", "2026-11-01 09:30:00", "2026-11-01T09:30:00[America/New_York]"]
    {
        let err = At::parse_lenient(text).map(|at| at.to_string()).expect_err(text);
        assert!(err.to_string().contains("offset"), "{text}: {err}");
    }
    for (text, read) in [
        ("2026-11-01", "2026-11-01T00:00:00.000Z"),
        ("2026-11-01T09:30:00Z", "2026-11-01T09:30:00.000Z"),
        ("2026-11-01T09:30:00+01:00", "2026-11-01T08:30:00.000Z"),
        ("2026-11-01T09:30:00-05:00[America/New_York]", "2026-11-01T14:30:00.000Z"),
    ] {
        assert_eq!(At::parse_lenient(text).map(|at| at.to_string()).as_deref(), Ok(read), "{text}");
    }
}

/// R-UX-3 (review 80): the last instant `At` holds is
/// 9999-12-29T00:00:00.000Z (its comment, and this file's, said the 30th).
/// An instant past it, or before 1970, is refused naming the exact range:
/// `cost --until 9999-12-31` was refused as "outside the years 1970 to
/// 9999", of an instant in 9999.
#[test]
fn r_ux_3_an_instant_out_of_range_is_refused_naming_the_range_held() {
    assert_eq!(At::from_unix_millis(MAX_MILLIS).unwrap().to_string(), "9999-12-29T00:00:00.000Z");
    assert!(At::parse("9999-12-29T00:00:00.000Z").is_ok());
    assert!(At::parse("9999-12-29T00:00:00.001Z").is_err());
    for text in ["9999-12-31", "9999-12-29T00:00:00.001Z", "1969-12-31"] {
        let err = At::parse_lenient(text).unwrap_err().to_string();
        assert!(err.contains("1970-01-01T00:00:00.000Z") && err.contains("9999-12-29T00:00:00.000Z"), "{text}: {err}");
        assert!(!err.contains("years"), "{text}: {err}");
    }
}
