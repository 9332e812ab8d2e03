-- try_lock(name, owner, ttl_us, rid) -> {'1', token, dl, now} granted | {'0', holder_dl, now} busy
--   rid: this request's id, kept in the lease's `waiter` field, so that the same request run
--   again (a retry after a lost reply) finds its own lease and returns it as granted.
local RID = ARGV[4]
local cur = settle()
if cur then
  if cur[4] == RID then
    return {'1', cur[2], cur[3], fmt(NOW)}
  end
  return {'0', cur[3], fmt(NOW)}
end
local token, dl = grant(ARGV[2], tonumber(ARGV[3]), RID, '1')
return {'1', fmt(token), fmt(dl), fmt(NOW)}
