-- is_held(name, token) -> {1, deadline, now} | {0, 0, now}. Reads only; takes no lock.
CREATE FUNCTION @s@.is_held(p_name text, p_token bigint) RETURNS bigint[]
LANGUAGE plpgsql AS $fn$
DECLARE
  v_raw bigint;
  v_now bigint;
  v_dl bigint;
  v_seen bigint;
BEGIN
  @clock@
  SELECT deadline, seen INTO v_dl, v_seen FROM @s@.leases
   WHERE name = p_name AND token = p_token AND owner IS NOT NULL;
  IF FOUND THEN
    v_now := greatest(v_now, v_seen);
    IF v_now < v_dl THEN
      RETURN ARRAY[1, v_dl, v_now];
    END IF;
  END IF;
  RETURN ARRAY[0, 0, v_now];
END
$fn$;
