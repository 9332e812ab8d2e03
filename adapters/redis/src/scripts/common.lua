-- Shared by every script. KEYS[1] is the namespace prefix `{ns}:`; every key below starts with
-- it, so they all share one hash tag (one Redis Cluster slot). On a cluster, KEYS[2] is `{ns}:!`,
-- never read nor written: two declared keys that never exist keep a cluster from running a
-- script while the namespace's slot migrates (see cluster.rs); elsewhere it is not passed.
-- ARGV[1] is the lock's name.
--
-- Keys:
--   {ns}:lock:<name>    hash: owner, token, dl (deadline, µs), waiter (id of the acquire or
--                       try_lock request it went to), claimed
--   {ns}:queue:<name>   zset: waiting acquire ids, scored by arrival ({ns}:seq)
--   {ns}:waiter:<id>    hash: owner, ttl (µs), wd (wait deadline on lease time, 0 = none),
--                       hb (heartbeat expiry on RAW time); granted, gdl once handed the lease
--   {ns}:token          the last fencing token
--   {ns}:released:<rid> for a few seconds after release request <rid> freed a live lease
--   {ns}:wake           pub/sub channel: the id of a waiter handed a lease, or '*' for all
--
-- Liveness is decided here, by comparing NOW with the deadline; key expiry (PEXPIRE) is only a
-- safety net for memory and is always later than the deadline.
local P = KEYS[1]
local NAME = ARGV[1]
local LOCK = P .. 'lock:' .. NAME
local QUEUE = P .. 'queue:' .. NAME
local RAW = raw_now()
local NOW = lease_now(RAW)

-- Numbers as integer text (Lua's own conversion would print 16-digit numbers as 1.7e+15).
local function fmt(n)
  return string.format('%.0f', n)
end

-- The safety-net expiry of a key that must outlive `us` microseconds from now.
local function keep_for(key, us)
  redis.call('PEXPIRE', key, fmt(math.ceil(us / 1000) + 60000))
end

-- The next fencing token: one more than the last, and never below the server's time in µs,
-- so that tokens keep increasing across a restart that lost the counter.
local function next_token()
  -- One call in the common case (fewer than one grant per µs): store NOW, read the last.
  local last = tonumber(redis.call('SET', P .. 'token', fmt(NOW), 'GET') or '0')
  if last < NOW then
    return NOW
  end
  local t = last + 1
  redis.call('SET', P .. 'token', fmt(t))
  return t
end

-- Grants the lock to `owner` for `ttl` µs; `waiter` is the id of the acquire or try_lock
-- request it goes to; `claimed` is '0' for a hand-off its waiter has not picked up yet, else '1'.
local function grant(owner, ttl, waiter, claimed)
  local token = next_token()
  local dl = NOW + ttl
  -- Every field is written, so no field of an earlier lease survives.
  redis.call('HSET', LOCK, 'owner', owner, 'token', fmt(token), 'dl', fmt(dl), 'waiter', waiter,
    'claimed', claimed)
  keep_for(LOCK, ttl)
  return token, dl
end

-- Whether a waiter entry (owner, ttl, wd, hb) is still alive: its process refreshed its
-- heartbeat recently enough, and its wait deadline has not passed.
local function waiter_alive(w)
  return w[1] and RAW < tonumber(w[4]) and (w[3] == '0' or NOW < tonumber(w[3]))
end

-- Hands the name to the first live waiter (dead ones are dropped on the way), who is told by
-- pub/sub; with nobody waiting the lock key is deleted (if `present`). Returns the new lease as
-- {owner, token, dl, waiter}, or nil when the name is free and nobody waits.
local function hand_off(present)
  while true do
    local head = redis.call('ZRANGE', QUEUE, 0, 0)[1]
    if not head then
      if present then
        redis.call('DEL', LOCK)
      end
      return nil
    end
    redis.call('ZREM', QUEUE, head)
    local wkey = P .. 'waiter:' .. head
    local w = redis.call('HMGET', wkey, 'owner', 'ttl', 'wd', 'hb')
    if waiter_alive(w) then
      local token, dl = grant(w[1], tonumber(w[2]), head, '0')
      redis.call('HSET', wkey, 'granted', fmt(token), 'gdl', fmt(dl))
      redis.call('PUBLISH', P .. 'wake', head)
      return {w[1], fmt(token), fmt(dl), head}
    end
    redis.call('DEL', wkey)
  end
end

-- Brings the lock up to date: a live lease stays; otherwise the lease goes straight to the first
-- live waiter (dead ones are dropped on the way), who is told by pub/sub. A lease handed to a
-- waiter that died before picking it up (its heartbeat expired; nobody ever held it) counts as
-- lapsed. Returns the live lease as {owner, token, dl, waiter}, or nil when the name is free
-- and nobody waits.
local function settle()
  local v = redis.call('HMGET', LOCK, 'owner', 'token', 'dl', 'waiter', 'claimed')
  if v[1] and NOW < tonumber(v[3]) then
    if v[5] ~= '0' then
      return v
    end
    local wkey = P .. 'waiter:' .. v[4]
    local hb = redis.call('HGET', wkey, 'hb')
    if hb and RAW < tonumber(hb) then
      return v
    end
    redis.call('DEL', wkey)
  end
  return hand_off(v[1])
end

-- Takes waiter `id` out of the queue and deletes its entry, then brings the lock up to date: a
-- free lease goes on to the next live waiter at once, and if `id` was first, the waiter first
-- now is told (by pub/sub), so that it re-checks and sleeps to the holder's deadline instead
-- of a whole heartbeat. Returns what settle() returns.
local function leave(id)
  local was_head = redis.call('ZRANGE', QUEUE, 0, 0)[1] == id
  redis.call('ZREM', QUEUE, id)
  redis.call('DEL', P .. 'waiter:' .. id)
  local cur = settle()
  if was_head and cur then
    local head = redis.call('ZRANGE', QUEUE, 0, 0)[1]
    if head then
      redis.call('PUBLISH', P .. 'wake', head)
    end
  end
  return cur
end
