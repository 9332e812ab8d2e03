-- The single-statement fast paths, prepared by the client (not functions: no plpgsql on the
-- common path). Each updates the name's row when it needs no waiter logic, and otherwise
-- calls the function, in the same statement (COALESCE evaluates it only when the UPDATE
-- matched no row). An UPDATE that waited for the row's lock re-checks its conditions on the
-- row as the other transaction left it, and computes the token then: after the lock. Lease
-- time is the clock raised to the schema's floor and the row's `seen`, as in the functions;
-- the last column moves the floor up (at most every 10 ms), after the row's lock.
--
-- @try_lock_fast@: a free row (or a lapsed lease its holder had picked up), nobody waiting,
-- and a request the client has not withdrawn (cancel() marks a try_lock it gave up on: one
-- that runs late is never granted; the function answers busy).
-- The row is locked FOR UPDATE first (a plain UPDATE would take FOR NO KEY UPDATE, which a
-- transaction holding fence() with FOR KEY SHARE does not block), NOWAIT: a row a fenced
-- transaction (or another operation, for well under a millisecond) holds fails the statement
-- at once with SQLSTATE 55P03, and the client tries again after a pause, off the connection,
-- until the lock wait has passed (then: busy). A statement never waits on the row, so calls
-- pipelined behind it on the connection never wait for a fence.
WITH c AS (SELECT t.n0, t.f, greatest(t.n0, t.f) AS n
             FROM (SELECT @now_expr@ AS n0, (SELECT last_value FROM @floor@) AS f) t),
k AS (SELECT name FROM @s@.leases WHERE name = @s@._k($1) FOR UPDATE NOWAIT),
up AS (
  UPDATE @s@.leases l
     SET owner = $2, token = pg_catalog.nextval('@tokens@'::pg_catalog.regclass), deadline = greatest(l.seen, c.n) + $3,
         ttl = $3, req = $4, claimed = true, seen = greatest(l.seen, c.n)
    FROM c, k
   WHERE l.name = k.name AND NOT @s@._queued(k.name)
     AND (l.owner IS NULL OR (l.claimed AND greatest(l.seen, c.n) >= l.deadline))
     AND NOT EXISTS (SELECT 1 FROM @s@.cancelled x WHERE x.id = $4)
  RETURNING ARRAY[1, l.token, l.deadline, l.seen] AS reply)
SELECT coalesce((SELECT reply FROM up), @s@.try_lock($1, $2, $3, $4)),
       (SELECT @s@._tick(c.n0) FROM c WHERE c.n0 > c.f + 10000)
-- @release_fast@: this token's lease, nobody waiting: the row stays, free. (FOR NO KEY
-- UPDATE: also while a fenced transaction is open, which keeps the name until it ends.) The
-- row is locked first, and the queue checked after the lock (@s@._queued): a waiter that
-- queued while this statement waited for the lock is seen, and the lease handed to it. It
-- grants nothing, so its commit does not wait for the WAL flush (synchronous_commit off for
-- this transaction only): a crash may lose it, and the lease then lapses at its deadline;
-- any later grant's commit flushes it anyway. Grants and renewals are always flushed.
WITH c AS (SELECT t.n0, t.f, greatest(t.n0, t.f) AS n
             FROM (SELECT @now_expr@ AS n0, (SELECT last_value FROM @floor@) AS f) t),
k AS (SELECT name FROM @s@.leases
       WHERE name = @s@._k($1) AND token = $2 AND owner IS NOT NULL FOR NO KEY UPDATE),
up AS (
  UPDATE @s@.leases l
     SET owner = NULL, seen = greatest(l.seen, c.n)
    FROM c, k
   WHERE l.name = k.name AND l.token = $2 AND l.owner IS NOT NULL AND NOT @s@._queued(k.name)
  RETURNING (CASE WHEN l.seen < l.deadline THEN 1 ELSE 0 END)::bigint AS live)
SELECT coalesce((SELECT live FROM up), @s@.release($1, $2)),
       (SELECT @s@._tick(c.n0) FROM c WHERE c.n0 > c.f + 10000),
       (SELECT pg_catalog.set_config('synchronous_commit', 'off', true) FROM up)
