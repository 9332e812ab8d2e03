-- Test builds only (feature `test-clock`): the offset added to the server's clock, raised by
-- advance_test_clock, which also wakes every sleeper of every process on this schema.
-- (Made again when a version 1 schema is upgraded: the table and its offset are kept.)
CREATE TABLE IF NOT EXISTS @s@.test_clock (offset_us bigint NOT NULL);
INSERT INTO @s@.test_clock SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM @s@.test_clock);

CREATE FUNCTION @s@.advance_test_clock(p_by bigint) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  UPDATE @s@.test_clock SET offset_us = offset_us + p_by;
  PERFORM pg_catalog.pg_notify('@chan@', '*');
END
$fn$;
