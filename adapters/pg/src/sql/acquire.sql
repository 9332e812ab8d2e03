-- acquire(name, owner, ttl µs, waiter id, wait µs, wd, heartbeat µs): one step of a waiting
-- acquire.
--   p_wait: what is left of the wait when the client sent this step (-1: no bound); the first
--   step makes it the wait deadline on lease time;
--   p_wd: the wait deadline an earlier step returned (-1 on the first step), or -2: the
--   client's own bound of the wait (counted from its first poll) has passed, so this step ends
--   the wait as a zero wait would: it picks up a lease handed over, or leaves the queue (or,
--   if it is not queued and the name is free, takes it);
--   p_hb: how long this waiter may stay silent before it counts as gone.
-- -> {1, token, deadline, now}            granted (directly, or handed over and still live)
--    {2, wd, 0, now}                      the wait is over without a grant (busy, for a zero
--                                         wait), or the waiter was withdrawn (cancel())
--    {0, wd, head holder's deadline, now} queued; the deadline is 0 unless this waiter is first
--                                         and a live lease may lapse at it
-- A transaction holding fence() on the name does not block a step: the waiter queues, or
-- refreshes its heartbeat, under FOR NO KEY UPDATE, and keeps its turn; nothing is granted or
-- handed off until the fenced transaction has ended (then whoever settles the name first
-- does it: a release, a try_lock, holder(), or this waiter's next step).
CREATE FUNCTION @s@.acquire(p_name text, p_owner text, p_ttl bigint, p_id text,
                            p_wait bigint, p_wd bigint, p_hb bigint)
RETURNS bigint[]
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  @clock_decl@
  v_wd bigint;
  v_over boolean;
  v_token bigint;
  v_head text;
  v_queued boolean;
  v_excl boolean;
  v_out bigint[];
  v_long text;
  w @s@.waiters;
  r @s@.leases;
  cur @s@.leases;
BEGIN
  @clock@
  v_long := nullif(p_name, @s@._k(p_name));
  p_name := @s@._k(p_name);
  <<body>>
  BEGIN
    -- A free name nobody waits for: granted at once (the token after the new row's lock),
    -- unless this waiter was withdrawn before its step ran (checked under that lock).
    INSERT INTO @s@.leases (name, long_name, owner, deadline, ttl, req, seen)
      VALUES (p_name, v_long, p_owner, v_now + p_ttl, p_ttl, p_id, v_now)
      ON CONFLICT DO NOTHING;
    IF FOUND THEN
      IF EXISTS (SELECT 1 FROM @s@.cancelled WHERE id = p_id) THEN
        DELETE FROM @s@.leases WHERE name = p_name;
        v_out := ARRAY[2, 0, 0, v_now];
        EXIT body;
      END IF;
      -- The insert may have waited for a transaction deleting the name's last row: lease
      -- time is read again after it, so it is never below the time that one acted at.
      v_now := greatest(v_now, @now_expr@);
      UPDATE @s@.leases SET token = pg_catalog.nextval('@tokens@'::pg_catalog.regclass), deadline = v_now + p_ttl, seen = v_now
       WHERE name = p_name
      RETURNING token INTO v_token;
      DELETE FROM @s@.waiters WHERE id = p_id;
      v_out := ARRAY[1, v_token, v_now + p_ttl, v_now];
      EXIT body;
    END IF;
    r := @s@._lock_row(p_name, false, v_long);
    -- Withdrawn: cancel() ran before this step (under this lock) and cleaned up after it.
    IF EXISTS (SELECT 1 FROM @s@.cancelled WHERE id = p_id) THEN
      v_out := ARRAY[2, 0, 0, v_now];
      EXIT body;
    END IF;
    v_excl := @s@._exclusive(p_name);
    v_now := greatest(v_now, r.seen);
    IF p_wd = -2 THEN
      v_wd := v_now;
    ELSIF p_wd >= 0 THEN
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
        v_out := ARRAY[1, r.token, r.deadline, v_now];
        EXIT body;
      END IF;
      -- The hand-off lapsed (or was force-released) before this waiter came for it, and the
      -- name may have gone to someone else since: never returned. The waiter was first, so
      -- it goes back to the head of the queue.
      UPDATE @s@.waiters
         SET granted = NULL, gdl = NULL,
             arrival = coalesce((SELECT min(arrival) - 1 FROM @s@.waiters
                                  WHERE name = p_name AND granted IS NULL),
                                pg_catalog.nextval('@arrivals@'::pg_catalog.regclass))
       WHERE id = p_id;
      -- The lease row is not written: the queue itself says that someone waits (the fast
      -- paths ask @s@._queued after the row's lock), so a fence() in a REPEATABLE READ or
      -- SERIALIZABLE transaction is never failed (40001) by a waiter arriving.
    END IF;

    IF v_queued THEN
      IF v_over THEN
        -- Leaving hands a free lease on, and tells the next waiter it is first now.
        cur := @s@._leave(p_name, p_id, r, v_now, v_raw, v_excl);
        IF v_excl AND cur.name IS NULL THEN
          DELETE FROM @s@.leases WHERE name = p_name;
        END IF;
        v_out := ARRAY[2, v_wd, 0, v_now];
        EXIT body;
      END IF;
      UPDATE @s@.waiters SET hb = v_raw + p_hb WHERE id = p_id;
      IF v_excl THEN
        cur := @s@._settle(p_name, r, v_now, v_raw);
        IF cur.name IS NOT NULL AND cur.req = p_id THEN
          DELETE FROM @s@.waiters WHERE id = p_id;
          PERFORM @s@._claim(p_name);
          v_out := ARRAY[1, cur.token, cur.deadline, v_now];
          EXIT body;
        END IF;
      ELSE
        cur := r;
      END IF;
    ELSE
      -- A new arrival (or one whose entry was lost: it queues again, at the back).
      IF v_excl THEN
        cur := @s@._settle(p_name, r, v_now, v_raw);
      ELSE
        cur := r;
      END IF;
      IF cur.owner IS NOT NULL AND cur.req = p_id AND v_now < cur.deadline THEN
        -- This acquire's own lease: a step run again after its reply was lost finds it.
        PERFORM @s@._claim(p_name);
        v_out := ARRAY[1, cur.token, cur.deadline, v_now];
        EXIT body;
      END IF;
      IF v_excl AND cur.name IS NULL THEN
        cur := @s@._grant(p_name, p_owner, p_ttl, p_id, true, v_now);
        v_out := ARRAY[1, cur.token, cur.deadline, v_now];
        EXIT body;
      END IF;
      IF v_over THEN
        v_out := ARRAY[2, v_wd, 0, v_now];
        EXIT body;
      END IF;
      INSERT INTO @s@.waiters (id, name, long_name, arrival, owner, ttl, wd, hb)
        VALUES (p_id, p_name, v_long, pg_catalog.nextval('@arrivals@'::pg_catalog.regclass),
                p_owner, p_ttl, v_wd, v_raw + p_hb);
      -- The lease row is not written: the queue itself says that someone waits (the fast
      -- paths ask @s@._queued after the row's lock), so a fence() in a REPEATABLE READ or
      -- SERIALIZABLE transaction is never failed (40001) by a waiter arriving.
    END IF;
    -- Queued. No live lease (handed on to a waiter ahead, or free with a fence holding it
    -- off): nothing to wait for but a wake-up or the heartbeat.
    IF cur.name IS NULL OR cur.owner IS NULL OR v_now >= cur.deadline THEN
      v_out := ARRAY[0, v_wd, 0, v_now];
      EXIT body;
    END IF;
    SELECT id INTO v_head FROM @s@.waiters
     WHERE name = p_name AND granted IS NULL ORDER BY arrival LIMIT 1;
    IF v_head = p_id THEN
      v_out := ARRAY[0, v_wd, cur.deadline, v_now];
    ELSE
      v_out := ARRAY[0, v_wd, 0, v_now];
    END IF;
  END;
  @tick@
  RETURN v_out;
END
$fn$;
