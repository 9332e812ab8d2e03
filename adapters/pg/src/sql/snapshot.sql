-- snapshot() -> the live leases (kind 0, by name; live as _live says, so holder() agrees),
-- then the live queued waiters (kind 1, by name, then in the order they will be served).
-- Takes no row lock. Leases it leaves out because they lapsed raise the schema's floor to now.
CREATE FUNCTION @s@.snapshot()
RETURNS TABLE (o_kind integer, o_name text, o_owner text, o_token bigint, o_order bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
  @clock_decl@
BEGIN
  @clock@
  RETURN QUERY
    SELECT 0, coalesce(l.long_name, l.name), l.owner, l.token, l.deadline FROM @s@.leases l
     WHERE l.owner IS NOT NULL AND greatest(v_now, l.seen) < l.deadline
       AND (l.claimed OR EXISTS (SELECT 1 FROM @s@.waiters h
                                  WHERE h.id = l.req AND h.hb > v_raw))
    UNION ALL
    SELECT 1, coalesce(w.long_name, w.name), w.owner, 0::bigint, w.arrival FROM @s@.waiters w
     WHERE w.granted IS NULL AND w.hb > v_raw AND (w.wd = 0 OR v_now < w.wd)
    ORDER BY 1, 2, 5;
  v_lapse := EXISTS (SELECT 1 FROM @s@.leases l
                      WHERE l.owner IS NOT NULL AND l.deadline > v_floor
                        AND greatest(v_now, l.seen) >= l.deadline);
  @tick@
  RETURN;
END
$fn$;
