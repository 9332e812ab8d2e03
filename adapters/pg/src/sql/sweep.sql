-- sweep(limit) -> how many names it settled. Run now and then by every store (a few at a
-- time, rows locked by someone else skipped): the memory of the schema follows its live state.
-- - A name unused for a minute (a free row, or a lease lapsed a minute ago, with or without
--   waiters, handed off or not) is settled: dead waiters are deleted (their heartbeat lapsed:
--   a crashed process), a lease handed to one goes on to the next live waiter, and a name
--   nobody live waits for loses its row.
-- - Entries of waiters dead for a minute whose name has no row any more are deleted.
-- - Marks of withdrawn waiters (`cancelled`) go after ten minutes.
-- An operation on a deleted name simply creates its row again.
CREATE FUNCTION @s@.sweep(p_limit integer) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  @clock_decl@
  v_done bigint := 0;
  r @s@.leases;
  cur @s@.leases;
BEGIN
  @clock@
  FOR r IN
    SELECT * FROM @s@.leases
     WHERE (owner IS NULL AND seen < v_now - 60000000)
        OR (owner IS NOT NULL AND deadline < v_now - 60000000)
     LIMIT p_limit
     FOR UPDATE SKIP LOCKED
  LOOP
    cur := @s@._settle(r.name, r, greatest(v_now, r.seen), v_raw);
    IF cur.name IS NULL THEN
      DELETE FROM @s@.leases WHERE name = r.name;
    END IF;
    v_done := v_done + 1;
  END LOOP;
  DELETE FROM @s@.waiters w
   WHERE w.hb < v_raw - 60000000
     AND NOT EXISTS (SELECT 1 FROM @s@.leases l WHERE l.name = w.name);
  DELETE FROM @s@.cancelled WHERE at < v_raw - 600000000;
  @tick@
  RETURN v_done;
END
$fn$;
