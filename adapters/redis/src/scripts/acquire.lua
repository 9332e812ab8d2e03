-- acquire(name, owner, ttl_us, id, wait_us, wd, hb_us): one step of a waiting acquire.
--   wait_us: what is left of the wait when the client sent this step ('-1': no bound), used
--       on the first step to compute wd;
--   wd: the wait deadline returned by an earlier step ('' on the first), or 'end': the
--       client's own bound of the wait (counted from its first poll) has passed, so this step
--       ends the wait as a zero wait would: it picks up a lease handed over, or leaves the
--       queue (or, if its entry was lost and the name is free, takes it);
--   hb_us: how long this waiter may stay silent before it counts as gone.
-- -> {'1', token, dl, now}            granted (directly, or handed over and still live)
--    {'2', wd, '0', now}              the wait is over without a grant (busy, for a zero wait)
--    {'0', wd, head_holder_dl, now}   queued; head_holder_dl is '0' unless this waiter is first
local OWNER, TTL, ID = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local WKEY = P .. 'waiter:' .. ID
local HB = tonumber(ARGV[7])

local wd
if ARGV[6] == 'end' then
  wd = NOW
elseif ARGV[6] ~= '' then
  wd = tonumber(ARGV[6])
elseif tonumber(ARGV[5]) < 0 then
  wd = 0
else
  wd = NOW + tonumber(ARGV[5])
end
local over = wd ~= 0 and NOW >= wd

local g = redis.call('HMGET', WKEY, 'granted', 'gdl')
if g[1] then
  if redis.call('HGET', LOCK, 'token') == g[1] and NOW < tonumber(g[2]) then
    -- Handed over and still live: pick it up (from now on it is held, and never taken back).
    redis.call('DEL', WKEY)
    redis.call('HSET', LOCK, 'claimed', '1')
    return {'1', g[1], g[2], fmt(NOW)}
  end
  -- The hand-off lapsed before this waiter came for it (its process stalled), and the name
  -- may have gone to someone else since: it is never returned. The waiter was first, so it
  -- goes back to the head of the queue and waits on (below), unless its wait is over.
  redis.call('HDEL', WKEY, 'granted', 'gdl')
  local head = redis.call('ZRANGE', QUEUE, 0, 0, 'WITHSCORES')
  local score = head[2] and tonumber(head[2]) - 1 or redis.call('INCR', P .. 'seq')
  redis.call('ZADD', QUEUE, fmt(score), ID)
end

local cur
if redis.call('EXISTS', WKEY) == 1 then
  if over then
    -- Leaving hands a free lease on, and tells the next waiter it is first now.
    leave(ID)
    return {'2', fmt(wd), '0', fmt(NOW)}
  end
  redis.call('HSET', WKEY, 'hb', fmt(RAW + HB))
  cur = settle()
  if cur and cur[4] == ID then
    redis.call('DEL', WKEY)
    redis.call('HSET', LOCK, 'claimed', '1')
    return {'1', cur[2], cur[3], fmt(NOW)}
  end
else
  -- A new arrival (or one whose entry was lost: it queues again, at the back).
  cur = settle()
  if cur and cur[4] == ID then
    -- This acquire's own lease: a step run again after its reply was lost (a direct grant, or
    -- a pick-up that already deleted the entry) finds it, and returns it as granted.
    redis.call('HSET', LOCK, 'claimed', '1')
    return {'1', cur[2], cur[3], fmt(NOW)}
  end
  if not cur then
    local token, dl = grant(OWNER, TTL, ID, '1')
    return {'1', fmt(token), fmt(dl), fmt(NOW)}
  end
  if over then
    return {'2', fmt(wd), '0', fmt(NOW)}
  end
  local seq = redis.call('INCR', P .. 'seq')
  redis.call('ZADD', QUEUE, seq, ID)
  redis.call('HSET', WKEY, 'owner', OWNER, 'ttl', fmt(TTL), 'wd', fmt(wd), 'hb', fmt(RAW + HB))
end
keep_for(WKEY, HB)
keep_for(QUEUE, HB)
local head_dl = '0'
if redis.call('ZRANGE', QUEUE, 0, 0)[1] == ID and cur then
  head_dl = cur[3]
end
return {'0', fmt(wd), head_dl, fmt(NOW)}
