-- declare: mark a brand-new node, one that never held a lock, as complete
-- since forever for the data it holds now ("0 declared <replid> <longest>
-- 0", see guard.lua), so that it votes at once. Refused while any key
-- under the prefix exists, when the process loaded keys from disk at its
-- start (or cannot say: Redis before 7), when keys were dropped since it
-- started (a flush, an eviction, a failover: guard.lua's facts), when the
-- marker records a loss, or when the node voted so recently that a lease
-- it granted may still be live. A node restarted empty looks brand-new all
-- the same: node.DeclareSet judges the whole set for that.
--
-- KEYS[1]  the node's marker
-- ARGV[1]  a SCAN pattern matching every key under the prefix
-- ARGV[2]  the marker's own name as that pattern would list it
-- ARGV[3]  "check": judge only, write nothing; "declare": write the marker
--
-- Reply: {} when it passes (and, with "declare", is declared); else
--        {"marker", its value}, {"live", its value, ms until a lease it
--        granted has surely ended}, {"loaded", the count of keys loaded,
--        or "unknown"}, {"dropped", why} or {"keys", up to 10 key names}.
local f = facts()
local _, run = f.start()
local value = redis.call('GET', KEYS[1])
local m = { longest = 0 }
if value then
  local loss = marker_loss(value, { new = true, declared = true })
  if loss then
    return loss
  end
  m = marker_read(value)
end
-- A marker this process declared counts the keys loaded with it, if any.
local declared = m.since == 0 and (m.stamp == replid or (run ~= nil and m.stamp == run))
local dropped = f.dropped()
local refusal = not_loaded(declared)
  or (dropped and { 'dropped', dropped })
  or keys_under(ARGV[1], function(key) return key == ARGV[2] end)
  or (value and marker_live(value))
if refusal then
  return refusal
end
if ARGV[3] == 'declare' then
  local lost, evicted, commands = f.losses()
  marker_write(KEYS[1], { since = 0, why = 'declared', stamp = replid, longest = m.longest, voted = 0,
    evicted = evicted, run = run, lost = lost, commands = commands })
end
return {}
