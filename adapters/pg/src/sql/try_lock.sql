-- try_lock(name, owner, ttl µs, request id) -> {1, token, deadline, now} granted
--                                           | {0, holder's deadline, now} busy
-- A free name with no row is inserted and granted at once; the token is taken after the
-- insert (which holds the new row's lock), never before. p_req is kept in the lease, so that
-- the same request run again (a retry after a lost reply) finds its own lease. A row held by
-- a transaction that called fence() is not waited for: SQLSTATE 55P03 at once, and the
-- client tries again off the connection until the config's lock wait has passed (then
-- busy).
CREATE FUNCTION @s@.try_lock(p_name text, p_owner text, p_ttl bigint, p_req text)
RETURNS bigint[]
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  @clock_decl@
  v_token bigint;
  v_out bigint[];
  v_long text;
  r @s@.leases;
  cur @s@.leases;
BEGIN
  @clock@
  v_long := nullif(p_name, @s@._k(p_name));
  p_name := @s@._k(p_name);
  <<body>>
  BEGIN
    INSERT INTO @s@.leases (name, long_name, owner, deadline, ttl, req, seen)
      VALUES (p_name, v_long, p_owner, v_now + p_ttl, p_ttl, p_req, v_now)
      ON CONFLICT DO NOTHING;
    IF FOUND THEN
      -- Withdrawn (see below): the new row goes again, and the answer is busy.
      IF EXISTS (SELECT 1 FROM @s@.cancelled WHERE id = p_req) THEN
        DELETE FROM @s@.leases WHERE name = p_name;
        v_out := ARRAY[0, 0, v_now];
        EXIT body;
      END IF;
      -- The insert may have waited for a transaction deleting the name's last row: lease
      -- time is read again after it, so it is never below the time that one acted at.
      v_now := greatest(v_now, @now_expr@);
      UPDATE @s@.leases SET token = pg_catalog.nextval('@tokens@'::pg_catalog.regclass), deadline = v_now + p_ttl, seen = v_now
       WHERE name = p_name
      RETURNING token INTO v_token;
      v_out := ARRAY[1, v_token, v_now + p_ttl, v_now];
      EXIT body;
    END IF;
    r := @s@._lock_row(p_name, true, v_long);
    v_now := greatest(v_now, r.seen);
    -- Withdrawn: the client gave up on this request (its reply did not come in time) and
    -- cancel() marked it, under this row's lock, before this statement ran: never granted
    -- to a caller that was told the call failed.
    IF EXISTS (SELECT 1 FROM @s@.cancelled WHERE id = p_req) THEN
      v_out := ARRAY[0, CASE WHEN r.owner IS NULL THEN 0 ELSE r.deadline END, v_now];
      EXIT body;
    END IF;
    cur := @s@._settle(p_name, r, v_now, v_raw);
    IF cur.name IS NOT NULL THEN
      IF cur.req = p_req THEN
        v_out := ARRAY[1, cur.token, cur.deadline, v_now];
      ELSE
        v_out := ARRAY[0, cur.deadline, v_now];
      END IF;
      EXIT body;
    END IF;
    cur := @s@._grant(p_name, p_owner, p_ttl, p_req, true, v_now);
    v_out := ARRAY[1, cur.token, cur.deadline, v_now];
  END;
  @tick@
  RETURN v_out;
END
$fn$;
