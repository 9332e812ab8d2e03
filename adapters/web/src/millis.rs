//! Conversions between JavaScript's `f64` milliseconds and the core's [`Timestamp`].

use alkstore_mem::Timestamp;

/// A JavaScript millisecond reading (`performance.now()`, `Date.now()`) as a [`Timestamp`].
///
/// Exact to the microsecond: the reading is rounded to whole microseconds first, which an
/// `f64` holds exactly up to 2^53 µs (285 years), before it is scaled to nanoseconds.
/// Never negative and never panics: NaN and negative readings give [`Timestamp::ZERO`],
/// infinity and absurdly large ones saturate at [`Timestamp::MAX`].
///
/// # Example
/// ```
/// use alkstore_mem_web::{timestamp_from_millis_f64, Timestamp};
///
/// assert_eq!(timestamp_from_millis_f64(1.001).as_nanos(), 1_001_000);
/// assert_eq!(timestamp_from_millis_f64(f64::NAN), Timestamp::ZERO);
/// assert_eq!(timestamp_from_millis_f64(-5.0), Timestamp::ZERO);
/// assert_eq!(timestamp_from_millis_f64(f64::INFINITY), Timestamp::MAX);
/// ```
pub fn timestamp_from_millis_f64(millis: f64) -> Timestamp {
    // NaN, zero and negative readings all land here.
    if millis.is_nan() || millis <= 0.0 {
        return Timestamp::ZERO;
    }
    // Float-to-int `as` saturates (infinity gives u64::MAX), so nothing here can panic.
    let micros = (millis * 1_000.0).round() as u64;
    Timestamp::from_nanos(micros.saturating_mul(1_000))
}

/// Milliseconds from `now` until `deadline`, rounded up so that a timer set for them never
/// fires early, and at most `i32::MAX` (what `setTimeout` accepts; a longer wait is made of
/// several timers). Zero when the deadline has passed.
///
/// # Example
/// ```
/// use alkstore_mem_web::{millis_f64_until, Timestamp};
///
/// let now = Timestamp::from_nanos(1_000_000);
/// assert_eq!(millis_f64_until(now, Timestamp::from_nanos(3_000_001)), 3.0);
/// assert_eq!(millis_f64_until(now, Timestamp::ZERO), 0.0);
/// assert_eq!(millis_f64_until(now, Timestamp::MAX), f64::from(i32::MAX));
/// ```
pub fn millis_f64_until(now: Timestamp, deadline: Timestamp) -> f64 {
    let nanos = deadline.as_nanos().saturating_sub(now.as_nanos());
    let millis = nanos.div_ceil(1_000_000).min(i32::MAX as u64);
    millis as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_are_exact_to_the_microsecond() {
        for (ms, nanos) in [
            (0.001, 1_000u64),
            (0.0015, 2_000), // half a microsecond rounds away from zero
            (16.667, 16_667_000),
            (1_234.567, 1_234_567_000),
            // A Date.now() reading in 2026, with microseconds as performance.now() gives them.
            (1_795_000_000_123.456, 1_795_000_000_123_456_000),
        ] {
            assert_eq!(timestamp_from_millis_f64(ms).as_nanos(), nanos, "{ms}");
        }
    }

    #[test]
    fn bad_readings_never_panic() {
        assert_eq!(timestamp_from_millis_f64(f64::NAN), Timestamp::ZERO);
        assert_eq!(timestamp_from_millis_f64(-0.0), Timestamp::ZERO);
        assert_eq!(
            timestamp_from_millis_f64(f64::NEG_INFINITY),
            Timestamp::ZERO
        );
        assert_eq!(timestamp_from_millis_f64(f64::INFINITY), Timestamp::MAX);
        assert_eq!(timestamp_from_millis_f64(f64::MAX), Timestamp::MAX);
        assert_eq!(timestamp_from_millis_f64(1e300), Timestamp::MAX);
    }

    #[test]
    fn timer_delays_round_up_and_fit_set_timeout() {
        let now = Timestamp::from_millis(10);
        assert_eq!(
            millis_f64_until(now, Timestamp::from_nanos(10_000_001)),
            1.0
        );
        assert_eq!(millis_f64_until(now, Timestamp::from_millis(12)), 2.0);
        assert_eq!(millis_f64_until(now, now), 0.0);
        assert_eq!(millis_f64_until(Timestamp::MAX, now), 0.0);
        assert_eq!(
            millis_f64_until(Timestamp::ZERO, Timestamp::MAX),
            f64::from(i32::MAX)
        );
    }
}
