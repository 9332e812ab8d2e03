-- acquire(name, owner, ttl µs, waiter id, wait µs (-1: none), wd, heartbeat µs): one step of
-- a waiting acquire.
--   p_wd: the wait deadline an earlier step returned (-1 on the first step, which computes it
--   from p_wait); p_hb: how long this waiter may stay silent before it counts as gone.
-- -> {1, token, deadline, now}           granted (directly, or handed over and still live)
--    {2, wd, 0, now}                     the wait is over without a grant (busy, for a zero wait)
--    {0, wd, head holder's deadline, now} queued; the deadline is 0 unless this waiter is first
CREATE FUNCTION @s@.acquire(p_name text, p_owner text, p_ttl bigint, p_id text,
                            p_wait bigint, p_wd bigint, p_hb bigint)
RETURNS bigint[]
LANGUAGE plpgsql AS $fn$
DECLARE
  v_raw bigint;
  v_now bigint;
  v_wd bigint;
  v_over boolean;
  v_token bigint;
  v_head text;
  v_queued boolean;
  w @s@.waiters;
  r @s@.leases;
  cur @s@.leases;
BEGIN
  @clock@
  -- A free name nobody waits for: granted at once (the token after the new row's lock).
  INSERT INTO @s@.leases (name, owner, deadline, ttl, req, seen)
    VALUES (p_name, p_owner, v_now + p_ttl, p_ttl, p_id, v_now)
    ON CONFLICT (name) DO NOTHING;
  IF FOUND THEN
    UPDATE @s@.leases SET token = nextval('@tokens@') WHERE name = p_name
    RETURNING token INTO v_token;
    DELETE FROM @s@.waiters WHERE id = p_id;
    RETURN ARRAY[1, v_token, v_now + p_ttl, v_now];
  END IF;
  r := @s@._lock_row(p_name);
  v_now := greatest(v_now, r.seen);
  IF p_wd >= 0 THEN
    v_wd := p_wd;
  ELSIF p_wait < 0 THEN
    v_wd := 0;
  ELSE
    v_wd := v_now + p_wait;
  END IF;
  v_over := v_wd <> 0 AND v_now >= v_wd;

  SELECT * INTO w FROM @s@.waiters WHERE id = p_id;
  v_queued := FOUND;
  IF v_queued AND w.granted IS NOT NULL THEN
    IF r.owner IS NOT NULL AND r.req = p_id AND r.token = w.granted AND v_now < r.deadline THEN
      -- Handed over and still live: picked up (from now on it is held, never taken back).
      DELETE FROM @s@.waiters WHERE id = p_id;
      PERFORM @s@._claim(p_name);
      RETURN ARRAY[1, r.token, r.deadline, v_now];
    END IF;
    -- The hand-off lapsed (or was force-released) before this waiter came for it, and the
    -- name may have gone to someone else since: never returned. The waiter was first, so it
    -- goes back to the head of the queue.
    UPDATE @s@.waiters
       SET granted = NULL, gdl = NULL,
           arrival = coalesce((SELECT min(arrival) - 1 FROM @s@.waiters
                                WHERE name = p_name AND granted IS NULL),
                              nextval('@arrivals@'))
     WHERE id = p_id;
    UPDATE @s@.leases SET waiting = true WHERE name = p_name;
  END IF;

  IF v_queued THEN
    IF v_over THEN
      -- Leaving hands a free lease on, and tells the next waiter it is first now.
      cur := @s@._leave(p_name, p_id, r, v_now, v_raw);
      IF cur.name IS NULL THEN
        DELETE FROM @s@.leases WHERE name = p_name;
      END IF;
      RETURN ARRAY[2, v_wd, 0, v_now];
    END IF;
    UPDATE @s@.waiters SET hb = v_raw + p_hb WHERE id = p_id;
    cur := @s@._settle(p_name, r, v_now, v_raw);
    IF cur.name IS NOT NULL AND cur.req = p_id THEN
      DELETE FROM @s@.waiters WHERE id = p_id;
      PERFORM @s@._claim(p_name);
      RETURN ARRAY[1, cur.token, cur.deadline, v_now];
    END IF;
  ELSE
    -- A new arrival (or one whose entry was lost: it queues again, at the back).
    cur := @s@._settle(p_name, r, v_now, v_raw);
    IF cur.name IS NOT NULL AND cur.req = p_id THEN
      -- This acquire's own lease: a step run again after its reply was lost finds it.
      PERFORM @s@._claim(p_name);
      RETURN ARRAY[1, cur.token, cur.deadline, v_now];
    END IF;
    IF cur.name IS NULL THEN
      cur := @s@._grant(p_name, p_owner, p_ttl, p_id, true, v_now);
      RETURN ARRAY[1, cur.token, cur.deadline, v_now];
    END IF;
    IF v_over THEN
      RETURN ARRAY[2, v_wd, 0, v_now];
    END IF;
    INSERT INTO @s@.waiters (id, name, arrival, owner, ttl, wd, hb)
      VALUES (p_id, p_name, nextval('@arrivals@'), p_owner, p_ttl, v_wd, v_raw + p_hb);
    UPDATE @s@.leases SET waiting = true WHERE name = p_name;
  END IF;
  IF cur.name IS NULL THEN
    -- Free with this waiter queued cannot stay so: settle handed it on (to this waiter, or
    -- to one ahead of it). Nothing to wait for but a wake-up.
    RETURN ARRAY[0, v_wd, 0, v_now];
  END IF;
  SELECT id INTO v_head FROM @s@.waiters
   WHERE name = p_name AND granted IS NULL ORDER BY arrival LIMIT 1;
  IF v_head = p_id THEN
    RETURN ARRAY[0, v_wd, cur.deadline, v_now];
  END IF;
  RETURN ARRAY[0, v_wd, 0, v_now];
END
$fn$;
