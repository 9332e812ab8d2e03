-- snapshot_page(kind, after key, after arrival, limit): one page of snapshot(), keyset:
--   kind 0: lease rows with key > p_after, by key (the primary key's index);
--   kind 1: waiter rows after (p_after, p_after_order), by name then arrival (waiters_queue);
-- at most p_limit rows are read. Returns the live leases of the page (kind 0: name, owner,
-- token, deadline; live as _live says, so holder() agrees) or the live queued waiters (kind
-- 1: name, owner, arrival), then, when p_limit rows were read, one row of kind 2 holding the
-- last key read (o_name, and its arrival in o_order): where the next page starts. The client
-- reads pages until one ends without it. Takes no row lock. Leases the page leaves out
-- because they lapsed raise the schema's floor to now.
CREATE FUNCTION @s@.snapshot_page(p_kind integer, p_after text, p_after_order bigint,
                                  p_limit integer)
RETURNS TABLE (o_kind integer, o_name text, o_owner text, o_token bigint, o_order bigint)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  @clock_decl@
  v_read bigint;
  v_key text;
  v_order bigint;
BEGIN
  @clock@
  IF p_kind = 0 THEN
    -- The page's range first (how many rows, the last key, whether a lease in it lapsed),
    -- then its live leases, by key within that range.
    SELECT count(*), max(l.name),
           coalesce(bool_or(l.owner IS NOT NULL AND l.deadline > v_floor
                            AND greatest(v_now, l.seen) >= l.deadline), false)
      INTO v_read, v_key, v_lapse
      FROM (SELECT name, owner, deadline, seen FROM @s@.leases
             WHERE name > p_after ORDER BY name LIMIT p_limit) l;
    v_order := 0;
    RETURN QUERY
      SELECT 0, coalesce(l.long_name, l.name), l.owner, l.token, l.deadline FROM @s@.leases l
       WHERE l.name > p_after AND l.name <= v_key
         AND l.owner IS NOT NULL AND greatest(v_now, l.seen) < l.deadline
         AND (l.claimed OR EXISTS (SELECT 1 FROM @s@.waiters h
                                    WHERE h.id = l.req AND h.hb > v_raw))
       ORDER BY l.name;
  ELSE
    SELECT count(*), (array_agg(w.name ORDER BY w.name DESC, w.arrival DESC))[1],
           (array_agg(w.arrival ORDER BY w.name DESC, w.arrival DESC))[1]
      INTO v_read, v_key, v_order
      FROM (SELECT name, arrival FROM @s@.waiters
             WHERE (name, arrival) > (p_after, p_after_order)
             ORDER BY name, arrival LIMIT p_limit) w;
    RETURN QUERY
      SELECT 1, coalesce(w.long_name, w.name), w.owner, 0::bigint, w.arrival
        FROM @s@.waiters w
       WHERE (w.name, w.arrival) > (p_after, p_after_order)
         AND (w.name, w.arrival) <= (v_key, v_order)
         AND w.granted IS NULL AND w.hb > v_raw AND (w.wd = 0 OR v_now < w.wd)
       ORDER BY w.name, w.arrival;
  END IF;
  IF v_read >= p_limit THEN
    RETURN QUERY SELECT 2, v_key, ''::text, 0::bigint, v_order;
  END IF;
  @tick@
  RETURN;
END
$fn$;
