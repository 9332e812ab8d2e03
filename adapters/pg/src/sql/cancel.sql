-- cancel(name, waiter id): a waiting acquire was dropped (or failed). It leaves the queue, and
-- a lease that went to it (handed over, or granted by a step whose reply never arrived) is
-- passed on to the next waiter or freed; if it was first, the waiter first now is told.
CREATE FUNCTION @s@.cancel(p_name text, p_id text) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  v_raw bigint;
  v_now bigint;
  r @s@.leases;
  cur @s@.leases;
BEGIN
  @clock@
  SELECT * INTO r FROM @s@.leases WHERE name = p_name FOR UPDATE;
  IF NOT FOUND THEN
    DELETE FROM @s@.waiters WHERE id = p_id;
    RETURN;
  END IF;
  v_now := greatest(v_now, r.seen);
  IF r.owner IS NOT NULL AND r.req = p_id THEN
    r.owner := NULL;
  END IF;
  cur := @s@._leave(p_name, p_id, r, v_now, v_raw);
  IF cur.name IS NULL THEN
    DELETE FROM @s@.leases WHERE name = p_name;
  END IF;
END
$fn$;
