-- Version 2 of an alkstore-pg schema: what changes on the tables of version 1. Run after
-- 001_tables.sql on a new schema, and alone on a schema of version 1 (after its functions were
-- dropped), under the migration's advisory lock. Rows of version 1 are kept as they are.

-- Names of any length the configuration allows: a btree entry holds at most about 2.7 KB, so
-- a long name (6,000 bytes of CJK, say) could not be locked. A hash index has no such limit,
-- and an exclusion constraint over it keeps one row per name (INSERT .. ON CONFLICT DO
-- NOTHING honours it). Lookups by name use it as they used the primary key.
ALTER TABLE @s@.leases DROP CONSTRAINT leases_pkey;
ALTER TABLE @s@.leases ALTER COLUMN name SET NOT NULL;
ALTER TABLE @s@.leases ADD CONSTRAINT leases_name EXCLUDE USING hash (name WITH =);
DROP INDEX @s@.waiters_queue;
CREATE INDEX waiters_name ON @s@.waiters USING hash (name);

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
