-- now(name) -> lease time in µs
return fmt(NOW)
