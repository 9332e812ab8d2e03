-- Version 1 of an alkstore-pg schema: its tables and sequences. Rendered with the schema's
-- quoted identifier for @s@; run once, under the migration's advisory lock.
--
-- Times are bigint microseconds since the Unix epoch on the server's clock
-- (clock_timestamp(), never now(), which is the transaction's start).

-- Created only when missing: CREATE SCHEMA IF NOT EXISTS would check the right to create
-- schemas in the database first, and a role given a schema an administrator created for it
-- (CREATE SCHEMA .. AUTHORIZATION app) has none.
DO $mk$
BEGIN
  IF to_regnamespace('@s@') IS NULL THEN
    CREATE SCHEMA @s@;
  END IF;
END
$mk$;

-- One row: the schema's version and which clock its functions read ('server', or 'test' for
-- a test build that adds @s@.test_clock's offset).
CREATE TABLE @s@.meta (
  version integer NOT NULL,
  clock text NOT NULL
);

-- Fencing tokens: one sequence per schema, so tokens are unique across the schema and keep
-- increasing after a crash or restart (a sequence never hands out a value twice once the
-- transaction that took it committed). Taken only while the lease row is locked.
CREATE SEQUENCE @s@.tokens AS bigint MINVALUE 1 NO CYCLE;

-- Arrival order of waiters (FIFO across processes).
CREATE SEQUENCE @s@.arrivals AS bigint MINVALUE 1 NO CYCLE;

-- One row per name that is held or has waiters. owner NULL: free, kept while waiters queue
-- (the row is deleted when the name is free and nobody waits). req: the id of the request the
-- lease went to (a try_lock's request id or a waiter's id), so that a retried call finds its
-- own grant. claimed false: handed to waiter req, which has not picked it up yet. seen: the
-- latest lease time any write on this name acted at; lease time on a name never goes below it.
-- waiting: true whenever waiters may be queued for the name (set in the transaction that
-- queues one, under this row's lock; recomputed at grants and pick-ups), so that the
-- single-statement fast paths of try_lock and release, which need no waiter, check a column
-- of the row they lock instead of the queue. A free row (owner NULL) is kept after a release,
-- so that the next grant of the name is one UPDATE; sweep() deletes free rows after a while.
CREATE TABLE @s@.leases (
  name text COLLATE "C" PRIMARY KEY,
  owner text,
  token bigint NOT NULL DEFAULT 0,
  deadline bigint NOT NULL DEFAULT 0,
  ttl bigint NOT NULL DEFAULT 0,
  req text,
  claimed boolean NOT NULL DEFAULT true,
  seen bigint NOT NULL DEFAULT 0,
  waiting boolean NOT NULL DEFAULT false
);

-- Queued acquire calls. wd: the wait deadline on lease time (0: none); hb: when the entry
-- counts as gone unless refreshed, on the server's raw clock; granted, gdl: the token and
-- deadline of a lease handed to it and not yet picked up (then it is out of the queue).
CREATE TABLE @s@.waiters (
  id text PRIMARY KEY,
  name text COLLATE "C" NOT NULL,
  arrival bigint NOT NULL,
  owner text NOT NULL,
  ttl bigint NOT NULL,
  wd bigint NOT NULL,
  hb bigint NOT NULL,
  granted bigint,
  gdl bigint
);
CREATE INDEX waiters_queue ON @s@.waiters (name, arrival);
