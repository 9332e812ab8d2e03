-- The server's clock, in microseconds since the Unix epoch. RAW is the server's own TIME:
-- it measures how long waiters have been silent (their heartbeats). NOW is lease time: RAW,
-- plus the test offset in builds with the `test-clock` feature (see clock_test.lua).
local function raw_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function lease_now(raw)
  return raw
end
