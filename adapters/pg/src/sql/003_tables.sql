-- Version 4 of an alkstore-pg schema: what it changes on the tables of version 3. Run after
-- 002_tables.sql on a new schema, and on a schema of an earlier version (after its functions
-- were dropped), under the migration's advisory lock. Rows are kept.

-- Whether a name has waiters is no longer a column of its lease row (`waiting`, set by the
-- first waiter to arrive): that write made a new version of the row, and a fence() in a
-- REPEATABLE READ or SERIALIZABLE transaction that locked the row failed with 40001. The
-- functions ask the queue itself (@s@._queued), after the row's lock.
ALTER TABLE @s@.leases DROP COLUMN IF EXISTS waiting;
