-- probe: how the restart guard (guard.lua) judges the node now, without
-- making a missing marker: for `redlock inspect`.
--
-- KEYS[1]  the node's marker
-- ARGV[1]  restart guard in milliseconds
--
-- Reply: "votes", or the guard's QUARANTINED error.
probing = true
local refused = guard(KEYS[1], ARGV[1])
if refused then
  return refused
end
return 'votes'
