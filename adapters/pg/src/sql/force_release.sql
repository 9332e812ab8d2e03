-- force_release(name) -> (owner, token, deadline, now) of the live lease it ended, or a NULL
-- owner when the name had none. The name goes to the first waiter (with a larger token); the
-- old holder's renew then fails and its release answers 0; its keep_alive and lapsed are woken.
CREATE FUNCTION @s@.force_release(p_name text, OUT o_owner text, OUT o_token bigint,
                                  OUT o_deadline bigint, OUT o_now bigint)
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
    o_now := v_now;
    RETURN;
  END IF;
  v_now := greatest(v_now, r.seen);
  o_now := v_now;
  IF r.owner IS NOT NULL AND v_now < r.deadline THEN
    o_owner := r.owner;
    o_token := r.token;
    o_deadline := r.deadline;
    IF NOT r.claimed THEN
      -- Handed to a waiter that has not picked it up: it is back in line (first).
      UPDATE @s@.waiters SET granted = NULL, gdl = NULL WHERE id = r.req;
    END IF;
    cur := @s@._hand_off(p_name, v_now, v_raw);
    -- Every sleeper of the schema re-checks, so that the old holder's keep_alive and lapsed
    -- find out now rather than at their next renewal or the deadline.
    PERFORM pg_notify('@chan@', '*');
  ELSE
    cur := @s@._settle(p_name, r, v_now, v_raw);
  END IF;
  IF cur.name IS NULL THEN
    DELETE FROM @s@.leases WHERE name = p_name;
  END IF;
END
$fn$;
