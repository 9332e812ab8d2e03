//! The namespace's tables: their quoted names, the schema, and the statements every
//! operation runs.

/// The quoted name of table `<namespace>_<table>`.
pub(crate) fn table(namespace: &str, table: &str) -> String {
    format!("\"{namespace}_{table}\"")
}

/// The SQL of every statement, with the namespace's table names in.
#[derive(Debug)]
pub(crate) struct Sql {
    pub(crate) begin: String,
    pub(crate) state_put: String,
    pub(crate) offset: String,
    pub(crate) lease_get: String,
    pub(crate) lease_put: String,
    pub(crate) lease_state_put: String,
    pub(crate) lease_del: String,
    pub(crate) lease_free: String,
    pub(crate) lease_claim: String,
    pub(crate) lease_renew: String,
    pub(crate) head: String,
    pub(crate) any_waiter: String,
    pub(crate) waiter_get: String,
    pub(crate) waiter_add: String,
    pub(crate) waiter_del: String,
    pub(crate) waiter_del_dead: String,
    pub(crate) waiter_alive: String,
    pub(crate) waiter_grant: String,
    pub(crate) waiter_requeue: String,
    pub(crate) waiter_unclaim: String,
    pub(crate) min_arrival: String,
    pub(crate) waiter_hb: String,
    pub(crate) cancelled_add: String,
    pub(crate) cancelled_prune: String,
    pub(crate) bell_add: String,
    pub(crate) bell_prune: String,
    pub(crate) bells_since: String,
    pub(crate) bells_max: String,
    pub(crate) snap_leases: String,
    pub(crate) snap_waiters: String,
    pub(crate) advance: String,
}

impl Sql {
    pub(crate) fn new(ns: &str) -> Self {
        let leases = table(ns, "leases");
        let waiters = table(ns, "waiters");
        let cancelled = table(ns, "cancelled");
        let bells = table(ns, "bells");
        let clock = table(ns, "test_clock");
        Sql {
            begin: format!(
                "SELECT s.deadline, s.token, s.ttl, l.owner, l.token, l.deadline, l.req, \
                 l.claimed, EXISTS (SELECT 1 FROM {waiters} w WHERE w.name = ?1), \
                 CASE WHEN ?2 = '' THEN 0 \
                      ELSE EXISTS (SELECT 1 FROM {cancelled} c WHERE c.id = ?2) END \
                 FROM {leases} s LEFT JOIN {leases} l ON l.name = ?1 AND ?1 <> '' \
                 WHERE s.name = ''"
            ),
            state_put: format!(
                "UPDATE {leases} SET deadline = ?1, token = ?2, ttl = ?3 WHERE name = ''"
            ),
            offset: offset_sql(&clock),
            lease_get: lease_get_sql(&leases),
            lease_put: format!(
                "REPLACE INTO {leases} (name, owner, token, deadline, ttl, req, claimed) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            ),
            lease_state_put: format!(
                "REPLACE INTO {leases} (name, owner, token, deadline, ttl, req, claimed) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7), ('', NULL, ?8, ?9, ?10, NULL, 0)"
            ),
            lease_del: format!("DELETE FROM {leases} WHERE name = ?1"),
            lease_free: format!("UPDATE {leases} SET owner = NULL WHERE name = ?1"),
            lease_claim: format!("UPDATE {leases} SET claimed = 1 WHERE name = ?1"),
            lease_renew: format!("UPDATE {leases} SET deadline = ?2, ttl = ?3 WHERE name = ?1"),
            head: format!(
                "SELECT id, owner, ttl, wd, hb FROM {waiters} \
                 WHERE name = ?1 AND granted IS NULL ORDER BY arrival LIMIT 1"
            ),
            any_waiter: format!("SELECT 1 FROM {waiters} WHERE name = ?1 LIMIT 1"),
            waiter_get: format!("SELECT granted FROM {waiters} WHERE id = ?1"),
            waiter_add: format!(
                "INSERT INTO {waiters} (id, name, arrival, owner, ttl, wd, hb) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            ),
            waiter_del: format!("DELETE FROM {waiters} WHERE id = ?1"),
            waiter_del_dead: format!("DELETE FROM {waiters} WHERE id = ?1 AND hb <= ?2"),
            waiter_alive: format!("SELECT 1 FROM {waiters} WHERE id = ?1 AND hb > ?2"),
            waiter_grant: format!("UPDATE {waiters} SET granted = ?2, gdl = ?3 WHERE id = ?1"),
            waiter_requeue: format!(
                "UPDATE {waiters} SET granted = NULL, gdl = NULL, arrival = ?2 WHERE id = ?1"
            ),
            waiter_unclaim: format!(
                "UPDATE {waiters} SET granted = NULL, gdl = NULL WHERE id = ?1"
            ),
            min_arrival: format!(
                "SELECT min(arrival) FROM {waiters} WHERE name = ?1 AND granted IS NULL"
            ),
            waiter_hb: format!("UPDATE {waiters} SET hb = ?2 WHERE id = ?1"),
            cancelled_add: format!("INSERT OR IGNORE INTO {cancelled} (id, at) VALUES (?1, ?2)"),
            cancelled_prune: format!("DELETE FROM {cancelled} WHERE at < ?1"),
            bell_add: format!("INSERT INTO {bells} (id) VALUES (?1)"),
            bell_prune: format!("DELETE FROM {bells} WHERE seq <= ?1"),
            bells_since: format!("SELECT seq, id FROM {bells} WHERE seq > ?1 ORDER BY seq"),
            bells_max: format!("SELECT coalesce(max(seq), 0) FROM {bells}"),
            snap_leases: format!(
                "SELECT l.name, l.owner, l.token, l.deadline FROM {leases} l \
                 WHERE l.owner IS NOT NULL AND ?1 < l.deadline \
                   AND (l.claimed OR EXISTS (SELECT 1 FROM {waiters} h \
                                             WHERE h.id = l.req AND h.hb > ?2)) \
                 ORDER BY l.name"
            ),
            snap_waiters: format!(
                "SELECT name, owner FROM {waiters} \
                 WHERE granted IS NULL AND hb > ?2 AND (wd = 0 OR ?1 < wd) \
                 ORDER BY name, arrival"
            ),
            advance: format!("UPDATE {clock} SET offset_us = offset_us + ?1"),
        }
    }
}

/// The SQL of the statements a fence check runs on the user's connection, with the
/// namespace's table names in: made once per store (and per [`install_fence_in`]), not per
/// check.
///
/// [`install_fence_in`]: crate::install_fence_in
#[derive(Debug)]
pub(crate) struct FenceSql {
    /// The test clock's offset (read in builds with the `test-clock` feature).
    #[cfg_attr(not(feature = "test-clock"), allow(dead_code))]
    pub(crate) offset: String,
    /// Raises the clock floor to `?1`.
    pub(crate) floor_raise: String,
    /// The clock floor.
    pub(crate) floor_get: String,
    /// The lease row of `?1`.
    pub(crate) lease_get: String,
}

impl FenceSql {
    pub(crate) fn new(ns: &str) -> Self {
        let leases = table(ns, "leases");
        FenceSql {
            offset: offset_sql(&table(ns, "test_clock")),
            floor_raise: format!(
                "UPDATE {leases} SET deadline = max(deadline, ?1) WHERE name = ''"
            ),
            floor_get: format!("SELECT deadline FROM {leases} WHERE name = ''"),
            lease_get: lease_get_sql(&leases),
        }
    }
}

/// The test clock's offset, from table `clock` (quoted).
fn offset_sql(clock: &str) -> String {
    format!("SELECT offset_us FROM {clock} LIMIT 1")
}

/// The lease row of `?1`, from table `leases` (quoted).
fn lease_get_sql(leases: &str) -> String {
    format!("SELECT owner, token, deadline, ttl, req, claimed FROM {leases} WHERE name = ?1")
}

/// The schema of version 2, with `@` for the namespace prefix. Every table is the
/// namespace's own; nothing else in the file is read or written.
///
/// Version 2 keeps the namespace's state (clock floor, last token, last arrival) in the row
/// named `''` of `@_leases` (never a lock name: names are not empty) instead of a table of
/// its own (version 1's `@_state`), so that an operation on a small table (its rows in one
/// page) writes one page of the WAL, not two.
///
/// Times are µs since the Unix epoch: lease time (`deadline`, `wd`, `floor`) is the wall
/// clock raised to `floor` (plus the test offset in test builds); heartbeats (`hb`, `at`) are
/// the raw wall clock.
pub(crate) const SCHEMA: &str = r#"
CREATE TABLE "@_meta" (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
-- One row per name that is held or has waiters. owner NULL: free (kept while waiters queue).
-- req: the request the lease went to (a try_lock's id or a waiter's id). claimed 0: handed to
-- waiter req, which has not picked it up yet.
-- The row named '' is the namespace's state: token = the last token, deadline = the clock
-- floor (lease time never goes below it), ttl = the last arrival number; owner NULL.
CREATE TABLE "@_leases" (name TEXT PRIMARY KEY, owner TEXT, token INTEGER NOT NULL,
                         deadline INTEGER NOT NULL, ttl INTEGER NOT NULL, req TEXT,
                         claimed INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO "@_leases" VALUES ('', NULL, 0, 0, 0, NULL, 0);
-- Queued acquire calls. wd: the wait deadline on lease time (0: none); hb: when the entry
-- counts as gone unless refreshed; granted, gdl: a lease handed to it, not yet picked up.
CREATE TABLE "@_waiters" (id TEXT PRIMARY KEY, name TEXT NOT NULL, arrival INTEGER NOT NULL,
                          owner TEXT NOT NULL, ttl INTEGER NOT NULL, wd INTEGER NOT NULL,
                          hb INTEGER NOT NULL, granted INTEGER, gdl INTEGER) WITHOUT ROWID;
CREATE INDEX "@_waiters_queue" ON "@_waiters" (name, arrival);
-- Withdrawn requests whose step may still run (kept ten minutes).
CREATE TABLE "@_cancelled" (id TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID;
-- Wake-ups: a waiter's id (handed a lease, or first in line now) or '*' (everybody re-checks).
-- Read by every process's listener when the file changes; the last 1000 are kept.
CREATE TABLE "@_bells" (seq INTEGER PRIMARY KEY, id TEXT NOT NULL);
-- The test clock's offset (read by builds with the `test-clock` feature only).
CREATE TABLE "@_test_clock" (offset_us INTEGER NOT NULL);
INSERT INTO "@_test_clock" VALUES (0);
"#;

/// The tables of a namespace, for the "not ours" check.
pub(crate) const TABLES: [&str; 6] = [
    "meta",
    "leases",
    "waiters",
    "cancelled",
    "bells",
    "test_clock",
];
