-- cancel(name, id): a waiting acquire was dropped. It leaves the queue, and a lease already
-- handed to it (and not yet picked up) passes on to the next waiter or is freed; if it was
-- first, the waiter first now is told.
local ID = ARGV[2]
local g = redis.call('HGET', P .. 'waiter:' .. ID, 'granted')
local v = redis.call('HMGET', LOCK, 'token', 'waiter')
if v[1] and ((g and v[1] == g) or v[2] == ID) then
  redis.call('DEL', LOCK)
end
leave(ID)
return '1'
