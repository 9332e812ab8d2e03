-- release(name, token) -> 1 when the lease was live and is now free or handed to the first
-- waiter; 0 when it had lapsed or is not this token's (a newer lease is never touched).
CREATE FUNCTION @s@.release(p_name text, p_token bigint) RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
  v_raw bigint;
  v_now bigint;
  v_live bigint := 0;
  r @s@.leases;
  cur @s@.leases;
BEGIN
  @clock@
  SELECT * INTO r FROM @s@.leases WHERE name = p_name FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  v_now := greatest(v_now, r.seen);
  IF r.owner IS NOT NULL AND r.token = p_token THEN
    IF v_now < r.deadline THEN
      v_live := 1;
    END IF;
    -- The common case, inline: nobody waits (waiters queue only under this row's lock, and
    -- this statement sees every one committed before the lock was taken), so the row goes.
    IF NOT EXISTS (SELECT 1 FROM @s@.waiters WHERE name = p_name) THEN
      DELETE FROM @s@.leases WHERE name = p_name;
      RETURN v_live;
    END IF;
    cur := @s@._hand_off(p_name, v_now, v_raw);
  ELSE
    cur := @s@._settle(p_name, r, v_now, v_raw);
  END IF;
  IF cur.name IS NULL THEN
    DELETE FROM @s@.leases WHERE name = p_name;
  END IF;
  RETURN v_live;
END
$fn$;
