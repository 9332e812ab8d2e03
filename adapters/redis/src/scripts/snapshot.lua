-- snapshot('', name...) -> for each name with a live lease or live waiters, in the order given:
--   name, owner ('' when free), token, dl, n, then the n waiting owners in queue order.
-- Each name is settled first (a lapsed lease goes to its first live waiter), as holder() does.
local out = {}
for i = 2, #ARGV do
  NAME = ARGV[i]
  LOCK = P .. 'lock:' .. NAME
  QUEUE = P .. 'queue:' .. NAME
  local cur = settle()
  local owners = {}
  for _, id in ipairs(redis.call('ZRANGE', QUEUE, 0, -1)) do
    local w = redis.call('HMGET', P .. 'waiter:' .. id, 'owner', 'ttl', 'wd', 'hb')
    if waiter_alive(w) then
      owners[#owners + 1] = w[1]
    end
  end
  if cur or #owners > 0 then
    out[#out + 1] = NAME
    if cur then
      out[#out + 1] = cur[1]
      out[#out + 1] = cur[2]
      out[#out + 1] = cur[3]
    else
      out[#out + 1] = ''
      out[#out + 1] = '0'
      out[#out + 1] = '0'
    end
    out[#out + 1] = tostring(#owners)
    for _, owner in ipairs(owners) do
      out[#out + 1] = owner
    end
  end
end
return out
