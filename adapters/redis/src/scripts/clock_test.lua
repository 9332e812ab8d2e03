-- Test builds only (feature `test-clock`): lease time is the server's TIME plus the offset kept
-- in `{ns}:offset`, which tests raise to move time forward. Plain builds never read that key.
local function raw_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function lease_now(raw)
  return raw + tonumber(redis.call('GET', KEYS[1] .. 'offset') or '0')
end
