-- renew(name, token, ttl µs) -> {1, deadline, now} | {0, 0, now} when the lease is no longer
-- held (lapsed: now at or after its deadline; released; or handed to another).
-- One UPDATE: it takes the row lock FOR NO KEY UPDATE, which a transaction holding fence()
-- (FOR KEY SHARE) does not block, so a holder renews while its guarded writes are open. A
-- refusal because the lease lapsed raises the schema's floor to now, so that it stays lapsed
-- if the server's clock steps back.
CREATE FUNCTION @s@.renew(p_name text, p_token bigint, p_ttl bigint) RETURNS bigint[]
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  @clock_decl@
  v_dl bigint;
  v_seen bigint;
  v_out bigint[];
BEGIN
  @clock@
  p_name := @s@._k(p_name);
  UPDATE @s@.leases
     SET deadline = greatest(v_now, seen) + p_ttl, ttl = p_ttl, seen = greatest(v_now, seen)
   WHERE name = p_name AND token = p_token AND owner IS NOT NULL AND claimed
     AND greatest(v_now, seen) < deadline
  RETURNING deadline, seen INTO v_dl, v_seen;
  IF FOUND THEN
    v_out := ARRAY[1, v_dl, v_seen];
  ELSE
    SELECT deadline, seen INTO v_dl, v_seen FROM @s@.leases
     WHERE name = p_name AND token = p_token AND owner IS NOT NULL;
    IF FOUND THEN
      v_now := greatest(v_now, v_seen);
      v_lapse := v_now >= v_dl AND v_dl > v_floor;
    END IF;
    v_out := ARRAY[0, 0, v_now];
  END IF;
  @tick@
  RETURN v_out;
END
$fn$;
