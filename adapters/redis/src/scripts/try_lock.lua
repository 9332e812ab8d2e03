-- try_lock(name, owner, ttl_us) -> {'1', token, dl, now} granted | {'0', holder_dl, now} busy
local cur = settle()
if cur then
  return {'0', cur[3], fmt(NOW)}
end
local token, dl = grant(ARGV[2], tonumber(ARGV[3]), '', '1')
return {'1', fmt(token), fmt(dl), fmt(NOW)}
