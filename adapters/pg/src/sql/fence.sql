-- fence(name, token): call it inside your own transaction, before a write that the lock
-- guards. It raises SQLSTATE 55F01 (class 55, object not in prerequisite state), with a
-- message naming the lock, unless the lease on `name` with fencing token `token` is live on
-- the server's clock now; and it holds the lease row FOR KEY SHARE until the transaction
-- ends. Every grant of a name locks its row FOR UPDATE, which conflicts with that: nobody
-- can be granted the name until the guarded write has committed or rolled back, even when
-- the transaction runs past the lease's deadline (a long transaction delays a takeover).
-- Renewals, releases and the queue take FOR NO KEY UPDATE and go on meanwhile.
-- PostgreSQL releases a row lock taken inside a savepoint that is rolled back: a fence()
-- called there stops holding the name (call it again after ROLLBACK TO SAVEPOINT).
-- A refusal because the lease lapsed raises the schema's floor (a sequence: not undone by the
-- abort the refusal causes), so that the lease stays lapsed if the server's clock steps back.
-- fence() never touches the floor's lock otherwise: a long transaction holds nothing of it.
-- SECURITY DEFINER (with a fixed search_path): it runs with the rights of the schema's owner,
-- so a role that only writes guarded data needs nothing but USAGE on the schema (no right on
-- the tables, whose rows it could otherwise change): a lapsed lease is refused with 55F01,
-- not a permission error on the floor. The row lock is the caller's transaction's all the
-- same.
CREATE FUNCTION @s@.fence(p_name text, p_token bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  @clock_decl@
  v_dl bigint;
  v_seen bigint;
BEGIN
  @clock@
  SELECT deadline, seen INTO v_dl, v_seen FROM @s@.leases
   WHERE name = @s@._k(p_name) AND token = p_token AND owner IS NOT NULL
   FOR KEY SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'alkstore fence: lock % is not held with fencing token %',
      quote_literal(p_name), p_token
      USING ERRCODE = '55F01',
            HINT = 'the lease was released, lapsed and was taken over, or never had this token';
  END IF;
  v_now := greatest(v_now, v_seen);
  IF v_now >= v_dl THEN
    IF v_dl > v_floor THEN
      PERFORM @s@._raise(v_now);
    END IF;
    RAISE EXCEPTION 'alkstore fence: the lease on lock % (fencing token %) lapsed % µs ago',
      quote_literal(p_name), p_token, v_now - v_dl
      USING ERRCODE = '55F01',
            HINT = 'renew the lease (keep_alive) more often than its ttl';
  END IF;
END
$fn$;
