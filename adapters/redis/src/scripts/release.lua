-- release(name, token) -> '1' when the lease was live and is now free or handed to the head
-- waiter; '0' when it had lapsed or is not this token's (a newer lease is never touched).
local v = redis.call('HMGET', LOCK, 'token', 'dl')
local released = '0'
if v[1] == ARGV[2] then
  if NOW < tonumber(v[2]) then
    released = '1'
  end
  redis.call('DEL', LOCK)
  hand_off(false)
else
  settle()
end
return released
