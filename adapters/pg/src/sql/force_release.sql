-- force_release(name) -> (owner, token, deadline, now) of the live lease it ended, or a NULL
-- owner when the name had none. The name goes to the first waiter (with a larger token); the
-- old holder's renew then fails and its release answers 0; its keep_alive and lapsed are woken.
-- While a transaction that called fence() holds the row it refuses at once with SQLSTATE 55P03
-- (the engine's "busy": LockError::Unavailable), rather than end a lease whose guarded
-- transaction is open.
CREATE FUNCTION @s@.force_release(p_name text, OUT o_owner text, OUT o_token bigint,
                                  OUT o_deadline bigint, OUT o_now bigint)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  @clock_decl@
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
    IF NOT @s@._exclusive(p_name) THEN
      RAISE EXCEPTION 'alkstore force_release: lock % is held by a transaction that called fence()',
        quote_literal(p_name)
        USING ERRCODE = '55P03', HINT = 'retry once that transaction has ended';
    END IF;
    v_now := greatest(v_now, r.seen);
    IF @s@._live(r, v_now, v_raw) THEN
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
      PERFORM pg_catalog.pg_notify('@chan@', '*');
    ELSE
      cur := @s@._settle(p_name, r, v_now, v_raw);
    END IF;
    IF cur.name IS NULL THEN
      DELETE FROM @s@.leases WHERE name = p_name;
    END IF;
  END;
  o_now := v_now;
  @tick@
END
$fn$;
