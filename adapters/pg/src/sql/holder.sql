-- holder(name) -> (owner, token, deadline, now): the live lease, or a NULL owner when the name
-- is free. An unlocked row is brought up to date (a lapsed lease goes to the first waiter, or
-- the row is deleted); a row locked by another transaction (an operation in flight, or a
-- transaction holding fence()) is read as last committed, without waiting. Both ways a lease
-- is live as _live says (snapshot() agrees).
CREATE FUNCTION @s@.holder(p_name text, OUT o_owner text, OUT o_token bigint,
                           OUT o_deadline bigint, OUT o_now bigint)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  @clock_decl@
  r @s@.leases;
  cur @s@.leases;
BEGIN
  @clock@
  p_name := @s@._k(p_name);
  SELECT * INTO r FROM @s@.leases WHERE name = p_name FOR UPDATE SKIP LOCKED;
  IF FOUND THEN
    v_now := greatest(v_now, r.seen);
    cur := @s@._settle(p_name, r, v_now, v_raw);
    IF cur.name IS NULL THEN
      DELETE FROM @s@.leases WHERE name = p_name;
    END IF;
  ELSE
    SELECT * INTO cur FROM @s@.leases WHERE name = p_name;
    IF FOUND THEN
      v_now := greatest(v_now, cur.seen);
      IF NOT @s@._live(cur, v_now, v_raw) THEN
        v_lapse := cur.owner IS NOT NULL AND v_now >= cur.deadline AND cur.deadline > v_floor;
        cur := NULL;
      END IF;
    END IF;
  END IF;
  o_now := v_now;
  IF cur.name IS NOT NULL THEN
    o_owner := cur.owner;
    o_token := cur.token;
    o_deadline := cur.deadline;
  END IF;
  @tick@
END
$fn$;
