//! Times as an operator reads them, by `jiff`: an engine's [`Timestamp`] (nanoseconds since
//! the Unix epoch) as RFC 3339 UTC, and a time left in jiff's "friendly" duration format.

use std::time::Duration;

use alkstore_mem::Timestamp;
use jiff::fmt::friendly::{FractionalUnit, SpanPrinter};
use jiff::{RoundMode, Span, SpanRound, Unit};

/// `at` as RFC 3339 UTC, `2026-11-20T10:00:29.812Z`, with `digits` digits of the second's
/// fraction (0 to 9; truncated, never rounded up, so a deadline is never shown later than it
/// is).
pub(crate) fn rfc3339(at: Timestamp, digits: usize) -> String {
    // A u64 of nanoseconds ends in 2554, well inside jiff's range (up to 9999).
    let at = jiff::Timestamp::from_nanosecond(i128::from(at.as_nanos()))
        .expect("a u64 of nanoseconds is within jiff's range");
    format!("{at:.digits$}")
}

/// How long until `deadline` at `now`: `None` once it has passed (the lease is live while
/// `now < deadline`).
pub(crate) fn left(deadline: Timestamp, now: Timestamp) -> Option<Duration> {
    (now < deadline).then(|| deadline.saturating_duration_since(now))
}

/// A time left in its two largest units, rounded down, in jiff's friendly format: `850ms`,
/// `29.8s`, `4m 5s`, `1h 2m`, `3d 4h` (a day is 24 hours; a unit that rounds to zero is left
/// out: `1h`).
pub(crate) fn readable(d: Duration) -> String {
    static UNITS: SpanPrinter = SpanPrinter::new().zero_unit(Unit::Millisecond);
    static TENTHS: SpanPrinter = SpanPrinter::new()
        .fractional(Some(FractionalUnit::Second))
        .precision(Some(1));
    let (largest, smallest) = match d.as_secs() {
        86_400.. => (Unit::Day, Unit::Hour),
        3_600.. => (Unit::Hour, Unit::Minute),
        60.. => (Unit::Minute, Unit::Second),
        1.. => return TENTHS.unsigned_duration_to_string(&d),
        0 => (Unit::Millisecond, Unit::Millisecond),
    };
    let rounded = Span::try_from(d).and_then(|span| {
        span.round(
            SpanRound::new()
                .largest(largest)
                .smallest(smallest)
                .mode(RoundMode::Trunc)
                .days_are_24_hours(),
        )
    });
    // Durations the engines give (u64 nanoseconds, 584 years at most) fit in a span.
    rounded.map_or_else(
        |_| format!("{}s", d.as_secs()),
        |span| UNITS.span_to_string(&span),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, nanos: u64) -> Timestamp {
        Timestamp::from_nanos(secs * 1_000_000_000 + nanos)
    }

    #[test]
    fn instants_known_from_elsewhere_format_as_rfc3339_utc() {
        let cases = [
            (at(0, 0), "1970-01-01T00:00:00Z"),
            (at(86_399, 0), "1970-01-01T23:59:59Z"),
            (at(68_169_600, 0), "1972-02-29T00:00:00Z"),
            (at(951_782_400, 0), "2000-02-29T00:00:00Z"),
            (at(951_868_800, 0), "2000-03-01T00:00:00Z"),
            (at(978_307_199, 0), "2000-12-31T23:59:59Z"),
            (at(1_709_251_199, 0), "2024-02-29T23:59:59Z"),
            (at(2_147_483_647, 0), "2038-01-19T03:14:07Z"),
            (at(4_107_542_400, 0), "2100-03-01T00:00:00Z"),
            (at(4_107_456_000, 0), "2100-02-28T00:00:00Z"),
        ];
        for (timestamp, expected) in cases {
            assert_eq!(rfc3339(timestamp, 0), expected);
        }
        // The last nanosecond a u64 holds.
        assert_eq!(rfc3339(Timestamp::MAX, 9), "2554-07-21T23:34:33.709551615Z");
    }

    #[test]
    fn fractions_are_truncated_to_the_digits_asked_for() {
        let t = at(1_763_632_829, 812_999_999);
        assert_eq!(rfc3339(t, 3), "2025-11-20T10:00:29.812Z");
        assert_eq!(rfc3339(t, 6), "2025-11-20T10:00:29.812999Z");
        assert_eq!(rfc3339(t, 9), "2025-11-20T10:00:29.812999999Z");
        assert_eq!(rfc3339(t, 12), "2025-11-20T10:00:29.812999999Z");
        assert_eq!(rfc3339(at(1, 5), 9), "1970-01-01T00:00:01.000000005Z");
        assert_eq!(rfc3339(at(1, 5), 3), "1970-01-01T00:00:01.000Z");
        assert_eq!(rfc3339(at(1, 0), 9), "1970-01-01T00:00:01.000000000Z");
    }

    #[test]
    fn time_left_reads_in_two_units_rounded_down_and_is_none_at_the_deadline() {
        let ms = Duration::from_millis;
        let s = Duration::from_secs;
        assert_eq!(readable(ms(0)), "0ms");
        assert_eq!(readable(ms(850)), "850ms");
        assert_eq!(readable(ms(999)), "999ms");
        assert_eq!(readable(ms(1_000)), "1.0s");
        assert_eq!(readable(ms(29_871)), "29.8s");
        assert_eq!(readable(ms(59_999)), "59.9s");
        assert_eq!(readable(s(245)), "4m 5s");
        assert_eq!(readable(ms(3_599_999)), "59m 59s");
        assert_eq!(readable(s(3_600)), "1h");
        assert_eq!(readable(s(3_720) + ms(59_999)), "1h 2m");
        assert_eq!(readable(s(273_600 + 3_599)), "3d 4h");
        assert_eq!(readable(s(400 * 86_400)), "400d");
        assert_eq!(readable(Duration::from_nanos(u64::MAX)), "213503d 23h");
        let deadline = Timestamp::from_millis(5_000);
        assert_eq!(left(deadline, Timestamp::from_millis(4_150)), Some(ms(850)));
        assert_eq!(left(deadline, deadline), None);
        assert_eq!(left(deadline, Timestamp::from_millis(9_000)), None);
    }
}
