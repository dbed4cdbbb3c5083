-- renew_slots: renew.lua over the slots of one Redis Cluster shard. A
-- call may declare keys of one slot only, so KEYS[1] (a key of the first
-- item's slot) routes it, and renew.lua's keys come in ARGV:
-- ARGV[1]        how many keys, k
-- ARGV[2..k+1]   renew.lua's KEYS (every marker first read by the guard,
--                before any lock is touched: a slot that is not here
--                fails the call before it renews anything)
-- ARGV[k+2..]    renew.lua's ARGV
local KEYS, ARGV = (function(argv)
  local k = tonumber(argv[1])
  local keys, args = {}, {}
  for i = 1, k do keys[i] = argv[i + 1] end
  for i = k + 2, #argv do args[#args + 1] = argv[i] end
  return keys, args
end)(ARGV)
