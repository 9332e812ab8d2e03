-- is_held(name, token) -> {'1', dl, now} | {'0', '0', now}
local v = redis.call('HMGET', LOCK, 'token', 'dl')
if v[1] == ARGV[2] and NOW < tonumber(v[2]) then
  return {'1', v[2], fmt(NOW)}
end
return {'0', '0', fmt(NOW)}
