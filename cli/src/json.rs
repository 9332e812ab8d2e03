//! The JSON output, one object on one line, written by `serde_json` from the shapes below.
//!
//! A waiter is the core's [`Waiting`] as its `serde` feature writes it (`name`, `owner`) plus
//! its `position`; a lease is the tool's own shape, since the core writes a deadline as
//! nanoseconds and the tool as RFC 3339 beside the time left. Strings are escaped as JSON
//! requires, and U+007F to U+009F and U+2028/U+2029 too, so that the line is valid
//! JavaScript as well.

use std::collections::BTreeMap;
use std::io;

use alkstore_mem::{LeaseInfo, Snapshot, Timestamp, Waiting};
use serde::{Serialize, Serializer};

use crate::time::{left, rfc3339};

/// `list`: `{"now":…,"held":[lease…],"waiting":[{"name","owner","position"}…]}`.
pub(crate) fn list(snapshot: &Snapshot, now: Timestamp) -> String {
    #[derive(Serialize)]
    struct List<'a> {
        now: Utc,
        held: Vec<Lease<'a>>,
        waiting: Vec<Waiter<'a>>,
    }
    let mut position = 0;
    let waiting = snapshot.waiting.iter().enumerate().map(|(i, waiter)| {
        let same_name = i > 0 && snapshot.waiting[i - 1].name == waiter.name;
        position = if same_name { position + 1 } else { 1 };
        Waiter { waiter, position }
    });
    line(&List {
        now: Utc(now),
        held: snapshot.held.iter().map(|l| Lease::at(l, now)).collect(),
        waiting: waiting.collect(),
    })
}

/// `holder`/`release`: `{"now":…,"<key>":lease}`, with `null` for no lease.
pub(crate) fn lease(key: &'static str, lease: Option<&LeaseInfo>, now: Timestamp) -> String {
    #[derive(Serialize)]
    struct About<'a> {
        now: Utc,
        #[serde(flatten)]
        lease: BTreeMap<&'static str, Option<Lease<'a>>>,
    }
    let lease = lease.map(|l| Lease::at(l, now));
    line(&About {
        now: Utc(now),
        lease: BTreeMap::from([(key, lease)]),
    })
}

/// A queued waiter and its place in its name's queue (1 is served next).
#[derive(Serialize)]
struct Waiter<'a> {
    #[serde(flatten)]
    waiter: &'a Waiting,
    position: usize,
}

/// A lease: name, owner, token, deadline (RFC 3339, to the nanosecond) and the whole
/// milliseconds left (0 once it has passed).
#[derive(Serialize)]
struct Lease<'a> {
    name: &'a str,
    owner: &'a str,
    token: u64,
    deadline: Utc,
    left_ms: u128,
}

impl<'a> Lease<'a> {
    fn at(lease: &'a LeaseInfo, now: Timestamp) -> Self {
        Lease {
            name: lease.name(),
            owner: lease.owner(),
            token: lease.token(),
            deadline: Utc(lease.deadline()),
            left_ms: left(lease.deadline(), now).map_or(0, |d| d.as_millis()),
        }
    }
}

/// A time written as RFC 3339 UTC to the nanosecond.
struct Utc(Timestamp);

impl Serialize for Utc {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&rfc3339(self.0, 9))
    }
}

/// `value` as JSON on one line, ending with a newline.
fn line<T: Serialize>(value: &T) -> String {
    let mut out = Vec::new();
    value
        .serialize(&mut serde_json::Serializer::with_formatter(
            &mut out, JsSafe,
        ))
        .expect("the output's shapes serialize to memory without failing");
    let mut text = String::from_utf8(out).expect("serde_json writes UTF-8");
    text.push('\n');
    text
}

/// serde_json's compact format, with U+007F to U+009F and U+2028/U+2029 escaped as `\uXXXX`
/// too (serde_json escapes the rest of what JSON requires itself).
struct JsSafe;

impl serde_json::ser::Formatter for JsSafe {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                write!(writer, "\\u{:04x}", u32::from(c))?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(text: &str) -> String {
        line(&text).trim_end().to_owned()
    }

    #[test]
    fn hostile_strings_are_escaped() {
        assert_eq!(string(""), r#""""#);
        assert_eq!(string("worker-1"), r#""worker-1""#);
        assert_eq!(string(r#"say "hi""#), r#""say \"hi\"""#);
        assert_eq!(string(r"C:\path\"), r#""C:\\path\\""#);
        assert_eq!(string("\\\""), r#""\\\"""#);
        assert_eq!(string("a\nb\r\tc"), r#""a\nb\r\tc""#);
        assert_eq!(string("\u{8}\u{c}"), r#""\b\f""#);
        assert_eq!(string("\0"), r#""\u0000""#);
        assert_eq!(string("\u{1}\u{1f}"), r#""\u0001\u001f""#);
        assert_eq!(string("\u{1b}[2J"), r#""\u001b[2J""#);
        assert_eq!(string("\u{7f}\u{85}"), r#""\u007f\u0085""#);
        assert_eq!(string("a\u{2028}b\u{2029}"), r#""a\u2028b\u2029""#);
        assert_eq!(string("x\u{85}y\"\u{2028}"), r#""x\u0085y\"\u2028""#);
        // Unicode that needs no escape is kept as it is.
        assert_eq!(string("zürich/日本/🔒"), "\"zürich/日本/🔒\"");
        assert_eq!(string("'single'/<tag>&"), "\"'single'/<tag>&\"");
    }

    #[test]
    fn no_character_reaches_the_output_raw_where_json_forbids_it() {
        // Every char up to U+3000 and a few beyond: the output holds no raw control character
        // and no quote or backslash that is not part of an escape.
        let all: String = (0..0x3000u32)
            .chain([0x1f512, 0x10ffff])
            .filter_map(char::from_u32)
            .collect();
        let out = string(&all);
        let inner = &out[1..out.len() - 1];
        assert!(!inner.chars().any(|c| c.is_control() || c == '\u{2028}'));
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            assert_ne!(c, '"', "a raw quote inside the string");
            if c == '\\' {
                let escaped = chars.next().expect("an escape has a second character");
                assert!("\"\\/bfnrtu".contains(escaped), "bad escape \\{escaped}");
            }
        }
    }
}
