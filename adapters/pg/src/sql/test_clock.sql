-- Test builds only (feature `test-clock`): the offset added to the server's clock, raised by
-- advance_test_clock, which also wakes every sleeper of every process on this schema.
CREATE TABLE @s@.test_clock (offset_us bigint NOT NULL);
INSERT INTO @s@.test_clock VALUES (0);

CREATE FUNCTION @s@.advance_test_clock(p_by bigint) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE @s@.test_clock SET offset_us = offset_us + p_by;
  PERFORM pg_notify('@chan@', '*');
END
$fn$;
