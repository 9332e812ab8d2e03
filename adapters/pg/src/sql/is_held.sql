-- is_held(name, token) -> {1, deadline, now} | {0, 0, now}. Takes no row lock. Finding the
-- lease lapsed raises the schema's floor to now (it stays lapsed if the clock steps back).
CREATE FUNCTION @s@.is_held(p_name text, p_token bigint) RETURNS bigint[]
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  @clock_decl@
  v_dl bigint;
  v_seen bigint;
  v_out bigint[];
BEGIN
  @clock@
  p_name := @s@._k(p_name);
  v_out := ARRAY[0, 0, v_now];
  SELECT deadline, seen INTO v_dl, v_seen FROM @s@.leases
   WHERE name = p_name AND token = p_token AND owner IS NOT NULL;
  IF FOUND THEN
    v_now := greatest(v_now, v_seen);
    IF v_now < v_dl THEN
      v_out := ARRAY[1, v_dl, v_now];
    ELSE
      v_lapse := v_dl > v_floor;
      v_out := ARRAY[0, 0, v_now];
    END IF;
  END IF;
  @tick@
  RETURN v_out;
END
$fn$;
