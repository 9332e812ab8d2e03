-- cancel(name, id): a waiting acquire was dropped. It leaves the queue, and a lease already
-- handed to it (and not yet picked up) passes on to the next waiter or is freed.
local ID = ARGV[2]
local WKEY = P .. 'waiter:' .. ID
local g = redis.call('HGET', WKEY, 'granted')
redis.call('ZREM', QUEUE, ID)
redis.call('DEL', WKEY)
local v = redis.call('HMGET', LOCK, 'token', 'waiter')
if v[1] and ((g and v[1] == g) or v[2] == ID) then
  redis.call('DEL', LOCK)
end
settle()
return '1'
