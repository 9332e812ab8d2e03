-- release(name, token) -> 1 when the lease was live and is now ended; 0 when it had lapsed or
-- is not this token's (a newer lease is never touched). The name goes to the first live waiter
-- in this transaction, or is freed. While a transaction that called fence() holds the row,
-- the lease still ends here (renew, is_held and fence refuse it from now on) but nobody is
-- granted the name until that transaction has ended: the first waiter is handed it then, by
-- whoever settles the name first (its own next step, at the latest one heartbeat later).
-- A release that hands the name to nobody does not wait for its WAL flush (see fast.sql).
CREATE FUNCTION @s@.release(p_name text, p_token bigint) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  @clock_decl@
  v_out bigint := 0;
  v_excl boolean;
  r @s@.leases;
  cur @s@.leases;
BEGIN
  @clock@
  p_name := @s@._k(p_name);
  <<body>>
  BEGIN
    SELECT * INTO r FROM @s@.leases WHERE name = p_name FOR NO KEY UPDATE;
    IF NOT FOUND THEN
      EXIT body;
    END IF;
    v_now := greatest(v_now, r.seen);
    v_excl := @s@._exclusive(p_name);
    IF r.owner IS NOT NULL AND r.token = p_token THEN
      IF v_now < r.deadline THEN
        v_out := 1;
      END IF;
      IF NOT v_excl THEN
        UPDATE @s@.leases SET owner = NULL, seen = greatest(seen, v_now) WHERE name = p_name;
        PERFORM pg_catalog.set_config('synchronous_commit', 'off', true);
        EXIT body;
      END IF;
      -- The common case, inline: nobody waits (waiters queue only under this row's lock, and
      -- this statement sees every one committed before the lock was taken), so the row goes.
      IF NOT EXISTS (SELECT 1 FROM @s@.waiters WHERE name = p_name) THEN
        DELETE FROM @s@.leases WHERE name = p_name;
        PERFORM pg_catalog.set_config('synchronous_commit', 'off', true);
        EXIT body;
      END IF;
      cur := @s@._hand_off(p_name, v_now, v_raw);
    ELSIF v_excl THEN
      cur := @s@._settle(p_name, r, v_now, v_raw);
    ELSE
      EXIT body;
    END IF;
    IF cur.name IS NULL THEN
      DELETE FROM @s@.leases WHERE name = p_name;
    END IF;
  END;
  @tick@
  RETURN v_out;
END
$fn$;
