-- renew(name, token, ttl_us) -> {'1', dl, now} | {'0', '0', now} when the lease is no longer held
local v = redis.call('HMGET', LOCK, 'token', 'dl')
if v[1] == ARGV[2] and NOW < tonumber(v[2]) then
  local ttl = tonumber(ARGV[3])
  local dl = NOW + ttl
  redis.call('HSET', LOCK, 'dl', fmt(dl))
  keep_for(LOCK, ttl)
  return {'1', fmt(dl), fmt(NOW)}
end
return {'0', '0', fmt(NOW)}
