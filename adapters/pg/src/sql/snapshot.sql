-- snapshot() -> the live leases (kind 0, by name), then the live queued waiters (kind 1, by
-- name, then in the order they will be served). Reads only; takes no lock.
CREATE FUNCTION @s@.snapshot()
RETURNS TABLE (o_kind integer, o_name text, o_owner text, o_token bigint, o_order bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_raw bigint;
  v_now bigint;
BEGIN
  @clock@
  RETURN QUERY
    SELECT 0, l.name, l.owner, l.token, l.deadline FROM @s@.leases l
     WHERE l.owner IS NOT NULL AND greatest(v_now, l.seen) < l.deadline
    UNION ALL
    SELECT 1, w.name, w.owner, 0::bigint, w.arrival FROM @s@.waiters w
     WHERE w.granted IS NULL AND w.hb > v_raw AND (w.wd = 0 OR v_now < w.wd)
    ORDER BY 1, 2, 5;
END
$fn$;
