//! The server-side code: the `.sql` files next to this one, rendered for one schema, and the
//! versioned migration that installs them under an advisory lock.
//!
//! Placeholders: `@s@` the schema's quoted identifier, `@chan@` its NOTIFY channel,
//! `@tokens@` / `@arrivals@` / `@floor@` its sequences (as regclass literals), `@floorkey@`
//! the two keys of the floor's advisory lock, `@clock_decl@` the variables of the clock,
//! `@clock@` the statements that read it (`v_raw` the server's clock, `v_clock` lease time:
//! plus the test offset in `test-clock` builds, `v_floor` the schema's floor, `v_now` lease
//! time raised to the floor), `@tick@` the statement every function ends with (the floor
//! follows lease time). Lock names, owners and every other value are parameters, never
//! spliced in.
//!
//! No object is found through the caller's `search_path` (a `public.nextval(text)` or a role's
//! `search_path = evil, pg_catalog` would otherwise be called instead of PostgreSQL's): every
//! function runs with `SET search_path = pg_catalog, pg_temp`, every function the code calls is
//! written `pg_catalog.`-qualified and every table with the schema's identifier, and the
//! engine's own sessions pin the same `search_path` (`conn::PINNED`), under which the
//! client-side statements of `fast.sql` are prepared.

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

/// The schema version this build installs and understands. Version 2: names of any length
/// (long ones keyed by their digest), the schema's clock floor, marks of withdrawn waiters,
/// the queue under `FOR NO KEY UPDATE` (see `internal.sql`). Version 3: the same tables,
/// functions that write a lease row only when something on it changes (a fence in a
/// REPEATABLE READ or SERIALIZABLE transaction is not failed by waiters arriving) and that
/// never wait on a row a fence holds. Version 4: the same tables, functions that run with
/// `search_path = pg_catalog, pg_temp` and call PostgreSQL's functions qualified (a
/// hostile `search_path` shadows none of them), and no `waiting` column: a waiter arriving
/// writes nothing on the lease row (the fast paths ask the queue after the row's lock), so a
/// fence() first in a REPEATABLE READ or SERIALIZABLE transaction is not failed by it.
pub(crate) const VERSION: i32 = 4;

/// Which clock this build's functions read: recorded in the schema's `meta` row, so that a
/// plain build never runs on a schema installed by a test build, nor the other way round.
#[cfg(not(feature = "test-clock"))]
pub(crate) const CLOCK_MODE: &str = "server";
#[cfg(feature = "test-clock")]
pub(crate) const CLOCK_MODE: &str = "test";

const CLOCK_DECL: &str =
    "v_raw bigint; v_clock bigint; v_floor bigint; v_now bigint; v_lapse boolean := false;";
const RAW_NOW: &str =
    "v_raw := (extract(epoch FROM pg_catalog.clock_timestamp()) * 1000000)::bigint;";
#[cfg(not(feature = "test-clock"))]
const LEASE_NOW: &str = "v_clock := v_raw;";
#[cfg(feature = "test-clock")]
const LEASE_NOW: &str = "v_clock := v_raw + (SELECT offset_us FROM @s@.test_clock);";
const FLOORED: &str = "v_floor := (SELECT last_value FROM @floor_rel@);
  v_now := greatest(v_clock, v_floor);";
/// How far lease time may run ahead of the floor before an operation moves the floor up:
/// 10 ms, in µs (so the floor is written at most about a hundred times a second).
const TICK: &str = "IF v_lapse THEN
    PERFORM @s@._raise(v_now);
  ELSIF v_clock > v_floor + 10000 THEN
    PERFORM @s@._tick(v_clock);
  END IF;";

/// Version 1's tables.
const TABLES_1: &str = include_str!("sql/001_tables.sql");
/// What version 2 changes on them.
const TABLES_2: &str = include_str!("sql/002_tables.sql");
/// What version 4 changes on them.
const TABLES_4: &str = include_str!("sql/003_tables.sql");

/// The functions, in the order they are created (helpers first).
const FUNCTIONS: &[&str] = &[
    include_str!("sql/internal.sql"),
    include_str!("sql/try_lock.sql"),
    include_str!("sql/acquire.sql"),
    include_str!("sql/cancel.sql"),
    include_str!("sql/release.sql"),
    include_str!("sql/renew.sql"),
    include_str!("sql/is_held.sql"),
    include_str!("sql/holder.sql"),
    include_str!("sql/snapshot.sql"),
    include_str!("sql/force_release.sql"),
    include_str!("sql/fence.sql"),
    include_str!("sql/sweep.sql"),
];

/// Drops every function of the schema (a version 1 schema's, before version 2's are made).
const DROP_FUNCTIONS: &str = "DO $drop$
DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
            WHERE p.pronamespace = to_regnamespace('@s@')
  LOOP
    EXECUTE 'DROP FUNCTION ' || f;
  END LOOP;
END
$drop$;
";

#[cfg(feature = "test-clock")]
const TEST_CLOCK: &str = include_str!("sql/test_clock.sql");

/// The client-side statements of `fast.sql`, each after its `-- @name@` line.
const FAST: &str = include_str!("sql/fast.sql");

/// The lease clock as one SQL expression, for the fast statements (before the floor).
#[cfg(not(feature = "test-clock"))]
const NOW_EXPR: &str = "(extract(epoch FROM pg_catalog.clock_timestamp()) * 1000000)::bigint";
#[cfg(feature = "test-clock")]
const NOW_EXPR: &str = "((extract(epoch FROM pg_catalog.clock_timestamp()) * 1000000)::bigint + (SELECT offset_us FROM @s@.test_clock))";

/// Two keys for `pg_advisory_xact_lock(int, int)`: this constant ("alks") and the hash of
/// the schema's name, so that migrations of one schema wait for each other only.
const MIGRATION_LOCK: i32 = 0x616c_6b73;

/// The first key of the floor's advisory lock ("alkf"); the second is a hash of the schema's
/// name (`Schema::floor_key`).
const FLOOR_LOCK: i32 = 0x616c_6b66;

/// One schema's identifiers, for rendering the `.sql` files and the calls.
#[derive(Clone, Debug)]
pub(crate) struct Schema {
    /// The name as configured (checked by `PgConfig::check_schema`).
    pub(crate) name: String,
    /// The quoted identifier.
    pub(crate) ident: String,
    /// The NOTIFY channel of this schema: `alk_` and a hash of the name (deterministic in
    /// every process), well under PostgreSQL's 63-byte identifier limit.
    pub(crate) channel: String,
    /// The second key of the floor's advisory lock (deterministic in every process).
    floor_key: i32,
}

impl Schema {
    /// The identifiers of schema `name` (already checked: ASCII letters, digits, `_`, `-`).
    pub(crate) fn new(name: &str) -> Self {
        Schema {
            name: name.into(),
            ident: format!("\"{}\"", name.replace('"', "\"\"")),
            channel: format!("alk_{:016x}", fnv1a(name.as_bytes())),
            // The low 32 bits of the hash, as the int the advisory lock takes.
            floor_key: fnv1a(name.as_bytes()) as u32 as i32,
        }
    }

    /// The fast statement `name` of `fast.sql` (`try_lock_fast`, `release_fast`, `sweep`),
    /// rendered for this schema.
    pub(crate) fn fast(&self, name: &str) -> String {
        let marker = format!("-- @{name}@");
        let body: String = FAST
            .split_once(&marker)
            .map(|(_, rest)| rest)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .skip_while(|line| line.starts_with("--"))
            .take_while(|line| !line.starts_with("--"))
            .collect::<Vec<_>>()
            .join("\n");
        self.render(&body)
    }

    /// `sql` with this schema's placeholders filled in.
    pub(crate) fn render(&self, sql: &str) -> String {
        let clock = format!("{RAW_NOW}\n  {LEASE_NOW}\n  {FLOORED}");
        sql.replace("@clock_decl@", CLOCK_DECL)
            .replace("@clock@", &clock)
            .replace("@tick@", TICK)
            .replace("@now_expr@", NOW_EXPR)
            .replace("@tokens@", &format!("{}.tokens", self.ident))
            .replace("@arrivals@", &format!("{}.arrivals", self.ident))
            .replace("@floor_rel@", &format!("{}.floor", self.ident))
            .replace("@floor@", &format!("{}.floor", self.ident))
            .replace("@floorkey@", &format!("{FLOOR_LOCK}, {}", self.floor_key))
            .replace("@chan@", &self.channel)
            .replace("@s@", &self.ident)
    }

    /// The script that installs every function (and, in test builds, the test clock).
    fn functions(&self) -> String {
        let mut script = String::new();
        for function in FUNCTIONS {
            script.push_str(&self.render(function));
        }
        #[cfg(feature = "test-clock")]
        script.push_str(&self.render(TEST_CLOCK));
        script
    }
}

/// 64-bit FNV-1a: the same in every process and build (std's hashers are randomized).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Installs the schema if it is missing, in one transaction under an advisory lock, so that
/// several processes connecting at once install it once; then checks its version and clock.
pub(crate) async fn migrate(client: &mut Client, schema: &Schema) -> Result<(), String> {
    let db = |e: tokio_postgres::Error| crate::wire::detail(&e);
    // A role without a right it needs here is told what to ask an administrator for.
    let rights = |e: tokio_postgres::Error| match e.code() {
        Some(&SqlState::INSUFFICIENT_PRIVILEGE) => format!(
            "{}; this role may not install or upgrade the schema, or read it: an \
             administrator installs it (alkstore_pg::install, as the role that is to own it) \
             and grants this role the rights the alkstore-pg README lists under \"Roles and \
             grants\"",
            crate::wire::detail(&e)
        ),
        _ => crate::wire::detail(&e),
    };
    let standby: bool = client
        .query_one("SELECT pg_is_in_recovery()", &[])
        .await
        .map_err(db)?
        .get(0);
    if standby {
        return Err(
            "the server is a hot standby (in recovery, read-only): alkstore-pg takes \
                    and renews locks by writing; connect to the primary"
                .into(),
        );
    }
    let tx = client.transaction().await.map_err(db)?;
    // The connection's lock_timeout is the engine's short lock wait (a name held by a fenced
    // transaction counts as busy after it); the migration lock is waited for as long as the
    // connect may take (`connect_with` bounds the whole by the io_timeout), since another
    // process may be installing the schema meanwhile.
    tx.batch_execute("SET LOCAL lock_timeout = 0")
        .await
        .map_err(db)?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&MIGRATION_LOCK, &schema.name],
    )
    .await
    .map_err(db)?;
    let encoding: String = tx
        .query_one("SELECT current_setting('server_encoding')", &[])
        .await
        .map_err(db)?
        .get(0);
    if encoding != "UTF8" {
        return Err(format!(
            "the database's encoding is {encoding}; alkstore-pg needs UTF8 (lock names are \
             any Unicode without control characters)"
        ));
    }
    let meta = format!("{}.meta", schema.ident);
    let installed: bool = tx
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&meta])
        .await
        .map_err(rights)?
        .get(0);
    if !installed {
        let mut script = schema.render(TABLES_1);
        script.push_str(&schema.render(TABLES_2));
        script.push_str(&schema.render(TABLES_4));
        script.push_str(&schema.functions());
        tx.batch_execute(&script).await.map_err(rights)?;
        tx.execute(
            &format!("INSERT INTO {meta} (version, clock) VALUES ($1, $2)"),
            &[&VERSION, &CLOCK_MODE],
        )
        .await
        .map_err(db)?;
    } else {
        let row = tx
            .query_one(&format!("SELECT version, clock FROM {meta}"), &[])
            .await
            .map_err(rights)?;
        let (version, clock): (i32, String) = (row.get(0), row.get(1));
        if version > VERSION {
            return Err(format!(
                "schema {:?} is at version {version}, installed by a newer alkstore-pg; this \
                 one knows versions up to {VERSION}",
                schema.name
            ));
        }
        if clock != CLOCK_MODE {
            return Err(format!(
                "schema {:?} was installed by a build with the {clock:?} clock; this build \
                 uses the {CLOCK_MODE:?} clock (the test-only `test-clock` feature): use \
                 another schema",
                schema.name
            ));
        }
        if version < VERSION {
            // 1 -> 2 and 3 -> 4: the tables change in place (rows kept); 2 -> 3: they stay. Every
            // function is made again. Processes still running an older build fail their calls
            // from here on (version 1's functions are gone) or run the older functions' rules
            // (version 2's signatures are kept): upgrade them together.
            let mut script = schema.render(DROP_FUNCTIONS);
            if version < 2 {
                script.push_str(&schema.render(TABLES_2));
            }
            if version < 4 {
                script.push_str(&schema.render(TABLES_4));
            }
            script.push_str(&schema.functions());
            tx.batch_execute(&script).await.map_err(rights)?;
            tx.execute(&format!("UPDATE {meta} SET version = $1"), &[&VERSION])
                .await
                .map_err(db)?;
        }
        // Later versions add their steps here, each from the version before it.
        let missing: Vec<String> = tx
            .query(RIGHTS, &[&schema.ident])
            .await
            .map_err(rights)?
            .iter()
            .map(|row| row.get(0))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "this role lacks rights the engine uses on schema {:?}: {}; an administrator \
                 grants what the alkstore-pg README lists under \"Roles and grants\" (for the \
                 application role)",
                schema.name,
                missing.join(", ")
            ));
        }
    }
    tx.commit().await.map_err(db)
}

/// Every right the engine's calls use on an installed schema (`$1`, its quoted identifier),
/// that the connecting role lacks: one row per missing right, named as a `GRANT` names it.
/// Checked at `connect`, so that a role missing one is refused there, not on every call after.
const RIGHTS: &str = "
WITH s AS (SELECT to_regnamespace($1) AS ns)
SELECT 'USAGE ON SCHEMA ' || $1 FROM s WHERE NOT has_schema_privilege(s.ns, 'USAGE')
UNION ALL
SELECT priv || ' ON ' || $1 || '.' || t FROM s,
  (VALUES ('meta', 'SELECT'), ('leases', 'SELECT'), ('leases', 'INSERT'), ('leases', 'UPDATE'),
          ('leases', 'DELETE'), ('waiters', 'SELECT'), ('waiters', 'INSERT'),
          ('waiters', 'UPDATE'), ('waiters', 'DELETE'), ('cancelled', 'SELECT'),
          ('cancelled', 'INSERT'), ('cancelled', 'DELETE')) AS r(t, priv)
 WHERE NOT has_table_privilege(($1 || '.' || t)::regclass, priv)
UNION ALL
SELECT priv || ' ON SEQUENCE ' || $1 || '.' || q FROM s,
  (VALUES ('tokens'), ('arrivals'), ('floor')) AS n(q), (VALUES ('USAGE'), ('SELECT'), ('UPDATE')) AS r(priv)
 WHERE NOT has_sequence_privilege(($1 || '.' || q)::regclass, priv)
UNION ALL
SELECT 'EXECUTE ON FUNCTION ' || p.oid::regprocedure::text FROM s, pg_proc p
 WHERE p.pronamespace = s.ns AND NOT has_function_privilege(p.oid, 'EXECUTE')";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_rendered() {
        let schema = Schema::new("My-Schema");
        let mut all = schema.render(TABLES_1);
        all.push_str(&schema.render(TABLES_2));
        all.push_str(&schema.render(TABLES_4));
        all.push_str(&schema.functions());
        all.push_str(&schema.render(DROP_FUNCTIONS));
        for fast in ["try_lock_fast", "release_fast"] {
            let sql = schema.fast(fast);
            assert!(sql.len() > 100 && !sql.contains("--"), "{fast}: {sql}");
            all.push_str(&sql);
        }
        assert!(!all.contains('@'), "a placeholder is left");
        assert!(all.contains("\"My-Schema\".leases"));
        assert!(all.contains(&schema.channel));
        assert_eq!(schema.channel.len(), 20);
        assert_ne!(Schema::new("a").channel, Schema::new("b").channel);
        assert_eq!(Schema::new("a").channel, Schema::new("a").channel);
    }
}
