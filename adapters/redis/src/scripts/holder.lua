-- holder(name) -> {owner, token, dl, now} | {} when free
local cur = settle()
if cur then
  return {cur[1], cur[2], cur[3], fmt(NOW)}
end
return {}
