-- The single-statement fast paths, prepared by the client (not functions: no plpgsql on the
-- common path). Each updates the name's row when it needs no waiter logic, and otherwise
-- calls the function, in the same statement (COALESCE evaluates it only when the UPDATE
-- matched no row). An UPDATE that waited for the row's lock re-checks its conditions on the
-- row as the other transaction left it, and computes the token then: after the lock.
--
-- @try_lock_fast@: a free row (or a lapsed lease its holder had picked up), nobody waiting.
-- The row is locked FOR UPDATE first (a plain UPDATE would take FOR NO KEY UPDATE, which a
-- transaction holding fence() with FOR KEY SHARE does not block): every grant waits for a
-- fenced transaction to end, up to the lock wait (then SQLSTATE 55P03: busy).
WITH c AS (SELECT @now_expr@ AS n),
k AS (SELECT name FROM @s@.leases WHERE name = $1 FOR UPDATE),
up AS (
  UPDATE @s@.leases l
     SET owner = $2, token = nextval('@tokens@'), deadline = greatest(l.seen, c.n) + $3,
         ttl = $3, req = $4, claimed = true, seen = greatest(l.seen, c.n)
    FROM c, k
   WHERE l.name = k.name AND NOT l.waiting
     AND (l.owner IS NULL OR (l.claimed AND greatest(l.seen, c.n) >= l.deadline))
  RETURNING ARRAY[1, l.token, l.deadline, l.seen] AS reply)
SELECT coalesce((SELECT reply FROM up), @s@.try_lock($1, $2, $3, $4))
-- @release_fast@: this token's lease, nobody waiting: the row stays, free.
WITH c AS (SELECT @now_expr@ AS n),
up AS (
  UPDATE @s@.leases l
     SET owner = NULL, seen = greatest(l.seen, c.n)
    FROM c
   WHERE l.name = $1 AND l.token = $2 AND l.owner IS NOT NULL AND NOT l.waiting
  RETURNING (CASE WHEN l.seen < l.deadline THEN 1 ELSE 0 END)::bigint AS live)
SELECT coalesce((SELECT live FROM up), @s@.release($1, $2))
-- @sweep@: free rows nobody used for a minute, and leases lapsed a minute ago with nobody
-- waiting, are deleted (rows locked by someone else are skipped). Run now and then by every
-- store; an operation on a deleted name simply creates its row again.
DELETE FROM @s@.leases l
 USING (SELECT name FROM @s@.leases, (SELECT @now_expr@ AS n) c
         WHERE NOT waiting AND claimed
           AND ((owner IS NULL AND seen < c.n - 60000000) OR deadline < c.n - 60000000)
         FOR UPDATE OF leases SKIP LOCKED) d
 WHERE l.name = d.name
