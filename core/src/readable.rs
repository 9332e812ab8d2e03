//! Values as a person reads them in a message: strings quoted, escaped and shortened
//! ([`Quoted`]), durations in the units a person uses ([`Readable`]).

use core::fmt::{self, Write};
use core::time::Duration;

/// About how many bytes of a refused value, quoted and escaped, an error message shows.
const PREVIEW_BYTES: usize = 60;

/// Displays a value quoted and escaped as `{:?}` does, cut after about [`PREVIEW_BYTES`]
/// bytes of that with a note of its full length, so that a megabyte of bad input (or a short
/// run of characters that escape to ten bytes each) does not become a long error message.
pub(crate) struct Quoted<'a>(pub(crate) &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut written = 1;
        f.write_char('"')?;
        for ch in self.0.chars() {
            if written >= PREVIEW_BYTES {
                return write!(f, "\"… ({} bytes)", self.0.len());
            }
            match ch {
                // `{:?}` on a str leaves single quotes alone.
                '\'' => {
                    f.write_char('\'')?;
                    written += 1;
                }
                _ => {
                    for escaped in ch.escape_debug() {
                        f.write_char(escaped)?;
                        written += escaped.len_utf8();
                    }
                }
            }
        }
        f.write_char('"')
    }
}

/// A duration in the units a person reads: `401ms`, `2.1s`, `3m 05s`, `2h 00m`, `850µs`;
/// whole units below a second are rounded down, and seconds keep one decimal below a minute.
pub(crate) struct Readable(pub(crate) Duration);

impl fmt::Display for Readable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        let secs = d.as_secs();
        if d == Duration::MAX {
            f.write_str("forever")
        } else if secs >= 86_400 {
            write!(f, "{}d {:02}h", secs / 86_400, secs % 86_400 / 3_600)
        } else if secs >= 3_600 {
            write!(f, "{}h {:02}m", secs / 3_600, secs % 3_600 / 60)
        } else if secs >= 60 {
            write!(f, "{}m {:02}s", secs / 60, secs % 60)
        } else if secs >= 1 {
            let tenths = d.subsec_millis() / 100;
            if tenths == 0 {
                write!(f, "{secs}s")
            } else {
                write!(f, "{secs}.{tenths}s")
            }
        } else if d.as_millis() >= 1 {
            write!(f, "{}ms", d.as_millis())
        } else if d.as_micros() >= 1 {
            write!(f, "{}µs", d.as_micros())
        } else {
            write!(f, "{}ns", d.as_nanos())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::{String, ToString};

    fn preview(value: &str) -> String {
        Quoted(value).to_string()
    }

    #[test]
    fn quoted_values_are_escaped_and_shortened() {
        assert_eq!(preview("a\u{7}b"), "\"a\\u{7}b\"");
        let long = "x".repeat(1000);
        let p = preview(&long);
        assert!(p.starts_with("\"xxxx"));
        assert!(p.ends_with("\"… (1000 bytes)"), "{p}");
        assert!(p.len() < 80);
        assert_eq!(
            preview("it's \"q\"\n"),
            alloc::format!("{:?}", "it's \"q\"\n")
        );
        let wide = "\u{2ee5e}\u{1}".repeat(40);
        assert!(preview(&wide).len() < 100, "{}", preview(&wide));
    }

    #[test]
    fn durations_read_in_units_a_person_uses() {
        let shown = |d: Duration| Readable(d).to_string();
        assert_eq!(shown(Duration::ZERO), "0ns");
        assert_eq!(shown(Duration::from_nanos(999)), "999ns");
        assert_eq!(shown(Duration::from_micros(850)), "850µs");
        assert_eq!(shown(Duration::from_nanos(401_529_969)), "401ms");
        assert_eq!(shown(Duration::from_millis(2_150)), "2.1s");
        assert_eq!(shown(Duration::from_secs(5)), "5s");
        assert_eq!(shown(Duration::from_secs(185)), "3m 05s");
        assert_eq!(shown(Duration::from_secs(7_200)), "2h 00m");
        assert_eq!(shown(Duration::from_secs(90_061)), "1d 01h");
        assert_eq!(shown(Duration::MAX), "forever");
        assert_eq!(shown(Duration::from_secs(u64::MAX)), "213503982334601d 07h");
    }
}
