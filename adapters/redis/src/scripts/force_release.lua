-- force_release(name) -> {owner, token, dl, now} of the lease it ended | {} when the name is free
-- Ends the live lease whoever holds it (an unclaimed hand-off included: its waiter finds the
-- token gone and waits on, first in line), hands the name to the first live waiter, and wakes
-- every sleeper of the namespace, so that the old holder's keep_alive and lapsed find out now.
local cur = settle()
if not cur then
  return {}
end
redis.call('DEL', LOCK)
hand_off(false)
redis.call('PUBLISH', P .. 'wake', '*')
return {cur[1], cur[2], cur[3], fmt(NOW)}
