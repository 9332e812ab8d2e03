-- cancel(name, waiter id, mark): a waiting acquire was dropped (or failed, or its bounded wait
-- ended without an answer). It leaves the queue, and a lease that went to it (handed over, or
-- granted by a step whose reply never arrived) is freed and passed on to the next waiter; if
-- it was first, the waiter first now is told.
-- p_mark: a step of this waiter may still be in flight (sent, not answered: it may run after
-- this). Its id is then recorded in `cancelled`, under the lease row's lock, and a step that
-- runs later finds it under the same lock and neither grants nor queues. The row is locked
-- (created if missing) whatever happened before, so the two are ordered either way.
CREATE FUNCTION @s@.cancel(p_name text, p_id text, p_mark boolean) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  @clock_decl@
  v_excl boolean;
  v_long text;
  r @s@.leases;
  cur @s@.leases;
BEGIN
  @clock@
  v_long := nullif(p_name, @s@._k(p_name));
  p_name := @s@._k(p_name);
  r := @s@._lock_row(p_name, false, v_long);
  IF p_mark THEN
    INSERT INTO @s@.cancelled (id, at) VALUES (p_id, v_raw) ON CONFLICT DO NOTHING;
  END IF;
  v_now := greatest(v_now, r.seen);
  IF r.owner IS NOT NULL AND r.req = p_id THEN
    -- Nobody holds it (the waiter never got the reply): it ends here.
    UPDATE @s@.leases SET owner = NULL, seen = greatest(seen, v_now) WHERE name = p_name
    RETURNING * INTO r;
  END IF;
  v_excl := @s@._exclusive(p_name);
  cur := @s@._leave(p_name, p_id, r, v_now, v_raw, v_excl);
  IF v_excl AND cur.name IS NULL THEN
    DELETE FROM @s@.leases WHERE name = p_name;
  END IF;
  @tick@
END
$fn$;
