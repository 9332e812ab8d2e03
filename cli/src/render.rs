//! What the commands print: tables and sentences for a person, one JSON object for a script.
//!
//! Times are on the engine's clock: deadlines as RFC 3339 UTC, and the time left counted
//! from the engine's `now`. Names and owners are shown as they are, except that control and
//! bidirectional-override characters (which owners may hold, and which could rewrite a
//! terminal) are escaped in the human output; JSON escapes what JSON must.

use std::fmt::Write;

use alkstore_mem::{LeaseInfo, Snapshot, Timestamp};

use crate::json;
use crate::time::{left, readable, rfc3339};

/// The header of the leases table.
const LEASE_HEADER: [&str; 5] = ["NAME", "OWNER", "TOKEN", "DEADLINE (UTC)", "LEFT"];

/// `list`, for a person: the held leases, then the waiters in the order they will be served.
pub(crate) fn list_table(snapshot: &Snapshot, now: Timestamp) -> String {
    let (held, waiting) = (snapshot.held.len(), snapshot.waiting.len());
    let mut out = format!(
        "server time {}: {held} held, {waiting} waiting\n",
        rfc3339(now, 3)
    );
    if held > 0 {
        let rows = snapshot.held.iter().map(|lease| lease_row(lease, now));
        out.push('\n');
        out.push_str(&table(&LEASE_HEADER, rows.collect()));
    }
    if waiting > 0 {
        let mut rows = Vec::with_capacity(waiting);
        let mut position = 0;
        for (i, waiter) in snapshot.waiting.iter().enumerate() {
            let same_name = i > 0 && snapshot.waiting[i - 1].name == waiter.name;
            position = if same_name { position + 1 } else { 1 };
            rows.push(vec![
                shown(&waiter.name),
                shown(&waiter.owner),
                position.to_string(),
            ]);
        }
        out.push('\n');
        out.push_str(&table(&["WAITING FOR", "OWNER", "POSITION"], rows));
    }
    out
}

/// `list`, for a script: one JSON object ([`json::list`]).
pub(crate) fn list_json(snapshot: &Snapshot, now: Timestamp) -> String {
    json::list(snapshot, now)
}

/// `holder NAME`, for a person: the lease as a one-row table, or that it is not held.
pub(crate) fn holder_text(name: &str, lease: Option<&LeaseInfo>, now: Timestamp) -> String {
    match lease {
        Some(lease) => table(&LEASE_HEADER, vec![lease_row(lease, now)]),
        None => format!("{} is not held\n", shown(name)),
    }
}

/// `release NAME`, for a person: the lease it ended, or that there was none.
pub(crate) fn release_text(name: &str, ended: Option<&LeaseInfo>, now: Timestamp) -> String {
    let Some(lease) = ended else {
        return format!("nothing to release: {} is not held\n", shown(name));
    };
    let deadline = rfc3339(lease.deadline(), 3);
    let left = match left(lease.deadline(), now) {
        Some(left) => format!("it had {} left, until {deadline}", readable(left)),
        None => format!("its deadline was {deadline}"),
    };
    format!(
        "released {} held by {} (fencing token {}); {left}\n",
        shown(lease.name()),
        shown(lease.owner()),
        lease.token(),
    )
}

/// `holder`/`release`, for a script: `{"now":…,"<key>":lease}` ([`json::lease`]).
pub(crate) fn lease_json(key: &'static str, lease: Option<&LeaseInfo>, now: Timestamp) -> String {
    json::lease(key, lease, now)
}

/// One lease as a table row.
fn lease_row(lease: &LeaseInfo, now: Timestamp) -> Vec<String> {
    vec![
        shown(lease.name()),
        shown(lease.owner()),
        lease.token().to_string(),
        rfc3339(lease.deadline(), 3),
        left(lease.deadline(), now).map_or_else(|| "lapsed".into(), readable),
    ]
}

/// `header` and `rows` in columns two spaces apart, without trailing spaces.
fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header = header.iter().map(|h| (*h).to_owned()).collect();
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            let pad = widths[i].saturating_sub(cell.chars().count());
            line.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Whether `c` could rewrite a terminal: a control character, U+2028/U+2029 or a
/// bidirectional control.
pub(crate) fn hostile(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` for a terminal: control characters, U+2028/U+2029 and the bidirectional
/// controls escaped as `\u{…}` (and `\` as `\\` when something was escaped, so that the
/// escaping can be read back); otherwise as it is. A text that already holds `\u{` is
/// escaped too, so that it never prints like a text whose escape it spells.
pub(crate) fn shown(text: &str) -> String {
    if !text.chars().any(hostile) && !text.contains("\\u{") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hostile(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alkstore_mem::Waiting;

    fn snapshot() -> Snapshot {
        let mut snapshot = Snapshot::default();
        let s = |secs: u64, ms: u64| Timestamp::from_millis(secs * 1_000 + ms);
        snapshot.held.push(LeaseInfo::new(
            "invoice/1001",
            "worker-1",
            1_763_632_800_123_456,
            s(1_763_632_829, 812),
        ));
        snapshot.held.push(LeaseInfo::new(
            "report",
            "cron",
            1_763_632_800_123_999,
            s(1_763_636_400, 0),
        ));
        snapshot
            .held
            .push(LeaseInfo::new("old", "gone", 7, s(1_763_632_000, 0)));
        snapshot
            .waiting
            .push(Waiting::new("invoice/1001", "worker-2"));
        snapshot
            .waiting
            .push(Waiting::new("invoice/1001", "worker-3"));
        snapshot.waiting.push(Waiting::new("report", "cron-2"));
        snapshot
    }

    fn now() -> Timestamp {
        Timestamp::from_millis(1_763_632_800_000)
    }

    #[test]
    fn list_for_a_person_is_two_aligned_tables() {
        let expected = "\
server time 2025-11-20T10:00:00.000Z: 3 held, 3 waiting

NAME          OWNER     TOKEN             DEADLINE (UTC)            LEFT
invoice/1001  worker-1  1763632800123456  2025-11-20T10:00:29.812Z  29.8s
report        cron      1763632800123999  2025-11-20T11:00:00.000Z  1h
old           gone      7                 2025-11-20T09:46:40.000Z  lapsed

WAITING FOR   OWNER     POSITION
invoice/1001  worker-2  1
invoice/1001  worker-3  2
report        cron-2    1
";
        assert_eq!(list_table(&snapshot(), now()), expected);
        assert_eq!(
            list_table(&Snapshot::default(), now()),
            "server time 2025-11-20T10:00:00.000Z: 0 held, 0 waiting\n"
        );
    }

    #[test]
    fn list_for_a_script_is_one_json_object() {
        let expected = concat!(
            r#"{"now":"2025-11-20T10:00:00.000000000Z","held":["#,
            r#"{"name":"invoice/1001","owner":"worker-1","token":1763632800123456,"deadline":"2025-11-20T10:00:29.812000000Z","left_ms":29812},"#,
            r#"{"name":"report","owner":"cron","token":1763632800123999,"deadline":"2025-11-20T11:00:00.000000000Z","left_ms":3600000},"#,
            r#"{"name":"old","owner":"gone","token":7,"deadline":"2025-11-20T09:46:40.000000000Z","left_ms":0}],"#,
            r#""waiting":[{"name":"invoice/1001","owner":"worker-2","position":1},"#,
            r#"{"name":"invoice/1001","owner":"worker-3","position":2},"#,
            r#"{"name":"report","owner":"cron-2","position":1}]}"#,
            "\n"
        );
        assert_eq!(list_json(&snapshot(), now()), expected);
        assert_eq!(
            list_json(&Snapshot::default(), now()),
            "{\"now\":\"2025-11-20T10:00:00.000000000Z\",\"held\":[],\"waiting\":[]}\n"
        );
    }

    #[test]
    fn hostile_owners_cannot_rewrite_the_terminal_or_break_the_json() {
        let owner = "evil\"\\\n\u{1b}[2J\u{202e}txt.exe ü🔒";
        let lease = LeaseInfo::new("job", owner, 3, Timestamp::from_millis(1_000));
        let text = holder_text("job", Some(&lease), Timestamp::ZERO);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{202e}'),
            "{text}"
        );
        assert!(
            text.contains(r#"evil"\\\u{a}\u{1b}[2J\u{202e}txt.exe ü🔒"#),
            "{text}"
        );
        assert_eq!(text.lines().count(), 2, "{text}");
        let json = lease_json("held", Some(&lease), Timestamp::ZERO);
        assert!(
            json.contains("\"owner\":\"evil\\\"\\\\\\n\\u001b[2J\u{202e}txt.exe ü🔒\""),
            "{json}"
        );
        assert_eq!(json.lines().count(), 1);
        // Plain text with a backslash stays as it is.
        assert_eq!(shown(r"a\b"), r"a\b");
    }

    #[test]
    fn holder_and_release_say_what_they_found() {
        let lease = LeaseInfo::new("job", "worker-1", 42, Timestamp::from_millis(31_000));
        let now = Timestamp::from_millis(1_000);
        assert_eq!(holder_text("job", None, now), "job is not held\n");
        assert_eq!(
            release_text("job", Some(&lease), now),
            "released job held by worker-1 (fencing token 42); it had 30.0s left, until 1970-01-01T00:00:31.000Z\n"
        );
        assert_eq!(
            release_text("job", None, now),
            "nothing to release: job is not held\n"
        );
        assert_eq!(
            lease_json("released", None, now),
            "{\"now\":\"1970-01-01T00:00:01.000000000Z\",\"released\":null}\n"
        );
    }
}
