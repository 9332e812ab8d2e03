-- The helpers every operation shares. Each runs inside the calling operation's transaction,
-- with the name's lease row already locked FOR UPDATE by it (except _lock_row, which takes
-- that lock). Waiter rows of a name change only under that lock.
--
-- Lease time (v_now) is the server's clock_timestamp() in µs (plus the test offset in test
-- builds), raised to the row's `seen`; heartbeats are on the raw clock (v_raw), so that a
-- test moving lease time does not make every waiter look dead.

-- Locks the lease row of p_name FOR UPDATE, creating a free one (owner NULL) if there is
-- none. Waits for a row locked by another transaction up to the connection's lock_timeout
-- (then SQLSTATE 55P03: a transaction holding fence() on it, the engine reports it busy).
CREATE FUNCTION @s@._lock_row(p_name text) RETURNS @s@.leases
LANGUAGE plpgsql AS $fn$
DECLARE
  r @s@.leases;
BEGIN
  LOOP
    SELECT * INTO r FROM @s@.leases WHERE name = p_name FOR UPDATE;
    IF FOUND THEN
      RETURN r;
    END IF;
    INSERT INTO @s@.leases (name, owner) VALUES (p_name, NULL)
      ON CONFLICT (name) DO NOTHING RETURNING * INTO r;
    IF FOUND THEN
      RETURN r;
    END IF;
  END LOOP;
END
$fn$;

-- Grants the (locked) row of p_name to p_owner for p_ttl µs from p_now, on behalf of request
-- p_req. The token is taken here, after the row lock: a grant that waited for the lock gets
-- a larger token than the grant it waited behind.
CREATE FUNCTION @s@._grant(p_name text, p_owner text, p_ttl bigint, p_req text,
                           p_claimed boolean, p_now bigint) RETURNS @s@.leases
LANGUAGE plpgsql AS $fn$
DECLARE
  r @s@.leases;
BEGIN
  UPDATE @s@.leases
     SET owner = p_owner, token = nextval('@tokens@'), deadline = p_now + p_ttl, ttl = p_ttl,
         req = p_req, claimed = p_claimed, seen = greatest(seen, p_now),
         waiting = EXISTS (SELECT 1 FROM @s@.waiters w WHERE w.name = p_name AND w.granted IS NULL)
   WHERE name = p_name
  RETURNING * INTO r;
  RETURN r;
END
$fn$;

-- The lease of p_name is free: hands it to the first live waiter (dead ones, whose heartbeat
-- or wait lapsed, are deleted on the way) and tells it by NOTIFY (sent at commit). Returns
-- the new lease, or NULL when nobody waits (the caller then grants or deletes the row).
CREATE FUNCTION @s@._hand_off(p_name text, p_now bigint, p_raw bigint) RETURNS @s@.leases
LANGUAGE plpgsql AS $fn$
DECLARE
  w @s@.waiters;
  r @s@.leases;
BEGIN
  LOOP
    SELECT * INTO w FROM @s@.waiters
     WHERE name = p_name AND granted IS NULL ORDER BY arrival LIMIT 1;
    IF NOT FOUND THEN
      RETURN NULL;
    END IF;
    IF w.hb > p_raw AND (w.wd = 0 OR p_now < w.wd) THEN
      r := @s@._grant(p_name, w.owner, w.ttl, w.id, false, p_now);
      UPDATE @s@.waiters SET granted = r.token, gdl = r.deadline WHERE id = w.id;
      PERFORM pg_notify('@chan@', w.id);
      RETURN r;
    END IF;
    DELETE FROM @s@.waiters WHERE id = w.id;
  END LOOP;
END
$fn$;

-- Brings the (locked) row r of p_name up to date: a live lease stays; otherwise the name goes
-- to the first live waiter. A lease handed to a waiter that died before picking it up (its
-- heartbeat lapsed; nobody ever held it) counts as lapsed. Returns the live lease, or NULL
-- when the name is free and nobody waits.
CREATE FUNCTION @s@._settle(p_name text, r @s@.leases, p_now bigint, p_raw bigint)
RETURNS @s@.leases
LANGUAGE plpgsql AS $fn$
DECLARE
  v_hb bigint;
BEGIN
  IF r.owner IS NOT NULL AND p_now < r.deadline THEN
    IF r.claimed THEN
      RETURN r;
    END IF;
    SELECT hb INTO v_hb FROM @s@.waiters WHERE id = r.req;
    IF FOUND AND v_hb > p_raw THEN
      RETURN r;
    END IF;
    DELETE FROM @s@.waiters WHERE id = r.req;
  END IF;
  RETURN @s@._hand_off(p_name, p_now, p_raw);
END
$fn$;

-- Waiter p_id leaves the queue of p_name (row r locked); then the row is brought up to date,
-- and if p_id was first, the waiter first now is told, so that it sleeps to the holder's
-- deadline instead of a whole heartbeat. Returns what _settle returns.
CREATE FUNCTION @s@._leave(p_name text, p_id text, r @s@.leases, p_now bigint, p_raw bigint)
RETURNS @s@.leases
LANGUAGE plpgsql AS $fn$
DECLARE
  v_head text;
  cur @s@.leases;
BEGIN
  SELECT id INTO v_head FROM @s@.waiters
   WHERE name = p_name AND granted IS NULL ORDER BY arrival LIMIT 1;
  DELETE FROM @s@.waiters WHERE id = p_id;
  cur := @s@._settle(p_name, r, p_now, p_raw);
  IF v_head = p_id AND cur.name IS NOT NULL THEN
    SELECT id INTO v_head FROM @s@.waiters
     WHERE name = p_name AND granted IS NULL ORDER BY arrival LIMIT 1;
    IF FOUND THEN
      PERFORM pg_notify('@chan@', v_head);
    END IF;
  END IF;
  RETURN cur;
END
$fn$;

-- The waiter that was handed the (locked) lease of p_name picks it up: from now on it is
-- held like any grant; `waiting` is brought up to date.
CREATE FUNCTION @s@._claim(p_name text) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE @s@.leases
     SET claimed = true,
         waiting = EXISTS (SELECT 1 FROM @s@.waiters w WHERE w.name = p_name AND w.granted IS NULL)
   WHERE name = p_name;
END
$fn$;
