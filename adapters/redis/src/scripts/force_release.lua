-- force_release(name) -> {owner, token, dl, now} of the lease it ended | {} when the name had no
-- live lease. Ends the live lease whoever holds it (an unclaimed hand-off included: its waiter
-- finds the token gone and waits on, first in line), hands the name to the first live waiter,
-- and wakes every sleeper of the namespace, so that the old holder's keep_alive and lapsed find
-- out now. A lease that had already lapsed is not "ended" here: it goes to its first waiter as
-- at any other call, and the answer is {}.
local before = redis.call('HMGET', LOCK, 'token', 'dl')
local live = before[1] and NOW < tonumber(before[2])
local cur = settle()
if not (live and cur and cur[2] == before[1]) then
  return {}
end
redis.call('DEL', LOCK)
hand_off(false)
redis.call('PUBLISH', P .. 'wake', '*')
return {cur[1], cur[2], cur[3], fmt(NOW)}
