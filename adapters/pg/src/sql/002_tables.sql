-- Version 2 of an alkstore-pg schema: what it adds to the tables of version 1. Run after
-- 001_tables.sql on a new schema, and alone on a schema of version 1 (after its functions were
-- dropped), under the migration's advisory lock. Rows of version 1 are kept as they are.

-- Names of any length the configuration allows: a btree entry holds at most about 2.7 KB, so
-- a name longer than 2000 bytes is keyed by its digest instead (`name` holds
-- @s@._k(name): a control character, which no lock name may hold, then SHA-256 in hex), and
-- the name itself is kept in `long_name` (NULL for every other name) for snapshot().
ALTER TABLE @s@.leases ADD COLUMN long_name text;
ALTER TABLE @s@.waiters ADD COLUMN long_name text;

-- The schema's clock floor: the latest lease time an operation acted on (kept by ticks at
-- most every 10 ms, and exactly whenever an operation finds a lease lapsed without writing
-- its row). Lease time in the schema is never below it, so a lease seen lapsed stays lapsed
-- when the server's clock steps back. A sequence, because setval() is not undone by a
-- rollback: fence() refusing a lapsed lease records it although its transaction aborts.
-- Written only under the advisory lock of @s@._raise / @s@._tick.
CREATE SEQUENCE @s@.floor AS bigint MINVALUE 0 START 0 NO CYCLE;

-- Withdrawn waiters: cancel() of an acquire whose step may still be in flight (sent, not
-- answered) leaves its id here, under the lease row's lock; a step of that id that runs later
-- finds it under the same lock and neither grants nor queues. Kept for ten minutes (sweep()),
-- far longer than a step can stay in flight (each statement is cut at the io_timeout).
CREATE TABLE @s@.cancelled (
  id text PRIMARY KEY,
  at bigint NOT NULL
);
