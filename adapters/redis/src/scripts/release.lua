-- release(name, token, rid, mark_ms) -> '1' when the lease was live and is now free or handed to
-- the head waiter; '0' when it had lapsed or is not this token's (a newer lease is never touched).
--   rid: this request's id. A release that frees a live lease leaves `{ns}:released:<rid>` for
--   mark_ms, so that the same request run again (a retry after a lost reply), which finds the
--   token gone, still answers '1'.
local v = redis.call('HMGET', LOCK, 'token', 'dl')
local MARK = P .. 'released:' .. ARGV[3]
local released = '0'
if v[1] == ARGV[2] then
  if NOW < tonumber(v[2]) then
    released = '1'
    redis.call('SET', MARK, '1', 'PX', ARGV[4])
  end
  redis.call('DEL', LOCK)
  hand_off(false)
else
  if redis.call('EXISTS', MARK) == 1 then
    released = '1'
  end
  settle()
end
return released
