-- renew(name, token, ttl µs) -> {1, deadline, now} | {0, 0, now} when the lease is no longer
-- held (lapsed: now at or after its deadline; released; or handed to another).
-- One UPDATE: it takes the row lock FOR NO KEY UPDATE, which a transaction holding fence()
-- (FOR KEY SHARE) does not block, so a holder renews while its guarded writes are open.
CREATE FUNCTION @s@.renew(p_name text, p_token bigint, p_ttl bigint) RETURNS bigint[]
LANGUAGE plpgsql AS $fn$
DECLARE
  v_raw bigint;
  v_now bigint;
  v_dl bigint;
  v_seen bigint;
BEGIN
  @clock@
  UPDATE @s@.leases
     SET deadline = greatest(v_now, seen) + p_ttl, ttl = p_ttl, seen = greatest(v_now, seen)
   WHERE name = p_name AND token = p_token AND owner IS NOT NULL AND claimed
     AND greatest(v_now, seen) < deadline
  RETURNING deadline, seen INTO v_dl, v_seen;
  IF FOUND THEN
    RETURN ARRAY[1, v_dl, v_seen];
  END IF;
  RETURN ARRAY[0, 0, v_now];
END
$fn$;
