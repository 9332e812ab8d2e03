-- try_lock(name, owner, ttl µs, request id) -> {1, token, deadline, now} granted
--                                           | {0, holder's deadline, now} busy
-- A free name with no row is inserted and granted at once; the token is taken after the
-- insert (which holds the new row's lock), never before. p_req is kept in the lease, so that
-- the same request run again (a retry after a lost reply) finds its own lease.
CREATE FUNCTION @s@.try_lock(p_name text, p_owner text, p_ttl bigint, p_req text)
RETURNS bigint[]
LANGUAGE plpgsql AS $fn$
DECLARE
  v_raw bigint;
  v_now bigint;
  v_token bigint;
  r @s@.leases;
  cur @s@.leases;
BEGIN
  @clock@
  INSERT INTO @s@.leases (name, owner, deadline, ttl, req, seen)
    VALUES (p_name, p_owner, v_now + p_ttl, p_ttl, p_req, v_now)
    ON CONFLICT (name) DO NOTHING;
  IF FOUND THEN
    UPDATE @s@.leases SET token = nextval('@tokens@') WHERE name = p_name
    RETURNING token INTO v_token;
    RETURN ARRAY[1, v_token, v_now + p_ttl, v_now];
  END IF;
  r := @s@._lock_row(p_name);
  v_now := greatest(v_now, r.seen);
  cur := @s@._settle(p_name, r, v_now, v_raw);
  IF cur.name IS NOT NULL THEN
    IF cur.req = p_req THEN
      RETURN ARRAY[1, cur.token, cur.deadline, v_now];
    END IF;
    RETURN ARRAY[0, cur.deadline, v_now];
  END IF;
  cur := @s@._grant(p_name, p_owner, p_ttl, p_req, true, v_now);
  RETURN ARRAY[1, cur.token, cur.deadline, v_now];
END
$fn$;
