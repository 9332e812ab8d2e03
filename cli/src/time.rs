//! Times as an operator reads them: an engine's [`Timestamp`] (nanoseconds since the Unix
//! epoch) as RFC 3339 UTC, and a time left in readable units. By hand, from the proleptic
//! Gregorian calendar (UTC has no leap seconds in Unix time).

use std::time::Duration;

use alkstore_mem::Timestamp;

/// `at` (nanoseconds since the Unix epoch) as RFC 3339 UTC, `2026-11-20T10:00:29.812Z`, with
/// `digits` digits of the second's fraction (0 to 9; truncated, never rounded up, so a
/// deadline is never shown later than it is).
pub(crate) fn rfc3339(at: Timestamp, digits: u32) -> String {
    let nanos = at.as_nanos();
    let (secs, fraction) = (nanos / 1_000_000_000, nanos % 1_000_000_000);
    let (days, of_day) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (of_day / 3_600, of_day % 3_600 / 60, of_day % 60);
    let mut text = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}");
    let digits = digits.min(9);
    if digits > 0 {
        let shown = fraction / 10u64.pow(9 - digits);
        text.push_str(&format!(".{shown:0width$}", width = digits as usize));
    }
    text.push('Z');
    text
}

/// The (year, month, day) of `days` days after 1970-01-01, in the proleptic Gregorian
/// calendar (Howard Hinnant's `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Counted from 0000-03-01, so that the leap day ends a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

/// How long until `deadline` at `now`: `None` once it has passed (the lease is live while
/// `now < deadline`).
pub(crate) fn left(deadline: Timestamp, now: Timestamp) -> Option<Duration> {
    (now < deadline).then(|| deadline.saturating_duration_since(now))
}

/// A time left in the units a person reads, rounded down: `850ms`, `29.8s`, `4m 05s`,
/// `1h 02m`, `3d 04h`.
pub(crate) fn readable(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 86_400 {
        format!("{}d {:02}h", secs / 86_400, secs % 86_400 / 3_600)
    } else if secs >= 3_600 {
        format!("{}h {:02}m", secs / 3_600, secs % 3_600 / 60)
    } else if secs >= 60 {
        format!("{}m {:02}s", secs / 60, secs % 60)
    } else if secs >= 1 {
        format!("{secs}.{}s", d.subsec_millis() / 100)
    } else {
        format!("{}ms", d.as_millis())
    }
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
    }

    #[test]
    fn every_day_of_four_centuries_follows_the_one_before() {
        // Day by day from 1970 to 2370: the date only ever moves to the next day.
        let mut previous = civil_from_days(0);
        assert_eq!(previous, (1970, 1, 1));
        for days in 1..146_097 {
            let (y, m, d) = civil_from_days(days);
            let (py, pm, pd) = previous;
            let next_day = (y, m, d) == (py, pm, pd + 1);
            let next_month = (y, m, d) == (py, pm + 1, 1) && pm < 12;
            let next_year = (y, m, d) == (py + 1, 1, 1) && (pm, pd) == (12, 31);
            assert!(
                next_day || next_month || next_year,
                "{previous:?} -> {:?}",
                (y, m, d)
            );
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let month_days = [
                31,
                28 + u64::from(leap),
                31,
                30,
                31,
                30,
                31,
                31,
                30,
                31,
                30,
                31,
            ];
            assert!(d <= month_days[(m - 1) as usize], "{y}-{m}-{d}");
            previous = (y, m, d);
        }
        assert_eq!(previous, (2369, 12, 31));
    }

    #[test]
    fn time_left_reads_in_units_and_is_none_at_the_deadline() {
        let ms = Duration::from_millis;
        assert_eq!(readable(ms(0)), "0ms");
        assert_eq!(readable(ms(850)), "850ms");
        assert_eq!(readable(ms(1_000)), "1.0s");
        assert_eq!(readable(ms(29_871)), "29.8s");
        assert_eq!(readable(Duration::from_secs(245)), "4m 05s");
        assert_eq!(readable(Duration::from_secs(3_720)), "1h 02m");
        assert_eq!(readable(Duration::from_secs(273_600)), "3d 04h");
        let deadline = Timestamp::from_millis(5_000);
        assert_eq!(left(deadline, Timestamp::from_millis(4_150)), Some(ms(850)));
        assert_eq!(left(deadline, deadline), None);
        assert_eq!(left(deadline, Timestamp::from_millis(9_000)), None);
    }
}
