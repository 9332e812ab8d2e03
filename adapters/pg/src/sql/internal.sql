-- The helpers every operation shares. Each runs inside the calling operation's transaction.
--
-- Row locks on a name's lease row, weakest first:
--   FOR KEY SHARE      fence(), in the user's transaction, until it ends;
--   FOR NO KEY UPDATE  every engine operation, first (_lock_row): it serializes the engine's
--                      operations on the name, and a fence does not block it, so waiters queue
--                      and refresh their heartbeats, and holders renew and release, while a
--                      fenced transaction is open;
--   FOR UPDATE         taken on top (_exclusive, without waiting) by whatever grants, hands
--                      off or deletes the row: a fence blocks it, so nobody is granted the name
--                      until the fenced transaction has ended.
-- Waiter rows of a name change only under the lease row's lock (NO KEY UPDATE or more).
--
-- Lease time (v_now) is the server's clock_timestamp() in µs (plus the test offset in test
-- builds), raised to the schema's floor and to the row's `seen`; heartbeats are on the raw
-- clock (v_raw), so that a test moving lease time does not make every waiter look dead.
-- Every operation ends with a tick (sql.rs, TICK): the floor follows lease time (_tick), exactly when the
-- operation found a lease lapsed without writing its row (_raise).

-- The key of lock name p_name in the tables: the name itself, or, for a name longer than 2000
-- bytes (a btree entry holds at most about 2.7 KB), a control character (which no lock name
-- holds) and the SHA-256 of the name in hex. Every function maps its name through it first;
-- a plain SQL function, inlined into the statements, so the primary key's index is used.
-- No SET search_path (it would stop the inlining): every function and operator in it is
-- qualified with pg_catalog instead, so no schema on the caller's search_path can shadow one.
CREATE FUNCTION @s@._k(p_name text) RETURNS text
STABLE PARALLEL SAFE LANGUAGE sql AS $fn$
  SELECT CASE WHEN pg_catalog.octet_length(p_name) OPERATOR(pg_catalog.<=) 2000 THEN p_name
              ELSE E'\x01sha256:' OPERATOR(pg_catalog.||)
                   pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(p_name, 'UTF8')),
                                     'hex') END
$fn$;

-- Raises the schema's floor to p (a lease seen lapsed stays lapsed): waits for the floor's
-- advisory lock, which its holders keep only until their transaction ends, and take only as
-- their last step (so no cycle of waits can form).
CREATE FUNCTION @s@._raise(p bigint) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM pg_catalog.pg_advisory_xact_lock(@floorkey@);
  IF p > (SELECT last_value FROM @s@.floor) THEN
    PERFORM pg_catalog.setval('@floor@'::pg_catalog.regclass, p);
  END IF;
END
$fn$;

-- Moves the floor up to p if nobody else is moving it right now (then they move it to about
-- the same time): the periodic step, which never waits.
CREATE FUNCTION @s@._tick(p bigint) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF pg_catalog.pg_try_advisory_xact_lock(@floorkey@) THEN
    IF p > (SELECT last_value FROM @s@.floor) THEN
      PERFORM pg_catalog.setval('@floor@'::pg_catalog.regclass, p);
    END IF;
  END IF;
END
$fn$;

-- Locks the lease row of key p_name, creating a free one (owner NULL; p_long: the name when
-- it is long, see _k) if there is none: FOR UPDATE NOWAIT when p_excl (a row a fence holds
-- fails at once with SQLSTATE 55P03; the client pauses off the connection and tries again
-- within the lock wait), else FOR NO KEY UPDATE (a fence does not block it; other
-- operations hold it for well under a millisecond, bounded by the lock_timeout).
CREATE FUNCTION @s@._lock_row(p_name text, p_excl boolean, p_long text) RETURNS @s@.leases
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  r @s@.leases;
BEGIN
  LOOP
    IF p_excl THEN
      SELECT * INTO r FROM @s@.leases WHERE name = p_name FOR UPDATE NOWAIT;
    ELSE
      SELECT * INTO r FROM @s@.leases WHERE name = p_name FOR NO KEY UPDATE;
    END IF;
    IF FOUND THEN
      RETURN r;
    END IF;
    INSERT INTO @s@.leases (name, long_name, owner) VALUES (p_name, p_long, NULL)
      ON CONFLICT DO NOTHING RETURNING * INTO r;
    IF FOUND THEN
      -- The insert may have waited for a transaction deleting the name's last row: the
      -- caller's lease time, read before, is raised to the clock read now.
      r.seen := @now_expr@;
      RETURN r;
    END IF;
  END LOOP;
END
$fn$;

-- With the row of p_name locked FOR NO KEY UPDATE: takes it FOR UPDATE unless a fence holds
-- it, without waiting. True when this transaction may now grant, hand off or delete.
CREATE FUNCTION @s@._exclusive(p_name text) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM 1 FROM @s@.leases WHERE name = p_name FOR UPDATE SKIP LOCKED;
  RETURN FOUND;
END
$fn$;

-- Whether the lease in row r is live at p_now: held, before its deadline, and picked up or
-- handed to a waiter that is still alive (a hand-off to a waiter that died before picking it
-- up was never held by anybody, and counts as lapsed). holder(), snapshot() and every settle
-- agree through it.
CREATE FUNCTION @s@._live(r @s@.leases, p_now bigint, p_raw bigint) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF r.owner IS NULL OR p_now >= r.deadline THEN
    RETURN false;
  END IF;
  RETURN r.claimed OR EXISTS (SELECT 1 FROM @s@.waiters WHERE id = r.req AND hb > p_raw);
END
$fn$;

-- Grants the (FOR UPDATE locked) row of p_name to p_owner for p_ttl µs from p_now, on behalf
-- of request p_req. The token is taken here, after the row lock: a grant that waited for the
-- lock gets a larger token than the grant it waited behind.
CREATE FUNCTION @s@._grant(p_name text, p_owner text, p_ttl bigint, p_req text,
                           p_claimed boolean, p_now bigint) RETURNS @s@.leases
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  r @s@.leases;
BEGIN
  UPDATE @s@.leases
     SET owner = p_owner, token = pg_catalog.nextval('@tokens@'::pg_catalog.regclass),
         deadline = p_now + p_ttl, ttl = p_ttl, req = p_req, claimed = p_claimed,
         seen = greatest(seen, p_now)
   WHERE name = p_name
  RETURNING * INTO r;
  RETURN r;
END
$fn$;

-- The lease of p_name (row locked FOR UPDATE) is free: hands it to the first live waiter
-- (dead ones, whose heartbeat or wait lapsed, are deleted on the way) and tells it by NOTIFY
-- (sent at commit). Returns the new lease, or NULL when nobody waits (the caller then grants
-- or deletes the row).
CREATE FUNCTION @s@._hand_off(p_name text, p_now bigint, p_raw bigint) RETURNS @s@.leases
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
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
      PERFORM pg_catalog.pg_notify('@chan@', w.id);
      RETURN r;
    END IF;
    DELETE FROM @s@.waiters WHERE id = w.id;
  END LOOP;
END
$fn$;

-- Brings the row r of p_name (locked FOR UPDATE) up to date: a live lease stays (see _live);
-- otherwise the name goes to the first live waiter. The entry of a waiter that died holding
-- an unclaimed hand-off is deleted (a live one whose hand-off lapsed comes back to the head
-- of the queue by its next step). Returns the live lease, or NULL when the name is free and
-- nobody waits.
CREATE FUNCTION @s@._settle(p_name text, r @s@.leases, p_now bigint, p_raw bigint)
RETURNS @s@.leases
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF r.owner IS NOT NULL AND NOT r.claimed THEN
    IF p_now < r.deadline
       AND EXISTS (SELECT 1 FROM @s@.waiters WHERE id = r.req AND hb > p_raw) THEN
      RETURN r;
    END IF;
    DELETE FROM @s@.waiters WHERE id = r.req AND hb <= p_raw;
  ELSIF r.owner IS NOT NULL AND p_now < r.deadline THEN
    RETURN r;
  END IF;
  RETURN @s@._hand_off(p_name, p_now, p_raw);
END
$fn$;

-- Waiter p_id leaves the queue of p_name (row r locked); then, if p_excl (the row is locked
-- FOR UPDATE), the row is brought up to date, and if p_id was first, the waiter first now is
-- told, so that it sleeps to the holder's deadline instead of a whole heartbeat. Returns what
-- _settle returns; r itself when not p_excl (a fence holds the row: nothing is handed on
-- until its transaction ends).
CREATE FUNCTION @s@._leave(p_name text, p_id text, r @s@.leases, p_now bigint, p_raw bigint,
                           p_excl boolean)
RETURNS @s@.leases
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_head text;
  cur @s@.leases;
BEGIN
  SELECT id INTO v_head FROM @s@.waiters
   WHERE name = p_name AND granted IS NULL ORDER BY arrival LIMIT 1;
  DELETE FROM @s@.waiters WHERE id = p_id;
  IF p_excl THEN
    cur := @s@._settle(p_name, r, p_now, p_raw);
  ELSE
    cur := r;
  END IF;
  IF v_head = p_id AND cur.name IS NOT NULL THEN
    SELECT id INTO v_head FROM @s@.waiters
     WHERE name = p_name AND granted IS NULL ORDER BY arrival LIMIT 1;
    IF FOUND THEN
      PERFORM pg_catalog.pg_notify('@chan@', v_head);
    END IF;
  END IF;
  RETURN cur;
END
$fn$;

-- The waiter that was handed the lease of p_name picks it up: from now on it is held like any
-- grant. (An UPDATE of non-key columns: FOR NO KEY UPDATE, which a fence does not block.)
CREATE FUNCTION @s@._claim(p_name text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  UPDATE @s@.leases SET claimed = true WHERE name = p_name AND NOT claimed;
END
$fn$;

-- Whether waiters are queued for p_name (not counting one handed the lease): what the fast
-- paths of fast.sql check instead of a column of the lease row, so that a waiter arriving
-- writes nothing on the row (a fence() in a REPEATABLE READ or SERIALIZABLE transaction is
-- failed with 40001 by any new version of the row it locks). Called after the row's lock;
-- VOLATILE plpgsql (never inlined): its query takes a snapshot of its own, which sees a
-- waiter whose transaction committed after the calling statement's snapshot was taken (a
-- waiter queues under the row's lock, so one that has not committed holds the lock still).
CREATE FUNCTION @s@._queued(p_name text) RETURNS boolean
VOLATILE LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  RETURN EXISTS (SELECT 1 FROM @s@.waiters WHERE name = p_name AND granted IS NULL);
END
$fn$;
