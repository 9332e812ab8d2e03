-- server_now() -> lease time now, in µs (for a client whose sleep must follow the test clock).
CREATE FUNCTION @s@.server_now() RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
  v_raw bigint;
  v_now bigint;
BEGIN
  @clock@
  RETURN v_now;
END
$fn$;
